"""The metric catalogue's kernels: each metric's value on the whole sample and on bootstrap
replicates, behind one signature per kind.

* ``kernel(inputs: SampleInputs, n) -> MetricResult``: the value on the whole sample;
* ``kernel(replicates: ReplicateCounts, n) -> MetricReplicates``: its value in every replicate.

``n`` is the ``n`` of a ``W{n}CR`` template and None for the others. The catalogue entry of a
metric (:mod:`classwise.metrics.catalogue`) names its two kernels; the suite and the bootstrap
call them in the catalogue's order. The public metric functions (:mod:`worst_class`,
:mod:`decisiveness`, :mod:`cfps`) keep their own signatures; the kernels adapt them. Work shared
by several metrics of a family (the decisiveness family's generalized means and bins) is
computed once per input, as a cached property.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.metrics import cfps as cfps_metrics
from classwise.metrics import worst_class as wc
from classwise.metrics.catalogue import DEFAULTS
from classwise.metrics.result import MetricReplicates, MetricResult
from classwise.metrics.stats import ClassificationStats

if TYPE_CHECKING:  # the decisiveness family's modules import scipy: only where it is computed
    from classwise.metrics import decisiveness as nelson
    from classwise.metrics.probabilities import Probabilities


# ----------------------------------------------------------------------------- whole sample


@dataclass(frozen=True)
class SampleInputs:
    """What the metrics of one scores file are computed from: the sufficient statistics and
    the ranking scores they came from (the worst-class family), the superclasses, k, and the
    probabilities, labels and parameters of the decisiveness family. A family's kernels need
    only its own part."""

    statistics: ClassificationStats | None = None
    scores: np.ndarray | None = None
    k: int = DEFAULTS.k
    superclasses: Mapping[str, Sequence[int]] | None = None
    probabilities: Probabilities | None = None
    labels: np.ndarray | None = None
    gamma: float = DEFAULTS.gamma
    bins: int = DEFAULTS.bins

    @property
    def stats(self) -> ClassificationStats:
        if self.statistics is None:
            raise TypeError("this metric is computed from classification statistics: give SampleInputs(statistics=...)")
        return self.statistics

    @cached_property
    def reported(self) -> nelson.NelsonMetrics:
        from classwise.metrics import decisiveness as nelson

        if self.probabilities is None or self.labels is None:
            raise TypeError("the decisiveness family needs SampleInputs(probabilities=..., labels=...)")
        return nelson.reported_metrics(self.probabilities.correct_class_log_prob(self.labels), gamma=self.gamma)

    @cached_property
    def measured(self) -> nelson.MeasuredCalibration:
        from classwise.metrics import decisiveness as nelson

        if self.probabilities is None or self.labels is None:
            raise TypeError("the decisiveness family needs SampleInputs(probabilities=..., labels=...)")
        return nelson.measured_metrics(self.probabilities, self.labels, gamma=self.gamma, n_bins=self.bins)


def accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.accuracy(inputs.stats)


def worst_class_accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.worst_class_accuracy(inputs.stats)


def worst_class_precision(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.worst_class_precision(inputs.stats)


def worst_superclass_accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    assert inputs.superclasses and inputs.scores is not None
    return wc.worst_superclass_accuracy(inputs.scores, inputs.stats, inputs.superclasses)


def worst_superclass_recall(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    assert inputs.superclasses
    return wc.worst_superclass_recall(inputs.stats, inputs.superclasses)


def worst_n_class_recall(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    assert n is not None
    return wc.worst_n_class_recall(inputs.stats, n)


def worst_n_class_recall_exact(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    assert n is not None
    return wc.worst_n_class_recall_exact(inputs.stats, n)


def worst_pair_accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.worst_pair_accuracy(inputs.stats)


def worst_pair_accuracy_balanced(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.worst_pair_accuracy(inputs.stats, balanced=True)


def topk_accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.topk_accuracy(inputs.stats, inputs.k)


def worst_class_topk_accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return wc.worst_class_topk_accuracy(inputs.stats, inputs.k)


def worst_n_class_topk_recall(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    assert n is not None
    return wc.worst_n_class_recall(inputs.stats, n, k=inputs.k)


def decisiveness(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return MetricResult(inputs.reported.decisiveness)


def geometric_accuracy(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return MetricResult(inputs.reported.geometric_accuracy)


def robustness(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return MetricResult(inputs.reported.robustness)


def decisiveness_measured(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return MetricResult(inputs.measured.metrics.decisiveness)


def geometric_accuracy_measured(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return MetricResult(inputs.measured.metrics.geometric_accuracy)


def robustness_measured(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    return MetricResult(inputs.measured.metrics.robustness)


def calibration_slope(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    from classwise.metrics import decisiveness as nelson

    return MetricResult(nelson.calibration_slope(inputs.reported, inputs.measured.metrics))


def cfps_max(inputs: SampleInputs, n: int | None = None) -> MetricResult:
    """CFPS_max from the stats' counts: under several correct labels per sample a false
    positive of ``c`` is a prediction of ``c`` outside its sample's set; an abstention is no
    prediction, so the errors are the misclassified samples."""
    stats = inputs.stats
    errors = stats.misclassified
    if errors == 0:
        return MetricResult(0.0, (), {"n_errors": 0})
    false_positives = stats.predicted - stats.precision_hits
    value, worst = cfps_metrics.cfps_max_rows(false_positives, np.float64(errors))
    return MetricResult(
        float(value), (int(worst),), wc.with_ties({"n_errors": errors}, cfps_metrics.tied_largest(false_positives))
    )


# ----------------------------------------------------------------------------- replicates


def _classes(valid: np.ndarray, where: np.ndarray) -> list[tuple[int, ...]]:
    return [(int(c),) for c in valid[where]]


@dataclass(frozen=True)
class ReplicateCounts:
    """The per-replicate counts of a bootstrap (``(B, ...)`` arrays stacked over its blocks,
    by name: ``hits1``, ``hitsk``, ``predicted``, ``precision_hits``, ``term_sums``, ...) and
    what they are counts of (:func:`classwise.metrics.bootstrap.bootstrap_replicates`)."""

    counts: Mapping[str, Any]
    b: int
    n: int
    """Samples."""
    c: int
    """Classes."""
    valid: np.ndarray
    """The classes with samples (the columns of ``hits1`` and ``hitsk``)."""
    support: np.ndarray
    """``(C,)`` samples per class."""
    superclass_names: Sequence[Any] = ()
    superclass_counts: np.ndarray | None = None
    superclass_members: np.ndarray | None = None
    """``(C, G)`` 0/1: class in superclass."""
    nelson_shifts: tuple[float, float, float] = (0.0, 0.0, 0.0)
    gamma: float = DEFAULTS.gamma

    def __getitem__(self, name: str) -> Any:
        return self.counts[name]

    @property
    def support_valid(self) -> np.ndarray:
        return self.support[self.valid]

    @cached_property
    def nelson(self) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Reported generalized means (decisiveness, geometric, robustness), the measured ones
        ``(B, 3)`` and the calibration slopes ``(B,)``."""
        from classwise.metrics import decisiveness as nelson

        term_sums, zeros = self["term_sums"], self["zeros"]
        reported = [
            nelson.generalized_mean_from_sums(term_sums[:, i], zeros, self.n, rho, self.nelson_shifts[i])
            for i, rho in enumerate(nelson.RHOS)
        ]
        n_correct, n_all = self["n_correct_bins"], self["n_all_bins"]
        measured = np.empty((self.b, 3))
        slope = np.empty(self.b)
        for r in range(self.b):
            metrics, _ = nelson.measured_from_counts(n_correct[r], n_all[r], self.gamma)
            measured[r] = (metrics.decisiveness, metrics.geometric_accuracy, metrics.robustness)
            slope[r] = nelson.calibration_slope(nelson.NelsonMetrics(reported[0][r], reported[1][r], reported[2][r]), metrics)
        return reported, measured, slope


