"""Snakemake script of rule evaluate_extrapolation: cached logits -> RMSE table, curves, figure."""

from classwise.pipeline.captions import caption_of, title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.extrapolation import ExtrapolationSettings, extrapolation_step

with job_log(snakemake, exit_when_done=True) as log:
    extrapolation_step(
        logits_path=snakemake.input.logits,
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.labels or None,
        settings=ExtrapolationSettings.from_config(dict(snakemake.params.items())),
        title=title_of(snakemake),
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
        curves_path=snakemake.output.curves,
        figure_path=snakemake.output.figure,
        threads=snakemake.threads,
        progress=log,
    )
