"""Snakemake script of rule infer_models_<dataset>: the models of a decode group on one shift ->
each model's cached logits, one decode per batch (classwise.pipeline.decode_groups)."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import InferenceSettings, InferTarget, infer_group_step

with job_log(snakemake, exit_when_done=True) as log:
    infer_group_step(
        models=[
            InferTarget(name, entry, snakemake.input.get(f"weights:{name}"), snakemake.output.get(f"logits:{name}"))
            for name, entry in snakemake.params.models.items()
        ],
        group_dir=snakemake.params.group,
        models_per_decode=snakemake.config["inference"]["models_per_decode"],
        settings=InferenceSettings.from_config(dict(snakemake.params.items())),
        data_inputs=list(snakemake.input.data),
        progress=log,
        threads=snakemake.threads,
    )
