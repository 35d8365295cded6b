"""Reversed ROC, rAUC and the exact expected accuracy on k classes (Slavutsky & Benjamini).

Setting: a *marginal* classifier scores every class of a sample independently of the
other classes (a linear head on a fixed representation, a distance to a prototype), and
predicts the class with the highest score.  Then the accuracy on any subset of classes
follows from the per-sample scores alone.

For a sample ``x`` with correct class ``y`` among ``K`` classes, let

* ``R_x`` = number of incorrect classes scored strictly **below** ``s_y(x)``,
* ``T_x`` = number of incorrect classes scored **equal** to ``s_y(x)`` (ties),
* ``U_x = K - 1 - R_x - T_x`` = number scored strictly above.

Tie convention (argument ``ties``):

* ``"random"`` (default): a tie is broken uniformly at random, so a tied incorrect class
  counts one half: ``C_x = (R_x + T_x / 2) / (K - 1)``.  This is the convention of the ROC
  AUC (``sklearn.metrics.roc_auc_score`` counts a tied positive/negative pair as 1/2).
* ``"error"``: a tie is an error (the correct class must be strictly highest), so
  ``C_x = R_x / (K - 1)``.  This is the convention of the paper's public notebook.

Without ties (the usual case for float logits) both agree.

Quantities:

* ``C_x`` — the share of incorrect classes scored below the correct one (the area under
  the per-sample reversed ROC curve ``rROC_x``).
* reversed ROC (:func:`reversed_roc`): classes play the role of data points.  For one
  sample, sweeping a threshold ``t`` down, ``rTPR_x(t) = 1{s_y(x) >= t}`` and
  ``rFPR_x(t)`` = share of incorrect classes with score ``>= t``; so ``rROC_x(u)`` is 0 for
  ``u < U_x / (K-1)``, 1 for ``u >= (U_x + T_x) / (K-1)``, and linear in between (a tie
  segment; with ``ties="error"`` the tied classes count as above, so it is a step).  The
  average curve ``rROC(u) = mean_x rROC_x(u)``.
* rAUC = area under the average curve = ``mean_x C_x`` = ``A_2`` (:func:`rauc`).
* exact expected accuracy at ``k`` observed classes, ``1 <= k <= K``
  (:func:`expected_accuracy`): the mean over samples ``x`` of the probability that ``x``
  is classified correctly when the classifier must choose among its correct class and
  ``k - 1`` incorrect classes drawn uniformly without replacement from the ``K - 1``:

  - ``ties="error"``:  ``A_k = mean_x C(R_x, k-1) / C(K-1, k-1)``
  - ``ties="random"``: ``A_k = mean_x [C(R_x+T_x+1, k) - C(R_x, k)] / ((T_x+1) C(K-1, k-1))``

  (the second is ``sum_j C(T,j) C(R,k-1-j) / C(K-1,k-1) / (j+1)`` summed in closed form
  with Vandermonde's identity; it reduces to the first when ``T_x = 0``).  Binomials are
  evaluated in log space with ``scipy.special.gammaln``, so nothing overflows for any
  ``K``.  Every sample has weight ``1/N``: with classes of equal size this equals the
  expected (balanced) accuracy over random ``k``-subsets of the classes that contain the
  sample's class.
* :func:`power_curve`: ``mean_x C_x^(k-1)``, the accuracy at ``k`` classes when ``C_x`` is
  the probability that a new random class scores below the correct one (Theorem 1), used
  for extrapolation beyond ``K``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import gammaln

from classwise.errors import InputError

Ties = Literal["random", "error"]
TIES: tuple[Ties, ...] = ("random", "error")

#: Temporaries are built in blocks of about this many elements (8 MiB of float64).
_BLOCK_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class RankCounts:
    """Per-sample counts of incorrect classes below / tied with the correct class.

    ``below[i]`` = ``R_x``, ``tied[i]`` = ``T_x`` (int64, shape ``(N,)``); ``n_classes`` = ``K``.
    """

    below: np.ndarray
    tied: np.ndarray
    n_classes: int

    @property
    def above(self) -> np.ndarray:
        """``U_x = K - 1 - R_x - T_x``: incorrect classes scored strictly above."""
        return self.n_classes - 1 - self.below - self.tied

    def effective(self, ties: Ties) -> RankCounts:
        """Counts under a tie convention: with ``"error"`` tied classes count as above."""
        check_ties(ties)
        if ties == "error":
            return RankCounts(self.below, np.zeros_like(self.tied), self.n_classes)
        return self


def check_ties(ties: object) -> Ties:
    """``ties`` if it is ``"random"`` or ``"error"``, else :class:`InputError`."""
    if ties not in TIES:
        raise InputError(f"expected one of {list(TIES)}, got {ties!r}", field="ties")
    return ties


def check_scores(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``scores`` (N, K), ``K >= 2``, finite, and integer ``labels`` in ``[0, K)``.

    Returns floating scores (float32 and float64 kept as they are, integers as float64;
    no copy) and int64 labels.
    """
    s = np.asarray(scores)
    y = np.asarray(labels)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] < 2:
        raise InputError(f"expected a 2-D array with >= 1 sample and >= 2 classes, got shape {s.shape}", field="scores")
    if not (np.issubdtype(s.dtype, np.floating) or np.issubdtype(s.dtype, np.integer)):
        raise InputError(f"expected numeric scores, got dtype {s.dtype}", field="scores")
    if not np.issubdtype(s.dtype, np.floating):
        s = s.astype(np.float64)
    if not np.isfinite(s).all():
        bad = np.flatnonzero(~np.isfinite(s).all(axis=1))
        raise InputError(f"NaN or infinite values in rows {bad[:10].tolist()}", field="scores")
    if y.shape != (s.shape[0],):
        raise InputError(f"expected shape ({s.shape[0]},), got {y.shape}", field="labels")
    if not np.issubdtype(y.dtype, np.integer):
        raise InputError(f"expected integer class indices, got dtype {y.dtype}", field="labels")
    if (y < 0).any() or (y >= s.shape[1]).any():
        raise InputError(f"labels must lie in [0, {s.shape[1]})", field="labels")
    return s, y.astype(np.int64, copy=False)


