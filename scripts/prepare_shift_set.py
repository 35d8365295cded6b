"""Snakemake script of localrule prepare_shift_set: download and unpack one file of a published
shift set. The entry comes from the config, not from params: a mirror (a changed url) must not
rerun the shifts' inference; the params hold what the file is (its sha256, where it goes)."""

from classwise.pipeline.scripting import job_log
from classwise.steps.resources import prepare_shift_set_step

with job_log(snakemake, exit_when_done=True):
    dataset, key = snakemake.wildcards.dataset, snakemake.wildcards.shift_set
    prepare_shift_set_step(
        dataset_name=dataset,
        key=key,
        archive=snakemake.wildcards.archive,
        entry=snakemake.config["datasets"][dataset]["shift_sets"][key],
        marker_path=snakemake.output.marker,
    )
