"""Snakemake script of rule check_gates: the config's gates on every run's metrics -> gates.md, gates.json."""

from classwise.pipeline.scripting import job_log
from classwise.steps.gates import check_gates_step

with job_log(snakemake, exit_when_done=True):
    check_gates_step(
        gates=snakemake.params.gates,
        runs=snakemake.params.runs,
        markdown_path=snakemake.output.markdown,
        json_path=snakemake.output.json,
    )
