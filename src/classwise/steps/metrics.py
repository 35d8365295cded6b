"""Workflow steps that compute metrics over cached logits (the metric rules).

Each step reads one logits file, applies the label view (a view never reruns inference: it
is the same logits with other labels, -1 meaning "removed"), computes one metric family and
writes its outputs atomically. Each family's settings come whole, as
:class:`WorstClassSettings` or :class:`DecisivenessSettings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from classwise.atomic import write_json
from classwise.errors import InputError
from classwise.settings import Settings

# What a step computes with is imported by the step: a job imports this module before its step
# starts, and numpy, pandas, scipy and matplotlib cost more CPU than most steps' own work
# (python -m classwise.bench.demo: the CPU before the step, per rule).
if TYPE_CHECKING:
    import numpy as np

    from classwise.labels.labelled_scores import LabelledScores
    from classwise.metrics.bootstrap import BootstrapSettings
    from classwise.metrics.stats import ClassificationStats
    from classwise.superclasses import Superclasses


def load_view(
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    *,
    hard_predictions: bool = False,
    label_sets: bool = False,
) -> LabelledScores:
    """The scores of ``logits_path`` under a label view: ``original`` uses the stored labels,
    any other view a ``sample_id,label`` file (:mod:`classwise.labels.views`) matched by id.
    With ``hard_predictions`` a file of hard predictions is read too (as their one-hot encoding,
    flagged), else it is an error saying that scores are needed. A view of several correct
    labels per sample (``sample_id,real``: ImageNet ReaL) is read only by the steps that say so
    (``label_sets``); the others need one label per sample and refuse it."""
    from classwise.labels.labelled_scores import apply_label_sets, apply_label_view
    from classwise.logits_io import load_outputs, load_scores

    scores_file = load_outputs(logits_path) if hard_predictions else load_scores(logits_path)
    view_labels = None
    if view_labels_path is not None:
        from classwise.labels.real import is_sets_view_file, read_real_view
        from classwise.labels.views import aligned_labels

        if is_sets_view_file(view_labels_path):
            if not label_sets:
                raise InputError(
                    f"label view {label_view!r} gives several correct labels per image (ReaL); this step needs "
                    "one label per image (docs/real-labels.md lists what runs under ReaL)",
                    path=view_labels_path,
                )
            sets = read_real_view(view_labels_path, scores_file.sample_ids, n_classes=scores_file.n_classes)
            return apply_label_sets(scores_file, label_view, sets, source=view_labels_path)

        view_labels = aligned_labels(view_labels_path, scores_file.sample_ids)
    return apply_label_view(scores_file, label_view, view_labels, source=view_labels_path)


def view_stats(view: LabelledScores, ranked: np.ndarray) -> ClassificationStats:
    """The sufficient statistics of a view: of its labels, or under several correct labels per
    sample (ReaL) with each sample's rank that of its best-ranked correct class."""
    from classwise.metrics.stats import compute_stats, with_label_sets

    stats = compute_stats(ranked, view.labels, n_classes=view.scores.shape[1], abstained=view.abstained)
    if view.label_sets is None:
        return stats
    from classwise.labels.real import best_set_rank

    return with_label_sets(stats, best_set_rank(ranked, view.label_sets))


def view_superclasses(view: LabelledScores, superclasses: Mapping[str, Sequence[int]]) -> Superclasses | None:
    """The configured superclasses checked against the scores' columns (None without any); a
    class-subset shift has its own columns, so its superclasses are restricted to them."""
    from classwise.superclasses import validate_superclasses

    if superclasses and view.class_indices is not None:
        from classwise.class_subsets import restrict_superclasses

        superclasses = restrict_superclasses(superclasses, view.class_indices)
    return validate_superclasses(superclasses, view.scores.shape[1], path="config") if superclasses else None


@dataclass(frozen=True, kw_only=True)
class BootstrappedSettings(Settings):
    """What every bootstrapped metrics stage shares: the ``bootstrap`` parameter of its rule
    (the ``metrics.bootstrap`` block, None when it is off), read as the library's settings by
    :attr:`bootstrap_settings`."""

    bootstrap: Mapping[str, Any] | None = None

    @property
    def bootstrap_settings(self) -> BootstrapSettings | None:
        """The bootstrap checked (``InputError`` naming the bad value), None when it is off (no
        block, or 0 replicates). A property, not a field: the library's class imports numpy,
        which the step pays for, not the job before it."""
        from classwise.metrics.bootstrap import BootstrapSettings

        params = self.bootstrap
        if params is None or int(params["replicates"]) == 0:
            return None
        return BootstrapSettings(params["replicates"], params["confidence"], params["seed"])


