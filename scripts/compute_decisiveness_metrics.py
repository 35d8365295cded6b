"""Snakemake script of rule compute_decisiveness_metrics: logits -> Nelson metrics + figure."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.metrics import decisiveness_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    decisiveness_step(
        logits_path=snakemake.input.logits,  # noqa: F821
        label_view=snakemake.wildcards.labels,  # noqa: F821
        view_labels_path=snakemake.input.get("labels"),  # noqa: F821
        gamma=snakemake.params.gamma,  # noqa: F821
        gammas=snakemake.params.gammas,  # noqa: F821
        bins=snakemake.params.bins,  # noqa: F821
        metrics_path=snakemake.output.metrics,  # noqa: F821
        figure_path=snakemake.output.figure,  # noqa: F821
        title=title_of(snakemake),  # noqa: F821
    )
