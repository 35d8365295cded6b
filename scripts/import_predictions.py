"""Snakemake script of rule import_predictions: a model's outputs from the user's file -> cached outputs."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import import_predictions_step

with job_log(snakemake, exit_when_done=True):
    import_predictions_step(
        model_name=snakemake.wildcards.model,
        model_cfg=snakemake.params.model,
        dataset_name=snakemake.wildcards.dataset,
        dataset_cfg=snakemake.params.dataset,
        shift=snakemake.params.shift,
        outputs_path=snakemake.input.outputs,
        logits_path=snakemake.output.logits,
    )