@dataclass(frozen=True, kw_only=True)
class WorstClassSettings(BootstrappedSettings):
    """``metrics.worst_class``: the top-``k`` recall, the ``n`` worst classes each W{n}CR pools,
    the dataset's ``superclasses`` (name -> class indices; {} for none), the ``confidence`` of
    the per-class intervals and the ``bootstrap``. The rules compute_worst_class_metrics and
    compare_models pass the same keys (the comparison takes its confidence from the bootstrap)."""

    block: ClassVar[str] = "metrics.worst_class"
    k: int
    n: Sequence[int]
    superclasses: Mapping[str, Sequence[int]]
    confidence: float = 0.95


@dataclass(frozen=True, kw_only=True)
class DecisivenessSettings(BootstrappedSettings):
    """``metrics.decisiveness``: the ``gamma`` the metrics are computed at, the ``gammas`` of the
    sweep (the block's ``gamma_sweep``, named as the rule's parameter), the calibration's
    ``bins`` and the ``bootstrap``."""

    block: ClassVar[str] = "metrics.decisiveness"
    gamma: float
    gammas: Sequence[float]
    bins: int


def _finite_or_none(value):
    """JSON has no NaN: undefined numbers (e.g. an empty bin's fraction) become null."""
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def worst_class_step(
    *,
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    settings: WorstClassSettings,
    metrics_path: str | Path,
    per_class_path: str | Path,
    confusion_path: str | Path,
    confusion_figure_path: str | Path | None = None,
    title: str = "",
    workers: int | None = None,
) -> None:
    """Worst-class metrics (JSON), per-class recall/precision/CFPS with their intervals at the
    settings' ``confidence`` (CSV) and the confusion matrix (CSV of counts, rows = true class,
    columns = predicted) of one logits file, and its heatmap (rows normalised to the true class)
    when ``confusion_figure_path`` is given. A file of hard predictions gives the metrics of the
    confusion matrix (and of the top-k set, for top-k predictions of at least k classes); those
    it cannot give are listed under ``skipped`` with why (and the per-class top-k recall is
    empty). Where the model abstained, the JSON gets ``coverage`` and the CSV a ``coverage``
    column (abstentions count as errors and as no class's prediction: the confusion leaves
    them out).

    With the bootstrap on (:attr:`WorstClassSettings.bootstrap_settings`), each metric of the
    JSON gets its interval (``ci``, and ``ci_bound`` for the recall-type minima) and the classes
    most often the worst (``worst_probability``), the JSON a ``bootstrap`` block, and the CSV
    each class's share of replicates in which it is the worst (``worst_recall_probability``,
    ``worst_precision_probability``); the values and worst classes are the same either way."""
    import numpy as np
    import pandas as pd

    from classwise.metrics.catalogue import MetricParameters
    from classwise.metrics.probabilities import Probabilities
    from classwise.metrics.suite import (
        argmax_scores,
        bootstrap_metrics,
        cfps_max_of_stats,
        classes_with_samples,
        coverage_json,
        per_class_table,
        skipped_worst_class_metrics,
        without_pair_metrics,
        without_score_metrics,
        worst_class_family,
        worst_class_shares,
    )
    from classwise.tables import write_csv

    bootstrap = settings.bootstrap_settings
    k, ns = settings.k, settings.n
    view = load_view(logits_path, label_view, view_labels_path, hard_predictions=True, label_sets=True)
    n_classes = view.scores.shape[1]
    groups = view_superclasses(view, settings.superclasses)
    ranked = argmax_scores(view.scores, view.kind)
    stats = view_stats(view, ranked)
    metrics = worst_class_family(stats, ranked, superclasses=groups, k=k, ns=ns)
    metrics["CFPS_max"] = cfps_max_of_stats(stats)
    skipped = skipped_worst_class_metrics(stats.n_classes, k=k, ns=ns, with_samples=classes_with_samples(stats))
    if view.hard_predictions:
        metrics, skipped = without_score_metrics(metrics, skipped, k=k, ns=ns, top_k=view.top_k)
    if view.label_sets is not None:
        metrics, skipped = without_pair_metrics(metrics, skipped)
    entries = {name: result.to_json() for name, result in metrics.items()}
    shares = None
    if bootstrap is not None:
        # no pair accuracies to resample for hard predictions (they need scores) nor under label sets
        result = bootstrap_metrics(
            ranked, stats, Probabilities.from_scores(view.scores, view.kind), bootstrap=bootstrap, superclasses=groups,
            parameters=MetricParameters(k=k, ns=ns), workers=workers,
            pairs=not view.hard_predictions and view.label_sets is None, top_k=view.top_k if view.hard_predictions else None,
        )  # fmt: skip
        entries = result.attach(entries)
        shares = worst_class_shares(result.replicates, n_classes)
    document = {
        "n_samples": stats.n_samples,
        "n_classes": stats.n_classes,
        "label_view": label_view,
        "class_names": view.class_names.tolist(),
        "parameters": {"k": k, "n": list(ns), "superclasses": groups or {}},
        "metrics": entries,
        "skipped": skipped,
    }
    if bootstrap is not None:
        document["bootstrap"] = bootstrap.to_json()
    if stats.n_abstained:
        document["coverage"] = coverage_json(stats)
    per_class = per_class_table(stats, k=k, class_names=view.class_names, confidence=settings.confidence, worst_shares=shares)
    if view.hard_predictions and view.top_k < k:
        per_class[f"top{k}_recall"] = np.nan  # fewer ranked classes than k
    names = [str(name) for name in view.class_names]
    confusion = pd.DataFrame(stats.confusion, index=pd.Index(names, name="true"), columns=names)
    write_json(metrics_path, document)
    write_csv(per_class_path, per_class, index=False)  # full precision, as the JSON
    write_csv(confusion_path, confusion)
    if confusion_figure_path is not None:
        from classwise.plots.classwise import plot_confusion

        plot_confusion(stats.confusion, names, title=title, path=confusion_figure_path)


