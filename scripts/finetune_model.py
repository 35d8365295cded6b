"""Snakemake script of rule finetune_model: fine-tune one torchvision model, save its checkpoint."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import finetune_step

with job_log(snakemake, exit_when_done=True) as log:
    finetune_step(
        model_name=snakemake.wildcards.model,
        model_cfg=snakemake.params.model,
        dataset_name=snakemake.params.dataset_name,
        dataset_cfg=snakemake.params.dataset,
        base_weights=snakemake.input.get("base", None) or None,
        checkpoint_path=snakemake.output.checkpoint,
        device=snakemake.params.device,
        progress=log,
        threads=snakemake.threads,
    )
