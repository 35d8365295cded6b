"""Snakemake script of rule summarise_extrapolation: per-model RMSE tables -> one table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.extrapolation import extrapolation_summary_step

with job_log(snakemake):
    extrapolation_summary_step(
        table_paths=dict(zip(snakemake.params.models, snakemake.input.tables)),
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
    )
