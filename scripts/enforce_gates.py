"""Snakemake script of rule enforce_gates: fail the run (after every other output) when a gate failed."""

import sys

from classwise.pipeline.scripting import job_log
from classwise.steps.gates import enforce_gates_step

with job_log(snakemake) as log:
    failure = enforce_gates_step(
        summary_path=snakemake.input.summary,
        report_path=snakemake.input.report,
        passed_path=snakemake.output.passed,
    )
    if failure:
        print(failure, file=log)
if failure:
    print(f"classwise: gates failed: {failure}", file=sys.stderr)
    raise SystemExit(1)
