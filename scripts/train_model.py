"""Snakemake script of rule train_model: train one demo model, save its checkpoint."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import train_step

with job_log(snakemake, exit_when_done=True) as log:
    train_step(
        model_name=snakemake.wildcards.model,
        model_cfg=snakemake.params.model,
        dataset_name=snakemake.params.dataset_name,
        dataset_cfg=snakemake.params.dataset,
        checkpoint_path=snakemake.output.checkpoint,
        progress=log,
        threads=snakemake.threads,
    )