def _replicates(
    values: np.ndarray, worst: list[tuple[Any, ...]] | None = None, shares: dict[tuple[Any, ...], float] | None = None
) -> MetricReplicates:
    return MetricReplicates(values, worst, shares)


def tie_shares(
    values: np.ndarray, extreme: np.ndarray, elements: Sequence[Any], *, counted: np.ndarray | None = None
) -> dict[tuple[Any, ...], float]:
    """Per element, the replicates in which it attains ``extreme`` (``values``: ``(B, E)``, one
    row per replicate; NaN never does), a replicate whose ``t`` elements tie counting ``1/t``
    for each; only the rows ``counted`` selects (default all). Vectorised over replicates and
    elements."""
    mask = values == extreme[:, None]
    if counted is not None:
        mask &= counted[:, None]
    tied = mask.sum(axis=1)
    weight = mask / np.maximum(tied, 1)[:, None]
    totals = weight.sum(axis=0)
    return {(elements[int(i)],): float(totals[i]) for i in np.flatnonzero(totals)}


def accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(np.divide(r["hits1"].sum(axis=1), r.n, dtype=np.float64))


def _worst_recall_replicates(hits: np.ndarray, r: ReplicateCounts) -> MetricReplicates:
    recall = hits / r.support_valid
    value, where = wc.worst_of_rows(recall)
    return _replicates(value, _classes(r.valid, where), tie_shares(recall, value, [int(c) for c in r.valid]))


