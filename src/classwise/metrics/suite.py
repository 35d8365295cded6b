"""Every metric of the three metric papers, computed from one (scores, labels) pair.

Sufficient statistics are computed once (:func:`compute_stats` for the argmax/rank based
metrics, :class:`Probabilities` for the probability metrics) and shared by every metric.
Metric names follow the ``classwise metrics`` output format documented in docs/library.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.metrics import bootstrap as boot
from classwise.metrics import cfps as cfps_metrics
from classwise.metrics import decisiveness as nelson
from classwise.metrics import worst_class as wc
from classwise.metrics.intervals import check_confidence, proportion_interval
from classwise.metrics.names import LABEL_SETS_METRICS, LABEL_SETS_REASON, score_metric_names
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.result import MetricResult
from classwise.metrics.stats import ClassificationStats, compute_stats
from classwise.validation import ScoreKind

DEFAULT_NS: tuple[int, ...] = (10, 100)


def argmax_scores(scores: np.ndarray, kind: ScoreKind) -> np.ndarray:
    """Scores whose argmax and ranks define predictions: logits as given, log of probabilities.

    Ranking probabilities by their logarithm changes no order, but keeps one code path.
    """
    if kind == "logits":
        return scores
    with np.errstate(divide="ignore"):
        return np.log(scores.astype(np.float64, copy=False))


def worst_class_family(
    stats: ClassificationStats,
    scores: np.ndarray,
    *,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    k: int = 5,
    ns: Sequence[int] = DEFAULT_NS,
) -> dict[str, MetricResult]:
    """The metrics of Bitterwolf et al., 2022 (Table 1 rows), plus the exact and balanced variants.

    ``W{n}CR`` is the paper's heuristic (the n individually worst classes, pooled) and
    ``W{n}CR_exact`` the true minimum over n-subsets. Metrics that are trivial are left out
    (:func:`skipped_worst_class_metrics` says which and why): W{n}CR for n at least the number
    of classes with samples (they range over those), and the top-k metrics for k >= C.
    """
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}", field="k")
    c = stats.n_classes
    valid_ns = [n for n in ns if 1 <= n < classes_with_samples(stats)]
    out: dict[str, MetricResult] = {
        "A": wc.accuracy(stats),
        "WCA": wc.worst_class_accuracy(stats),
        "WCP": wc.worst_class_precision(stats),
    }
    if superclasses:
        out["WSupCA"] = wc.worst_superclass_accuracy(scores, stats, superclasses)
        out["WSupCR"] = wc.worst_superclass_recall(stats, superclasses)
    for n in valid_ns:
        out[f"W{n}CR"] = wc.worst_n_class_recall(stats, n)
    for n in valid_ns:
        out[f"W{n}CR_exact"] = wc.worst_n_class_recall_exact(stats, n)
    out["W2CA"] = wc.worst_pair_accuracy(stats)
    out["W2CA_balanced"] = wc.worst_pair_accuracy(stats, balanced=True)
    if k < c:
        out[f"A@{k}"] = wc.topk_accuracy(stats, k)
        out[f"WCA@{k}"] = wc.worst_class_topk_accuracy(stats, k)
        for n in valid_ns:
            out[f"W{n}CR@{k}"] = wc.worst_n_class_recall(stats, n, k=k)
    return out


def classes_with_samples(stats: ClassificationStats) -> int:
    """How many classes have at least one sample (a folder may hold part of a label space)."""
    return int(np.count_nonzero(stats.support))


def skipped_worst_class_metrics(n_classes: int, *, k: int, ns: Sequence[int], with_samples: int | None = None) -> dict[str, str]:
    """The metrics :func:`worst_class_family` leaves out for ``n_classes`` classes of which
    ``with_samples`` (default: all) have samples, with why."""
    skipped: dict[str, str] = {}
    present = n_classes if with_samples is None else with_samples
    which = "classes" if present == n_classes else "classes with samples"
    for n in ns:
        if n >= present:
            reason = f"n = {n} >= {present} {which}: the n worst classes would be every class"
            for name in (f"W{n}CR", f"W{n}CR_exact", f"W{n}CR@{k}"):
                skipped[name] = reason
    if k >= n_classes:
        reason = f"k = {k} >= {n_classes} classes: every label is among the top k, so the value is 1"
        for name in (f"A@{k}", f"WCA@{k}", *(f"W{n}CR@{k}" for n in ns if n < present)):
            skipped[name] = reason
    return skipped


def class_false_positive_scores(stats: ClassificationStats) -> np.ndarray:
    """CFPS per class (Medi et al., 2024, Eq. 1) from the stats' counts:
    ``(predicted_c - correct predictions of c) / errors``, all 0 without errors. With one label
    per sample this is :func:`classwise.metrics.cfps.class_false_positive_score` of the
    confusion; under several correct labels a false positive of ``c`` is a prediction of ``c``
    outside its sample's set."""
    errors = stats.errors
    if errors == 0:
        return np.zeros(stats.n_classes, dtype=np.float64)
    return (stats.predicted - stats.precision_hits).astype(np.float64) / float(errors)


