"""Speed of the per-class drop tests and of the model ranking at ImageNet scale (``make bench``).

Target (issue #43): 1,000 classes x 100 shifts x 10 models must add no more than the bootstrap
already costs. The bootstrap's cost at that scale is one worst-class job per (model, shift), each
resampling B = 1,000 replicates of 50,000 x 1,000 logits; it is measured here on one such job
(:func:`classwise.bench.bootstrap.imagenet_like_logits`, every metric, as the workflow runs it)
and multiplied by the number of jobs.

Timed:

* ``outcomes``: building the 1,010 :class:`~classwise.metrics.outcomes.SampleOutcomes` (ids as
  strings, the uniqueness check), what reading the files adds beyond loading them;
* ``class_drops``: :func:`~classwise.metrics.class_drops.class_drops` of 10 models under 100
  shifts (80 paired on all 50,000 clean samples, 10 attacks on 10 samples a class, 10 sets of
  other images with 10 a class: Fisher's test), 1,000,000 rows;
* ``boschloo``: the 10 unpaired shifts of one model with Boschloo's test instead;
* ``ranking``: :func:`~classwise.metrics.ranking.rank_models` of the 10 models on 50,000
  shared samples with B = 1,000 (the workflow would run it once per shift: x 100).

Results go to a JSON file with the load average (other processes inflate wall times; compare
the CPU seconds).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc
from typing import Any

import numpy as np

from classwise.atomic import write_json

#: Correct-sample rates: clean about 76 % (a ResNet-50), shifts between 20 % and 70 %.
CLEAN_ACCURACY = 0.76


def _timed(fn: Any) -> tuple[Any, dict[str, float]]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


def _scenario(classes: int, per_class: int, shifts: int, models: int, seed: int) -> dict[str, Any]:
    """Correctness arrays of ``models`` models on a clean set and under ``shifts`` shifts."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(classes), per_class))
    ids = np.array([f"val_{i:08d}" for i in range(labels.size)])
    # an attack on 10 samples of each class: the first 10 of each class
    order = np.argsort(labels, kind="stable")
    attacked = np.sort(order.reshape(classes, per_class)[:, : min(10, per_class)].ravel())
    other_labels = np.repeat(np.arange(classes), 10)
    other_ids = np.array([f"other_{i:07d}" for i in range(other_labels.size)])
    n_unpaired = shifts // 10
    n_subset = shifts // 10
    kinds = ["paired"] * (shifts - n_unpaired - n_subset) + ["subset"] * n_subset + ["unpaired"] * n_unpaired
    return {
        "rng": rng,
        "labels": labels,
        "ids": ids,
        "attacked": attacked,
        "other_labels": other_labels,
        "other_ids": other_ids,
        "kinds": kinds,
        "models": [f"model{m}" for m in range(models)],
    }


