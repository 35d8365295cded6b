"""Reference-vs-evaluation tests (the model-testing catalogue, "Model Performance").

For one (dataset, model), a *reference* set (default: the clean shift, labels required) is
compared with each *evaluation* set (every other shift; labels optional).  Metrics, with
``max p`` the top softmax probability (the "confidence" of a prediction):

=============================  ===================================================  ======  ======
metric                         value on a set                                       better  labels
=============================  ===================================================  ======  ======
``average_uncertainty``        ``mean(1 - max p)``, the document's "confidence"     lower   no
``atc``                        ATC-predicted accuracy (below)                       higher  no
``calibration_mse``            MSE between the two calibration curves (below)       lower   yes
``macro_f1``                   scikit-learn macro F1 (``classification`` module)    higher  yes
``macro_precision``            scikit-learn macro precision                         higher  yes
``macro_recall``               scikit-learn macro recall                            higher  yes
``accuracy``                   ``mean [argmax = y]``                                higher  yes
``auc_ovo``                    scikit-learn one-vs-one AUC (Hand & Till)            higher  yes
``positive_prediction_rate``   share of the most-predicted class                    lower   no
=============================  ===================================================  ======  ======

The document's worked examples are not mutually consistent; every metric follows
scikit-learn (see :mod:`classwise.testsuites.classification`).

**ATC** (average thresholded confidence, Garg et al. 2022): on the reference set, with
``k`` correct predictions out of ``N`` and the max probabilities sorted decreasingly
``c_(1) >= ... >= c_(N)``, the threshold is the midpoint ``t = (c_(k) + c_(k+1)) / 2``
(``t = -inf`` if ``k = N``, ``+inf`` if ``k = 0``), so that exactly ``k`` reference samples
have ``max p > t`` - the exceedance rate equals the reference accuracy.  Tie convention: a
sample *at* the threshold does not exceed it (strict ``>``); if ``c_(k) = c_(k+1)`` then
``t = c_(k)`` and the reference exceedance rate falls below its accuracy (it is reported).
The predicted accuracy of an evaluation set is its exceedance rate ``mean(max p > t)``,
reported beside its true accuracy (``evaluation_actual``) when it has labels.  The row's
reference value is the reference accuracy.

**Calibration curve** (top-label): ``n_bins`` uniform bins over the confidence ``max p``,
bin ``j`` = ``(j / B, (j + 1) / B]`` with the first one closed at 0 (exactly
``sklearn.calibration.calibration_curve(correct, max p, n_bins=B, strategy="uniform")``);
per bin, the mean confidence and the accuracy.  **Calibration MSE** = the mean, over the
bins populated in *both* sets (unweighted), of ``(acc_ref_j - acc_eval_j)^2``; NaN when no
bin is shared.  The same bins are used for both sets.  "Populated" means holding at least
``min_bin_count`` samples (default 10) in each set: a bin's accuracy from a handful of
samples is mostly noise (sd up to 0.5 / sqrt(count)) and, unweighted, would dominate the MSE.

**Status** of each metric, from a thresholds mapping ``{metric: {"absolute": a,
"degradation": d}}`` (either may be ``None``: that check is off):

* ``"skipped"`` - the evaluation value is undefined (no labels, or e.g. AUC with one class);
* ``"fail"`` - the evaluation value is worse than the absolute threshold (``< a`` for
  higher-is-better metrics, ``> a`` for lower-is-better ones);
* ``"warn"`` - else, if the degradation ``ref - eval`` (higher-is-better) or ``eval - ref``
  (lower-is-better) exceeds ``d`` (strictly);
* ``"info"`` - else, if neither threshold is set;
* ``"pass"`` - otherwise.

``calibration_mse`` compares two sets, so it has no reference value and no degradation: only
its absolute threshold applies (fail if the MSE exceeds it).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.testsuites.classification import (
    HIGHER_IS_BETTER,
    LabelSet,
    SubsetEvaluator,
    check_label_set,
    check_labels,
    to_probabilities,
)
from classwise.validation import ScoreKind

__all__ = [
    "DEFAULT_THRESHOLDS",
    "REFERENCE_HIGHER_IS_BETTER",
    "REFERENCE_METRICS",
    "STATUSES",
    "CalibrationCurve",
    "ReferenceTestOptions",
    "atc_predicted_accuracy",
    "atc_threshold",
    "calibration_curve",
    "calibration_mse",
    "compare_to_reference",
    "reference_report",
    "resolve_thresholds",
    "summarise_reports",
]

REFERENCE_METRICS: tuple[str, ...] = (
    "average_uncertainty",
    "atc",
    "calibration_mse",
    "macro_f1",
    "macro_precision",
    "macro_recall",
    "accuracy",
    "auc_ovo",
    "positive_prediction_rate",
)
REFERENCE_HIGHER_IS_BETTER: dict[str, bool] = {
    **HIGHER_IS_BETTER,
    "atc": True,
    "calibration_mse": False,
}
_LABELLED_METRICS = ("macro_f1", "macro_precision", "macro_recall", "accuracy", "auc_ovo")
_LABEL_FREE_METRICS = ("average_uncertainty", "positive_prediction_rate")

#: Default thresholds (the config may override any entry).
DEFAULT_THRESHOLDS: dict[str, dict[str, float | None]] = {
    "average_uncertainty": {"absolute": 0.5, "degradation": 0.1},
    "atc": {"absolute": 0.5, "degradation": 0.1},
    "calibration_mse": {"absolute": 0.05, "degradation": None},
    "macro_f1": {"absolute": 0.5, "degradation": 0.1},
    "macro_precision": {"absolute": 0.5, "degradation": 0.1},
    "macro_recall": {"absolute": 0.5, "degradation": 0.1},
    "accuracy": {"absolute": 0.5, "degradation": 0.1},
    "auc_ovo": {"absolute": 0.7, "degradation": 0.05},
    "positive_prediction_rate": {"absolute": None, "degradation": 0.1},
}
#: Statuses from worst to best (``summarise_reports`` reports the worst of a group).
STATUSES: tuple[str, ...] = ("fail", "warn", "pass", "info", "skipped")


# ---------------------------------------------------------------------------- ATC
def _check_confidence(confidence: np.ndarray, field: str = "confidence") -> np.ndarray:
    c = np.asarray(confidence, dtype=np.float64)
    if c.ndim != 1 or c.size == 0 or not np.isfinite(c).all():
        raise InputError(f"expected a non-empty finite 1-D array, got shape {c.shape}", field=field)
    return c


def atc_threshold(confidence: np.ndarray, correct: np.ndarray) -> float:
    """ATC threshold of a labelled reference set (module docstring for the conventions).

    ``confidence``: ``(N,)`` max probabilities; ``correct``: ``(N,)`` booleans.  Returns
    ``t`` with ``#{confidence > t} = #correct`` unless the two order statistics around the
    cut tie.
    """
    c = _check_confidence(confidence)
    ok = np.asarray(correct)
    if ok.shape != c.shape or ok.dtype != np.bool_:
        raise InputError(f"expected a boolean array of shape {c.shape}", field="correct")
    n = c.size
    k = int(ok.sum())
    if k == n:
        return -math.inf
    if k == 0:
        return math.inf
    desc = np.sort(c)[::-1]
    above, below = float(desc[k - 1]), float(desc[k])
    t = 0.5 * (above + below)
    if not below <= t < above:  # a tie, or adjacent floats whose midpoint rounds up
        t = below
    return t


def atc_predicted_accuracy(confidence: np.ndarray, threshold: float) -> float:
    """Predicted accuracy ``mean(confidence > threshold)`` (strict: ties do not exceed)."""
    c = _check_confidence(confidence)
    return float(np.mean(c > float(threshold)))


# ---------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class CalibrationCurve:
    """Top-label calibration curve over ``n_bins`` uniform bins of the confidence.

    ``count[j]`` samples in bin ``j``; ``mean_confidence[j]`` and ``accuracy[j]`` are NaN
    for empty bins.
    """

    edges: np.ndarray
    count: np.ndarray
    mean_confidence: np.ndarray
    accuracy: np.ndarray


def calibration_curve(confidence: np.ndarray, correct: np.ndarray, n_bins: int = 10) -> CalibrationCurve:
    """Calibration curve, binned as ``sklearn.calibration.calibration_curve(strategy="uniform")``.

    Bin ``j`` holds the confidences in ``(j / B, (j + 1) / B]`` (bin 0 also holds 0).
    """
    c = _check_confidence(confidence)
    ok = np.asarray(correct)
    if ok.shape != c.shape:
        raise InputError(f"expected shape {c.shape}", field="correct")
    if int(n_bins) < 1:
        raise InputError(f"n_bins must be >= 1, got {n_bins}", field="n_bins")
    b = int(n_bins)
    edges = np.linspace(0.0, 1.0, b + 1)
    ids = np.searchsorted(edges[1:-1], c)
    count = np.bincount(ids, minlength=b)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_conf = np.where(count > 0, np.bincount(ids, weights=c, minlength=b) / count, np.nan)
        acc = np.where(count > 0, np.bincount(ids, weights=ok.astype(np.float64), minlength=b) / count, np.nan)
    return CalibrationCurve(edges, count, mean_conf, acc)


def calibration_mse(reference: CalibrationCurve, evaluation: CalibrationCurve, *, min_bin_count: int = 1) -> float:
    """Unweighted mean, over the bins holding at least ``min_bin_count`` (>= 1) samples in
    both curves, of the squared accuracy difference; NaN if no bin qualifies."""
    if not np.array_equal(reference.edges, evaluation.edges):
        raise InputError("the two calibration curves must use the same bins", field="n_bins")
    if int(min_bin_count) < 1:
        raise InputError(f"min_bin_count must be >= 1, got {min_bin_count}", field="min_bin_count")
    both = (reference.count >= int(min_bin_count)) & (evaluation.count >= int(min_bin_count))
    if not both.any():
        return math.nan
    return float(np.mean((reference.accuracy[both] - evaluation.accuracy[both]) ** 2))


# ---------------------------------------------------------------------------- thresholds
def resolve_thresholds(config: Mapping[str, Any] | None = None) -> dict[str, dict[str, float | None]]:
    """:data:`DEFAULT_THRESHOLDS` updated with ``config`` (``{metric: {"absolute": a,
    "degradation": d}}``, either key optional, ``None`` switches a check off)."""
    out = copy.deepcopy(DEFAULT_THRESHOLDS)
    if config is None:
        return out
    if not isinstance(config, Mapping):
        raise InputError("thresholds must be a mapping {metric: {absolute, degradation}}", field="thresholds")
    for metric, entry in config.items():
        if metric not in out:
            raise InputError(f"unknown metric; choose from {list(REFERENCE_METRICS)}", field=f"thresholds.{metric}")
        if not isinstance(entry, Mapping):
            raise InputError("expected a mapping with keys 'absolute' / 'degradation'", field=f"thresholds.{metric}")
        for key, value in entry.items():
            where = f"thresholds.{metric}.{key}"
            if key not in ("absolute", "degradation"):
                raise InputError("expected 'absolute' or 'degradation'", field=where)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
                raise InputError(f"expected a finite number or null, got {value!r}", field=where)
            out[metric][key] = None if value is None else float(value)
    return out


def _status(metric: str, ref: float, value: float, limits: Mapping[str, float | None]) -> tuple[str, float, str]:
    higher = REFERENCE_HIGHER_IS_BETTER[metric]
    degradation = (ref - value) if higher else (value - ref)
    if math.isnan(value):
        return "skipped", degradation, "undefined on the evaluation set"
    absolute, allowed = limits.get("absolute"), limits.get("degradation")
    if absolute is not None and (value < absolute if higher else value > absolute):
        side = "below" if higher else "above"
        return "fail", degradation, f"{value:.4g} {side} absolute threshold {absolute:.4g}"
    if allowed is not None and not math.isnan(degradation) and degradation > allowed:
        return "warn", degradation, f"degraded by {degradation:.4g} > {allowed:.4g}"
    if absolute is None and allowed is None:
        return "info", degradation, "no thresholds"
    return "pass", degradation, ""


# ---------------------------------------------------------------------------- one set
@dataclass(frozen=True)
class _SetSummary:
    metrics: dict[str, float]
    confidence: np.ndarray
    curve: CalibrationCurve | None
    n_classes: int


def _summarise(
    scores: np.ndarray, labels: np.ndarray | None, kind: ScoreKind, n_bins: int, label_set: LabelSet, field: str
) -> _SetSummary:
    try:
        probs = to_probabilities(scores, kind)
    except InputError as exc:
        raise InputError(str(exc), field=field) from None
    n, c = probs.shape
    pred = np.argmax(np.asarray(scores), axis=1).astype(np.int64)
    confidence = probs.max(axis=1)
    metrics = {
        "average_uncertainty": float(np.mean(1.0 - confidence)),
        "positive_prediction_rate": float(np.bincount(pred, minlength=c).max() / n),
    }
    curve = None
    if labels is not None:
        lab = check_labels(labels, n, c, field=f"{field}.labels")
        ev = SubsetEvaluator(probs, lab, predictions=pred, label_set=label_set)
        metrics.update(ev.evaluate_all(_LABELLED_METRICS))
        curve = calibration_curve(confidence, pred == lab, n_bins)
    else:
        metrics.update({k: math.nan for k in _LABELLED_METRICS})
    return _SetSummary(metrics, confidence, curve, c)


def _compare(
    ref: _SetSummary,
    ref_correct: np.ndarray,
    ev: _SetSummary,
    thresholds: Mapping[str, Mapping[str, float | None]],
    min_bin_count: int,
) -> pd.DataFrame:
    if ev.n_classes != ref.n_classes:
        raise InputError(f"the evaluation set has {ev.n_classes} classes, the reference {ref.n_classes}", field="evaluation")
    t = atc_threshold(ref.confidence, ref_correct)
    values = dict(ev.metrics)
    ref_values = dict(ref.metrics)
    values["atc"] = atc_predicted_accuracy(ev.confidence, t)
    ref_values["atc"] = ref.metrics["accuracy"]
    values["calibration_mse"] = (
        calibration_mse(ref.curve, ev.curve, min_bin_count=min_bin_count)
        if ev.curve is not None and ref.curve is not None
        else math.nan
    )
    ref_values["calibration_mse"] = math.nan
    rows = []
    for metric in REFERENCE_METRICS:
        status, degradation, reason = _status(metric, ref_values[metric], values[metric], thresholds[metric])
        rows.append(
            {
                "metric": metric,
                "higher_is_better": REFERENCE_HIGHER_IS_BETTER[metric],
                "reference_value": ref_values[metric],
                "evaluation_value": values[metric],
                "evaluation_actual": ev.metrics["accuracy"] if metric == "atc" else math.nan,
                "degradation": degradation,
                "absolute_threshold": thresholds[metric]["absolute"],
                "degradation_threshold": thresholds[metric]["degradation"],
                "status": status,
                "reason": reason,
                "atc_threshold": t if metric == "atc" else math.nan,
                "atc_reference_exceedance": atc_predicted_accuracy(ref.confidence, t) if metric == "atc" else math.nan,
            }
        )
    table = pd.DataFrame(rows)
    for col in ("absolute_threshold", "degradation_threshold"):
        table[col] = table[col].astype(np.float64)
    return table


@dataclass(frozen=True, kw_only=True)
class ReferenceTestOptions:
    """How a reference report is made (module docstring): the ``reference`` shift of
    :func:`reference_report` that every other is tested against (:func:`compare_to_reference`
    is handed its reference set and ignores it), the ``thresholds`` per metric (``None``: the
    catalogue's, :data:`DEFAULT_THRESHOLDS`; :func:`resolve_thresholds`), the ``n_bins``
    calibration bins and the ``min_bin_count`` samples a bin needs in both sets to count, and
    the classes a macro average covers (``label_set``,
    :mod:`classwise.testsuites.classification`)."""

    reference: str = "clean"
    thresholds: Mapping[str, Any] | None = None
    n_bins: int = 10
    min_bin_count: int = 10
    label_set: LabelSet = "present"

    def __post_init__(self) -> None:
        if not isinstance(self.reference, str):
            raise InputError(f"expected a shift name, got {self.reference!r}", field="reference")
        resolve_thresholds(self.thresholds)  # validates them
        if int(self.n_bins) < 1:
            raise InputError(f"n_bins must be >= 1, got {self.n_bins}", field="n_bins")
        if int(self.min_bin_count) < 1:
            raise InputError(f"min_bin_count must be >= 1, got {self.min_bin_count}", field="min_bin_count")
        check_label_set(self.label_set)


def _options(options: ReferenceTestOptions | None) -> ReferenceTestOptions:
    options = ReferenceTestOptions() if options is None else options
    if not isinstance(options, ReferenceTestOptions):
        raise InputError(f"expected a ReferenceTestOptions, got {options!r}", field="options")
    return options


def compare_to_reference(
    reference_scores: np.ndarray,
    reference_labels: np.ndarray,
    evaluation_scores: np.ndarray,
    evaluation_labels: np.ndarray | None = None,
    *,
    kind: ScoreKind = "logits",
    options: ReferenceTestOptions | None = None,
) -> pd.DataFrame:
    """Test report of one evaluation set against one reference set (module docstring).

    Scores are ``(N, C)`` logits (softmax in float64) or probabilities; predictions are
    ``argmax(scores)``.  Without ``evaluation_labels`` only the label-free metrics
    (average uncertainty, ATC, positive prediction rate) are computed; the others are
    ``"skipped"``.  ``options`` (:class:`ReferenceTestOptions`, default its defaults): the
    thresholds, the calibration bins and the label set.  One row per metric of
    :data:`REFERENCE_METRICS`, columns ``metric, higher_is_better, reference_value,
    evaluation_value, evaluation_actual, degradation, absolute_threshold,
    degradation_threshold, status, reason, atc_threshold, atc_reference_exceedance``.
    """
    options = _options(options)
    n_bins, label_set = int(options.n_bins), options.label_set
    limits = resolve_thresholds(options.thresholds)
    ref = _summarise(reference_scores, reference_labels, kind, n_bins, label_set, "reference")
    ref_correct = np.argmax(np.asarray(reference_scores), axis=1) == np.asarray(reference_labels)
    ev = _summarise(evaluation_scores, evaluation_labels, kind, n_bins, label_set, "evaluation")
    return _compare(ref, ref_correct, ev, limits, int(options.min_bin_count))


def reference_report(
    sets: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    *,
    kind: ScoreKind = "logits",
    options: ReferenceTestOptions | None = None,
    dataset: str = "",
    model: str = "",
) -> pd.DataFrame:
    """The test report of one (dataset, model): ``options.reference`` (:class:`ReferenceTestOptions`,
    default its defaults: the ``"clean"`` shift) against every other.

    ``sets`` maps shift name -> ``(scores, labels or None)`` (e.g. the cached logits
    ``.npz`` of each shift); the reference needs labels.  Returns the rows of
    :func:`compare_to_reference` for each evaluation shift (in ``sets`` order), prefixed by
    ``dataset, model, reference, evaluation`` columns.
    """
    options = _options(options)
    reference, n_bins, min_bin_count, label_set = (
        options.reference,
        int(options.n_bins),
        int(options.min_bin_count),
        options.label_set,
    )
    if reference not in sets:
        raise InputError(f"reference shift {reference!r} not among {list(sets)}", field="reference")
    ref_scores, ref_labels = sets[reference]
    if ref_labels is None:
        raise InputError("the reference set needs labels", field="reference")
    limits = resolve_thresholds(options.thresholds)
    ref = _summarise(ref_scores, ref_labels, kind, n_bins, label_set, "reference")
    ref_correct = np.argmax(np.asarray(ref_scores), axis=1) == np.asarray(ref_labels)
    tables = []
    for name, (scores, labels) in sets.items():
        if name == reference:
            continue
        ev = _summarise(scores, labels, kind, n_bins, label_set, f"sets.{name}")
        table = _compare(ref, ref_correct, ev, limits, min_bin_count)
        table.insert(0, "evaluation", name)
        tables.append(table)
    columns = ["evaluation", *_compare(ref, ref_correct, ref, limits, min_bin_count).columns]
    out = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=columns)
    out.insert(0, "reference", reference)
    out.insert(0, "model", model)
    out.insert(0, "dataset", dataset)
    return out


def summarise_reports(reports: pd.DataFrame | Sequence[pd.DataFrame], by: Sequence[str] = ("dataset", "model")) -> pd.DataFrame:
    """Summary across models: per group of ``by``, the count of each status, the worst
    status (``fail`` > ``warn`` > ``pass`` > ``info`` > ``skipped``) and the failing /
    warning tests as ``"evaluation:metric"`` lists."""
    table = reports if isinstance(reports, pd.DataFrame) else pd.concat(list(reports), ignore_index=True)
    keys = list(by)
    missing = [k for k in [*keys, "status", "metric", "evaluation"] if k not in table.columns]
    if missing:
        raise InputError(f"not a reference report: missing columns {missing}", field="reports")
    rows = []
    for key, group in table.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, object] = dict(zip(keys, key, strict=True))
        row["n_tests"] = len(group)
        counts = {s: int((group["status"] == s).sum()) for s in STATUSES}
        for s in STATUSES:
            row[f"n_{s}"] = counts[s]
        present = [s for s in STATUSES if counts[s] > 0]
        row["status"] = present[0] if present else "skipped"
        tag = group["evaluation"].astype(str) + ":" + group["metric"].astype(str)
        row["failed"] = ", ".join(tag[group["status"] == "fail"])
        row["warned"] = ", ".join(tag[group["status"] == "warn"])
        rows.append(row)
    columns = [*keys, "n_tests", *(f"n_{s}" for s in STATUSES), "status", "failed", "warned"]
    return pd.DataFrame(rows, columns=columns)
