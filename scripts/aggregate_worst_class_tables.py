"""Snakemake script of rule aggregate_worst_class_tables: per-model metrics -> Table-1-style tables
(and, with the bootstrap on, the same with intervals)."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import worst_class_table_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    with_intervals = output.get("intervals_csv") is not None
    worst_class_table_step(
        metrics_paths=dict(zip(snakemake.params.models, snakemake.input)),
        caption=caption_of(snakemake),
        markdown_path=output.markdown,
        csv_path=output.csv,
        latex_path=output.latex,
        interval_paths={"markdown": output.intervals_markdown, "csv": output.intervals_csv, "latex": output.intervals_latex}
        if with_intervals
        else None,
        interval_caption=caption_of(snakemake, "intervals") if with_intervals else "",
    )
