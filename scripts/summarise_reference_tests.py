"""Snakemake script of rule summarise_reference_tests: per-model test reports -> summary table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.testsuites import reference_summary_step

with job_log(snakemake):
    reference_summary_step(
        report_paths=dict(zip(snakemake.params.models, snakemake.input.reports)),
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
    )
