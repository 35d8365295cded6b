"""Snakemake script of rule compute_decisiveness_metrics: logits -> Nelson metrics + figure."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.metrics import bootstrap_settings, decisiveness_step

with job_log(snakemake, exit_when_done=True):
    decisiveness_step(
        logits_path=snakemake.input.logits,
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.get("labels"),
        gamma=snakemake.params.gamma,
        gammas=snakemake.params.gammas,
        bins=snakemake.params.bins,
        metrics_path=snakemake.output.metrics,
        figure_path=snakemake.output.figure,
        title=title_of(snakemake),
        bootstrap=bootstrap_settings(snakemake.params.bootstrap),
        workers=snakemake.threads,
    )
