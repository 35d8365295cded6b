"""The run's table of every number at ImageNet's scale (``python -m classwise.bench.numbers``,
part of ``make bench``): its build time, size on disk and read time.

Issue 39: at 50,000 samples x 1,000 classes x 100 shifts x 10 models the table must stay
readable. The files are generated in the layout and format the metrics step writes
(``worst_class.json`` with every metric's value and interval, ``per_class.csv`` with every
per-class column), 50 samples a class whose accuracy falls with the shift; the table is built
by :func:`classwise.outputs.numbers.number_table` from them, as rule ``collect_numbers`` does,
written as Parquet, and read back whole and in part (one metric, with pyarrow's filters).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.atomic import write_json
from classwise.bench.pipeline import load_average
from classwise.outputs import output
from classwise.outputs.numbers import read_number_table

SAMPLES_PER_CLASS = 50
#: The whole-set metrics a worst_class.json holds (the demo's), each with a bootstrap interval.
METRICS = ("A", "A@5", "CFPS_max", "W2CA", "W2CR", "W5CR", "W10CR", "WCA", "WCA@5", "WCP", "WSupCR", "W5CR@5")


def _write_evaluation(
    out: Path, wildcards: dict[str, str], rng: np.random.Generator, accuracy: float, classes: int
) -> list[Path]:
    """One (model, shift)'s worst_class.json and per_class.csv, in the metrics step's format."""
    support = np.full(classes, SAMPLES_PER_CLASS)
    hits = rng.binomial(SAMPLES_PER_CLASS, np.clip(accuracy + rng.normal(0, 0.1, classes), 0, 1))
    predicted = np.maximum(hits + rng.integers(0, 10, classes), 1)
    recall, precision = hits / support, hits / predicted
    worst = int(np.argmin(recall))
    document = {
        "n_samples": int(support.sum()),
        "n_classes": classes,
        "label_view": "original",
        "class_names": [f"class {c}" for c in range(classes)],
        "metrics": {
            name: {"value": float(rng.random()), "classes": [worst] if name.startswith("W") else [], "ci": [0.1, 0.9]}
            for name in METRICS
        },
        "bootstrap": {"replicates": 1000, "confidence": 0.95, "seed": 0},
    }
    document["metrics"]["A"]["value"] = float(hits.sum() / support.sum())
    document["metrics"]["WCA"]["value"] = float(recall[worst])
    files = output("worst_class_metrics").files_of(str(out), wildcards)
    per_class_path = Path(output("per_class_numbers").files_of(str(out), wildcards)["per_class"])
    per_class_path.parent.mkdir(parents=True, exist_ok=True)
    Path(files["metrics"]).write_text(json.dumps(document))
    pd.DataFrame(
        {
            "class": np.arange(classes),
            "name": [f"class {c}" for c in range(classes)],
            "support": support,
            "predicted": predicted,
            "recall": recall,
            "precision": precision,
            "top5_recall": np.minimum(1.0, recall + 0.2),
            "cfps": rng.dirichlet(np.ones(classes)),
            "recall_ci_low": np.maximum(0, recall - 0.1),
            "recall_ci_high": np.minimum(1, recall + 0.1),
            "precision_ci_low": np.maximum(0, precision - 0.1),
            "precision_ci_high": np.minimum(1, precision + 0.1),
            "worst_recall_probability": rng.random(classes) / classes,
            "worst_precision_probability": rng.random(classes) / classes,
        }
    ).to_csv(per_class_path, index=False)
    return [Path(files["metrics"]), per_class_path]


def measure(*, models: int, shifts: int, classes: int, seed: int = 0) -> dict[str, Any]:
    """Build, write and read the table of ``models`` x ``shifts`` evaluations of ``classes`` classes."""
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        files = []
        for j in range(shifts):
            for i in range(models):
                wildcards = {"dataset": "imagenet", "labels": "original", "model": f"model_{i}", "shift": f"shift_{j}"}
                files += _write_evaluation(out, wildcards, rng, 0.8 - 0.5 * j / max(shifts, 1), classes)
        start = time.perf_counter()
        table = read_number_table(files, out)
        built = time.perf_counter() - start
        path = out / "metrics.parquet"
        start = time.perf_counter()
        table.to_parquet(path, index=False)
        written = time.perf_counter() - start
        start = time.perf_counter()
        whole = pd.read_parquet(path)
        read_all = time.perf_counter() - start
        start = time.perf_counter()
        wca = pd.read_parquet(path, filters=[("metric", "==", "WCA")])
        read_one = time.perf_counter() - start
        return {
            "models": models,
            "shifts": shifts,
            "classes": classes,
            "files": len(files),
            "rows": int(len(whole)),
            "bytes": path.stat().st_size,
            "build_seconds": round(built, 2),
            "write_seconds": round(written, 2),
            "read_seconds": round(read_all, 2),
            "read_one_metric_seconds": round(read_one, 3),
            "one_metric_rows": int(len(wca)),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/bench/numbers.json")
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--shifts", type=int, default=100)
    parser.add_argument("--classes", type=int, default=1000)
    args = parser.parse_args(argv)
    before = load_average()
    result = measure(models=args.models, shifts=args.shifts, classes=args.classes)
    result["load_average"] = {"before": before, "after": load_average()}
    write_json(args.out, result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
