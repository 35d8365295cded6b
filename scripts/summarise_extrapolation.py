"""Snakemake script of rule summarise_extrapolation: per-model RMSE tables -> one table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.analyses import extrapolation_summary_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    extrapolation_summary_step(
        table_paths=dict(zip(snakemake.params.models, snakemake.input.tables)),  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        csv_path=snakemake.output.csv,  # noqa: F821
        latex_path=snakemake.output.latex,  # noqa: F821
    )
