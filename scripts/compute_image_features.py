"""Snakemake script of rule compute_image_features: a dataset's evaluation images -> features CSV."""

from classwise.pipeline.scripting import job_log
from classwise.steps.testsuites import image_features_step

with job_log(snakemake):
    image_features_step(
        dataset_name=snakemake.wildcards.dataset,
        dataset_cfg=snakemake.params.dataset,
        metadata_path=snakemake.input.metadata or None,
        batch_size=snakemake.params.batch_size,
        features_path=snakemake.output.features,
        threads=snakemake.threads,
    )
