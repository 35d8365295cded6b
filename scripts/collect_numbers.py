"""Snakemake script of rule collect_numbers: every output file of numbers -> metrics.parquet."""

from classwise.pipeline.scripting import job_log
from classwise.steps.reports import numbers_step

with job_log(snakemake, exit_when_done=True):
    numbers_step(
        files=list(snakemake.input),
        shift_families=snakemake.params.shift_families,
        table_path=snakemake.output.table,
        whole_set_path=snakemake.output.whole_set,
    )