def decisiveness_step(
    *,
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    settings: DecisivenessSettings,
    metrics_path: str | Path,
    figure_path: str | Path,
    title: str,
    workers: int | None = None,
) -> None:
    """Reported and measured decisiveness / geometric accuracy / robustness, the calibration
    slope, the gamma sweep (JSON) and the reliability figure (Figure 1 of the paper).

    With the bootstrap on (:attr:`DecisivenessSettings.bootstrap_settings`), each metric gets its
    percentile interval (``ci``) and the accuracy its own (``accuracy_ci``), from the same
    stratified replicates as the worst-class metrics; the gamma sweep gets none."""
    import numpy as np

    from classwise.metrics import decisiveness as nelson
    from classwise.metrics.catalogue import MetricParameters
    from classwise.metrics.probabilities import Probabilities
    from classwise.metrics.stats import compute_stats
    from classwise.metrics.suite import argmax_scores, bootstrap_metrics, nelson_family
    from classwise.plots.reliability import plot_reliability  # matplotlib only where drawn

    bootstrap = settings.bootstrap_settings
    gamma, gammas, bins = settings.gamma, settings.gammas, settings.bins
    view = load_view(logits_path, label_view, view_labels_path)
    probabilities = Probabilities.from_scores(view.scores, view.kind)
    metrics, calibration = nelson_family(probabilities, view.labels, gamma=gamma, bins=bins)
    correct_log_probs = probabilities.correct_class_log_prob(view.labels)
    reported = nelson.reported_metrics(correct_log_probs, gamma=gamma)
    ranked = argmax_scores(view.scores, view.kind)
    accuracy = float(np.mean(ranked.argmax(axis=1) == view.labels))
    document = {
        "n_samples": int(view.labels.size),
        "n_classes": int(view.scores.shape[1]),
        "label_view": label_view,
        "parameters": {"gamma": gamma, "gammas": list(gammas), "bins": bins},
        "accuracy": accuracy,
        "calibration": calibration.to_json(),
        "gamma_sweep": nelson.gamma_sweep(correct_log_probs, gammas),
    }
    entries = {name: result.to_json() for name, result in metrics.items()}
    if bootstrap is not None:
        stats = compute_stats(ranked, view.labels, n_classes=view.scores.shape[1])
        # the decisiveness family needs neither the top-k, the n worst classes nor the pairs
        result = bootstrap_metrics(
            ranked, stats, probabilities, bootstrap=bootstrap, parameters=MetricParameters(gamma=gamma, bins=bins, k=1, ns=()),
            workers=workers, pairs=False,
        )  # fmt: skip
        entries = result.attach(entries)
        document["accuracy_ci"] = list(result.summaries["A"].ci)
        document["bootstrap"] = bootstrap.to_json()
    document["metrics"] = entries
    plot_reliability(calibration, reported, title=title, path=figure_path)
    write_json(metrics_path, _finite_or_none(document))
