"""Per-set classification metrics of the subset and reference test suites.

The model-testing catalogue names the metrics but its worked examples
are not mutually consistent: its "macro F1" example (0.78) is the support-weighted F1, its
macro precision (0.67) is macro over all labels, its macro recall (0.67) is the weighted
recall and its one-vs-one AUC (0.75) skips the pair with no positives.  We therefore follow
**scikit-learn's definitions exactly** and test against scikit-learn.

Notation: ``N`` samples (or the ``m`` samples of one subset), ``C`` classes, ``p_i`` the
probability row of sample ``i``, ``y_i`` its label and ``ŷ_i = argmax_c p_ic`` its prediction
(ties -> the lowest class index, as ``np.argmax`` and the rest of classwise).  Per class ``c``:
``TP_c = #{y = c, ŷ = c}``, ``T_c = #{y = c}`` (support), ``P_c = #{ŷ = c}``.

============================  ========================================================  ======
metric                        definition                                                better
============================  ========================================================  ======
``macro_f1``                  mean over L of ``2 TP_c / (T_c + P_c)``                   higher
``macro_precision``           mean over L of ``TP_c / P_c`` (0 when ``P_c = 0``)        higher
``macro_recall``              mean over L of ``TP_c / T_c`` (0 when ``T_c = 0``)        higher
``accuracy``                  ``mean_i [ŷ_i = y_i]``                                    higher
``auc_ovo``                   Hand & Till one-vs-one AUC (below)                        higher
``positive_prediction_rate``  ``max_c P_c / m``: share of the most-predicted class      lower
``average_uncertainty``       ``mean_i (1 - max_c p_ic)``, the document's "confidence"  lower
============================  ========================================================  ======

Label set ``L`` (``label_set``):

* ``"present"`` (default) - the labels present in ``y_true ∪ y_pred`` of the set being
  scored; identical to ``sklearn.metrics.f1_score(..., average="macro", labels=None,
  zero_division=0)``.  A class absent from a subset does not drag the subset's score to 0.
* ``"all"`` - all ``C`` labels; identical to ``labels=range(C), zero_division=0``: a class
  with neither samples nor predictions contributes 0.

The three macro averages are :func:`classwise.metrics.stats.macro_rates` of the per-row
class counts (:func:`~classwise.metrics.stats.class_counts`), the computation the worst-class
metrics and the transformation tests share.  Undefined cases (0/0) follow scikit-learn's
``zero_division=0``: precision of a class never predicted, recall of a class without samples
are 0.  F1's denominator ``T_c + P_c`` is
positive for every present label.

**One-vs-one AUC** is ``roc_auc_score(y, p, multi_class="ovo", labels=range(C))``: over the
classes ``a < b`` *present in y_true* of the scored set, the mean of
``(AUC(p_a; a vs b) + AUC(p_b; b vs a)) / 2`` where ``AUC(p_a; a vs b)`` is the probability
that a class-``a`` sample has a higher ``p_a`` than a class-``b`` sample (ties count 1/2) -
the Mann-Whitney form of the trapezoidal ROC area.  Classes absent from a subset are simply
left out of the pairs; the probability columns are used *as they are* (not renormalised over
the present classes: renormalising changes the ranks of a column across samples and would
no longer match scikit-learn with ``labels=range(C)``).  Fewer than two classes present in
y_true -> NaN (scikit-learn raises or warns).

**Positive prediction rate**: the per-class vector ``P_c / m`` is given by
:func:`positive_prediction_rates`; its macro mean is always ``1/C`` (uninformative), so the
scalar is the **maximum** share, the rate of the most-predicted class: ``1/C`` for perfectly
balanced predictions, ``1`` when the model predicts one class for everything (lower is
better).

**Average uncertainty** is what the document calls "average confidence" and defines as the
distance between the predicted class's probability and 1, averaged: ``mean(1 - max p)``.
Larger means *less* confident, hence the name, which says so (lower is better): an increase is
the degradation (the document's example treats a drop 0.85 -> 0.5 as the warning case, which
contradicts its own definition; we follow the definition).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy.special import softmax

from classwise.errors import InputError
from classwise.metrics.stats import class_counts, macro_rates
from classwise.validation import ScoreKind, check_kind, check_score_matrix
from classwise.validation import check_labels as _check_labels
from classwise.validation import check_probabilities as _check_probability_rows

__all__ = [
    "HIGHER_IS_BETTER",
    "SUBSET_METRICS",
    "LABEL_SETS",
    "LabelSet",
    "SubsetEvaluator",
    "check_label_set",
    "check_labels",
    "check_probabilities",
    "classification_metrics",
    "positive_prediction_rates",
    "to_probabilities",
]

LabelSet = Literal["present", "all"]
LABEL_SETS: tuple[LabelSet, ...] = ("present", "all")

#: Metrics of the subset performance tests, in report order.
SUBSET_METRICS: tuple[str, ...] = (
    "macro_f1",
    "macro_precision",
    "macro_recall",
    "accuracy",
    "auc_ovo",
    "positive_prediction_rate",
    "average_uncertainty",
)

#: Direction of each metric: True when a higher value is better.
HIGHER_IS_BETTER: dict[str, bool] = {
    "macro_f1": True,
    "macro_precision": True,
    "macro_recall": True,
    "accuracy": True,
    "auc_ovo": True,
    "positive_prediction_rate": False,
    "average_uncertainty": False,
}

# Row blocks of resampled index matrices are sized to about this many elements.
_TARGET_BLOCK_ELEMENTS = 1 << 20
# Probability columns transposed at once when the AUC codes are built.
_COLUMN_BLOCK = 64


def to_probabilities(scores: np.ndarray, kind: ScoreKind = "logits") -> np.ndarray:
    """Float64 ``(N, C)`` probabilities from logits (softmax in float64) or validated probs.

    Logits may hold ``-inf`` (a class ruled out) but no NaN or ``+inf`` and each row needs a
    finite entry.  Given probabilities must pass :func:`classwise.validation.check_probabilities`;
    they are returned as float64, not renormalised.
    """
    kind = check_kind(kind)
    x = check_score_matrix(scores, field=kind).astype(np.float64)
    if kind == "logits":
        if np.isnan(x).any() or np.isposinf(x).any():
            raise InputError("logits hold NaN or +inf", field=kind)
        if not np.isfinite(x).any(axis=1).all():
            raise InputError("a row of logits has no finite entry", field=kind)
        return softmax(x, axis=1)
    return check_probabilities(x)


def check_probabilities(probs: np.ndarray, field: str = "probs") -> np.ndarray:
    """Validate ``(N, C)`` probabilities and return them as float64 (no renormalisation)."""
    p = check_score_matrix(probs, field=field).astype(np.float64, copy=False)
    _check_probability_rows(p, field=field)
    return p


def check_labels(labels: np.ndarray, n_samples: int, n_classes: int, field: str = "labels") -> np.ndarray:
    """Return ``labels`` as an int64 ``(N,)`` array with values in ``[0, C)``, or raise."""
    return _check_labels(labels, n_samples, n_classes, field=field)


def _check_metrics(metrics: Sequence[str]) -> tuple[str, ...]:
    out = tuple(metrics)
    unknown = [m for m in out if m not in HIGHER_IS_BETTER]
    if unknown:
        raise InputError(f"unknown metrics {unknown}; choose from {list(SUBSET_METRICS)}", field="metrics")
    return out


def positive_prediction_rates(predictions: np.ndarray, n_classes: int) -> np.ndarray:
    """``(C,)`` share of the predictions that go to each class, ``P_c / N`` (sums to 1)."""
    pred = np.asarray(predictions, dtype=np.int64)
    if pred.ndim != 1 or pred.size == 0:
        raise InputError(f"expected a non-empty 1-D array, got shape {pred.shape}", field="predictions")
    return np.bincount(pred, minlength=n_classes)[:n_classes] / pred.size


def check_label_set(label_set: object) -> LabelSet:
    """``label_set`` if it is ``"present"`` or ``"all"``, else :class:`InputError`."""
    if label_set not in LABEL_SETS:
        raise InputError(f"label_set must be 'present' or 'all', got {label_set!r}", field="label_set")
    return label_set


class SubsetEvaluator:
    """Metrics of many subsets (rows of an index matrix) of one ``(probs, labels)`` set.

    Built once per set; :meth:`evaluate` scores every row of a ``(B, m)`` index matrix at
    once (a permutation draw, a bootstrap resample with repeated indices, or one subset),
    vectorised over rows with per-row ``bincount`` offsets.  Cost: ``O(B m)`` for the
    confusion-based metrics and ``O(B m C)`` for the one-vs-one AUC (a loop over classes,
    each step vectorised over the whole block).  Memory: the probabilities are not kept;
    the AUC needs one small integer code per (sample, class present) - ``N x C`` bytes
    for up to 127 distinct scores per class, built once in ``O(N C log N)``.

    Parameters
    ----------
    probs:
        ``(N, C)`` probabilities (validated, see :func:`check_probabilities`).
    labels:
        ``(N,)`` integer labels in ``[0, C)``.
    predictions:
        Optional ``(N,)`` predictions; default ``argmax(probs)`` (ties -> lowest index).
        Pass ``argmax(logits)`` when the probabilities come from a softmax of logits, so
        that predictions agree with the rest of classwise even where a softmax would tie.
    label_set:
        ``"present"`` or ``"all"``, the label set of the macro averages (module docstring).
    """

    def __init__(
        self,
        probs: np.ndarray,
        labels: np.ndarray,
        *,
        predictions: np.ndarray | None = None,
        label_set: LabelSet = "present",
    ):
        p = check_probabilities(probs)
        n, c = p.shape
        self.n_samples = n
        self.n_classes = c
        self.labels = check_labels(labels, n, c)
        if predictions is None:
            self.predictions = np.argmax(p, axis=1).astype(np.int64)
        else:
            self.predictions = check_labels(predictions, n, c, field="predictions")
        self.label_set: LabelSet = check_label_set(label_set)
        self.uncertainty = 1.0 - p.max(axis=1)
        self._classes = np.unique(self.labels)
        self._auc_codes, self._n_distinct = _auc_codes(p, self.labels, self._classes)
        self._max_distinct = int(self._n_distinct.max())

    @classmethod
    def from_scores(
        cls,
        scores: np.ndarray,
        labels: np.ndarray,
        kind: ScoreKind = "logits",
        *,
        label_set: LabelSet = "present",
    ) -> SubsetEvaluator:
        """Build from cached scores: softmax for logits, predictions ``argmax(scores)``."""
        probs = to_probabilities(scores, kind)
        return cls(probs, labels, predictions=np.argmax(np.asarray(scores), axis=1), label_set=label_set)

    # ------------------------------------------------------------------ evaluation
    def evaluate_all(self, metrics: Sequence[str] = SUBSET_METRICS) -> dict[str, float]:
        """Every requested metric on the whole set."""
        idx = np.arange(self.n_samples, dtype=np.int64)[None, :]
        return {k: float(v[0]) for k, v in self.evaluate(idx, metrics).items()}

    def evaluate_subset(self, indices: np.ndarray, metrics: Sequence[str] = SUBSET_METRICS) -> dict[str, float]:
        """Every requested metric on the samples ``indices`` (1-D, repeats allowed)."""
        idx = np.asarray(indices, dtype=np.int64)
        if idx.ndim != 1:
            raise InputError(f"expected 1-D indices, got shape {idx.shape}", field="indices")
        return {k: float(v[0]) for k, v in self.evaluate(idx[None, :], metrics).items()}

    def evaluate(self, index_matrix: np.ndarray, metrics: Sequence[str] = SUBSET_METRICS) -> dict[str, np.ndarray]:
        """``{metric: (B,) values}`` for the ``B`` rows of a ``(B, m)`` index matrix.

        Each row is one multiset of sample indices (``m >= 1``); rows are processed in
        blocks of about 2**20 elements.
        """
        names = _check_metrics(metrics)
        idx = np.asarray(index_matrix)
        if idx.ndim != 2 or idx.shape[1] == 0:
            raise InputError(f"expected a (B, m) index matrix with m >= 1, got shape {idx.shape}", field="indices")
        if not np.issubdtype(idx.dtype, np.integer):
            raise InputError(f"expected integer indices, got dtype {idx.dtype}", field="indices")
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_samples):
            raise InputError(f"indices must lie in [0, {self.n_samples})", field="indices")
        b_total, m = idx.shape
        out = {k: np.empty(b_total) for k in names}
        # Scratch arrays are (block, m), (block, C) and, for the AUC, (block, distinct scores).
        widest = max(m, self.n_classes, self._max_distinct if "auc_ovo" in names else 1)
        step = max(1, _TARGET_BLOCK_ELEMENTS // widest)
        for start in range(0, b_total, step):
            block = idx[start : start + step]
            for k, v in self._evaluate_block(block, names).items():
                out[k][start : start + len(block)] = v
        return out

    def _evaluate_block(self, idx: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        b, m = idx.shape
        c = self.n_classes
        y = self.labels[idx]
        yhat = self.predictions[idx]
        tp, support, predicted = class_counts(y, yhat, c)
        hits = y == yhat
        res: dict[str, np.ndarray] = {}
        rates = tuple(rate for rate in ("precision", "recall", "f1") if f"macro_{rate}" in names)
        if rates:
            for rate, values in macro_rates(tp, support, predicted, label_set=self.label_set, rates=rates).items():
                res[f"macro_{rate}"] = values
        if "accuracy" in names:
            res["accuracy"] = hits.sum(axis=1) / m
        if "positive_prediction_rate" in names:
            res["positive_prediction_rate"] = predicted.max(axis=1) / m
        if "average_uncertainty" in names:
            res["average_uncertainty"] = self.uncertainty[idx].mean(axis=1)
        if "auc_ovo" in names:
            true_keys = ((np.arange(b, dtype=np.int64) * c)[:, None] + y).ravel()
            res["auc_ovo"] = self._auc_ovo_block(idx, y, support, true_keys)
        return {k: res[k] for k in names}

    def _auc_ovo_block(self, idx: np.ndarray, y: np.ndarray, support: np.ndarray, true_keys: np.ndarray) -> np.ndarray:
        """Hand & Till OvO AUC per row: ``sum_{a != b present} A_ab / (2 * n_pairs)`` with
        ``A_ab = U_ab / (n_a n_b)`` and ``U_ab = sum_{x in a, z in b} [p_a(x) > p_a(z)] + [=]/2``.

        For column ``a``, ``u_a`` holds the distinct ``p_a`` values of the class-``a``
        samples; ``H`` counts a row's class-``a`` samples per value and ``S`` its suffix sums,
        so the class-``a`` samples above / tied with ``z`` are ``S[hi(z)]`` / ``S[lo(z)] -
        S[hi(z)]`` (``lo``, ``hi``: left / right insertion points of ``p_a(z)`` in ``u_a``).
        """
        b, m = idx.shape
        c = self.n_classes
        present = support > 0
        n_present = present.sum(axis=1)
        total = np.zeros(b)
        rows = np.arange(b, dtype=np.int64)[:, None]
        supp_f = support.astype(np.float64)
        for row, a in enumerate(self._classes):
            a = int(a)
            has_a = present[:, a]
            if not has_a.any():
                continue
            g_n = int(self._n_distinct[row])
            code = self._auc_codes[row][idx].astype(np.int64)
            lo = code >> 1
            hi = lo + (code & 1)
            is_a = y == a
            h = np.bincount((rows * g_n + lo)[is_a], minlength=b * g_n).reshape(b, g_n)
            suffix = np.zeros((b, g_n + 1))
            suffix[:, :g_n] = np.cumsum(h[:, ::-1], axis=1)[:, ::-1]
            g = 0.5 * (np.take_along_axis(suffix, lo, axis=1) + np.take_along_axis(suffix, hi, axis=1))
            g[is_a] = 0.0
            u_ab = np.bincount(true_keys, weights=g.ravel(), minlength=b * c).reshape(b, c)
            den = supp_f[:, a : a + 1] * supp_f
            ok = present & has_a[:, None]
            ok[:, a] = False
            with np.errstate(divide="ignore", invalid="ignore"):
                total += np.where(ok, u_ab / den, 0.0).sum(axis=1)
        n_pairs = n_present * (n_present - 1) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n_pairs > 0, total / (2.0 * n_pairs), np.nan)


def _auc_codes(p: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each sample's ``p_a`` falls among the class-``a`` samples' distinct ``p_a`` values.

    For every class ``a`` present in ``labels`` (row ``r`` of the result), with ``u_a`` the
    sorted distinct ``p_a`` values of the class-``a`` samples, ``lo = #{u_a < p_a(z)}`` and
    ``tie = [p_a(z) in u_a]``; the code is ``2 lo + tie`` in the smallest unsigned dtype that
    holds it (uint8 for up to 127 distinct values per class): ``(len(classes), N)`` codes,
    ``N x C`` bytes for ImageNet-sized sets, computed once so that resamples only gather.
    """
    uniques = [np.unique(p[labels == a, a]) for a in classes]
    n_distinct = np.array([u.size for u in uniques], dtype=np.int64)
    dtype = np.min_scalar_type(2 * int(n_distinct.max()) + 1)
    codes = np.empty((len(classes), p.shape[0]), dtype=dtype)
    for start in range(0, len(classes), _COLUMN_BLOCK):
        block = classes[start : start + _COLUMN_BLOCK]
        cols = np.ascontiguousarray(p[:, block].T)  # one pass over the rows per block of columns
        for j in range(len(block)):
            u = uniques[start + j]
            lo = np.searchsorted(u, cols[j], side="left")
            tie = u[np.minimum(lo, u.size - 1)] == cols[j]
            codes[start + j] = 2 * lo + tie
    return codes, n_distinct


def classification_metrics(
    probs: np.ndarray,
    labels: np.ndarray,
    *,
    predictions: np.ndarray | None = None,
    metrics: Sequence[str] = SUBSET_METRICS,
    label_set: LabelSet = "present",
) -> dict[str, float]:
    """The requested metrics (module docstring) of one ``(probs, labels)`` set."""
    ev = SubsetEvaluator(probs, labels, predictions=predictions, label_set=label_set)
    return ev.evaluate_all(metrics)
