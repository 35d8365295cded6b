"""Coverage of the worst-class intervals, by simulation with known per-class accuracies.

``python -m classwise.metrics.coverage [--classes 100 1000] [--per-class 50]
[--repetitions 200] [--replicates 1000] [--seed 0] --out results/coverage/coverage.json``

**The model.**  ``C`` classes of ``n`` samples.  Each class ``c`` has ``K = 3`` confusers
(distinct random other classes); a sample of ``c`` ranks confuser ``j`` ahead of its own
class independently with probability ``r_cj``, and no other class ever.  So

* per-class accuracy ``p_c = prod_j (1 - r_cj)``, drawn as ``p_c ~ Beta(6, 2)`` (mean 0.75,
  sd 0.14, about the spread of an ImageNet ResNet-50's class accuracies), the error split
  over the confusers on the log scale with Dirichlet(1, 1, 1) shares;
* two-class accuracy of the pair ``{a, b}``: ``q_ab = 1 - (r_ab + r_ba) / 2`` (``r = 0`` for a
  non-confuser);
* true WCA ``= min p_c``, W10CR ``=`` the mean of the 10 smallest ``p_c`` (equal supports),
  W2CA ``= min q_ab``.

**One repetition** draws the test set (per class, the counts of the ``2^K`` patterns of
"confuser ranked ahead" are multinomial), computes the three metrics with the library's
reducers, and their intervals:

* ``percentile``: the percentile interval of ``B`` stratified bootstrap replicates, as
  ``classwise metrics --bootstrap`` reports it (``ci``).  A stratified resample of a class is
  a multinomial draw of its pattern counts with the observed frequencies, which is what is
  drawn here, so this is the same bootstrap distribution;
* ``basic``: the basic (reverse-percentile) interval ``[2 t - q_hi, 2 t - q_lo]`` of the same
  replicates;
* ``bound``: :func:`classwise.metrics.intervals.minimum_bound` of the per-class (per-pair)
  counts (``ci_bound``), which has a finite-sample guarantee.

The output gives, per setting, metric and interval: coverage (share of repetitions whose
interval holds the true value), the shares missed below and above, the mean width, and the
binomial standard error of the coverage.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from classwise.atomic import write_json
from classwise.metrics import worst_class as wc
from classwise.metrics.arguments import help_text
from classwise.metrics.intervals import minimum_bound

CONFUSERS = 3
N_WORST = 10
METRICS = ("WCA", f"W{N_WORST}CR", "W2CA")
INTERVALS = ("percentile", "basic", "bound")


@dataclass(frozen=True)
class World:
    """Known per-class error structure (see the module docstring)."""

    n_classes: int
    per_class: int
    confusers: np.ndarray  # (C, K) confuser classes
    patterns: np.ndarray  # (C, 2^K) probability of each pattern of confusers ranked ahead
    accuracy: np.ndarray  # (C,) p_c
    pair_a: np.ndarray  # unordered pairs with some confusion, a < b
    pair_b: np.ndarray
    pair_edges: np.ndarray  # (P, 2) flat indices c * K + j of the two directions (-1: none)
    truth: dict[str, float]

    @classmethod
    def draw(cls, n_classes: int, per_class: int, rng: np.random.Generator) -> World:
        c, k = n_classes, CONFUSERS
        accuracy = rng.beta(6.0, 2.0, size=c)
        shares = rng.dirichlet(np.ones(k), size=c)
        rate = 1.0 - accuracy[:, None] ** shares  # prod_j (1 - r_cj) = p_c
        others = np.argsort(rng.random((c, c - 1)), axis=1)[:, :k]
        confusers = others + (others >= np.arange(c)[:, None])  # skip the class itself
        bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1  # (2^K, K)
        patterns = np.prod(np.where(bits[None, :, :] == 1, rate[:, None, :], 1.0 - rate[:, None, :]), axis=2)
        # Unordered pairs with some confusion and their directed edges.
        src = np.repeat(np.arange(c), k)
        dst = confusers.ravel()
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        key, inverse = np.unique(lo * c + hi, return_inverse=True)
        edges = np.full((key.shape[0], 2), -1, dtype=np.int64)
        first = np.full(key.shape[0], True)
        for e, p in enumerate(inverse):  # C * K edges, once per world
            edges[p, 0 if first[p] else 1] = e
            first[p] = False
        pair_rate = np.zeros(key.shape[0])
        np.add.at(pair_rate, inverse, rate.ravel())
        truth = {
            "WCA": float(accuracy.min()),
            f"W{N_WORST}CR": float(np.sort(accuracy)[:N_WORST].mean()),
            "W2CA": float(1.0 - pair_rate.max() / 2.0),
        }
        return cls(c, per_class, confusers, patterns, accuracy, key // c, key % c, edges, truth)

    def sample(self, rng: np.random.Generator, frequencies: np.ndarray | None = None, size: int | None = None) -> np.ndarray:
        """Pattern counts per class ``(..., C, 2^K)``: the test set (``frequencies`` None) or
        ``size`` stratified bootstrap replicates of a test set with those frequencies."""
        p = self.patterns if frequencies is None else frequencies
        shape = None if size is None else (size, self.n_classes)
        return rng.multinomial(self.per_class, p, size=shape)


def _statistics(world: World, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-class hits ``(..., C)`` and per-pair losses ``(..., P)`` from pattern counts."""
    k = CONFUSERS
    bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1
    hits = counts[..., 0]
    directed = (counts @ bits).reshape(*counts.shape[:-2], -1)  # (..., C * K)
    padded = np.concatenate([directed, np.zeros((*directed.shape[:-1], 1), dtype=directed.dtype)], axis=-1)
    losses = padded[..., world.pair_edges[:, 0]] + padded[..., world.pair_edges[:, 1]]
    return hits, losses


