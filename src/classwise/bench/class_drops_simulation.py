"""Measured behaviour of the class-drop tests and the rank intervals: a seeded simulation.

``python -m classwise.bench.class_drops_simulation --seed 0`` (a few minutes on 2 cores; writes
``results/bench/class_drops_simulation.json`` and prints the tables of docs/uncertainty.md).

**The model of a test set.** Class accuracies ``p_c ~ Beta(6, 2)`` (mean 0.75, sd 0.14: an
ImageNet ResNet-50's spread), ``n`` samples a class. A paired shift keeps each sample's outcome
correlated with its clean one: a sample's shifted outcome reuses its clean uniform draw with
probability ``rho = 0.7`` and draws afresh otherwise, so ``P(correct under the shift | correct
clean) = rho min(p_s, p_c) / p_c + (1 - rho) p_s`` (and the like for wrong clean); every shift
of a class is compared with the same clean samples, as in a run. An unpaired shift has ``n``
other samples a class, ``k ~ Binomial(n, p_s)``. The counts are drawn from these laws directly
(exact, and fast at 500 samples a class), then go through the library's tests
(:func:`~classwise.metrics.proportions.mcnemar_exact`,
:func:`~classwise.metrics.proportions.fisher_exact`) and adjustment
(:func:`~classwise.metrics.multiple_testing.adjust_p_values`), the functions
:func:`~classwise.metrics.class_drops.class_drops` calls.

* **Null**: no class changes under any of 10 shifts of 1,000 classes; the family-wise error
  (any significant row) and the false discovery rate of Benjamini-Hochberg and Holm at 0.05
  (under the complete null both are the probability of any finding); also with 5 % of the
  (shift, class) pairs dropping by 30 points, the realised FDR (false findings over findings)
  of BH and the family-wise error of Holm.
* **Power**: 1 % of the 10,000 (shift, class) pairs drop by ``delta`` from a clean accuracy of
  0.75, the rest do not change; the share of the true drops found (BH at q = 0.05, and a single
  test at 0.05 for one class chosen beforehand) as ``delta`` grows, and the smallest ``delta``
  found half the time, at 10, 50 and 500 samples a class, paired and unpaired. The drops of one
  repetition share their random numbers across ``delta`` (inverse-CDF draws), so the curve is
  monotone up to the other tests' noise.
* **Ranks**: 5 models with known per-class accuracies (each model's logits of ``p_c`` shifted by
  its own offset plus per-class noise, fixed over repetitions: the true A, WCA and W10CR and so
  the true ranks are known); test sets of ``n`` samples a class whose outcomes share a
  per-sample difficulty across models (``rho`` as above); :func:`~classwise.metrics.ranking.
  rank_models` with B replicates; the share of (repetition, model) whose true rank lies in
  ``[rank_low, rank_high]`` (percentile) and in ``[rank_low_pairwise, rank_high_pairwise]``, the
  share of repetitions where every model's does, and how often a pair declared distinguishable
  is ordered the wrong way.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import expit, logit
from scipy.stats import binom

from classwise.atomic import write_json

#: Probability that a sample's shifted outcome reuses its clean draw (paired shifts).
RHO = 0.7
#: The clean accuracy of the classes that drop, in the power study.
DROPPING_ACCURACY = 0.75
DELTAS = tuple(np.round(np.arange(0.02, 0.751, 0.02), 2))


def _class_accuracies(rng: np.random.Generator, classes: int) -> np.ndarray:
    return rng.beta(6.0, 2.0, size=classes)


def _paired_given_clean(p_clean: np.ndarray, p_shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P(correct under the shift | correct clean)``, ``P(... | wrong clean)`` (see the module)."""
    stay = RHO * np.minimum(p_shift, p_clean) / p_clean + (1.0 - RHO) * p_shift
    fixed = RHO * np.maximum(p_shift - p_clean, 0.0) / (1.0 - p_clean) + (1.0 - RHO) * p_shift
    return stay, fixed


