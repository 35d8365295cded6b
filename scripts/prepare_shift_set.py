"""Snakemake script of localrule prepare_shift_set: download and unpack a published shift set."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import prepare_shift_set_step

with job_log(snakemake):
    prepare_shift_set_step(
        dataset_name=snakemake.wildcards.dataset,
        key=snakemake.wildcards.shift_set,
        entry=snakemake.params.entry,
        marker_path=snakemake.output.marker,
    )
