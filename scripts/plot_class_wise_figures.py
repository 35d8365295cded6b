"""Snakemake script of rule plot_class_wise_figures: per-class CSVs -> bars and heatmaps."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.reports import per_class_figures_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    models = snakemake.params.models  # noqa: F821
    per_class_figures_step(
        per_class_paths=dict(zip(models, snakemake.input.per_class)),  # noqa: F821
        metrics_paths=dict(zip(models, snakemake.input.metrics)),  # noqa: F821
        title=title_of(snakemake),  # noqa: F821
        recall_path=snakemake.output.recall,  # noqa: F821
        cfps_path=snakemake.output.cfps,  # noqa: F821
    )
