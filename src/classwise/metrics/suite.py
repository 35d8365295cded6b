"""Every metric of the three metric papers, computed from one (scores, labels) pair.

Sufficient statistics are computed once (:func:`compute_stats` for the argmax/rank based
metrics, :class:`Probabilities` for the probability metrics) and shared by every metric.
Metric names follow the ``classwise metrics`` output format documented in docs/library.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.errors import InputError
from classwise.metrics import bootstrap as boot
from classwise.metrics import catalogue, kernels
from classwise.metrics import decisiveness as nelson
from classwise.metrics import worst_class as wc
from classwise.metrics.bootstrap import BootstrapSettings as BootstrapSettings  # importable here, where it began
from classwise.metrics.catalogue import DEFAULTS, LABEL_SETS_REASON, MetricParameters
from classwise.metrics.catalogue import HARD_PREDICTIONS_REASON as HARD_PREDICTIONS_REASON  # re-exported
from classwise.metrics.cfps import false_positive_scores
from classwise.metrics.intervals import proportion_interval
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.result import MetricResult
from classwise.metrics.stats import ClassificationStats, compute_stats, ratio
from classwise.validation import ScoreKind

if TYPE_CHECKING:
    import pandas as pd


def argmax_scores(scores: np.ndarray, kind: ScoreKind) -> np.ndarray:
    """Scores whose argmax and ranks define predictions: logits as given, log of probabilities.

    Ranking probabilities by their logarithm changes no order, but keeps one code path.
    """
    if kind == "logits":
        return scores
    with np.errstate(divide="ignore"):
        return np.log(scores.astype(np.float64, copy=False))


def compute_family(
    family: catalogue.Family, inputs: kernels.SampleInputs, *, ns: Sequence[int] = DEFAULTS.ns
) -> dict[str, MetricResult]:
    """Every metric of a catalogue family on ``inputs``, in the catalogue's order: the
    superclass metrics only with superclasses, the top-k ones only for ``k < C``, ``W{n}CR``
    for the given ``ns``."""
    out: dict[str, MetricResult] = {}
    for entry in catalogue.entries(family):
        if entry.needs_superclasses and not inputs.superclasses:
            continue
        if entry.over_k and inputs.k >= inputs.stats.n_classes:
            continue
        for name, n in entry.instances(k=inputs.k, ns=ns):
            out[name] = catalogue.kernel(entry.compute)(inputs, n)
    return out


def worst_class_family(
    stats: ClassificationStats,
    scores: np.ndarray,
    *,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    k: int = DEFAULTS.k,
    ns: Sequence[int] = DEFAULTS.ns,
) -> dict[str, MetricResult]:
    """The metrics of Bitterwolf et al., 2022 (Table 1 rows), plus the exact and balanced variants
    (the catalogue's ``worst_class`` family).

    ``W{n}CR`` is the paper's heuristic (the n individually worst classes, pooled) and
    ``W{n}CR_exact`` the true minimum over n-subsets. Metrics that are trivial are left out
    (:func:`skipped_worst_class_metrics` says which and why): W{n}CR for n at least the number
    of classes with samples (they range over those), and the top-k metrics for k >= C.
    """
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}", field="k")
    valid_ns = [n for n in ns if 1 <= n < classes_with_samples(stats)]
    inputs = kernels.SampleInputs(statistics=stats, scores=scores, k=k, superclasses=superclasses)
    return compute_family("worst_class", inputs, ns=valid_ns)


def classes_with_samples(stats: ClassificationStats) -> int:
    """How many classes have at least one sample (a folder may hold part of a label space)."""
    return int(np.count_nonzero(stats.support))


def skipped_worst_class_metrics(n_classes: int, *, k: int, ns: Sequence[int], with_samples: int | None = None) -> dict[str, str]:
    """The metrics :func:`worst_class_family` leaves out for ``n_classes`` classes of which
    ``with_samples`` (default: all) have samples, with why."""
    return catalogue.skipped_for_class_count(n_classes, k=k, ns=ns, with_samples=with_samples)


def class_false_positive_scores(stats: ClassificationStats) -> np.ndarray:
    """CFPS per class (Medi et al., 2024, Eq. 1) from the stats' counts:
    ``(predicted_c - correct predictions of c) / misclassified``, all 0 without
    misclassifications. With one label per sample this is
    :func:`classwise.metrics.cfps.class_false_positive_score` of the confusion (which leaves
    abstentions out: they are no prediction of any class); under several correct labels a
    false positive of ``c`` is a prediction of ``c`` outside its sample's set."""
    return false_positive_scores(stats.predicted, stats.precision_hits, stats.misclassified)


def cfps_max_of_stats(stats: ClassificationStats) -> MetricResult:
    """:func:`classwise.metrics.cfps.cfps_max` from the stats' counts (see
    :func:`class_false_positive_scores`)."""
    return compute_family("cfps", kernels.SampleInputs(statistics=stats))["CFPS_max"]


def without_pair_metrics(
    metrics: Mapping[str, MetricResult], skipped: Mapping[str, str]
) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """``metrics`` under a view of label sets less those the catalogue marks undefined there,
    which join ``skipped`` with :data:`LABEL_SETS_REASON` (WSupCA only where superclasses were
    given)."""
    undefined = catalogue.label_sets_metric_names("worst_class")
    kept = {name: result for name, result in metrics.items() if name not in undefined}
    reasons = {name: LABEL_SETS_REASON for name in undefined if name != "WSupCA" or name in metrics}
    return kept, {**skipped, **reasons}


def without_score_metrics(
    metrics: Mapping[str, MetricResult],
    skipped: Mapping[str, str],
    *,
    k: int,
    ns: Sequence[int],
    top_k: int = 1,
    family: catalogue.Family | None = "worst_class",
) -> tuple[dict[str, MetricResult], dict[str, str]]:
    """``metrics`` of hard predictions of the ``top_k`` top-ranked classes per sample (their
    encoding by rank, :func:`classwise.logits_io.ranked_scores`; 1: the predicted class) less
    those they cannot give (of one family, or all): the metrics that need scores, and the top-k
    metrics when ``top_k < k``. They join ``skipped`` with why (:data:`HARD_PREDICTIONS_REASON`
    for one predicted class; a metric already skipped as trivial keeps its reason)."""
    unavailable = catalogue.unavailable_for_hard_predictions(top_k, k=k, ns=ns, family=family)
    kept = {name: result for name, result in metrics.items() if name not in unavailable}
    reasons = {name: why for name, why in unavailable.items() if name != "WSupCA" or name in metrics}
    return kept, {**reasons, **skipped}


def class_coverage(stats: ClassificationStats) -> np.ndarray:
    """``(C,)`` per class, the share of its samples on which the model gave a prediction (did
    not abstain); NaN for a class without samples."""
    answered = np.bincount(stats.labels[~stats.abstained], minlength=stats.n_classes)
    return ratio(answered, stats.support)


def coverage_json(stats: ClassificationStats) -> dict[str, Any]:
    """The ``coverage`` block of a metrics JSON: the share of samples with a prediction and the
    number of abstentions (which every accuracy and recall counts as errors)."""
    return {"value": (stats.n_samples - stats.n_abstained) / stats.n_samples, "n_abstained": stats.n_abstained}


def nelson_family(
    probabilities: Probabilities,
    labels: np.ndarray,
    *,
    gamma: float = DEFAULTS.gamma,
    bins: int = DEFAULTS.bins,
) -> tuple[dict[str, MetricResult], nelson.MeasuredCalibration]:
    """Reported and measured decisiveness / geometric accuracy / robustness and the slope
    (the catalogue's ``decisiveness`` family), and the measured calibration they came from."""
    inputs = kernels.SampleInputs(probabilities=probabilities, labels=labels, gamma=gamma, bins=bins)
    return compute_family("decisiveness", inputs), inputs.measured


@dataclass(frozen=True)
class Evaluation:
    """Every metric of one scores file, with the statistics they were computed from, and
    (when asked for) their bootstrap intervals."""

    metrics: dict[str, MetricResult]
    stats: ClassificationStats
    calibration: nelson.MeasuredCalibration | None
    """The measured calibration of the decisiveness family (None for hard predictions)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Metrics left out as trivial for this many classes, or that the outputs cannot give, with why."""
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
        if self.stats.n_abstained:
            out["coverage"] = coverage_json(self.stats)
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
    parameters: MetricParameters = DEFAULTS,
    bootstrap: BootstrapSettings | None = None,
    workers: int | None = None,
    top_k: int | None = None,
    abstained: np.ndarray | None = None,
) -> Evaluation:
    """Compute every metric; argmax metrics use logits (or log-probabilities), the
    probability metrics use the softmax (or the given probabilities). ``parameters``: the
    metrics' k, n, gamma and bins (default :data:`~classwise.metrics.catalogue.DEFAULTS`).

    ``bootstrap = BootstrapSettings(B, confidence, seed)`` adds, per metric, the percentile
    interval of ``B`` stratified bootstrap replicates at ``confidence`` (seeded by ``seed``;
    ``workers`` threads, the result does not depend on their number), the shares of the most
    frequent worst classes, and the exact bounds of the recall-type minima
    (:mod:`classwise.metrics.bootstrap`). Off by default.

    Hard predictions: ``top_k`` says that ``scores`` encode, by rank, the ``top_k`` classes a
    model named per sample (:func:`classwise.logits_io.ranked_scores`; 1: its prediction), and
    ``abstained`` (``(N,)`` bool) the samples on which it named none. The metrics the
    predictions cannot give (:func:`without_score_metrics`) are listed under ``skipped``;
    abstentions count as errors and are no class's prediction (:mod:`classwise.metrics.stats`),
    and the JSON gets a ``coverage`` block."""
    k, ns = parameters.k, parameters.ns
    ranked = argmax_scores(scores, kind)
    stats = compute_stats(ranked, labels, abstained=abstained)
    metrics = worst_class_family(stats, ranked, superclasses=superclasses, k=k, ns=ns)
    probabilities = Probabilities.from_scores(scores, kind)
    calibration = None
    if top_k is None:
        nelson_metrics, calibration = nelson_family(probabilities, labels, gamma=parameters.gamma, bins=parameters.bins)
        metrics.update(nelson_metrics)
    metrics.update(compute_family("cfps", kernels.SampleInputs(statistics=stats)))
    skipped = skipped_worst_class_metrics(stats.n_classes, k=k, ns=ns, with_samples=classes_with_samples(stats))
    if top_k is not None:
        metrics, skipped = without_score_metrics(metrics, skipped, k=k, ns=ns, top_k=top_k, family=None)
    if bootstrap is None:
        return Evaluation(metrics=metrics, stats=stats, calibration=calibration, skipped=skipped)
    result = bootstrap_metrics(
        ranked, stats, probabilities, bootstrap=bootstrap, superclasses=superclasses, parameters=parameters,
        workers=workers, pairs=top_k is None, top_k=top_k,
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
    bootstrap: BootstrapSettings,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    parameters: MetricParameters = DEFAULTS,
    workers: int | None = None,
    pairs: bool = True,
    top_k: int | None = None,
) -> BootstrapResult:
    """The stratified bootstrap of every metric of :func:`evaluate` (``ranked``: the
    scores ``stats`` were computed from; ``pairs=False``: without W2CA), summarised at
    ``bootstrap.confidence`` with the exact bounds of the recall-type minima
    (:mod:`classwise.metrics.bootstrap`); ``top_k``: hard predictions, without the metrics they
    cannot give."""
    replicates = boot.bootstrap_replicates(
        ranked, stats, probabilities, superclasses=superclasses, parameters=parameters, bootstrap=bootstrap,
        workers=workers, pairs=pairs, top_k=top_k,
    )  # fmt: skip
    bounds = boot.minimum_bounds(stats, k=parameters.k, ns=parameters.ns, confidence=bootstrap.confidence)
    summaries = boot.summarize(replicates, confidence=bootstrap.confidence, bounds=bounds)
    return BootstrapResult(bootstrap, replicates, summaries)