def worst_class_accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _worst_recall_replicates(r["hits1"], r)


def worst_class_precision_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    predicted = r["predicted"]
    precision = np.full((r.b, r.c), np.nan)
    np.divide(r["precision_hits"], predicted, out=precision, where=predicted > 0)
    value, where = wc.worst_of_rows(precision)
    return _replicates(value, [(int(x),) for x in where], tie_shares(precision, value, range(r.c)))


def worst_superclass_accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    assert r.superclass_counts is not None
    return _worst_superclass_replicates(r["super_hits"], r.superclass_counts, r)


def _worst_superclass_replicates(hits: np.ndarray, counts: np.ndarray, r: ReplicateCounts) -> MetricReplicates:
    value, where = wc.worst_superclass_rows(hits, counts)
    ratio = np.full(hits.shape, np.nan)
    np.divide(hits, counts, out=ratio, where=np.broadcast_to(counts > 0, hits.shape))
    names = list(r.superclass_names)
    return _replicates(value, [(names[int(x)],) for x in where], tie_shares(ratio, value, names))


def worst_superclass_recall_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    members = r.superclass_members
    assert members is not None
    hits_full = np.zeros((r.b, r.c), dtype=np.int64)
    hits_full[:, r.valid] = r["hits1"]
    return _worst_superclass_replicates(hits_full @ members, r.support @ members, r)


def worst_n_class_recall_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    assert n is not None
    return _replicates(wc.worst_n_pooled_rows(r["hits1"], r.support_valid, n)[0])


def worst_n_class_recall_exact_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    assert n is not None
    return _replicates(wc.worst_n_pooled_exact_rows(r["hits1"], r.support_valid, n)[0])


def _pairs(r: ReplicateCounts, variant: str) -> MetricReplicates:
    stacked = r["pairs"]
    shares = {pair: share for pair, share in stacked[f"{variant}_shares"].items()}
    return _replicates(stacked[variant], [tuple(int(x) for x in p) for p in stacked[f"{variant}_pairs"]], shares)


def worst_pair_accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _pairs(r, "pooled")


def worst_pair_accuracy_balanced_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _pairs(r, "balanced")


def topk_accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(np.divide(r["hitsk"].sum(axis=1), r.n, dtype=np.float64))


def worst_class_topk_accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _worst_recall_replicates(r["hitsk"], r)


def worst_n_class_topk_recall_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    assert n is not None
    return _replicates(wc.worst_n_pooled_rows(r["hitsk"], r.support_valid, n)[0])


def decisiveness_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(np.asarray(r.nelson[0][0], dtype=np.float64))


def geometric_accuracy_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(np.asarray(r.nelson[0][1], dtype=np.float64))


def robustness_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(np.asarray(r.nelson[0][2], dtype=np.float64))


def decisiveness_measured_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(r.nelson[1][:, 0])


def geometric_accuracy_measured_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(r.nelson[1][:, 1])


def robustness_measured_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(r.nelson[1][:, 2])


def calibration_slope_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    return _replicates(r.nelson[2])


def cfps_max_replicates(r: ReplicateCounts, n: int | None = None) -> MetricReplicates:
    # the misclassified draws: every draw that names a class, less the correct ones (abstentions name none)
    errors = r["predicted"].sum(axis=1) - r["precision_hits"].sum(axis=1)
    false_positives = r["predicted"] - r["precision_hits"]
    value, where = cfps_metrics.cfps_max_rows(false_positives, errors)
    # equal false-positive counts are equal CFPS; a replicate without errors names no class
    most = false_positives.max(axis=1)
    shares = tie_shares(false_positives, most, range(r.c), counted=errors > 0)
    return _replicates(value, [(int(x),) if x >= 0 else () for x in where], shares)
