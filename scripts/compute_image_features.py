"""Snakemake script of rule compute_image_features: a dataset's evaluation images -> features CSV."""

from classwise.pipeline.scripting import job_log
from classwise.steps.analyses import image_features_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    image_features_step(
        dataset_name=snakemake.wildcards.dataset,  # noqa: F821
        dataset_cfg=snakemake.params.dataset,  # noqa: F821
        metadata_path=snakemake.input.metadata or None,  # noqa: F821
        batch_size=snakemake.params.batch_size,  # noqa: F821
        features_path=snakemake.output.features,  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
    )
