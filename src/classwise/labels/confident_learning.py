"""Confident learning (Northcutt et al. 2021): flag likely label errors from out-of-sample probabilities.

The ``cleaned_cl`` view of any data set is ``labels`` with ``-1`` for every flagged sample
(:func:`cleaned_cl_labels`). ``pred_probs`` must be *out-of-sample* (a reference model that did
not train on these samples, or cross-validated predictions), ``(N, K)`` rows summing to 1.

``backend="cleanlab"`` calls ``cleanlab.filter.find_label_issues`` (the package is optional);
``"numpy"`` is this module's own implementation of the same algorithm (cleanlab 2.x semantics,
single-label case), and ``"auto"`` (the default) uses cleanlab when it is importable. The numpy
implementation, step by step:

1. per-class thresholds ``t_k`` = mean of ``p_k`` over samples labelled ``k`` (2 for a class
   without samples), clipped below at ``2e-6``;
2. a sample is *confident* for class ``j`` when ``p_j >= t_j - 1e-6``; its guessed true class is
   that class, or the argmax of ``p`` when several are confident; samples confident for no class
   are not counted;
3. the confident joint ``C[given, true]`` counts the confident samples, its diagonal raised to
   at least 1, then calibrated: each row scaled to the number of samples with that given label,
   the whole to ``N``, rounded preserving row totals;
4. the prune counts ``P = C.T`` (``P[true, given]``), with each diagonal raised to
   ``min_examples_per_class`` and the raise subtracted evenly from that column's non-zero
   off-diagonal entries (negatives to 0, then truncated to integers);
5. ``prune_by_noise_rate``: within given class ``k`` (more than ``min_examples_per_class``
   samples), for every ``j != k`` flag the ``P[j, k]`` samples with the largest margin
   ``p_j - p_k``; ``prune_by_class``: flag the ``n_k - P[k, k]`` samples with the smallest
   ``p_k``; ``both``: flagged by both; ``confident_learning``: the confident samples whose
   guessed class differs from the given label;
6. finally a sample whose given label is (within ``1e-6``) the argmax of ``p`` is never flagged.

Ties in the orderings are broken by ``numpy.argsort``'s default sort, as cleanlab does.
"""

from __future__ import annotations

import importlib.util
from typing import Literal

import numpy as np

from classwise._extras import install_command
from classwise.errors import InputError, check_count
from classwise.validation import check_labels, check_probabilities, check_score_matrix

__all__ = ["FilterBy", "cleaned_cl_labels", "confident_joint", "find_label_issues", "prune_counts"]

FilterBy = Literal["prune_by_noise_rate", "prune_by_class", "both", "confident_learning"]
FILTERS = ("prune_by_noise_rate", "prune_by_class", "both", "confident_learning")
Backend = Literal["auto", "cleanlab", "numpy"]

FLOAT_EPS = 1e-6
"""cleanlab's fuzzy comparison tolerance (thresholds and the final argmax check)."""
THRESHOLD_FLOOR = 2 * FLOAT_EPS
TINY = 1e-100
MISSING_CLASS_THRESHOLD = 2.0


