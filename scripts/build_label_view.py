"""Snakemake script of rule build_label_view: label-errors files or reference logits -> view CSV."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import build_label_view_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    build_label_view_step(
        dataset_name=snakemake.wildcards.dataset,  # noqa: F821
        view_name=snakemake.wildcards.labels,  # noqa: F821
        view_cfg=snakemake.params.view,  # noqa: F821
        label_errors_dir=snakemake.params.label_errors_dir,  # noqa: F821
        reference_logits=snakemake.input.get("reference"),  # noqa: F821
        view_path=snakemake.output.view,  # noqa: F821
    )
