"""Snakemake script of rule compute_prototypes: one prototype classifier's class means -> its file."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import FitSettings, prototypes_step

with job_log(snakemake, exit_when_done=True) as log:
    prototypes_step(
        settings=FitSettings.from_config(dict(snakemake.params.items()), model_name=snakemake.wildcards.model),
        backbone_weights=snakemake.input.get("backbone", None) or None,
        prototypes_path=snakemake.output.prototypes,
        progress=log,
        threads=snakemake.threads,
    )
