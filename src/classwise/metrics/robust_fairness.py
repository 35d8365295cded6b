"""Robust fairness: how evenly an attack's damage falls on the classes.

From a clean and an attacked score matrix of the same samples (``classwise robust-fairness
CLEAN.npz ATTACKED.npz``, the workflow's robust-fairness tables). Notation: ``y_i`` the label
of sample ``i`` of ``N``, ``p_i`` the argmax of its clean scores, ``q_i`` of its attacked
scores (ties to the lowest class index, as everywhere in classwise), ``n_c = #{i: y_i = c}``
the support of class ``c`` and ``K`` the set of the ``m`` classes with ``n_c > 0``.

Per class ``c`` in ``K`` (the rows of ``per_class``):

* ``clean_error_c = 1 - #{y_i = c, p_i = c} / n_c`` and ``robust_error_c = 1 - #{y_i = c,
  q_i = c} / n_c``: the class-wise standard and robust errors of Xu et al. 2021, "To be Robust
  or to be Fair: Towards Fairness in Adversarial Training" (ICML), measured with the cached
  attack.
* ``boundary_error_c = #{y_i = c, p_i = c, q_i != c} / n_c``: the share of the class's samples
  correct on clean and wrong under attack, Xu et al.'s boundary error (the probability that a
  correctly classified sample lies within the attack's budget of the decision boundary),
  which with a perfect attack splits the robust error as ``robust = clean + boundary``.
  Measured with a real attack, a sample wrong on clean but right under attack (the attack
  moved it across the boundary the right way) counts in neither, so ``robust_error_c`` can
  fall short of ``clean_error_c + boundary_error_c``.

Per class ``c``, every class (the attacked predictions can land on a class without samples):

* ``attracted_c = #{q_i = c} / N``: the class's share of the attacked predictions. Lee et al.
  2024, "DAFA: Distance-Aware Fair Adversarial Training" (ICLR) observe that the errors an
  attack causes on a class land mostly on the classes similar to it; a class that attracts
  far more than its share ``n_c / N`` is where they land.

Over ``K``:

* ``worst_class_clean_accuracy = min_c (1 - clean_error_c)`` and
  ``worst_class_robust_accuracy = min_c (1 - robust_error_c)``, each with its class (the
  lowest index on ties): the "worst" columns of Wei et al. 2023, "CFA: Class-wise Calibrated
  Fair Adversarial Training" (CVPR), and of DAFA.
* ``robust_error_sd = sqrt(1/m sum_c (r_c - mean)^2)``, ``r_c = robust_error_c``, ``mean =
  1/m sum_c r_c``: the *population* standard deviation (``ddof = 0``), because the classes of
  the evaluation are the whole population whose spread is described, not a sample from a
  larger set of classes (``numpy.std``'s default).
* ``robust_error_nsd = robust_error_sd / mean``: the normalised standard deviation
  (coefficient of variation), comparable between models of different robust error.
* ``robust_error_gini = sum_c sum_d |r_c - r_d| / (2 m^2 mean)``: the Gini coefficient, the
  mean absolute difference over all ``m^2`` ordered pairs (the pairs of a class with itself
  included: the population convention, matching the population SD; the ``m (m - 1)``
  convention is this times ``m / (m - 1)``) over twice the mean. 0 when every class has the
  same robust error, ``(m - 1) / m`` when one class has all of it. Computed from the sorted
  errors as ``sum_k (2k - m - 1) r_(k) / (m^2 mean)``, ``k = 1..m``.

Conventions. Classes without samples are excluded from the worst classes, the SD, NSD and
Gini (as by the worst-class metrics, :func:`classwise.metrics.suite.classes_with_samples`)
and their error rows are ``null``. A mean robust error of 0 means every class is robust on
every sample, so the SD is 0 too and the NSD and Gini (0/0) are defined as 0: no disparity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from classwise.errors import InputError
from classwise.logits_io import ScoresFile, load_outputs
from classwise.metrics.stats import ratio
from classwise.metrics.worst_class import worst_recall
from classwise.validation import check_finite_rows, check_labels, check_score_matrix

__all__ = ["RobustFairness", "WorstClass", "gini", "load_clean_and_attacked", "robust_fairness", "robust_fairness_of_files"]


@dataclass(frozen=True)
class WorstClass:
    """The lowest class-wise accuracy (or the largest error) and its class index; ``tied``
    classes share the value (more than 1: the index is the tie rule's pick, the lowest)."""

    value: float
    class_index: int
    tied: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "class": self.class_index, **({"n_tied": self.tied} if self.tied > 1 else {})}


