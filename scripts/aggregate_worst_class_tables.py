"""Snakemake script of rule aggregate_worst_class_tables: per-model metrics -> Table-1-style tables."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import worst_class_table_step

with job_log(snakemake):
    worst_class_table_step(
        metrics_paths=dict(zip(snakemake.params.models, snakemake.input)),
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
    )
