"""Where the demo's time goes (``python -m classwise.bench.demo``, part of ``make bench``).

Runs the whole default workflow (``config/config.yaml``) from scratch in a temporary working
directory, ``snakemake --cores N``, and reads back the cost line every successful job writes at
the end of its log (:func:`classwise.pipeline.scripting.cost_line`). Per rule: the number of
jobs, their wall and CPU seconds, and the part of each spent before the step began (starting
Python, unpickling Snakemake's job object, the script's module imports). The rest of the CPU
that Snakemake and its jobs used is Snakemake's own (building the DAG, scheduling, starting each
job's shell). Goal (issue 20): the whole demo within 150 s on 2 cores.

CPU seconds are the stable figure: wall time on a shared machine moves with the load average,
which is recorded at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from classwise.atomic import write_json
from classwise.bench.pipeline import load_average, timed_run
from classwise.pipeline.scripting import parse_cost_line

REPO = Path(__file__).resolve().parents[3]
DEMO_GOAL_S = 150.0
"""Wall seconds of the whole demo on 2 cores (issue 20)."""


def job_costs(logs: Path) -> list[dict[str, Any]]:
    """One row per job log under ``logs`` (``<logs>/<rule>/...``, or ``<logs>/<rule>.log`` for a
    rule with one job) that ends with a cost line: ``rule``, ``log`` (relative path) and the
    line's numbers."""
    rows = []
    for path in sorted(logs.rglob("*")):
        if not path.is_file():
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        cost = parse_cost_line(lines[-1]) if lines else None
        if cost is not None:
            relative = path.relative_to(logs)
            rule = relative.parts[0] if len(relative.parts) > 1 else relative.stem
            rows.append({"rule": rule, "log": str(relative), **cost})
    return rows


def breakdown(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per rule, most CPU first: ``jobs``, ``cpu``, ``cpu_before`` (start and imports),
    ``cpu_step`` (the rest), ``wall`` (sum over the jobs) and ``cpu_per_job``."""
    by_rule: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = by_rule.setdefault(row["rule"], {"rule": row["rule"], "jobs": 0, "cpu": 0.0, "cpu_before": 0.0, "wall": 0.0})
        entry["jobs"] += 1
        entry["cpu"] += row["cpu"]
        entry["cpu_before"] += row["cpu_before"]
        entry["wall"] += row["wall"]
    for entry in by_rule.values():
        entry["cpu_step"] = entry["cpu"] - entry["cpu_before"]
        entry["cpu_per_job"] = entry["cpu"] / entry["jobs"]
    return sorted(by_rule.values(), key=lambda entry: -entry["cpu"])


def run(*, repo: Path = REPO, config: Path | None = None, cores: int = 2, workdir: Path | None = None) -> dict[str, Any]:
    """The demo from scratch, timed, and its breakdown."""
    config = config or repo / "config" / "config.yaml"
    with tempfile.TemporaryDirectory(prefix="classwise-demo-bench-") as name:
        where = workdir or Path(name)
        command = [
            sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(where),
            "--configfile", str(config), "--cores", str(cores),
        ]  # fmt: skip
        load_start = load_average()
        wall, cpu, result = timed_run(command, repo, timeout=None)
        if result.returncode != 0:
            raise RuntimeError(f"the demo failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
        rows = job_costs(where / "results" / "logs")
    jobs_cpu = sum(row["cpu"] for row in rows)
    before = sum(row["cpu_before"] for row in rows)
    return {
        "config": str(config),
        "cores": cores,
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1min_at_start": load_start,
            "load_average_1min_at_end": load_average(),
        },
        "wall_seconds": wall,
        "goal_wall_seconds": DEMO_GOAL_S,
        "goal_met": wall <= DEMO_GOAL_S,
        "cpu_seconds": cpu,
        "jobs": len(rows),
        "jobs_cpu_seconds": jobs_cpu,
        "jobs_cpu_before_step_seconds": before,
        "jobs_cpu_in_step_seconds": jobs_cpu - before,
        "snakemake_cpu_seconds": cpu - jobs_cpu,
        "rules": breakdown(rows),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: run the demo, write JSON atomically to ``--out``, print the breakdown."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/demo.json"))
    parser.add_argument("--config", type=Path, help="default: config/config.yaml of the checkout")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repo", type=Path, default=REPO)
    args = parser.parse_args(argv)
    if args.cores < 1:
        parser.error(f"--cores expects an integer >= 1, got {args.cores}")
    results = run(repo=args.repo, config=args.config, cores=args.cores)
    write_json(args.out, results)
    print(format_breakdown(results))
    print(f"written to {args.out}")
    return results


def format_breakdown(results: dict[str, Any]) -> str:
    """The breakdown as a Markdown table, with the totals underneath."""
    lines = [
        "| rule | jobs | CPU s | of which start + imports | CPU s per job |",
        "|---|---:|---:|---:|---:|",
    ]
    for entry in results["rules"]:
        lines.append(
            f"| {entry['rule']} | {entry['jobs']} | {entry['cpu']:.1f} | {entry['cpu_before']:.1f} | {entry['cpu_per_job']:.2f} |"
        )
    lines.append(
        f"| **jobs in all** | {results['jobs']} | {results['jobs_cpu_seconds']:.1f} | "
        f"{results['jobs_cpu_before_step_seconds']:.1f} | |"
    )
    lines.append(f"| Snakemake itself | | {results['snakemake_cpu_seconds']:.1f} | | |")
    machine = results["machine"]
    lines.append("")
    lines.append(
        f"wall {results['wall_seconds']:.1f} s on {results['cores']} cores (goal {results['goal_wall_seconds']:.0f} s: "
        f"{'met' if results['goal_met'] else 'not met'}), CPU {results['cpu_seconds']:.1f} s; load average "
        f"{machine['load_average_1min_at_start']} at the start, {machine['load_average_1min_at_end']} at the end"
    )
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    main()
