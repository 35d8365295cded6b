"""Snakemake script of rule describe_results: the run's README (what each file reproduces)."""

from pathlib import Path

from classwise.pipeline.scripting import job_log
from classwise.steps.reports import results_readme_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    results_readme_step(
        description=snakemake.params.description,  # noqa: F821
        output_dir=Path(snakemake.output.readme).parent,  # noqa: F821
        outputs=snakemake.params.outputs,  # noqa: F821
        readme_path=snakemake.output.readme,  # noqa: F821
        notes=snakemake.params.notes,  # noqa: F821
    )
