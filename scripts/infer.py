"""Snakemake script of rule infer: one (dataset, model, shift) inference -> cached logits."""

from classwise.pipeline.scripting import job_log
from classwise.steps.models import infer_step

with job_log(snakemake) as log:  # noqa: F821 (snakemake is injected by Snakemake)
    infer_step(
        model_name=snakemake.wildcards.model,  # noqa: F821
        model_cfg=snakemake.params.model,  # noqa: F821
        checkpoint_path=snakemake.input.weights,  # noqa: F821
        dataset_name=snakemake.wildcards.dataset,  # noqa: F821
        dataset_cfg=snakemake.params.dataset,  # noqa: F821
        shift=snakemake.params.shift,  # noqa: F821
        seed=snakemake.params.seed,  # noqa: F821
        batch_size=snakemake.params.batch_size,  # noqa: F821
        device=snakemake.params.device,  # noqa: F821
        logits_path=snakemake.output.logits,  # noqa: F821
        progress=log,
        threads=snakemake.threads,  # noqa: F821
    )
