"""Run CI's suite repeatedly on fresh clones beside CPU hogs, to find the tests that fail under load.

    python3 tools/soak_suite.py --runs 10 --hogs 2 --out results/soak

Each run: ``git clone`` the commit into a new folder beside this repository (so that the tests
find the shared data at ``../shared``, as in CI), ``make run`` there (the demo, so
that the suite runs beside what a user's clone holds), then start ``--hogs`` busy-looping
processes and run ``.ci/run`` with ``CI=true``. A run's log goes to ``OUT/run-<i>.log``; one JSON
line per run goes to ``OUT/runs.jsonl`` (exit status, wall seconds, load averages, pytest's
summary line and every test it reported failed or errored). The clone is removed afterwards
unless ``--keep``. Standard library only, like ``tools/install_env.py``.

``--no-make-run`` skips the demo; ``--hogs 0`` runs on an idle machine. ``--ref`` picks the commit
(default: HEAD of the repository this script sits in).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# pytest's short summary: "FAILED tests/x.py::test_y - message" / "ERROR tests/x.py::test_y - ...".
_REPORTED = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)
_SUMMARY = re.compile(r"^=+ (.*(?:passed|failed|error).*) =+$", re.MULTILINE)


def _start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


def _run_logged(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> tuple[int, float]:
    started = time.monotonic()
    with log.open("a") as stream:
        stream.write(f"\n$ {' '.join(command)}\n")
        stream.flush()
        code = subprocess.run(command, cwd=cwd, env=env, stdout=stream, stderr=subprocess.STDOUT).returncode
    return code, time.monotonic() - started


def soak_once(index: int, *, ref: str, hogs: int, make_run: bool, out: Path, keep: bool) -> dict[str, object]:
    log = out / f"run-{index}.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "CI": "true"}
    # Beside the repository, as CI's clone is: the tests find the shared data at ../shared.
    clone = Path(tempfile.mkdtemp(prefix=f"classwise-soak-{index}-", dir=REPO.parent))
    record: dict[str, object] = {"run": index, "ref": ref, "hogs": hogs, "clone": str(clone)}
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", ref], cwd=clone, check=True)
        if make_run:
            code, seconds = _run_logged(["make", "run", "CORES=2"], clone, log, env)
            record["make_run"] = {"exit": code, "seconds": round(seconds, 1)}
        record["load_before"] = os.getloadavg()
        hog_processes = _start_hogs(hogs)
        try:
            code, seconds = _run_logged([str(clone / ".ci" / "run")], clone, log, env)
        finally:
            record["load_end"] = os.getloadavg()
            _stop(hog_processes)
        text = log.read_text(errors="replace")
        summaries = _SUMMARY.findall(text)
        record.update(
            exit=code,
            seconds=round(seconds, 1),
            summary=summaries[-1] if summaries else None,
            reported=[f"{kind} {test}" for kind, test in _REPORTED.findall(text)],
        )
    finally:
        if not keep:
            shutil.rmtree(clone, ignore_errors=True)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hogs", type=int, default=2, help="busy-looping processes beside the suite")
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--no-make-run", dest="make_run", action="store_false")
    parser.add_argument("--keep", action="store_true", help="keep each clone")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "soak")
    args = parser.parse_args(argv)
    ref = subprocess.run(["git", "rev-parse", args.ref], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    failures = 0
    for index in range(1, args.runs + 1):
        record = soak_once(index, ref=ref, hogs=args.hogs, make_run=args.make_run, out=args.out, keep=args.keep)
        failures += record.get("exit") != 0
        with (args.out / "runs.jsonl").open("a") as stream:
            stream.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)
    print(f"{args.runs - failures} of {args.runs} runs green", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