def _p_values(
    pairing: str, n: int, k_clean: np.ndarray, p_clean: np.ndarray, p_shift: np.ndarray, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """p-values and changes of tests whose counts are drawn by inverse CDF from the uniforms
    ``u`` (``(..., 2)``) given the clean counts ``k_clean``."""
    from classwise.metrics import proportions

    if pairing == "paired":
        stay, fixed = _paired_given_clean(p_clean, p_shift)
        both = np.asarray(binom.ppf(u[..., 0], k_clean, stay)).astype(np.int64)
        only_shift = np.asarray(binom.ppf(u[..., 1], n - k_clean, fixed)).astype(np.int64)
        only_clean = k_clean - both
        return proportions.mcnemar_exact(only_clean, only_shift), (only_shift - only_clean) / n
    k_shift = np.asarray(binom.ppf(u[..., 0], n, p_shift)).astype(np.int64)
    return proportions.fisher_exact(k_shift, n, k_clean, n), (k_shift - k_clean) / n


def null_error_rates(
    pairing: str,
    per_class: int,
    *,
    classes: int,
    shifts: int,
    repetitions: int,
    q: float,
    dropping_share: float,
    drop: float,
    seed: int,
) -> dict[str, Any]:
    """Error rates over ``repetitions`` families of ``classes x shifts`` tests; a share
    ``dropping_share`` of the (shift, class) pairs drops by ``drop`` (0: the complete null)."""
    from classwise.metrics.multiple_testing import adjust_p_values

    rng = np.random.default_rng(seed)
    any_false = {"bh": 0, "holm": 0}
    fdp: dict[str, list[float]] = {"bh": [], "holm": []}
    unadjusted = []
    for _ in range(repetitions):
        p_clean = _class_accuracies(rng, classes)
        k_clean = rng.binomial(per_class, p_clean)
        dropping = rng.random((shifts, classes)) < dropping_share
        p_shift = np.where(dropping, np.maximum(p_clean - drop, 0.0), p_clean)
        p, change = _p_values(
            pairing, per_class, np.broadcast_to(k_clean, (shifts, classes)), p_clean, p_shift, rng.random((shifts, classes, 2))
        )
        null = ~dropping
        unadjusted.append(float(np.mean(p[null] <= q)))
        for method in ("bh", "holm"):
            found = adjust_p_values(p, method) <= q
            false = int(np.count_nonzero(found & null))
            any_false[method] += false > 0
            fdp[method].append(false / max(int(np.count_nonzero(found)), 1))
    return {
        "pairing": pairing,
        "per_class": per_class,
        "classes": classes,
        "shifts": shifts,
        "repetitions": repetitions,
        "q": q,
        "dropping_share": dropping_share,
        "drop": drop,
        "familywise_error": {m: any_false[m] / repetitions for m in any_false},
        "false_discovery_rate": {m: float(np.mean(fdp[m])) for m in fdp},
        "unadjusted_rejection_rate_of_nulls": float(np.mean(unadjusted)),
    }


def power_curve(
    pairing: str,
    per_class: int,
    *,
    classes: int,
    shifts: int,
    repetitions: int,
    q: float,
    share: float,
    deltas: Sequence[float],
    seed: int,
) -> dict[str, Any]:
    """Share of the true drops found against ``delta`` (see the module docstring)."""
    from classwise.metrics.multiple_testing import adjust_p_values

    rng = np.random.default_rng(seed)
    count = max(1, int(round(share * classes * shifts)))
    found = np.zeros(len(deltas))
    single = np.zeros(len(deltas))
    for _ in range(repetitions):
        p_clean = _class_accuracies(rng, classes)
        pairs = rng.choice(classes * shifts, size=count, replace=False)
        shift_of, class_of = np.divmod(pairs, classes)
        p_clean[class_of] = DROPPING_ACCURACY  # every shift of a dropping class starts from it
        k_clean = rng.binomial(per_class, p_clean)
        p, _ = _p_values(
            pairing, per_class, np.broadcast_to(k_clean, (shifts, classes)), p_clean, p_clean, rng.random((shifts, classes, 2))
        )
        u = rng.random((count, 2))  # the drops' random numbers, shared across delta
        for i, delta in enumerate(deltas):
            p_drop, change = _p_values(
                pairing, per_class, k_clean[class_of], p_clean[class_of], np.full(count, DROPPING_ACCURACY - delta), u
            )
            family = p.copy()
            family[shift_of, class_of] = p_drop
            significant = adjust_p_values(family, "bh")[shift_of, class_of] <= q
            found[i] += np.mean(significant & (change < 0))
            single[i] += np.mean((p_drop <= 0.05) & (change < 0))
    found /= repetitions
    single /= repetitions
    return {
        "pairing": pairing,
        "per_class": per_class,
        "classes": classes,
        "shifts": shifts,
        "dropping_pairs": count,
        "repetitions": repetitions,
        "q": q,
        "clean_accuracy": DROPPING_ACCURACY,
        "deltas": [float(d) for d in deltas],
        "power_bh": found.tolist(),
        "power_single_test": single.tolist(),
        "half_power_delta_bh": _half_power(deltas, found),
        "half_power_delta_single_test": _half_power(deltas, single),
    }


def _half_power(deltas: Sequence[float], power: np.ndarray) -> float | None:
    """The smallest drop found half the time (linear interpolation); None if none is."""
    above = np.flatnonzero(power >= 0.5)
    if above.size == 0:
        return None
    i = int(above[0])
    if i == 0:
        return float(deltas[0])
    d0, d1, p0, p1 = deltas[i - 1], deltas[i], power[i - 1], power[i]
    return float(d0 + (0.5 - p0) * (d1 - d0) / (p1 - p0))


def rank_coverage(
    *,
    classes: int,
    per_class: int,
    models: int,
    repetitions: int,
    replicates: int,
    confidence: float,
    offsets_step: float,
    seed: int,
) -> dict[str, Any]:
    """Coverage of the rank intervals of :func:`~classwise.metrics.ranking.rank_models` for models
    of known true A, WCA and W10CR (see the module docstring)."""
    from classwise.metrics.outcomes import SampleOutcomes
    from classwise.metrics.ranking import rank_models

    rng = np.random.default_rng(seed)
    base = _class_accuracies(rng, classes)
    offsets = offsets_step * np.arange(models)
    # the true per-class accuracies: fixed for every repetition
    truth = expit(logit(base)[None, :] + offsets[:, None] + rng.normal(0.0, 0.3, size=(models, classes)))
    names = [f"model{m}" for m in range(models)]
    true_values = {
        "A": truth.mean(axis=1),
        "WCA": truth.min(axis=1),
        "W10CR": np.sort(truth, axis=1)[:, :10].mean(axis=1),
    }
    true_ranks = {metric: _ranks_of(values) for metric, values in true_values.items()}
    labels = np.repeat(np.arange(classes), per_class)
    ids = np.array([f"s{i}" for i in range(labels.size)])
    tallies: dict[str, dict[str, float]] = {
        metric: {"percentile": 0, "pairwise": 0, "all_percentile": 0, "all_pairwise": 0, "width": 0.0, "width_pairwise": 0.0}
        for metric in true_values
    }
    wrong_order = {metric: 0 for metric in true_values}
    separated = {metric: 0 for metric in true_values}
    for r in range(repetitions):
        shared = rng.random(labels.size)
        outcomes = {}
        for m, name in enumerate(names):
            own = rng.random(labels.size)
            draw = np.where(rng.random(labels.size) < RHO, shared, own)
            outcomes[name] = SampleOutcomes.from_correct(ids, labels, draw < truth[m][labels])
        ranking = rank_models(outcomes, ns=(10,), replicates=replicates, confidence=confidence, seed=seed + r)
        for metric in true_values:
            rows = ranking.table[ranking.table["metric"] == metric].set_index("model").loc[names]
            true = true_ranks[metric]
            inside = (rows["rank_low"].to_numpy() <= true) & (true <= rows["rank_high"].to_numpy())
            inside_pairwise = (rows["rank_low_pairwise"].to_numpy() <= true) & (true <= rows["rank_high_pairwise"].to_numpy())
            t = tallies[metric]
            t["percentile"] += inside.mean()
            t["pairwise"] += inside_pairwise.mean()
            t["all_percentile"] += bool(inside.all())
            t["all_pairwise"] += bool(inside_pairwise.all())
            t["width"] += float((rows["rank_high"] - rows["rank_low"]).mean())
            t["width_pairwise"] += float((rows["rank_high_pairwise"] - rows["rank_low_pairwise"]).mean())
            pairs = ranking.pairs[(ranking.pairs["metric"] == metric) & ranking.pairs["distinguishable"]]
            for a, b, difference in zip(pairs["a"], pairs["b"], pairs["difference"]):
                ia, ib = names.index(a), names.index(b)
                separated[metric] += 1
                wrong_order[metric] += (difference > 0) != (true_values[metric][ib] > true_values[metric][ia])
    coverage = {
        metric: {
            "true_values": true_values[metric].tolist(),
            "true_ranks": true_ranks[metric].tolist(),
            "coverage_percentile": t["percentile"] / repetitions,
            "coverage_pairwise": t["pairwise"] / repetitions,
            "all_models_percentile": t["all_percentile"] / repetitions,
            "all_models_pairwise": t["all_pairwise"] / repetitions,
            "mean_width_percentile": t["width"] / repetitions,
            "mean_width_pairwise": t["width_pairwise"] / repetitions,
            "pairs_separated_per_repetition": separated[metric] / repetitions,
            "separated_pairs_in_wrong_order": wrong_order[metric] / max(separated[metric], 1),
        }
        for metric, t in tallies.items()
    }
    return {
        "classes": classes,
        "per_class": per_class,
        "models": models,
        "offsets": offsets.tolist(),
        "repetitions": repetitions,
        "replicates": replicates,
        "confidence": confidence,
        "metrics": coverage,
    }


def _ranks_of(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return np.asarray(rankdata(-values, method="average"), dtype=np.float64)


def run(args: argparse.Namespace) -> dict[str, Any]:
    start = time.perf_counter()
    results: dict[str, Any] = {
        "seed": args.seed,
        "rho": RHO,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__},
        "null": [],
        "power": [],
        "ranks": [],
    }
    for pairing in ("paired", "unpaired"):
        for per_class in args.null_per_class:
            for share, drop in ((0.0, 0.0), (0.05, 0.3)):
                row = null_error_rates(
                    pairing, per_class, classes=args.classes, shifts=args.shifts, repetitions=args.null_repetitions, q=args.q,
                    dropping_share=share, drop=drop, seed=args.seed,
                )  # fmt: skip
                results["null"].append(row)
                print(
                    f"null {pairing:>8s} n={per_class:3d} drops {share:.2f}x{drop:.1f}: FWER bh {row['familywise_error']['bh']:.3f} "
                    f"holm {row['familywise_error']['holm']:.3f}; FDR bh {row['false_discovery_rate']['bh']:.3f} "
                    f"holm {row['false_discovery_rate']['holm']:.3f}; unadjusted {row['unadjusted_rejection_rate_of_nulls']:.4f}",
                    flush=True,
                )
    for pairing in ("paired", "unpaired"):
        for per_class in args.power_per_class:
            row = power_curve(
                pairing, per_class, classes=args.classes, shifts=args.shifts, repetitions=args.power_repetitions, q=args.q,
                share=0.01, deltas=DELTAS, seed=args.seed,
            )  # fmt: skip
            results["power"].append(row)
            print(
                f"power {pairing:>8s} n={per_class:3d}: half-power drop {row['half_power_delta_bh']} (BH), "
                f"{row['half_power_delta_single_test']} (one test)",
                flush=True,
            )
    for classes, repetitions in zip(args.rank_classes, args.rank_repetitions):
        row = rank_coverage(
            classes=classes, per_class=args.rank_per_class, models=args.rank_models, repetitions=repetitions,
            replicates=args.rank_replicates, confidence=0.95, offsets_step=args.rank_offset, seed=args.seed,
        )  # fmt: skip
        results["ranks"].append(row)
        for metric, m in row["metrics"].items():
            print(
                f"ranks C={classes} {metric:>5s}: coverage percentile {m['coverage_percentile']:.3f} "
                f"(all {m['all_models_percentile']:.3f}, width {m['mean_width_percentile']:.2f}), pairwise "
                f"{m['coverage_pairwise']:.3f} (all {m['all_models_pairwise']:.3f}, width {m['mean_width_pairwise']:.2f}); "
                f"wrong order {m['separated_pairs_in_wrong_order']:.3f} of {m['pairs_separated_per_repetition']:.1f} separated pairs",
                flush=True,
            )
    results["wall_s"] = time.perf_counter() - start
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench/class_drops_simulation.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", type=int, default=1_000)
    parser.add_argument("--shifts", type=int, default=10)
    parser.add_argument("--q", type=float, default=0.05)
    parser.add_argument("--null-per-class", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--null-repetitions", type=int, default=400)
    parser.add_argument("--power-per-class", type=int, nargs="+", default=[10, 50, 500])
    parser.add_argument("--power-repetitions", type=int, default=20)
    parser.add_argument("--rank-classes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rank-repetitions", type=int, nargs="+", default=[200, 40])
    parser.add_argument("--rank-per-class", type=int, default=50)
    parser.add_argument("--rank-models", type=int, default=5)
    parser.add_argument("--rank-replicates", type=int, default=500)
    parser.add_argument("--rank-offset", type=float, default=0.1, help="logit offset between successive models")
    args = parser.parse_args()
    results = run(args)
    write_json(args.out, results)
    print(f"written to {args.out} ({results['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
