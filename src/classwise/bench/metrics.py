"""Speed and memory benchmarks of the metrics library (``make bench``).

The targets (issue "The metrics library"): on 50,000 x 1,000 float32 logits and 2 CPU
cores, all worst-class metrics together in <= 0.5 s, the whole ``classwise metrics`` run
(file read included) in <= 2 s, and peak memory <= 3x the logits array. Results are
written as JSON; docs/benchmarks.md quotes them.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from classwise.atomic import write_json


def synthetic_logits(n: int, c: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ImageNet-like logits: about 75 % top-1 accuracy, classes of equal size."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(c), -(-n // c))[:n]
    rng.shuffle(labels)
    logits = rng.standard_normal((n, c), dtype=np.float32) * 2.0
    logits[np.arange(n), labels] += rng.gamma(2.0, 2.5, size=n).astype(np.float32)
    return logits, labels.astype(np.int64)


def best_of(repeats: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak traced allocation during ``fn`` (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(n: int, c: int, repeats: int) -> dict[str, Any]:
    from classwise import cli
    from classwise.logits_io import write_npz_deterministic
    from classwise.metrics import worst_class as wc
    from classwise.metrics.stats import compute_stats
    from classwise.metrics.suite import worst_class_family

    # One holder, emptied before the CLI's memory run, so that it measures the CLI's peak without
    # the benchmark's own copy of the logits.
    data = dict(zip(("logits", "labels"), synthetic_logits(n, c)))
    labels = data["labels"]
    superclasses = {f"s{i}": list(range(i * 20, i * 20 + 20)) for i in range(min(9, c // 20))}

    def all_worst_class() -> None:
        stats = compute_stats(data["logits"], labels)
        worst_class_family(stats, data["logits"], superclasses=superclasses, k=5, ns=(10, 100))

    stats = compute_stats(data["logits"], labels)
    results: dict[str, Any] = {
        "shape": [n, c],
        "repeats": repeats,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            # other processes competing for the cores inflate every timing; read them with this
            "load_average_1min_at_start": os.getloadavg()[0],
        },
        "seconds": {
            "compute_stats": best_of(repeats, lambda: compute_stats(data["logits"], labels)),
            "worst_class_family_total": best_of(repeats, all_worst_class),
            "W2CA_given_stats": best_of(repeats, lambda: wc.worst_pair_accuracy(stats)),
            "WCA@5_given_stats": best_of(repeats, lambda: wc.worst_class_topk_accuracy(stats, 5)),
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "logits.npz"
        write_npz_deterministic(path, {"logits": data["logits"], "labels": labels})
        out = Path(tmp) / "metrics.json"
        argv = [str(path), "--out", str(out)]
        results["seconds"]["classwise_metrics_cli"] = best_of(repeats, lambda: cli.main(["metrics", *argv]))
        data.clear()
        peak = peak_bytes(lambda: cli.main(["metrics", *argv]))
    array_bytes = n * c * 4
    results["memory"] = {
        "logits_bytes": array_bytes,
        "cli_peak_traced_bytes": peak,
        "cli_peak_over_logits": peak / array_bytes,
    }
    results["targets"] = {
        "worst_class_family_total_s": 0.5,
        "classwise_metrics_cli_s": 2.0,
        "cli_peak_over_logits": 3.0,
    }
    results["meets_targets"] = {
        "worst_class_family_total": results["seconds"]["worst_class_family_total"] <= 0.5,
        "classwise_metrics_cli": results["seconds"]["classwise_metrics_cli"] <= 2.0,
        "memory": results["memory"]["cli_peak_over_logits"] <= 3.0,
    }
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench/metrics.json")
    parser.add_argument("--samples", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    results = run(args.samples, args.classes, args.repeats)
    write_json(args.out, results)
    for name, seconds in results["seconds"].items():
        print(f"{name:>28s}: {seconds:7.3f} s")
    print(f"{'peak memory / logits':>28s}: {results['memory']['cli_peak_over_logits']:7.2f}x")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