@dataclass(frozen=True, eq=False)
class RobustFairness:
    """The robust-fairness metrics of one model under one attack (see the module docstring
    for every formula). Per-class arrays are ``(C,)`` float64 with NaN for the error rates of a
    class without samples."""

    support: np.ndarray
    clean_error: np.ndarray
    robust_error: np.ndarray
    boundary_error: np.ndarray
    attracted: np.ndarray
    worst_class_clean_accuracy: WorstClass
    worst_class_robust_accuracy: WorstClass
    robust_error_sd: float
    robust_error_nsd: float
    robust_error_gini: float
    #: Overall clean and robust accuracy (``#{p_i = y_i} / N``, ``#{q_i = y_i} / N``): the
    #: tables' A and robust A; not in :meth:`to_json`, whose fields are the issue's.
    accuracy: float
    robust_accuracy: float

    @property
    def n_classes(self) -> int:
        return int(self.support.shape[0])

    @property
    def n_samples(self) -> int:
        return int(self.support.sum())

    def worst_boundary_error(self) -> WorstClass:
        """The largest class-wise boundary error and its class (the lowest index on ties)."""
        c = int(np.nanargmax(self.boundary_error))
        value = float(self.boundary_error[c])
        return WorstClass(value, c, int(np.count_nonzero(self.boundary_error == value)))

    def to_json(self) -> dict[str, Any]:
        """``worst_class_clean_accuracy`` and ``worst_class_robust_accuracy`` (``{"value",
        "class"}``), ``robust_error_sd``, ``robust_error_nsd``, ``robust_error_gini`` and
        ``per_class``: one row per class index ``class`` with ``clean_error``,
        ``robust_error``, ``boundary_error`` (``null`` for a class without samples) and
        ``attracted``. Fractions, never percentages."""
        rows = np.column_stack([self.clean_error, self.robust_error, self.boundary_error, self.attracted]).tolist()
        return {
            "worst_class_clean_accuracy": self.worst_class_clean_accuracy.to_json(),
            "worst_class_robust_accuracy": self.worst_class_robust_accuracy.to_json(),
            "robust_error_sd": self.robust_error_sd,
            "robust_error_nsd": self.robust_error_nsd,
            "robust_error_gini": self.robust_error_gini,
            "per_class": [
                {
                    "class": c,
                    "clean_error": _finite(clean),
                    "robust_error": _finite(robust),
                    "boundary_error": _finite(boundary),
                    "attracted": attracted,
                }
                for c, (clean, robust, boundary, attracted) in enumerate(rows)
            ],
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def gini(values: np.ndarray) -> float:
    """The Gini coefficient ``sum_i sum_j |x_i - x_j| / (2 m^2 mean)`` of ``m`` non-negative
    values (population convention; 0 when every value is 0), from the sorted values in
    ``O(m log m)``."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    m = x.shape[0]
    total = float(x.sum())
    if m == 0 or total == 0.0:
        return 0.0
    weights = 2.0 * np.arange(1, m + 1) - m - 1
    # sum_k (2k - m - 1) x_(k) / (m^2 mean), m^2 mean = m * total; the weights sum to 0, so
    # x_(k) - x_(1) gives the same sum, exactly 0 (no round-off below it) for equal values
    return float(weights @ (x - x[0]) / (m * total))


def robust_fairness(clean_scores: np.ndarray, attacked_scores: np.ndarray, labels: np.ndarray) -> RobustFairness:
    """The robust-fairness metrics of ``(N, C)`` clean and attacked scores (logits,
    probabilities or one-hot hard predictions: only their argmax is used) of the same ``N``
    samples, row by row, with ``(N,)`` integer labels. Formulas and conventions: the module
    docstring. :class:`InputError` for scores that are not finite ``(N, C)`` matrices of the
    same shape, or labels outside ``[0, C)``."""
    clean = check_score_matrix(clean_scores, field="clean_scores", min_classes=2)
    attacked = check_score_matrix(attacked_scores, field="attacked_scores", min_classes=2)
    if attacked.shape != clean.shape:
        raise InputError(f"expected the shape of the clean scores {clean.shape}, got {attacked.shape}", field="attacked_scores")
    check_finite_rows(clean, field="clean_scores")
    check_finite_rows(attacked, field="attacked_scores")
    n, c = clean.shape
    y = check_labels(labels, n, c).astype(np.int64, copy=False)
    clean_right = clean.argmax(axis=1) == y
    attacked_prediction = attacked.argmax(axis=1)
    robust_right = attacked_prediction == y

    support = np.bincount(y, minlength=c)
    clean_hits = np.bincount(y[clean_right], minlength=c)
    robust_hits = np.bincount(y[robust_right], minlength=c)
    boundary = np.bincount(y[clean_right & ~robust_right], minlength=c)
    robust_error = 1.0 - ratio(robust_hits, support)
    with_samples = robust_error[support > 0]
    mean = float(with_samples.mean())
    sd = float(with_samples.std())  # ddof = 0: the population SD (module docstring)
    clean_worst = worst_recall(clean_hits, support)
    robust_worst = worst_recall(robust_hits, support)
    return RobustFairness(
        support=support,
        clean_error=1.0 - ratio(clean_hits, support),
        robust_error=robust_error,
        boundary_error=ratio(boundary, support),
        attracted=np.bincount(attacked_prediction, minlength=c) / n,
        worst_class_clean_accuracy=WorstClass(
            clean_worst.value, int(clean_worst.classes[0]), clean_worst.details.get("n_tied", 1)
        ),
        worst_class_robust_accuracy=WorstClass(
            robust_worst.value, int(robust_worst.classes[0]), robust_worst.details.get("n_tied", 1)
        ),
        robust_error_sd=sd,
        robust_error_nsd=sd / mean if mean > 0.0 else 0.0,
        robust_error_gini=gini(with_samples),
        accuracy=float(clean_right.mean()),
        robust_accuracy=float(robust_right.mean()),
    )


def load_clean_and_attacked(clean_path: str | Path, attacked_path: str | Path) -> tuple[ScoresFile, ScoresFile]:
    """Read a clean and an attacked outputs file (the logits cache's format,
    :mod:`classwise.logits_io`; hard predictions read one-hot) and return them with the
    attacked rows in the clean file's sample order. An attack on a class-stratified subset
    (``per_class``, :func:`classwise.shifts.spec.stratified_subset`; its sidecar JSON records
    ``attacked_subset``) holds fewer samples: the clean file is restricted to them first. :class:`InputError` naming the attacked file unless
    then both hold the same sample ids (the missing and the extra ids named), the same labels
    for them and the same number of classes."""
    from classwise.metrics.compare import align

    clean = load_outputs(clean_path)
    attacked = load_outputs(attacked_path)
    if attacked.n_samples < clean.n_samples and _attacked_subset(attacked_path):
        keep = np.isin(clean.sample_ids, attacked.sample_ids)
        if int(keep.sum()) == attacked.n_samples:  # every attacked id is a clean one: a subset
            clean = replace(clean.rows(keep), extra={})
    return clean, align(clean, attacked)


def _attacked_subset(path: str | Path) -> bool:
    """Whether the sidecar JSON of a cached logits file says its job attacked a subset."""
    import json

    from classwise.logits_io import sidecar_path

    sidecar = sidecar_path(path)
    try:
        return "attacked_subset" in json.loads(sidecar.read_text())
    except (OSError, ValueError, TypeError):
        return False


def robust_fairness_of_files(clean_path: str | Path, attacked_path: str | Path) -> tuple[RobustFairness, ScoresFile]:
    """:func:`robust_fairness` of a clean and an attacked outputs file matched by sample id
    (:func:`load_clean_and_attacked`), with the clean file (its class names)."""
    clean, attacked = load_clean_and_attacked(clean_path, attacked_path)
    for outputs in (clean, attacked):
        if outputs.abstained is not None:
            raise InputError(
                "the model abstained on some samples; robust fairness needs a prediction for every one", path=outputs.path
            )
    return robust_fairness(clean.scores, attacked.scores, clean.labels), clean
