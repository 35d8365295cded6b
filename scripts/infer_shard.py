"""Snakemake script of rule infer_shard: shard k of S of one (dataset, model, shift) inference."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import InferenceSettings, InferTarget, infer_step

with job_log(snakemake, exit_when_done=True) as log:
    infer_step(
        model=InferTarget(
            snakemake.wildcards.model, snakemake.params.model, snakemake.input.get("weights"), snakemake.output.shard
        ),
        settings=InferenceSettings.from_config(dict(snakemake.params.items()), dataset_name=snakemake.wildcards.dataset),
        source_weights=snakemake.input.get("source_weights"),
        progress=log,
        threads=snakemake.threads,
        shard=(int(snakemake.wildcards.shard), int(snakemake.wildcards.shards)),
    )
