"""Snakemake script of localrule prepare_dataset: download and verify a dataset's archives."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import prepare_dataset_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    prepare_dataset_step(
        dataset_name=snakemake.wildcards.dataset,  # noqa: F821
        dataset_cfg=snakemake.params.dataset,  # noqa: F821
        marker_path=snakemake.output.marker,  # noqa: F821
    )
