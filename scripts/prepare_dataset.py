"""Snakemake script of localrule prepare_dataset: download and verify a dataset's archives."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import prepare_dataset_step

with job_log(snakemake, exit_when_done=True):
    prepare_dataset_step(
        dataset_name=snakemake.wildcards.dataset,
        dataset_cfg=snakemake.params.dataset,
        marker_path=snakemake.output.marker,
    )
