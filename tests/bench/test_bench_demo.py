"""The demo benchmark's reading of job logs, on logs written by job_log itself."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from classwise.bench.demo import breakdown, format_breakdown, job_costs
from classwise.pipeline.scripting import COST_PREFIX, job_log, parse_cost_line


def _job(log: Path) -> None:
    with job_log(SimpleNamespace(log=[str(log)])):
        print("working")
        sum(range(200_000))  # some CPU inside the step


def test_a_successful_job_ends_its_log_with_its_cost(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "infer" / "digits" / "mlp" / "clean.log"
    _job(log)
    lines = log.read_text().splitlines()
    assert lines[0] == "working"
    cost = parse_cost_line(lines[-1])
    assert cost is not None and lines[-1].startswith(COST_PREFIX)
    # this test process started long before the job: most of its wall and CPU came before
    assert 0 <= cost["cpu_before"] <= cost["cpu"] and 0 <= cost["wall_before"] <= cost["wall"]


def test_a_failed_job_has_no_cost_line(tmp_path: Path) -> None:
    log = tmp_path / "failed.log"
    with pytest.raises(ValueError):
        with job_log(SimpleNamespace(log=[str(log)])):
            raise ValueError("broken")
    assert all(parse_cost_line(line) is None for line in log.read_text().splitlines())


def test_breakdown_sums_per_rule(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for name in ("infer/a.log", "infer/b.log", "describe_results.log"):
        _job(logs / name)
    (logs / "stray.txt").write_text("no cost here\n")
    rows = job_costs(logs)
    assert sorted(row["rule"] for row in rows) == ["describe_results", "infer", "infer"]
    by_rule = {entry["rule"]: entry for entry in breakdown(rows)}
    infer = [row for row in rows if row["rule"] == "infer"]
    assert by_rule["infer"]["jobs"] == 2
    assert by_rule["infer"]["cpu"] == pytest.approx(sum(row["cpu"] for row in infer))
    assert by_rule["infer"]["cpu_step"] == pytest.approx(sum(row["cpu"] - row["cpu_before"] for row in infer))
    results = {
        "rules": breakdown(rows), "jobs": 3, "jobs_cpu_seconds": 1.0, "jobs_cpu_before_step_seconds": 0.5,
        "snakemake_cpu_seconds": 2.0, "wall_seconds": 10.0, "goal_wall_seconds": 150.0, "goal_met": True,
        "cpu_seconds": 3.0, "cores": 2, "machine": {"load_average_1min_at_start": 1.0, "load_average_1min_at_end": 1.5},
    }  # fmt: skip
    table = format_breakdown(results)
    assert "| infer | 2 |" in table and "goal 150 s: met" in table


def test_exit_when_done_ends_the_process_after_a_complete_log(tmp_path: Path) -> None:
    import subprocess
    import sys
    import textwrap

    log, output = tmp_path / "job.log", tmp_path / "out.txt"
    script = textwrap.dedent(
        f"""
        from types import SimpleNamespace
        from classwise.pipeline.scripting import job_log
        snakemake = SimpleNamespace(log=[{str(log)!r}])  # as Snakemake's script preamble defines it
        with job_log(snakemake, exit_when_done=True):
            print("in the step")
            with open({str(output)!r}, "w") as handle:
                handle.write("complete")
        print("after the block")  # never runs: the process ended with the job
        raise SystemExit(3)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "after the block" not in result.stdout
    assert output.read_text() == "complete"
    lines = log.read_text().splitlines()
    assert lines[0] == "in the step" and parse_cost_line(lines[-1]) is not None


def test_exit_when_done_returns_when_the_script_runs_in_process(tmp_path: Path) -> None:
    import runpy

    script = tmp_path / "script.py"
    script.write_text(
        "from classwise.pipeline.scripting import job_log\n"
        "with job_log(snakemake, exit_when_done=True):\n"
        "    print('in the step')\n"
        "reached = True\n"
    )
    job = SimpleNamespace(log=[str(tmp_path / "job.log")])
    namespace = runpy.run_path(str(script), init_globals={"snakemake": job})  # as the script tests do
    assert namespace["reached"] is True
    assert parse_cost_line((tmp_path / "job.log").read_text().splitlines()[-1]) is not None
