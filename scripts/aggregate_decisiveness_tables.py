"""Snakemake script of rule aggregate_decisiveness_tables: per-model JSON -> Tables 1 and 2
(and, with the bootstrap on, Table 1 with intervals)."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import decisiveness_tables_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    with_intervals = output.get("intervals_csv") is not None
    decisiveness_tables_step(
        metrics_paths=dict(zip(snakemake.params.models, snakemake.input)),
        caption=caption_of(snakemake),
        sweep_caption=caption_of(snakemake, "gamma_sweep"),
        table_paths={"markdown": output.table_markdown, "csv": output.table_csv, "latex": output.table_latex},
        sweep_paths={"markdown": output.sweep_markdown, "csv": output.sweep_csv, "latex": output.sweep_latex},
        interval_paths={"markdown": output.intervals_markdown, "csv": output.intervals_csv, "latex": output.intervals_latex}
        if with_intervals
        else None,
        interval_caption=caption_of(snakemake, "intervals") if with_intervals else "",
    )
