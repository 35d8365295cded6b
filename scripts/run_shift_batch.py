"""Snakemake script of the shift batches' rules: a per-shift rule's own script once per shift."""

from pathlib import Path

from classwise.pipeline.scripting import job_log
from classwise.pipeline.shift_batches import run_items

with job_log(snakemake, exit_when_done=True):
    script = Path(snakemake.scriptdir) / snakemake.params.script
    run_items(snakemake.params.jobs, script, snakemake, keep=snakemake.params.keep)
