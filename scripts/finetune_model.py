"""Snakemake script of rule finetune_model: fine-tune one torchvision model, save its checkpoint."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import finetune_step

with job_log(snakemake) as log:  # noqa: F821 (snakemake is injected by Snakemake)
    finetune_step(
        model_name=snakemake.wildcards.model,  # noqa: F821
        model_cfg=snakemake.params.model,  # noqa: F821
        dataset_name=snakemake.params.dataset_name,  # noqa: F821
        dataset_cfg=snakemake.params.dataset,  # noqa: F821
        base_weights=snakemake.input.get("base", None) or None,  # noqa: F821
        checkpoint_path=snakemake.output.checkpoint,  # noqa: F821
        device=snakemake.params.device,  # noqa: F821
        progress=log,
        threads=snakemake.threads,  # noqa: F821
    )
