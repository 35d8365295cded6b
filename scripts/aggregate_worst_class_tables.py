"""Snakemake script of rule aggregate_worst_class_tables: per-model metrics -> Table-1-style tables."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import worst_class_table_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    worst_class_table_step(
        metrics_paths=dict(zip(snakemake.params.models, snakemake.input)),  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        csv_path=snakemake.output.csv,  # noqa: F821
        latex_path=snakemake.output.latex,  # noqa: F821
    )
