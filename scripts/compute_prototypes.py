"""Snakemake script of rule compute_prototypes: one prototype classifier's class means -> its file."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import prototypes_step

with job_log(snakemake, exit_when_done=True) as log:
    prototypes_step(
        model_name=snakemake.wildcards.model,
        model_cfg=snakemake.params.model,
        dataset_name=snakemake.params.dataset_name,
        dataset_cfg=snakemake.params.dataset,
        backbone_weights=snakemake.input.get("backbone", None) or None,
        prototypes_path=snakemake.output.prototypes,
        batch_size=snakemake.params.batch_size,
        device=snakemake.params.device,
        progress=log,
        threads=snakemake.threads,
    )
