"""Snakemake script of localrule download_model: fetch one model's weights into resources/."""

from pathlib import Path

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import download_model_step

with job_log(snakemake, exit_when_done=True):
    download_model_step(
        model_name=snakemake.wildcards.model,
        model_cfg=snakemake.params.model,
        dest_dir=Path(snakemake.output.manifest).parent,
    )
