"""Snakemake script of rule build_label_view: label-errors files, reference logits or real.json -> view CSV."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import build_label_view_step

with job_log(snakemake):
    build_label_view_step(
        dataset_name=snakemake.wildcards.dataset,
        view_name=snakemake.wildcards.labels,
        view_cfg=snakemake.params.view,
        label_errors_dir=snakemake.params.label_errors_dir,
        reference_logits=snakemake.input.get("reference"),
        real_file=snakemake.input.get("real"),
        view_path=snakemake.output.view,
    )
