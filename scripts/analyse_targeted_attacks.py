"""Snakemake script of rule analyse_targeted_attacks: targeted logits -> Figure 5 + table."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import targeted_success_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    targeted_success_step(
        runs=snakemake.params.runs,
        clean_paths=dict(zip(snakemake.params.models, snakemake.input.clean)),
        title=title_of(snakemake),
        figure_path=output.figure,
        table_paths={"markdown": output.markdown, "csv": output.csv, "latex": output.latex},
    )