def cfps_max_of_stats(stats: ClassificationStats) -> MetricResult:
    """:func:`classwise.metrics.cfps.cfps_max` from the stats' counts (see
    :func:`class_false_positive_scores`)."""
    errors = stats.errors
    if errors == 0:
        return MetricResult(0.0, (), {"n_errors": 0})
    value, worst = cfps_metrics.cfps_max_rows(stats.predicted - stats.precision_hits, np.float64(errors))
    return MetricResult(float(value), (int(worst),), {"n_errors": errors})


def without_pair_metrics(
    metrics: Mapping[str, MetricResult], skipped: Mapping[str, str]
) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """``metrics`` under a view of label sets less :data:`LABEL_SETS_METRICS`, which join
    ``skipped`` with :data:`LABEL_SETS_REASON` (WSupCA only where superclasses were given)."""
    kept = {name: result for name, result in metrics.items() if name not in LABEL_SETS_METRICS}
    reasons = {name: LABEL_SETS_REASON for name in LABEL_SETS_METRICS if name != "WSupCA" or name in metrics}
    return kept, {**skipped, **reasons}


#: Why the metrics that rank or weigh classes by score are missing for hard predictions.
HARD_PREDICTIONS_REASON = "hard predictions only: no scores to rank the classes by"


def without_score_metrics(
    metrics: Mapping[str, MetricResult], skipped: Mapping[str, str], *, k: int, ns: Sequence[int]
) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """``metrics`` of hard predictions (their one-hot encoding) less those that need scores,
    which join ``skipped`` with :data:`HARD_PREDICTIONS_REASON` (a metric already skipped as
    trivial keeps its reason)."""
    dropped = set(score_metric_names(k, ns))
    kept = {name: result for name, result in metrics.items() if name not in dropped}
    reasons = {name: HARD_PREDICTIONS_REASON for name in score_metric_names(k, ns) if name != "WSupCA" or name in metrics}
    return kept, {**reasons, **skipped}


def nelson_family(
    probabilities: Probabilities,
    labels: np.ndarray,
    *,
    gamma: float = 0.005,
    bins: int = 10,
) -> tuple[dict[str, MetricResult], nelson.MeasuredCalibration]:
    """Reported and measured decisiveness / geometric accuracy / robustness and the slope."""
    reported = nelson.reported_metrics(probabilities.correct_class_log_prob(labels), gamma=gamma)
    measured = nelson.measured_metrics(probabilities, labels, gamma=gamma, n_bins=bins)
    slope = nelson.calibration_slope(reported, measured.metrics)
    out = {
        "decisiveness": MetricResult(reported.decisiveness),
        "geometric_accuracy": MetricResult(reported.geometric_accuracy),
        "robustness": MetricResult(reported.robustness),
        "decisiveness_measured": MetricResult(measured.metrics.decisiveness),
        "geometric_accuracy_measured": MetricResult(measured.metrics.geometric_accuracy),
        "robustness_measured": MetricResult(measured.metrics.robustness),
        "calibration_slope": MetricResult(slope),
    }
    return out, measured


