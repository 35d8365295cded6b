"""Snakemake script of rule plot_class_wise_figures: per-class CSVs -> bars and heatmaps."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import per_class_figures_step

with job_log(snakemake, exit_when_done=True):
    models = snakemake.params.models
    per_class_figures_step(
        per_class_paths=dict(zip(models, snakemake.input.per_class)),
        metrics_paths=dict(zip(models, snakemake.input.metrics)),
        title=title_of(snakemake),
        recall_path=snakemake.output.recall,
        cfps_path=snakemake.output.cfps,
        worst_probability_path=snakemake.output.get("worst_probability"),
        confidence=snakemake.params.confidence,
    )
