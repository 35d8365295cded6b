"""Snakemake script of rule compute_decisiveness_metrics: logits -> Nelson metrics + figure."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.metrics import DecisivenessSettings, decisiveness_step

with job_log(snakemake, exit_when_done=True):
    decisiveness_step(
        logits_path=snakemake.input.logits,
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.get("labels"),
        settings=DecisivenessSettings.from_config(dict(snakemake.params.items())),
        metrics_path=snakemake.output.metrics,
        figure_path=snakemake.output.figure,
        title=title_of(snakemake),
        workers=snakemake.threads,
    )
