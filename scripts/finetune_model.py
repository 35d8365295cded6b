"""Snakemake script of rule finetune_model: fine-tune one torchvision model, save its checkpoint."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import FitSettings, finetune_step

with job_log(snakemake, exit_when_done=True) as log:
    finetune_step(
        settings=FitSettings.from_config(dict(snakemake.params.items()), model_name=snakemake.wildcards.model),
        base_weights=snakemake.input.get("base", None) or None,
        checkpoint_path=snakemake.output.checkpoint,
        progress=log,
        threads=snakemake.threads,
    )
