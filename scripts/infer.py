"""Snakemake script of rules infer and infer_shard: one (dataset, model, shift) inference ->
cached logits, or shard k of S of it (the shard and shards wildcards) -> a shard file."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import InferenceSettings, InferTarget, infer_step

with job_log(snakemake, exit_when_done=True) as log:
    wildcards = snakemake.wildcards
    sharded = "shard" in wildcards.keys()
    output = snakemake.output.shard if sharded else snakemake.output.logits
    infer_step(
        model=InferTarget(wildcards.model, snakemake.params.model, snakemake.input.get("weights"), output),
        settings=InferenceSettings.from_config(dict(snakemake.params.items()), dataset_name=wildcards.dataset),
        source_weights=snakemake.input.get("source_weights"),
        progress=log,
        threads=snakemake.threads,
        shard=(int(wildcards.shard), int(wildcards.shards)) if sharded else None,
    )
