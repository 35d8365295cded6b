"""Snakemake script of rule run_transformation_tests: clean + corrupted logits -> test table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import transformation_tests_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    output = snakemake.output  # noqa: F821
    transformation_tests_step(
        clean_path=snakemake.input.clean,  # noqa: F821
        shifted_paths=dict(zip(snakemake.params.shifts, snakemake.input.shifted)),  # noqa: F821
        thresholds=snakemake.params.thresholds,  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        table_paths={"markdown": output.markdown, "csv": output.csv, "latex": output.latex},
    )
