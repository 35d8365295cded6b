"""Snakemake script of rule merge_logit_shards: S shard files -> the cached logits and sidecar."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import merge_shards_step

with job_log(snakemake, exit_when_done=True) as log:
    merge_shards_step(shard_paths=list(snakemake.input.shards), logits_path=snakemake.output.logits, progress=log)
