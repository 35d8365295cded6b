"""Snakemake script of localrule download_label_file: fetch one label-errors file (verified)."""

from pathlib import Path

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import download_label_files_step

with job_log(snakemake, exit_when_done=True):
    output = Path(snakemake.output.file)
    download_label_files_step(names=[output.name], dest_dir=output.parent)
