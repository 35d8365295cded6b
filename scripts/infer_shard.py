"""Snakemake script of rule infer_shard: shard k of S of one (dataset, model, shift) inference."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import infer_step

with job_log(snakemake, exit_when_done=True) as log:
    shift = dict(snakemake.params.shift)
    source_cfg = shift.pop("source_model", None)  # a transfer shift's source model
    infer_step(
        model_name=snakemake.wildcards.model,
        model_cfg=snakemake.params.model,
        checkpoint_path=snakemake.input.get("weights"),
        dataset_name=snakemake.wildcards.dataset,
        dataset_cfg=snakemake.params.dataset,
        shift=shift,
        seed=snakemake.params.seed,
        batch_size=snakemake.params.batch_size,
        device=snakemake.params.device,
        logits_path=snakemake.output.shard,
        progress=log,
        threads=snakemake.threads,
        source_cfg=source_cfg,
        source_weights=snakemake.input.get("source_weights"),
        shard=(int(snakemake.wildcards.shard), int(snakemake.wildcards.shards)),
    )