def _check_inputs(labels: np.ndarray, pred_probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    probs = check_score_matrix(np.asarray(pred_probs, dtype=np.float64), field="pred_probs", min_classes=2, min_samples=0)
    labels = np.asarray(labels)
    if labels.size == 0:  # an empty list has dtype float64
        labels = labels.astype(np.int64)
    labels = check_labels(labels, probs.shape[0], probs.shape[1])
    check_probabilities(probs, field="pred_probs")
    return labels, probs


def _round_preserving_row_totals(matrix: np.ndarray) -> np.ndarray:
    """Round each row to integers whose sum is the row's rounded sum (largest remainders first)."""
    out = np.empty(matrix.shape, dtype=np.int64)
    for r, row in enumerate(np.asarray(matrix, dtype=float)):
        ints = row.round()
        target = np.round(row.sum())
        while abs(ints.sum() - target) > FLOAT_EPS:
            diff = np.round(target - ints.sum())
            step = -1 if diff < 0 else 1
            changes = min(int(abs(diff)), row.size)
            order = np.argsort(row - ints)[::-step][:changes]
            ints[order] += step
        out[r] = ints.astype(np.int64)
    return out


def confident_joint(labels: np.ndarray, pred_probs: np.ndarray, *, calibrate: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(C, off_diagonal)``: the (calibrated) confident joint ``C[given, true]`` (int64 ``(K, K)``)
    and the indices of the confident samples whose guessed true class differs from their label."""
    labels, probs = _check_inputs(labels, pred_probs)
    k = probs.shape[1]
    counts = np.bincount(labels, minlength=k)
    # np.mean per class (pairwise summation), exactly as cleanlab computes the thresholds
    order = np.argsort(labels, kind="stable")
    groups = np.split(probs[order, labels[order]], np.cumsum(counts)[:-1])
    thresholds = np.array([g.mean() if g.size else MISSING_CLASS_THRESHOLD for g in groups])
    thresholds = np.maximum(thresholds, THRESHOLD_FLOOR)
    confident = probs >= thresholds - FLOAT_EPS
    n_confident = confident.sum(axis=1)
    guess = np.where(n_confident > 1, probs.argmax(axis=1), confident.argmax(axis=1))
    counted = n_confident > 0
    joint = np.zeros((k, k), dtype=np.int64)
    np.add.at(joint, (labels[counted], guess[counted]), 1)
    np.fill_diagonal(joint, np.maximum(joint.diagonal(), 1))
    off_diagonal = np.flatnonzero(counted & (guess != labels))
    if calibrate:
        scaled = joint / np.maximum(joint.sum(axis=1, keepdims=True), TINY) * counts[:, None]
        scaled = scaled / max(scaled.sum(), TINY) * counts.sum()
        joint = _round_preserving_row_totals(scaled)
    return joint, off_diagonal


def prune_counts(joint: np.ndarray, *, min_examples_per_class: int = 1) -> np.ndarray:
    """``P[true, given]``: how many samples of each given class to prune towards each true class."""
    matrix = np.asarray(joint, dtype=float).T
    diagonal = matrix.diagonal()
    raised = np.maximum(diagonal, min_examples_per_class)
    per_column = np.maximum(np.count_nonzero(matrix, axis=0) - 1.0, 1.0)
    out = matrix - (raised - diagonal) / per_column
    out[out < 0] = 0
    np.fill_diagonal(out, raised)
    return _round_preserving_row_totals(out.astype(np.int64))


def _numpy_issues(labels: np.ndarray, probs: np.ndarray, filter_by: str, min_examples_per_class: int) -> np.ndarray:
    joint, off_diagonal = confident_joint(labels, probs)
    n, k = probs.shape
    if filter_by == "confident_learning":
        mask = np.zeros(n, dtype=bool)
        mask[off_diagonal] = True
    else:
        prune = prune_counts(joint, min_examples_per_class=min_examples_per_class)
        by_rate = np.zeros(n, dtype=bool)
        by_class = np.zeros(n, dtype=bool)
        for given in range(k):
            members = np.flatnonzero(labels == given)
            if members.size <= max(min_examples_per_class, 1):
                continue  # cleanlab neither prunes nor assigns a mask for such classes
            p = probs[members]
            if filter_by in ("prune_by_class", "both"):
                n_issues = members.size - prune[given, given]
                if n_issues >= 1:
                    by_class[members[np.argsort(p[:, given])[:n_issues]]] = True
            if filter_by in ("prune_by_noise_rate", "both"):
                for true in np.flatnonzero(prune[:, given] > 0):
                    if true == given:
                        continue
                    order = np.argsort(-(p[:, true] - p[:, given]))
                    by_rate[members[order[: prune[true, given]]]] = True
        mask = {"prune_by_noise_rate": by_rate, "prune_by_class": by_class, "both": by_rate & by_class}[filter_by]
    bumped = probs.copy()
    bumped[np.arange(n), labels] += FLOAT_EPS
    mask &= bumped.argmax(axis=1) != labels
    return mask


def cleanlab_available() -> bool:
    """Whether the optional cleanlab package is importable."""
    return importlib.util.find_spec("cleanlab") is not None


def find_label_issues(
    labels: np.ndarray,
    pred_probs: np.ndarray,
    *,
    filter_by: FilterBy = "prune_by_noise_rate",
    min_examples_per_class: int = 1,
    backend: Backend = "auto",
) -> np.ndarray:
    """Boolean mask ``(N,)``: ``True`` where confident learning flags the label as an error."""
    if filter_by not in FILTERS:
        raise InputError(f"expected one of {list(FILTERS)}, got {filter_by!r}", field="filter_by")
    if backend not in ("auto", "cleanlab", "numpy"):
        raise InputError(f"expected 'auto', 'cleanlab' or 'numpy', got {backend!r}", field="backend")
    min_examples_per_class = check_count(min_examples_per_class, "min_examples_per_class", minimum=0)
    labels, probs = _check_inputs(labels, pred_probs)
    use_cleanlab = backend == "cleanlab" or (backend == "auto" and cleanlab_available())
    if use_cleanlab:
        if not cleanlab_available():
            raise InputError(f"backend 'cleanlab' needs the cleanlab package: {install_command('pipeline')}", field="backend")
        from cleanlab.filter import find_label_issues as cl_find

        return np.asarray(
            cl_find(labels, probs, filter_by=filter_by, min_examples_per_class=min_examples_per_class, n_jobs=1),
            dtype=bool,
        )
    return _numpy_issues(labels, probs, filter_by, min_examples_per_class)


def cleaned_cl_labels(
    labels: np.ndarray,
    pred_probs: np.ndarray,
    *,
    filter_by: FilterBy = "prune_by_noise_rate",
    min_examples_per_class: int = 1,
    backend: Backend = "auto",
) -> np.ndarray:
    """The ``cleaned_cl`` view: ``labels`` (int64) with ``-1`` for every flagged sample."""
    mask = find_label_issues(
        labels, pred_probs, filter_by=filter_by, min_examples_per_class=min_examples_per_class, backend=backend
    )
    out = np.asarray(labels, dtype=np.int64).copy()
    out[mask] = -1
    return out