def _outcomes(s: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    from classwise.metrics.outcomes import SampleOutcomes

    rng = s["rng"]
    labels, ids = s["labels"], s["ids"]
    clean: dict[str, Any] = {}
    shifted: dict[str, dict[str, Any]] = {}
    class_rate = rng.beta(6, 2, size=(len(s["models"]), labels.max() + 1))
    difficulty = rng.random(labels.size)
    for m, model in enumerate(s["models"]):
        correct = difficulty < class_rate[m][labels]
        clean[model] = SampleOutcomes.from_correct(ids, labels, correct, source=f"{model}/clean")
    for k, kind in enumerate(s["kinds"]):
        shift = f"shift{k:03d}"
        shifted[shift] = {}
        for model in s["models"]:
            keep = rng.random(labels.size) < rng.uniform(0.3, 0.9)
            correct = clean[model].correct & keep
            if kind == "paired":
                shifted[shift][model] = SampleOutcomes.from_correct(ids, labels, correct, source=shift)
            elif kind == "subset":
                rows = s["attacked"]
                shifted[shift][model] = SampleOutcomes.from_correct(ids[rows], labels[rows], correct[rows], source=shift)
            else:
                hits = rng.random(s["other_labels"].size) < 0.6
                shifted[shift][model] = SampleOutcomes.from_correct(s["other_ids"], s["other_labels"], hits, source=shift)
    return clean, shifted


def _bootstrap_job(samples: int, classes: int, replicates: int, workers: int) -> dict[str, float]:
    """One worst-class job's bootstrap: every metric, B replicates, on ImageNet-like logits."""
    from classwise.bench.bootstrap import imagenet_like_logits
    from classwise.metrics import bootstrap as boot
    from classwise.metrics.probabilities import Probabilities
    from classwise.metrics.stats import compute_stats

    logits, labels = imagenet_like_logits(samples, classes, seed=0)

    def run() -> None:
        stats = compute_stats(logits, labels)
        boot.bootstrap_replicates(
            logits,
            stats,
            Probabilities.from_scores(logits, "logits"),
            bootstrap=boot.BootstrapSettings(replicates),
            workers=workers,
        )

    return _timed(run)[1]


def run(classes: int, per_class: int, shifts: int, models: int, replicates: int, workers: int, seed: int) -> dict[str, Any]:
    from classwise.metrics.class_drops import DropTestSettings, class_drops
    from classwise.metrics.ranking import rank_models

    results: dict[str, Any] = {
        "scale": {"classes": classes, "per_class": per_class, "shifts": shifts, "models": models, "replicates": replicates},
        "workers": workers,
        "seed": seed,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "load_average_at_start": list(os.getloadavg()),
        },
    }
    scenario = _scenario(classes, per_class, shifts, models, seed)
    (clean, shifted), results["outcomes"] = _timed(lambda: _outcomes(scenario))
    print(f"{'outcomes':>12s}: {results['outcomes']['wall_s']:7.2f} s wall, {results['outcomes']['cpu_s']:7.2f} s CPU")
    table, results["class_drops"] = _timed(lambda: class_drops(clean, shifted))
    results["class_drops"]["rows"] = len(table)
    results["class_drops"]["significant"] = int(table["significant"].sum())
    results["class_drops"]["table_mb"] = float(table.memory_usage(deep=True).sum() / 2**20)
    del table
    model = scenario["models"][0]
    # memory traced apart (tracing slows the allocations it counts): one model's 100 shifts
    tracemalloc.start()
    class_drops({model: clean[model]}, {shift: {model: by_model[model]} for shift, by_model in shifted.items()})
    results["class_drops"]["peak_traced_mb_one_model"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(
        f"{'class_drops':>12s}: {results['class_drops']['wall_s']:7.2f} s wall, {results['class_drops']['cpu_s']:7.2f} s CPU; "
        f"table {results['class_drops']['table_mb']:.0f} MiB, peak {results['class_drops']['peak_traced_mb_one_model']:.0f} MiB "
        "traced for one model"
    )
    unpaired = {
        shift: {model: by_model[model]}
        for shift, by_model in shifted.items()
        if by_model[model].sample_ids[0].startswith("other")
    }
    _, results["boschloo"] = _timed(
        lambda: class_drops({model: clean[model]}, unpaired, tests=DropTestSettings(unpaired_test="boschloo"))
    )
    results["boschloo"]["shifts"] = len(unpaired)
    print(f"{'boschloo':>12s}: {results['boschloo']['wall_s']:7.2f} s wall for {len(unpaired)} unpaired shifts of one model")
    ranking_replicates = replicates
    _, results["ranking"] = _timed(lambda: rank_models(clean, replicates=ranking_replicates, workers=workers))
    print(f"{'ranking':>12s}: {results['ranking']['wall_s']:7.2f} s wall, {results['ranking']['cpu_s']:7.2f} s CPU (one shift)")
    results["bootstrap_job"] = _bootstrap_job(classes * per_class, classes, replicates, workers)
    print(
        f"{'bootstrap':>12s}: {results['bootstrap_job']['wall_s']:7.2f} s wall, {results['bootstrap_job']['cpu_s']:7.2f} s CPU (one job)"
    )
    jobs = models * shifts
    added = results["class_drops"]["cpu_s"] + results["outcomes"]["cpu_s"] + shifts * results["ranking"]["cpu_s"]
    results["comparison"] = {
        "bootstrap_jobs": jobs,
        "bootstrap_cpu_s": jobs * results["bootstrap_job"]["cpu_s"],
        "added_cpu_s": added,
        "added_over_bootstrap": added / (jobs * results["bootstrap_job"]["cpu_s"]),
    }
    results["meets_target"] = results["comparison"]["added_over_bootstrap"] <= 1.0
    results["machine"]["load_average_at_end"] = list(os.getloadavg())
    print(
        f"added {added:.0f} s CPU (class drops, outcomes, a ranking per shift) against {jobs} bootstrap jobs = "
        f"{results['comparison']['bootstrap_cpu_s']:.0f} s CPU: {results['comparison']['added_over_bootstrap']:.3f}x"
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench/class_drops.json")
    parser.add_argument("--classes", type=int, default=1_000)
    parser.add_argument("--per-class", type=int, default=50)
    parser.add_argument("--shifts", type=int, default=100)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--replicates", type=int, default=1_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    results = run(args.classes, args.per_class, args.shifts, args.models, args.replicates, args.workers, args.seed)
    write_json(args.out, results)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
