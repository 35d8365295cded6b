"""Many files of hard predictions through one ``classwise metrics`` call (``make bench``).

The target (issue "Predictions from anywhere"): 324 files of hard predictions, 160 samples of
17 classes each, through one ``classwise metrics DIR --out-dir OUT`` call in <= 10 s on 2 CPU
cores (one call per file took about 6 minutes). The call runs as a user runs it, a fresh
interpreter included; beside it, a few one-file calls give the per-call cost that 324 of them
would add up to. Results are written as JSON with the load average (other processes on the
cores slow every timing); docs/benchmarks.md quotes them.
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

from classwise.atomic import write_json

TARGET_S = 10.0


def write_prediction_files(folder: Path, *, files: int, samples: int, classes: int, seed: int = 0) -> list[Path]:
    """``files`` CSVs ``sample_id,label,prediction`` of the same samples (labels balanced over
    ``classes``), each a model about 80 % accurate that abstains on about 2 % of them."""
    rng = np.random.default_rng(seed)
    labels = np.arange(samples) % classes
    ids = np.array([f"s{i:04d}" for i in range(samples)])
    paths = []
    for f in range(files):
        predictions = np.where(rng.random(samples) < 0.8, labels, rng.integers(0, classes, samples)).astype(object)
        predictions[rng.random(samples) < 0.02] = ""
        path = folder / f"model_{f:03d}.csv"
        pd.DataFrame({"sample_id": ids, "label": labels, "prediction": predictions}).to_csv(path, index=False)
        paths.append(path)
    return paths


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def run(files: int, samples: int, classes: int, single_calls: int) -> dict[str, Any]:
    classwise = [sys.executable, "-m", "classwise.cli", "metrics"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "predictions"
        folder.mkdir()
        paths = write_prediction_files(folder, files=files, samples=samples, classes=classes)
        load_before = os.getloadavg()
        one_call = _timed([*classwise, str(folder), "--out-dir", str(Path(tmp) / "out")])
        written = len(list((Path(tmp) / "out").glob("model_*.json")))
        per_call = [_timed([*classwise, str(p), "--out", str(Path(tmp) / "single.json")]) for p in paths[:single_calls]]
        load_after = os.getloadavg()
    per_file = float(np.median(per_call))
    return {
        "files": files,
        "samples_per_file": samples,
        "classes": classes,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            # other processes competing for the cores inflate every timing; read them with this
            "load_average_1_5_15min_at_start": list(load_before),
            "load_average_1_5_15min_at_end": list(load_after),
        },
        "seconds": {
            "one_call_all_files": one_call,
            "one_call_per_file_median": per_file,
            "one_call_per_file_times_files": per_file * files,
        },
        "single_calls_timed": len(per_call),
        "json_files_written": written,
        "target_s": TARGET_S,
        "meets_target": one_call <= TARGET_S and written == files,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench/predictions.json")
    parser.add_argument("--files", type=int, default=324)
    parser.add_argument("--samples", type=int, default=160)
    parser.add_argument("--classes", type=int, default=17)
    parser.add_argument("--single-calls", type=int, default=5, help="one-file calls timed for the comparison")
    args = parser.parse_args(argv)
    results = run(args.files, args.samples, args.classes, args.single_calls)
    write_json(args.out, results)
    for name, seconds in results["seconds"].items():
        print(f"{name:>32s}: {seconds:8.2f} s")
    print(f"load average at start: {results['machine']['load_average_1_5_15min_at_start']}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
