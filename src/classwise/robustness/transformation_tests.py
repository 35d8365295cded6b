"""Transformation tests (the model-testing catalogue, "Transformations").

For every transformed evaluation (a corruption at one severity) the model's predictions are
compared with its clean predictions on the same samples (matched by ``sample_id``):

* ``accuracy`` and ``macro_f1`` under the transformation, next to their clean values, and the
  drops ``accuracy_drop = clean_accuracy - accuracy`` and ``macro_f1_drop`` (absolute, in
  fractions; negative when the transformation helps);
* ``flip_rate``: the share of samples whose predicted class differs from the clean prediction
  (whether either prediction is correct or not), over the ``flip_rate_n`` samples on which the
  model answered both times.

Abstentions follow the project's one rule (docs/metrics.md): a sample on which the model
abstained (prediction ``-1``) is an error for the accuracy and a false negative of its class for
macro F1 (a prediction of no class: no false positive of any); the flip rate leaves it out, since
an abstention is neither the same prediction nor another one, and says over how many samples it
is taken (``flip_rate_n``).

Each of the three checked quantities (``accuracy_drop``, ``macro_f1_drop``, ``flip_rate``)
has a warn and a fail threshold (:class:`Thresholds`). A quantity *fails* when it is strictly
above its fail threshold, *warns* when it is strictly above its warn threshold (and does not
fail), and *passes* otherwise (at or below the warn threshold). A test's ``status`` is the
worst of its three quantities; ``reason`` names the quantities that did not pass.

Macro F1 follows :func:`sklearn.metrics.f1_score` with ``average="macro"``: the unweighted
mean over the classes present in the labels or the predictions of ``2 TP / (2 TP + FP + FN)``
(a class present but never predicted correctly scores 0).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.logits_io import ABSTAINED, ScoresFile
from classwise.metrics.stats import macro_rates
from classwise.robustness._scores import as_scores, where
from classwise.robustness.results import class_counts_of
from classwise.sample_ids import sample_id_positions

STATUSES: tuple[str, ...] = ("pass", "warn", "fail")
"""Test outcomes, from best to worst."""

CHECKED: tuple[str, ...] = ("accuracy_drop", "macro_f1_drop", "flip_rate")
"""The quantities that thresholds apply to, in the order of the ``reason`` text."""

_MAX_IDS_IN_MESSAGE = 5


@dataclass(frozen=True)
class Limits:
    """Warn and fail thresholds of one quantity (``warn <= fail``)."""

    warn: float
    fail: float

    def status(self, value: float) -> str:
        """``"fail"`` if ``value > fail``, ``"warn"`` if ``value > warn``, else ``"pass"``."""
        if value > self.fail:
            return "fail"
        if value > self.warn:
            return "warn"
        return "pass"


@dataclass(frozen=True)
class Thresholds:
    """Warn / fail thresholds of the three checked quantities (fractions, not percent).

    Defaults: a drop of accuracy or macro F1 by more than 5 points warns and by more than
    10 points fails; more than 10 % of predictions flipped warns and more than 20 % fails.
    """

    accuracy_drop: Limits = Limits(warn=0.05, fail=0.10)
    macro_f1_drop: Limits = Limits(warn=0.05, fail=0.10)
    flip_rate: Limits = Limits(warn=0.10, fail=0.20)

    def __post_init__(self) -> None:
        for name in CHECKED:
            limits = getattr(self, name)
            _check_limits(limits.warn, limits.fail, f"thresholds.{name}")

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None, *, field: str = "thresholds") -> Thresholds:
        """From a config section such as ``{"flip_rate": {"warn": 0.1, "fail": 0.3}}``.

        Missing quantities (or a missing ``warn`` / ``fail``) keep their defaults; unknown keys
        and non-numbers raise :class:`InputError` naming the field (``field`` prefixes it).
        """
        if section is None:
            return cls()
        if not isinstance(section, Mapping):
            raise InputError(f"expected a mapping, got {section!r}", field=field)
        unknown = sorted(set(section) - set(CHECKED))
        if unknown:
            raise InputError(f"unknown key(s) {unknown}; expected some of {list(CHECKED)}", field=f"{field}.{unknown[0]}")
        defaults = cls()
        values: dict[str, Limits] = {}
        for name in CHECKED:
            default: Limits = getattr(defaults, name)
            entry = section.get(name, {})
            prefix = f"{field}.{name}"
            if not isinstance(entry, Mapping):
                raise InputError(f"expected a mapping with 'warn' and/or 'fail', got {entry!r}", field=prefix)
            extra = sorted(set(entry) - {"warn", "fail"})
            if extra:
                raise InputError(f"unknown key(s) {extra}; expected 'warn' and/or 'fail'", field=f"{prefix}.{extra[0]}")
            warn = _number(entry.get("warn", default.warn), f"{prefix}.warn")
            fail = _number(entry.get("fail", default.fail), f"{prefix}.fail")
            _check_limits(warn, fail, prefix)
            values[name] = Limits(warn=warn, fail=fail)
        return cls(**values)

    def to_json(self) -> dict[str, dict[str, float]]:
        """``{quantity: {"warn": w, "fail": f}}``."""
        return {name: {"warn": getattr(self, name).warn, "fail": getattr(self, name).fail} for name in CHECKED}


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a finite number, got {value!r}", field=field)
    return float(value)


def _check_limits(warn: float, fail: float, field: str) -> None:
    if not (math.isfinite(warn) and math.isfinite(fail)):
        raise InputError(f"thresholds must be finite, got warn={warn!r}, fail={fail!r}", field=field)
    if warn > fail:
        raise InputError(f"expected warn <= fail, got warn={warn:g} > fail={fail:g}", field=field)


# ---------------------------------------------------------------------------- the measures


def _check_pair(
    a: np.ndarray, b: np.ndarray, names: tuple[str, str], *, abstained: tuple[bool, bool] = (False, False)
) -> tuple[np.ndarray, np.ndarray]:
    """Both as int64 class indices of one length; ``-1`` (an abstention) allowed in those that
    ``abstained`` marks (predictions, never labels)."""
    x, y = np.asarray(a), np.asarray(b)
    for arr, name, allowed in ((x, names[0], abstained[0]), (y, names[1], abstained[1])):
        lowest = ABSTAINED if allowed else 0
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise InputError(f"expected a 1-D array of class indices, got {arr.dtype} {arr.shape}", field=name)
        if arr.size and arr.min() < lowest:
            raise InputError("class indices must be non-negative" + (" (-1: abstained)" if lowest < 0 else ""), field=name)
    if x.shape != y.shape:
        raise InputError(f"{names[0]} {x.shape} and {names[1]} {y.shape} differ in length", field=names[1])
    if x.size == 0:
        raise InputError("no samples", field=names[0])
    return x.astype(np.int64), y.astype(np.int64)


def macro_f1(labels: np.ndarray, predicted: np.ndarray) -> float:
    """Macro F1 as :func:`sklearn.metrics.f1_score` (``average="macro"``, ``zero_division=0``).

    Over the classes present in ``labels`` or ``predicted``: the mean of
    ``2 TP / (2 TP + FP + FN)``, by :func:`classwise.metrics.stats.macro_rates` (the same
    computation as the test suites' ``macro_f1``). A prediction of ``-1`` (abstained) is a false
    negative of its class and a false positive of none.
    """
    y, p = _check_pair(labels, predicted, ("labels", "predicted"), abstained=(False, True))
    hits, support, counts, _ = class_counts_of(y, p, int(max(y.max(), p.max())) + 1)
    return float(macro_rates(hits, support, counts, rates=("f1",))["f1"])


def answered_by_both(reference: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """``(N,)`` bool: the samples on which neither prediction is an abstention (``-1``)."""
    return (np.asarray(reference) != ABSTAINED) & (np.asarray(predicted) != ABSTAINED)


def prediction_flip_rate(reference: np.ndarray, predicted: np.ndarray) -> float:
    """Share of samples whose prediction differs from the reference (e.g. clean) prediction, over
    the samples answered in both (:func:`answered_by_both`); NaN when there is none."""
    _check_pair(reference, predicted, ("reference", "predicted"), abstained=(True, True))
    a, b = np.asarray(reference, dtype=np.int64), np.asarray(predicted, dtype=np.int64)
    both = answered_by_both(a, b)
    return float(np.mean(a[both] != b[both])) if both.any() else float("nan")


def _accuracy(labels: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.mean(labels == predicted))


# ---------------------------------------------------------------------------- alignment


def _ids_message(ids: np.ndarray) -> str:
    shown = ", ".join(repr(str(i)) for i in ids[:_MAX_IDS_IN_MESSAGE])
    more = f" and {ids.size - _MAX_IDS_IN_MESSAGE} more" if ids.size > _MAX_IDS_IN_MESSAGE else ""
    return shown + more


def align_to_reference(reference_ids: np.ndarray, ids: np.ndarray, *, path: str | None = None) -> np.ndarray:
    """Positions ``order`` such that ``ids[order] == reference_ids``.

    Both must hold the same unique sample ids (in any order); otherwise :class:`InputError`
    names the missing or extra ids (:func:`classwise.sample_ids.sample_id_positions`).
    """
    return sample_id_positions(
        reference_ids,
        ids,
        path=path,
        field="sample_ids",
        exact=True,
        wanted_name="the clean file",
        missing="lacks {count} clean sample id(s)",
        extra="has {count} sample id(s) not in the clean file",
    )


def _shared(reference_ids: np.ndarray, ids: np.ndarray, path: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, clean rows)`` of the sample ids a shift shares with the clean file: the shift's
    rows that hold one and where each sits in the clean file (none shared is an error)."""
    sample_id_positions(ids, ids, path=path, field="sample_ids")  # refuses a repeated id
    positions = pd.Index(np.asarray(reference_ids).astype(str)).get_indexer(np.asarray(ids).astype(str))
    rows = np.flatnonzero(positions >= 0)
    if rows.size == 0:
        raise InputError(
            f"shares no sample id with the clean file, e.g. {_ids_message(np.asarray(ids))}", path=path, field="sample_ids"
        )
    return rows, positions[rows]


# ---------------------------------------------------------------------------- the table


def transformation_test_row(
    labels: np.ndarray,
    clean_predicted: np.ndarray,
    predicted: np.ndarray,
    thresholds: Thresholds | None = None,
) -> dict[str, Any]:
    """One test from aligned arrays: the measures, each checked quantity's status, the verdict."""
    limits = thresholds or Thresholds()
    y, clean = _check_pair(labels, clean_predicted, ("labels", "clean_predicted"), abstained=(False, True))
    _, shifted = _check_pair(labels, predicted, ("labels", "predicted"), abstained=(False, True))
    row: dict[str, Any] = {
        "n_samples": int(y.size),
        "clean_accuracy": _accuracy(y, clean),
        "accuracy": _accuracy(y, shifted),
        "clean_macro_f1": macro_f1(y, clean),
        "macro_f1": macro_f1(y, shifted),
        "flip_rate": prediction_flip_rate(clean, shifted),
        "flip_rate_n": int(np.count_nonzero(answered_by_both(clean, shifted))),
    }
    row["accuracy_drop"] = row["clean_accuracy"] - row["accuracy"]
    row["macro_f1_drop"] = row["clean_macro_f1"] - row["macro_f1"]
    reasons = []
    worst = 0
    for name in CHECKED:
        quantity: Limits = getattr(limits, name)
        if not math.isfinite(row[name]):  # no sample answered both times: nothing passed
            row[f"{name}_status"] = status = "warn"
            reasons.append(f"{name} undefined (no sample answered both times)")
            worst = max(worst, STATUSES.index(status))
            continue
        status = quantity.status(row[name])
        row[f"{name}_status"] = status
        if status != "pass":
            bound = quantity.fail if status == "fail" else quantity.warn
            reasons.append(f"{name} {row[name]:.3f} > {status} {bound:g}")
        worst = max(worst, STATUSES.index(status))
    row["status"] = STATUSES[worst]
    row["reason"] = "; ".join(reasons)
    return row


COLUMNS: tuple[str, ...] = (
    "n_samples",
    "clean_n",
    "clean_accuracy",
    "accuracy",
    "accuracy_drop",
    "clean_macro_f1",
    "macro_f1",
    "macro_f1_drop",
    "flip_rate",
    "flip_rate_n",
    "accuracy_drop_status",
    "macro_f1_drop_status",
    "flip_rate_status",
    "status",
    "reason",
)
"""Columns of :func:`transformation_test_table`, in order."""


def transformation_test_table(
    clean: ScoresFile | str | Path,
    shifted: Mapping[str, ScoresFile | str | Path],
    *,
    thresholds: Thresholds | None = None,
    subsets: Collection[str] = (),
) -> pd.DataFrame:
    """The transformation tests of one model: one row per shift (index ``shift``, given order).

    ``clean`` and each entry of ``shifted`` (shift name -> logits) are cached logits files
    (paths or loaded :class:`ScoresFile`) of the same model on the same samples; rows are
    matched by ``sample_ids`` and the labels must agree. A shift of ``subsets`` (a shift given
    by a labels file of its own) may hold other samples than clean's: it is compared with the
    clean predictions on the sample ids both hold, and ``n_samples`` says how many. Columns:
    :data:`COLUMNS`.
    """
    if not shifted:
        raise InputError("no transformed evaluations given", field="shifted")
    reference = as_scores(clean)
    clean_pred = reference.predictions
    rows = []
    for name, source in shifted.items():
        scores = as_scores(source)
        path = where(scores, f"shifted[{name!r}]")
        if scores.n_classes != reference.n_classes:
            raise InputError(
                f"has {scores.n_classes} classes, the clean file {reference.n_classes}",
                path=path,
                field="logits",
            )
        if name in subsets:  # the samples both hold, in the shift's order
            order, kept = _shared(reference.sample_ids, scores.sample_ids, path)
        else:
            kept = np.arange(reference.sample_ids.size)
            order = align_to_reference(reference.sample_ids, scores.sample_ids, path=path)
        if not np.array_equal(scores.labels[order], reference.labels[kept]):
            bad = reference.sample_ids[kept][scores.labels[order] != reference.labels[kept]]
            raise InputError(
                f"labels differ from the clean file's for sample(s) {_ids_message(bad)}",
                path=path,
                field="labels",
            )
        row = transformation_test_row(reference.labels[kept], clean_pred[kept], scores.predictions[order], thresholds)
        rows.append({"shift": str(name), "clean_n": reference.n_samples, **row})
    frame = pd.DataFrame(rows).set_index("shift")
    return frame[list(COLUMNS)]
