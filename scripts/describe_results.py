"""Snakemake script of rule describe_results: the run's README (what each file reproduces)."""

from pathlib import Path

from classwise.pipeline.scripting import job_log
from classwise.steps.reports import results_readme_step

with job_log(snakemake, exit_when_done=True):
    results_readme_step(
        description=snakemake.params.description,
        output_dir=Path(snakemake.output.readme).parent,
        outputs=snakemake.params.outputs,
        readme_path=snakemake.output.readme,
        notes=snakemake.params.notes,
    )
