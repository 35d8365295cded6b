"""Snakemake script of rule run_transformation_tests: clean + corrupted logits -> test table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import transformation_tests_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    transformation_tests_step(
        clean_path=snakemake.input.clean,
        shifted_paths=dict(zip(snakemake.params.shifts, snakemake.input.shifted)),
        thresholds=snakemake.params.thresholds,
        subsets=snakemake.params.subsets,
        caption=caption_of(snakemake),
        table_paths={"markdown": output.markdown, "csv": output.csv, "latex": output.latex},
    )
