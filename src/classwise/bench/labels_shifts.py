"""The pipeline on the shifts of a labels-only dataset (``python -m classwise.bench.labels_shifts``).

The targets (issue "Predictions from anywhere, across shifts"), on 2 CPU cores:

* **run**: the whole pipeline (``snakemake --cores 2``, the config's defaults) on files of hard
  predictions of a labels-only dataset with 77 shifts (a ``labels`` shift set, one labels file
  per shift, paired with clean and given severities), 160 samples of 17 classes, about 324
  predictions files (``models`` x (1 + ``shifts``)), in <= 60 s;
* **dry run**: ``snakemake -n`` for 200 models x 200 shifts in <= 60 s (every predictions file
  is checked before any job, so the dry run reads each one's header and ids).

With ``jobs.batch_shifts: auto`` (the default) the dataset's per-shift jobs are shift batches
(docs/pipeline.md#many-shifts-of-predictions): one job per model or label view over up to 32
shifts. Each is timed once, as a user runs it (a fresh interpreter, Snakemake's own start included),
and the job count and the load average before and after are recorded: other processes on the
cores slow every timing. The files are written by :func:`write_study` in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from classwise.atomic import write_json

REPO = Path(__file__).resolve().parents[3]
RUN_TARGET_S = 60.0
DRY_RUN_TARGET_S = 60.0


def write_study(folder: Path, *, models: int, shifts: int, samples: int, classes: int, seed: int = 0) -> Path:
    """A labels-only study in ``folder``: the reference labels, ``shifts`` labels files (the same
    samples, severities 1-5 in turn), each model's hard predictions per condition (about 80 %
    accurate on clean, less as the severity grows); returns its config file."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"s{i:04d}" for i in range(samples)])
    labels = np.arange(samples) % classes
    data = folder / "data"
    data.mkdir(parents=True)
    pd.DataFrame({"sample_id": ids, "label": labels}).to_csv(data / "clean.csv", index=False)
    conditions = [f"c{k:03d}" for k in range(shifts)]
    for condition in conditions:
        pd.DataFrame({"sample_id": ids, "label": labels}).to_csv(data / f"{condition}.csv", index=False)
    model_entries = {}
    for m in range(models):
        files = {}
        for k, shift in enumerate(["clean", *(f"study_{c}" for c in conditions)]):
            accuracy = 0.8 if k == 0 else 0.8 - 0.1 * (1 + (k - 1) % 5)
            predicted = np.where(rng.random(samples) < accuracy, labels, rng.integers(0, classes, samples))
            path = data / f"m{m:03d}_{shift}.csv"
            pd.DataFrame({"sample_id": ids, "prediction": predicted}).to_csv(path, index=False)
            files[shift] = str(path.relative_to(folder))
        model_entries[f"m{m:03d}"] = {"source": "predictions", "files": files}
    config = {
        "datasets": {
            "study": {
                "source": "labels",
                "path": "data/clean.csv",
                "shift_sets": {
                    "study": {
                        "family": "labels",
                        "files": {c: f"data/{c}.csv" for c in conditions},
                        "severities": {c: 1 + k % 5 for k, c in enumerate(conditions)},
                    }
                },
            }
        },
        "models": model_entries,
        "shifts": {"clean": True},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _snakemake(folder: Path, config: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(folder)]
    start = time.perf_counter()
    result = subprocess.run([*command, "--configfile", str(config), "--cores", "2", *args], capture_output=True, text=True)
    return time.perf_counter() - start, result


def _jobs(stdout: str) -> int | None:
    for line in stdout.splitlines():
        if line.startswith("total"):
            return int(line.split()[1])
    return None


def measure(kind: str, *, models: int, shifts: int, samples: int, classes: int) -> dict[str, Any]:
    """One timed ``run`` (the whole pipeline) or ``dry`` (``snakemake -n``) of a generated study."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = write_study(folder, models=models, shifts=shifts, samples=samples, classes=classes)
        load_before = os.getloadavg()
        wall, result = _snakemake(folder, config, *(["--dry-run"] if kind == "dry" else []))
        load_after = os.getloadavg()
        if result.returncode != 0:
            raise RuntimeError(f"snakemake failed:\n{result.stderr[-3000:]}")
        jobs = _jobs(result.stdout) if kind == "dry" else _jobs(_snakemake(folder, config, "--dry-run", "--forceall")[1].stdout)
    target = RUN_TARGET_S if kind == "run" else DRY_RUN_TARGET_S
    return {
        "measurement": kind,
        "models": models,
        "shifts": shifts,
        "predictions_files": models * (1 + shifts),
        "samples": samples,
        "classes": classes,
        "jobs": jobs,
        "wall_s": round(wall, 2),
        "target_s": target,
        "met": wall <= target,
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in load_after],
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="JSON file of the results")
    parser.add_argument("--models", type=int, default=4, help="models of the run (4 x 78 conditions: 312 files)")
    parser.add_argument("--shifts", type=int, default=77)
    parser.add_argument("--samples", type=int, default=160)
    parser.add_argument("--classes", type=int, default=17)
    parser.add_argument("--dry-models", type=int, default=200)
    parser.add_argument("--dry-shifts", type=int, default=200)
    parser.add_argument("--skip", choices=["run", "dry"], action="append", default=[])
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    if "run" not in args.skip:
        results["run"] = measure("run", models=args.models, shifts=args.shifts, samples=args.samples, classes=args.classes)
        print(results["run"], flush=True)
    if "dry" not in args.skip:
        results["dry_run"] = measure(
            "dry", models=args.dry_models, shifts=args.dry_shifts, samples=args.samples, classes=args.classes
        )
        print(results["dry_run"], flush=True)
    if args.out is not None:
        write_json(args.out, results)


if __name__ == "__main__":
    main()