def _metrics(world: World, hits: np.ndarray, losses: np.ndarray) -> dict[str, np.ndarray]:
    n = world.per_class
    support = np.full(world.n_classes, n)
    wca, _ = wc.worst_of_rows(hits / n)
    wncr, _ = wc.worst_n_pooled_rows(hits, support, N_WORST)
    worst_loss = losses.max(axis=-1)  # equal supports: the pair with the most losses
    w2ca = wc.pair_values(n - worst_loss, np.full_like(worst_loss, n), n, n, balanced=False)
    return {"WCA": wca, f"W{N_WORST}CR": wncr, "W2CA": w2ca}


def _bounds(world: World, hits: np.ndarray, losses: np.ndarray, confidence: float) -> dict[str, tuple[float, float]]:
    n = world.per_class
    support = np.full(world.n_classes, n)
    n_pairs = world.n_classes * (world.n_classes - 1) // 2
    # Pairs without confusion win every sample; only their number matters to the bound.
    wins = np.concatenate([2 * n - losses, np.full(n_pairs - losses.shape[0], 2 * n)])
    return {
        "WCA": minimum_bound(hits, support, confidence),
        f"W{N_WORST}CR": minimum_bound(hits, support, confidence, n_smallest=N_WORST),
        "W2CA": minimum_bound(wins, np.full(n_pairs, 2 * n), confidence),
    }


def simulate(
    n_classes: int, *, per_class: int, repetitions: int, replicates: int, confidence: float, seed: int
) -> dict[str, Any]:
    """Coverage of the three intervals of WCA, W10CR and W2CA in one setting."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(n_classes, per_class)))
    world = World.draw(n_classes, per_class, rng)
    alpha = 1.0 - confidence
    lows = {(m, i): np.empty(repetitions) for m in METRICS for i in INTERVALS}
    highs = {(m, i): np.empty(repetitions) for m in METRICS for i in INTERVALS}
    estimates = {m: np.empty(repetitions) for m in METRICS}
    for rep in range(repetitions):
        counts = world.sample(rng)
        hits, losses = _statistics(world, counts)
        point = _metrics(world, hits, losses)
        boot = _metrics(world, *_statistics(world, world.sample(rng, counts / per_class, replicates)))
        bounds = _bounds(world, hits, losses, confidence)
        for m in METRICS:
            t = float(point[m])
            estimates[m][rep] = t
            q_lo, q_hi = np.quantile(boot[m], [alpha / 2, 1 - alpha / 2])
            for name, (lo, hi) in (
                ("percentile", (q_lo, q_hi)),
                ("basic", (2 * t - q_hi, 2 * t - q_lo)),
                ("bound", bounds[m]),
            ):
                lows[m, name][rep], highs[m, name][rep] = lo, hi
    out: dict[str, Any] = {
        "n_classes": n_classes,
        "per_class": per_class,
        "truth": world.truth,
        "mean_estimate": {m: float(estimates[m].mean()) for m in METRICS},
        "intervals": {},
    }
    for m in METRICS:
        truth = world.truth[m]
        out["intervals"][m] = {}
        for name in INTERVALS:
            lo, hi = lows[m, name], highs[m, name]
            covered = (lo <= truth) & (truth <= hi)
            share = float(covered.mean())
            out["intervals"][m][name] = {
                "coverage": share,
                "coverage_se": float(np.sqrt(share * (1 - share) / repetitions)),
                "missed_below": float((hi < truth).mean()),  # interval entirely below the truth
                "missed_above": float((lo > truth).mean()),
                "mean_width": float((hi - lo).mean()),
            }
    return out


def run(classes: list[int], *, per_class: int, repetitions: int, replicates: int, confidence: float, seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    settings = [
        simulate(c, per_class=per_class, repetitions=repetitions, replicates=replicates, confidence=confidence, seed=seed)
        for c in classes
    ]
    return {
        "command": (
            f"python -m classwise.metrics.coverage --classes {' '.join(map(str, classes))} --per-class {per_class} "
            f"--repetitions {repetitions} --replicates {replicates} --confidence {confidence} --seed {seed}"
        ),
        "confidence": confidence,
        "model": __doc__.split("**The model.**")[1].split("**One repetition**")[0].strip(),
        "settings": settings,
        "seconds": time.perf_counter() - start,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--classes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--per-class", type=int, default=50)
    parser.add_argument("--repetitions", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/coverage/coverage.json")
    args = parser.parse_args(argv)
    result = run(
        args.classes,
        per_class=args.per_class,
        repetitions=args.repetitions,
        replicates=args.replicates,
        confidence=args.confidence,
        seed=args.seed,
    )
    write_json(args.out, result)
    for setting in result["settings"]:
        for m, per in setting["intervals"].items():
            row = "  ".join(f"{name} {v['coverage']:.3f} (width {v['mean_width']:.3f})" for name, v in per.items())
            print(f"C={setting['n_classes']:5d} {m:6s} truth {setting['truth'][m]:.3f}  {row}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
