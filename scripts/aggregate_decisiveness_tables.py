"""Snakemake script of rule aggregate_decisiveness_tables: per-model JSON -> Tables 1 and 2."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import decisiveness_tables_step

with job_log(snakemake):
    output = snakemake.output
    decisiveness_tables_step(
        metrics_paths=dict(zip(snakemake.params.models, snakemake.input)),
        caption=caption_of(snakemake),
        table_paths={"markdown": output.table_markdown, "csv": output.table_csv, "latex": output.table_latex},
        sweep_paths={"markdown": output.sweep_markdown, "csv": output.sweep_csv, "latex": output.sweep_latex},
    )