@dataclass(frozen=True)
class BootstrapSettings:
    """How the bootstrap of :func:`evaluate` was run."""

    replicates: int
    confidence: float
    seed: int

    @classmethod
    def checked(cls, replicates: object, confidence: object, seed: object) -> BootstrapSettings:
        """The settings after :func:`boot.check_replicates` and its siblings (``InputError``
        naming the bad one)."""
        return cls(boot.check_replicates(replicates), check_confidence(confidence), boot.check_seed(seed))

    def to_json(self) -> dict[str, Any]:
        return {
            "replicates": self.replicates,
            "confidence": self.confidence,
            "seed": self.seed,
            "resampling": "stratified by true class",
            "ci": "percentile",
            "ci_bound": "exact bound for minima (docs/uncertainty.md)",
        }


@dataclass(frozen=True)
class Evaluation:
    """Every metric of one scores file, with the statistics they were computed from, and
    (when asked for) their bootstrap intervals."""

    metrics: dict[str, MetricResult]
    stats: ClassificationStats
    calibration: nelson.MeasuredCalibration
    skipped: dict[str, str] = field(default_factory=dict)
    """Metrics left out as trivial for this many classes, with why."""
    bootstrap: dict[str, boot.BootstrapSummary] | None = None
    bootstrap_settings: BootstrapSettings | None = None
    bootstrap_replicates: dict[str, boot.MetricReplicates] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``classwise metrics`` output layout (values are fractions in [0, 1])."""
        metrics = {name: result.to_json() for name, result in self.metrics.items()}
        out: dict[str, Any] = {
            "n_samples": self.stats.n_samples,
            "n_classes": self.stats.n_classes,
            "metrics": metrics,
            "skipped": dict(self.skipped),
        }
        if self.bootstrap is not None and self.bootstrap_settings is not None:
            out["bootstrap"] = self.bootstrap_settings.to_json()
            for name, summary in self.bootstrap.items():
                if name in metrics:  # not the metrics skipped as trivial
                    metrics[name].update(summary.to_json())
        return out


def evaluate(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    kind: ScoreKind = "logits",
    superclasses: Mapping[str, Sequence[int]] | None = None,
    gamma: float = 0.005,
    bins: int = 10,
    k: int = 5,
    ns: Sequence[int] = DEFAULT_NS,
    bootstrap: int | None = None,
    confidence: float = boot.DEFAULT_CONFIDENCE,
    seed: int = boot.DEFAULT_SEED,
    workers: int | None = None,
) -> Evaluation:
    """Compute every metric; argmax metrics use logits (or log-probabilities), the
    probability metrics use the softmax (or the given probabilities).

    ``bootstrap = B`` adds, per metric, the percentile interval of ``B`` stratified
    bootstrap replicates at ``confidence`` (seeded by ``seed``; ``workers`` threads, the
    result does not depend on their number), the shares of the most frequent worst classes,
    and the exact bounds of the recall-type minima (:mod:`classwise.metrics.bootstrap`).
    Off by default."""
    confidence = check_confidence(confidence)
    if bootstrap is not None:
        bootstrap = boot.check_replicates(bootstrap)
        seed = boot.check_seed(seed)
    ranked = argmax_scores(scores, kind)
    stats = compute_stats(ranked, labels)
    metrics = worst_class_family(stats, ranked, superclasses=superclasses, k=k, ns=ns)
    probabilities = Probabilities.from_scores(scores, kind)
    nelson_metrics, calibration = nelson_family(probabilities, labels, gamma=gamma, bins=bins)
    metrics.update(nelson_metrics)
    metrics["CFPS_max"] = cfps_metrics.cfps_max(stats.confusion)
    skipped = skipped_worst_class_metrics(stats.n_classes, k=k, ns=ns, with_samples=classes_with_samples(stats))
    if bootstrap is None:
        return Evaluation(metrics=metrics, stats=stats, calibration=calibration, skipped=skipped)
    result = bootstrap_metrics(
        ranked, stats, probabilities, settings=BootstrapSettings(bootstrap, confidence, seed),
        superclasses=superclasses, gamma=gamma, bins=bins, k=k, ns=ns, workers=workers,
    )  # fmt: skip
    return Evaluation(
        metrics=metrics,
        stats=stats,
        calibration=calibration,
        skipped=skipped,
        bootstrap=result.summaries,
        bootstrap_settings=result.settings,
        bootstrap_replicates=result.replicates,
    )


@dataclass(frozen=True)
class BootstrapResult:
    """The replicates of every metric and their summaries (what the JSON gets)."""

    settings: BootstrapSettings
    replicates: dict[str, boot.MetricReplicates]
    summaries: dict[str, boot.BootstrapSummary]

    def attach(self, metrics: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """``metrics`` (name -> the JSON entry of a metric) with each entry's ``ci``,
        ``worst_probability`` and ``ci_bound`` added; metrics without replicates unchanged."""
        return {
            name: {**entry, **self.summaries[name].to_json()} if name in self.summaries else entry
            for name, entry in metrics.items()
        }


def worst_class_shares(replicates: Mapping[str, boot.MetricReplicates], n_classes: int) -> dict[str, np.ndarray]:
    """Per class, the share of replicates in which it has the lowest recall (the class WCA
    names) and the lowest precision (WCP's): the per-class CSV's worst-class probabilities."""
    return {
        "worst_recall_probability": boot.worst_shares(replicates["WCA"], n_classes),
        "worst_precision_probability": boot.worst_shares(replicates["WCP"], n_classes),
    }


def bootstrap_metrics(
    ranked: np.ndarray,
    stats: ClassificationStats,
    probabilities: Probabilities,
    *,
    settings: BootstrapSettings,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    gamma: float = 0.005,
    bins: int = 10,
    k: int = 5,
    ns: Sequence[int] = DEFAULT_NS,
    workers: int | None = None,
    pairs: bool = True,
) -> BootstrapResult:
    """The stratified bootstrap of every metric of :func:`evaluate` (``ranked``: the
    scores ``stats`` were computed from; ``pairs=False``: without W2CA), summarised at
    ``settings.confidence`` with the exact bounds of the recall-type minima
    (:mod:`classwise.metrics.bootstrap`)."""
    replicates = boot.bootstrap_replicates(
        ranked, stats, probabilities, superclasses=superclasses, gamma=gamma, bins=bins, k=k, ns=ns,
        replicates=settings.replicates, seed=settings.seed, workers=workers, pairs=pairs,
    )  # fmt: skip
    bounds = boot.minimum_bounds(stats, k=k, ns=ns, confidence=settings.confidence)
    summaries = boot.summarize(replicates, confidence=settings.confidence, bounds=bounds)
    return BootstrapResult(settings, replicates, summaries)


def per_class_table(
    stats: ClassificationStats,
    *,
    k: int = 5,
    class_names: Sequence[str] | np.ndarray | None = None,
    confidence: float = 0.95,
    interval: str = "clopper-pearson",
    worst_shares: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per class: support, recall, precision, top-k recall and CFPS, then the
    ``confidence`` intervals of recall (hits out of the class's support) and precision (hits
    out of the class's predictions), Clopper-Pearson (exact) or Wilson; empty where the
    ratio is undefined.  ``worst_shares`` (column name -> one share per class, e.g.
    :func:`worst_class_shares`) adds columns last."""
    names = list(class_names) if class_names is not None else [str(i) for i in range(stats.n_classes)]
    predicted = stats.predicted
    recall_low, recall_high = proportion_interval(stats.hits, stats.support, confidence, interval)
    precision_low, precision_high = proportion_interval(stats.precision_hits, predicted, confidence, interval)
    extra = {name: np.asarray(shares, dtype=np.float64) for name, shares in (worst_shares or {}).items()}
    return pd.DataFrame(
        {
            "class": np.arange(stats.n_classes),
            "name": names,
            "support": stats.support,
            "predicted": predicted,
            "recall": wc.class_recall(stats),
            "precision": wc.class_precision(stats),
            f"top{k}_recall": wc.class_topk_recall(stats, k),
            "cfps": class_false_positive_scores(stats),
            "recall_ci_low": recall_low,
            "recall_ci_high": recall_high,
            "precision_ci_low": precision_low,
            "precision_ci_high": precision_high,
            **extra,
        }
    )
