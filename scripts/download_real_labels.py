"""Snakemake script of localrule download_real_labels: fetch ImageNet ReaL's real.json (verified)."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import download_real_step

with job_log(snakemake):
    download_real_step(dest=snakemake.output.file, url=snakemake.params.url, sha256=snakemake.params.sha256)
