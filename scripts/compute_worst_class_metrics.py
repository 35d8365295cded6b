"""Snakemake script of rule compute_worst_class_metrics: one logits file -> metrics JSON + CSV."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.metrics import worst_class_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    worst_class_step(
        logits_path=snakemake.input.logits,  # noqa: F821
        label_view=snakemake.wildcards.labels,  # noqa: F821
        view_labels_path=snakemake.input.get("labels"),  # noqa: F821
        superclasses=snakemake.params.superclasses,  # noqa: F821
        k=snakemake.params.k,  # noqa: F821
        ns=snakemake.params.n,  # noqa: F821
        metrics_path=snakemake.output.metrics,  # noqa: F821
        per_class_path=snakemake.output.per_class,  # noqa: F821
        confusion_path=snakemake.output.confusion,  # noqa: F821
        confusion_figure_path=snakemake.output.confusion_figure,  # noqa: F821
        title=title_of(snakemake),  # noqa: F821
    )
