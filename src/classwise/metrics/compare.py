"""Paired bootstrap comparison of two models evaluated on the same samples.

Both models' metrics are recomputed on the same stratified replicates (same draws: same
labels, same seed; :mod:`classwise.metrics.bootstrap`), so the replicate differences
``B - A`` keep the pairing of the samples.  Per metric:

* ``difference``: the full-sample ``B - A``;
* ``ci``: the percentile interval of the replicate differences;
* ``p_value``: two-sided, from the replicate differences ``d*``:
  ``min(1, 2 min(1 + #{d* <= 0}, 1 + #{d* >= 0}) / (1 + B))``, i.e. twice the share of the
  bootstrap distribution on the far side of 0 (the percentile interval at level
  ``1 - p`` just reaches 0), with the usual ``+1`` so that it is never 0.  A model compared
  with itself has every ``d* = 0`` and gets ``p = 1``.  Replicates where the metric is
  undefined for either model (NaN) are left out.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from classwise.errors import InputError
from classwise.logits_io import ScoresFile
from classwise.metrics import bootstrap as boot
from classwise.metrics.bootstrap import BootstrapSettings
from classwise.metrics.catalogue import DEFAULTS, MetricParameters
from classwise.metrics.intervals import percentile_interval
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.suite import argmax_scores, evaluate
from classwise.sample_ids import sample_id_positions

__all__ = ["MetricComparison", "Comparison", "align", "compare", "compare_models", "paired_p_value"]


@dataclass(frozen=True)
class MetricComparison:
    a: float
    b: float
    difference: float
    ci: tuple[float, float]
    p_value: float

    def to_json(self) -> dict[str, Any]:
        return {
            "a": _finite(self.a),
            "b": _finite(self.b),
            "difference": _finite(self.difference),
            "ci": [_finite(self.ci[0]), _finite(self.ci[1])],
            "p_value": _finite(self.p_value),
        }


@dataclass(frozen=True)
class Comparison:
    n_samples: int
    n_classes: int
    replicates: int
    confidence: float
    seed: int
    metrics: dict[str, MetricComparison]

    def to_json(self) -> dict[str, Any]:
        return {
            "n_samples": self.n_samples,
            "n_classes": self.n_classes,
            "bootstrap": {
                "replicates": self.replicates,
                "confidence": self.confidence,
                "seed": self.seed,
                "resampling": "stratified by true class, paired (the same draws for both models)",
                "ci": "percentile of the replicate differences B - A",
            },
            "metrics": {name: m.to_json() for name, m in self.metrics.items()},
        }


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def paired_p_value(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value of replicate differences (see the module docstring)."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size == 0:
        return float("nan")
    at_most = int(np.count_nonzero(d <= 0))
    at_least = int(np.count_nonzero(d >= 0))
    return float(min(1.0, 2.0 * min(at_most + 1, at_least + 1) / (d.size + 1)))


def align(first: ScoresFile, second: ScoresFile) -> ScoresFile:
    """``second`` with its rows in the order of ``first``'s ``sample_ids``.

    Raises :class:`InputError` (naming ``second``'s file) unless both files hold the same
    set of unique sample ids with the same labels and the same number of classes.
    """
    where = second.path
    if second.n_classes != first.n_classes:
        raise InputError(f"has {second.n_classes} classes but {first.path} has {first.n_classes}", path=where, field=second.kind)
    order = sample_id_positions(
        first.sample_ids,
        second.sample_ids,
        path=where,
        field="sample_ids",
        available_name=str(where),
        exact=True,
        wanted_name=str(first.path),
        wanted_path=first.path,
        missing=f"the two files must hold the same samples: {{count}} sample ids of {first.path} are missing",
        extra=f"{{count}} are not in {first.path}",
    )
    ids_a = first.sample_ids
    labels = second.labels[order]
    if not np.array_equal(labels, first.labels):
        bad = int(np.flatnonzero(labels != first.labels)[0])
        raise InputError(
            f"sample {str(ids_a[bad])!r} has label {int(labels[bad])} here but {int(first.labels[bad])} in {first.path}",
            path=where,
            field="labels",
        )
    return dataclasses.replace(second.rows(order), labels=labels, sample_ids=ids_a, extra={})


def compare(
    first: ScoresFile,
    second: ScoresFile,
    *,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    parameters: MetricParameters = DEFAULTS,
    bootstrap: BootstrapSettings = boot.DEFAULT_BOOTSTRAP,
    workers: int | None = None,
) -> Comparison:
    """Every metric of ``second`` minus ``first`` with paired bootstrap intervals and
    p-values; ``second`` is matched to ``first`` by sample id (:func:`align`). ``parameters``:
    the metrics' (those of :func:`~classwise.metrics.suite.evaluate`); ``bootstrap``: the
    replicates both models share, their seed and the intervals' confidence (default 1000,
    seed 0, 0.95)."""
    pairs = compare_models(
        {"a": first, "b": second}, superclasses=superclasses, parameters=parameters, bootstrap=bootstrap, workers=workers
    )
    return pairs[("a", "b")]


def compare_models(
    files: Mapping[str, ScoresFile],
    *,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    parameters: MetricParameters = DEFAULTS,
    bootstrap: BootstrapSettings = boot.DEFAULT_BOOTSTRAP,
    workers: int | None = None,
) -> dict[tuple[str, str], Comparison]:
    """:func:`compare` of every pair of models: ``(a, b) -> b minus a`` for ``a`` before
    ``b`` in the order of ``files`` (model name -> scores).  Every file is matched to the
    first by sample id (:func:`align`) and bootstrapped once, on the same draws.  A pair is
    compared on the metrics both models give (hard predictions give no metric that needs
    scores; :func:`~classwise.metrics.suite.evaluate`)."""
    if len(files) < 2:
        raise InputError(f"expected at least two models to compare, got {len(files)}", field="models")
    names = list(files)
    reference = files[names[0]]
    values, reps = {}, {}
    for name in names:
        f = reference if name == names[0] else align(reference, files[name])
        top_k = f.top_k if f.hard_predictions else None
        evaluation = evaluate(
            f.scores, f.labels, kind=f.kind, superclasses=superclasses, parameters=parameters, top_k=top_k,
            abstained=f.abstained,
        )  # fmt: skip
        probabilities = Probabilities.from_scores(f.scores, f.kind)
        values[name] = {metric: result.value for metric, result in evaluation.metrics.items()}
        reps[name] = boot.bootstrap_replicates(
            argmax_scores(f.scores, f.kind), evaluation.stats, probabilities, superclasses=superclasses,
            parameters=parameters, bootstrap=bootstrap, workers=workers, pairs=top_k is None, top_k=top_k,
        )  # fmt: skip
    out = {}
    for a, b in itertools.combinations(names, 2):
        metrics = {}
        for metric in (m for m in values[a] if m in values[b]):  # hard predictions lack what needs scores
            d = reps[b][metric].values - reps[a][metric].values
            metrics[metric] = MetricComparison(
                a=values[a][metric],
                b=values[b][metric],
                difference=values[b][metric] - values[a][metric],
                ci=percentile_interval(d, bootstrap.confidence),
                p_value=paired_p_value(d),
            )
        out[(a, b)] = Comparison(
            n_samples=int(reference.labels.shape[0]),
            n_classes=reference.n_classes,
            replicates=bootstrap.replicates,
            confidence=bootstrap.confidence,
            seed=bootstrap.seed,
            metrics=metrics,
        )
    return out