def row_blocks(n_rows: int, n_cols: int, block_elements: int = _BLOCK_ELEMENTS) -> list[slice]:
    """Row slices covering ``range(n_rows)`` with about ``block_elements`` values each."""
    step = max(1, block_elements // max(1, n_cols))
    return [slice(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


def subsample_classes(scores: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels restricted to ``classes`` (rows of those classes, their columns), relabelled ``0..k1-1``."""
    classes = np.sort(np.asarray(classes))
    rows = np.isin(labels, classes)
    remap = np.full(scores.shape[1], -1, dtype=np.int64)
    remap[classes] = np.arange(classes.size)
    return scores[np.ix_(rows, classes)], remap[labels[rows]]


def with_images_only(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels restricted to the classes that hold samples (all of them: unchanged)."""
    present = np.unique(labels)
    if present.size == scores.shape[1]:
        return scores, labels
    return subsample_classes(scores, labels, present)


def correct_scores(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``s_y(x)`` for every sample, ``(N,)``, in the dtype of ``scores``."""
    return scores[np.arange(scores.shape[0]), labels]


def rank_counts(scores: np.ndarray, labels: np.ndarray) -> RankCounts:
    """``R_x`` (incorrect classes strictly below) and ``T_x`` (incorrect classes tied).

    Vectorised over row blocks: one comparison of each row with its correct score.
    """
    s, y = check_scores(scores, labels)
    n, k = s.shape
    correct = correct_scores(s, y)
    below = np.empty(n, dtype=np.int64)
    tied = np.empty(n, dtype=np.int64)
    for block in row_blocks(n, k):
        c = correct[block, None]
        below[block] = np.count_nonzero(s[block] < c, axis=1)
        tied[block] = np.count_nonzero(s[block] == c, axis=1) - 1  # minus the correct class itself
    return RankCounts(below=below, tied=tied, n_classes=k)


def c_from_counts(counts: RankCounts, ties: Ties = "random") -> np.ndarray:
    """``C_x = (R_x + T_x/2) / (K-1)`` (``ties="random"``) or ``R_x / (K-1)`` (``"error"``)."""
    eff = counts.effective(ties)
    return (eff.below + 0.5 * eff.tied) / (counts.n_classes - 1)


def c_x(scores: np.ndarray, labels: np.ndarray, ties: Ties = "random") -> np.ndarray:
    """Per-sample share ``C_x`` of incorrect classes scored below the correct one.

    A tied incorrect class counts 1/2 with ``ties="random"`` and 0 with ``ties="error"``.
    """
    check_ties(ties)
    return c_from_counts(rank_counts(scores, labels), ties)


def rauc(scores: np.ndarray, labels: np.ndarray, ties: Ties = "random") -> float:
    """Area under the average reversed ROC curve, ``mean_x C_x`` (equals ``A_2``)."""
    return float(np.mean(c_x(scores, labels, ties)))


def reversed_roc(scores: np.ndarray, labels: np.ndarray, ties: Ties = "random") -> tuple[np.ndarray, np.ndarray]:
    """Vertices ``(rFPR, rTPR)`` of the average reversed ROC curve ``mean_x rROC_x``.

    All breakpoints of the per-sample curves lie on the grid ``u = j / (K-1)``; between grid
    points the average curve is linear.  At each grid point the curve may jump (samples
    whose step ``rROC_x`` switches there), so the vertices are the left and right limits
    at every grid point, with repeated points dropped.  The polyline runs from ``(0, 0)``
    to ``(1, 1)``, is non-decreasing, and its trapezoidal area is exactly :func:`rauc`.
    """
    check_ties(ties)
    eff = rank_counts(scores, labels).effective(ties)
    k = eff.n_classes
    n = eff.below.size
    above, tied = eff.above, eff.tied
    step = tied == 0
    # Step samples: rROC_x(j) = 1{j >= U_x} (right limit), 1{j > U_x} (left limit).
    jumps = np.bincount(above[step], minlength=k).astype(np.float64)
    right = np.cumsum(jumps)
    left = right - jumps
    # Tie samples: clip((j - U_x) / T_x, 0, 1), piecewise linear; slope 1/T_x on [U, U+T].
    if (~step).any():
        u, t = above[~step], tied[~step].astype(np.float64)
        delta = np.bincount(u, weights=1.0 / t, minlength=k + 1) - np.bincount(u + tied[~step], weights=1.0 / t, minlength=k + 1)
        slope = np.cumsum(delta)[: k - 1]  # slope on [j, j+1]
        ramp = np.concatenate(([0.0], np.cumsum(slope)))
        right = right + ramp
        left = left + ramp
    grid = np.arange(k, dtype=np.float64) / (k - 1)
    fpr = np.repeat(grid, 2)
    tpr = np.empty(2 * k)
    tpr[0::2] = left / n
    tpr[1::2] = right / n
    keep = np.ones(2 * k, dtype=bool)
    keep[1:] = (np.diff(fpr) != 0) | (np.diff(tpr) != 0)
    return fpr[keep], np.clip(tpr[keep], 0.0, 1.0)


def _log_binom(n: np.ndarray | float, m: np.ndarray | float) -> np.ndarray:
    """``log C(n, m)`` with ``-inf`` where ``m < 0`` or ``m > n`` (broadcasting)."""
    n = np.asarray(n, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    valid = (m >= 0) & (m <= n)
    with np.errstate(invalid="ignore"):
        out = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(np.where(valid, n - m, 0.0) + 1.0)
    return np.where(valid, out, -np.inf)


def check_ks(ks: Sequence[int] | np.ndarray, upper: int | None, field: str = "ks") -> np.ndarray:
    """``ks`` as an int64 vector of values in ``[1, upper]`` (``upper=None``: no upper bound)."""
    arr = np.asarray(ks)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"expected a non-empty 1-D array of integers, got {arr!r}", field=field)
    arr = arr.astype(np.int64)
    if (arr < 1).any() or (upper is not None and (arr > upper).any()):
        bound = "" if upper is None else f", <= {upper}"
        raise InputError(f"class counts must be >= 1{bound}; got {arr.min()}..{arr.max()}", field=field)
    return arr


def expected_accuracy_from_counts(
    counts: RankCounts,
    ks: Sequence[int] | np.ndarray | None = None,
    ties: Ties = "random",
) -> np.ndarray:
    """Exact expected accuracy ``A_k`` for each ``k`` in ``ks`` (default ``2..K``); see module doc.

    Samples are grouped by their distinct ``(R_x, T_x)`` pairs (at most ``N`` and usually
    far fewer), and the ``pairs x ks`` matrix of log-binomial ratios is built in blocks.
    """
    eff = counts.effective(ties)
    k_total = counts.n_classes
    kk = np.arange(2, k_total + 1) if ks is None else check_ks(ks, k_total)
    pairs, weight = np.unique(np.stack([eff.below, eff.tied], axis=1), axis=0, return_counts=True)
    weight = weight / weight.sum()
    kf = kk.astype(np.float64)[None, :]
    log_denominator = _log_binom(k_total - 1, kf - 1.0)  # log C(K-1, k-1), (1, len(ks))
    out = np.zeros(kk.size, dtype=np.float64)
    for block in row_blocks(pairs.shape[0], kk.size):
        r = pairs[block, 0].astype(np.float64)[:, None]
        t = pairs[block, 1].astype(np.float64)[:, None]
        # No ties: C(R, k-1) / C(K-1, k-1) directly (no cancellation).
        direct = np.exp(_log_binom(r, kf - 1.0) - log_denominator)
        has_ties = t[:, 0] > 0
        if has_ties.any():
            rt, tt = r[has_ties], t[has_ties]
            log_a = _log_binom(rt + tt + 1.0, kf) - log_denominator - np.log(tt + 1.0)
            log_b = _log_binom(rt, kf) - log_denominator - np.log(tt + 1.0)
            with np.errstate(invalid="ignore"):
                tie_value = np.where(np.isfinite(log_a), np.exp(log_a) * -np.expm1(log_b - log_a), 0.0)
            direct[has_ties] = tie_value
        out += weight[block] @ direct
    return np.clip(out, 0.0, 1.0)


def expected_accuracy(
    scores: np.ndarray,
    labels: np.ndarray,
    ks: Sequence[int] | np.ndarray | None = None,
    ties: Ties = "random",
) -> np.ndarray:
    """Exact expected accuracy ``A_k`` at ``k`` observed classes, for ``k`` in ``ks`` (default ``2..K``).

    ``A_k = mean_x C(R_x, k-1) / C(K-1, k-1)`` without ties; see the module docstring for
    the tie conventions.  ``A_1 = 1`` and ``A_2`` = :func:`rauc`.
    """
    check_ties(ties)
    return expected_accuracy_from_counts(rank_counts(scores, labels), ks, ties)


def power_curve(c: np.ndarray, ks: Sequence[int] | np.ndarray) -> np.ndarray:
    """``mean_x c_x^(k-1)`` for each ``k`` in ``ks``, with ``0^0 = 1``.

    Samples are grouped by distinct values of ``c``; powers are taken as
    ``exp((k-1) log c)`` in blocks of the ``values x ks`` matrix.
    """
    cc = np.asarray(c, dtype=np.float64).ravel()
    if cc.size == 0 or not np.isfinite(cc).all() or (cc < 0).any() or (cc > 1).any():
        raise InputError("C_x values must be finite and lie in [0, 1]", field="c")
    kk = check_ks(ks, None)
    values, weight = np.unique(cc, return_counts=True)
    weight = weight / weight.sum()
    exponent = (kk - 1).astype(np.float64)[None, :]
    out = np.zeros(kk.size, dtype=np.float64)
    for block in row_blocks(values.size, kk.size):
        with np.errstate(divide="ignore", invalid="ignore"):
            log_v = np.log(values[block])[:, None]
            powered = np.exp(np.where(exponent == 0, 0.0, exponent * log_v))
        out += weight[block] @ powered
    return out
