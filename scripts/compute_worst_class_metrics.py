"""Snakemake script of rule compute_worst_class_metrics: one logits file -> metrics JSON + CSV."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.metrics import WorstClassSettings, worst_class_step

with job_log(snakemake, exit_when_done=True):
    worst_class_step(
        logits_path=snakemake.input.logits,
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.get("labels"),
        settings=WorstClassSettings.from_config(dict(snakemake.params.items())),
        metrics_path=snakemake.output.metrics,
        per_class_path=snakemake.output.per_class,
        confusion_path=snakemake.output.confusion,
        confusion_figure_path=snakemake.output.confusion_figure,
        title=title_of(snakemake),
        workers=snakemake.threads,
    )
