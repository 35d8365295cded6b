"""Snakemake script of the shift batches' rules: a per-shift rule's own script once per shift."""

from pathlib import Path

from classwise.pipeline.scripting import job_log
from classwise.pipeline.shift_batches import run_items

with job_log(snakemake, exit_when_done=True):
    run_items(snakemake.params.jobs, Path(snakemake.scriptdir) / snakemake.params.script, snakemake)