def per_class_table(
    stats: ClassificationStats,
    *,
    k: int = DEFAULTS.k,
    class_names: Sequence[str] | np.ndarray | None = None,
    confidence: float = 0.95,
    interval: str = "clopper-pearson",
    worst_shares: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per class: support, predicted count (then ``coverage``, where the model
    abstained: :func:`class_coverage`), recall, precision, top-k recall and CFPS, then the
    ``confidence`` intervals of recall (hits out of the class's support) and precision (hits
    out of the class's predictions), Clopper-Pearson (exact) or Wilson; empty where the
    ratio is undefined.  ``worst_shares`` (column name -> one share per class, e.g.
    :func:`worst_class_shares`) adds columns last."""
    import pandas as pd  # here, not above: the decisiveness jobs use the suite and write no table

    names = list(class_names) if class_names is not None else [str(i) for i in range(stats.n_classes)]
    predicted = stats.predicted
    recall_low, recall_high = proportion_interval(stats.hits, stats.support, confidence, interval)
    precision_low, precision_high = proportion_interval(stats.precision_hits, predicted, confidence, interval)
    extra = {name: np.asarray(shares, dtype=np.float64) for name, shares in (worst_shares or {}).items()}
    # where the model abstained: the share of each class's samples that got a prediction
    coverage = {"coverage": class_coverage(stats)} if stats.n_abstained else {}
    return pd.DataFrame(
        {
            "class": np.arange(stats.n_classes),
            "name": names,
            "support": stats.support,
            "predicted": predicted,
            **coverage,
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
