"""Snakemake script of rule train_model: train one demo model, save its checkpoint."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import FitSettings, train_step

with job_log(snakemake, exit_when_done=True) as log:
    train_step(
        settings=FitSettings.from_config(dict(snakemake.params.items()), model_name=snakemake.wildcards.model),
        checkpoint_path=snakemake.output.checkpoint,
        progress=log,
        threads=snakemake.threads,
    )
