"""Snakemake script of rule build_explorer: the metric outputs of every class -> explorer.html."""

from classwise.pipeline.scripting import job_log
from classwise.steps.reports import explorer_step

with job_log(snakemake, exit_when_done=True):
    explorer_step(
        views=snakemake.params.views,
        description=snakemake.params.description,
        confidence=snakemake.params.confidence,
        explorer_path=snakemake.output.explorer,
    )
