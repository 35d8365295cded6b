"""Worst-class metrics of Bitterwolf et al. (2022), "Classifiers Should Do Well Even on
Their Worst Classes" (ICML 2022 Shift Happens workshop).

All functions take the :class:`~classwise.metrics.stats.ClassificationStats` of a model
on a test set (``compute_stats(scores, labels)``); only the worst-superclass accuracy also
needs the raw scores.  Values are fractions in ``[0, 1]``, never percentages.

Conventions shared by every function (see :mod:`classwise.metrics.stats` for the order):

* **argmax ties** go to the lowest class index, also inside a restricted argmax
  (over a superclass or a pair) and in the top-k set.
* **Empty classes.**  The paper assumes every class has a test sample.  A class without
  samples has an undefined recall: it is NaN in the per-class arrays and excluded from
  every recall-type minimum (WCA, WCA@k, WnCR, WnCR@k, W2CA); the number of such classes
  is reported as ``details["n_classes_without_samples"]`` when it is positive.  If no
  class (or too few classes) has samples, :class:`~classwise.errors.InputError` is raised.
* **Ties in a minimum** go to the lowest class index (lexicographically smallest pair; the
  first superclass in the mapping's order).  Ratios of integers are formed with a single
  correctly rounded division, so equal fractions compare equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from classwise.errors import InputError, check_count
from classwise.metrics.result import MetricResult
from classwise.metrics.stats import DEFAULT_CHUNK_ROWS, ClassificationStats, class_rates
from classwise.metrics.stats import ratio as _ratio

__all__ = [
    "accuracy",
    "topk_accuracy",
    "class_recall",
    "class_precision",
    "class_topk_recall",
    "worst_class_accuracy",
    "worst_class_topk_accuracy",
    "worst_class_precision",
    "worst_superclass_accuracy",
    "worst_superclass_recall",
    "worst_n_class_recall",
    "worst_n_class_recall_exact",
    "worst_pair_accuracy",
    "worst_recall",
    "worst_precision",
    "worst_n_recall",
    "worst_pair",
    "worst_superclass",
]


# ----------------------------------------------------------------------------- helpers


def _topk_hits(stats: ClassificationStats, k: int) -> np.ndarray:
    """``(C,)`` number of samples of each class whose true class is in the top k."""
    if k == 1:
        return stats.hits
    hit = stats.true_class_rank < k
    return np.bincount(stats.labels[hit], minlength=stats.n_classes).astype(np.int64)


def _empty_details(support: np.ndarray) -> dict[str, Any]:
    n_empty = int(np.count_nonzero(support == 0))
    return {"n_classes_without_samples": n_empty} if n_empty else {}


def _valid_classes(support: np.ndarray, at_least: int = 1) -> np.ndarray:
    valid = np.flatnonzero(support > 0)
    if valid.shape[0] < at_least:
        raise InputError(
            f"need at least {at_least} class(es) with samples, found {valid.shape[0]}",
            field="labels",
        )
    return valid


# ------------------------------------------------------------ kernels over rows of counts
# The reducers below take the per-class (or per-superclass, per-pair) counts as arrays whose
# last axis runs over classes and whose leading axes are free: one row is one evaluation, and
# the stratified bootstrap (classwise.metrics.bootstrap) passes one row per replicate.  The
# MetricResult functions of this module call them with a single row, so both paths share
# every formula and tie rule.


def worst_of_rows(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(min, argmin)`` over the last axis, ignoring NaN (undefined entries); ties go to
    the lowest index.  Every row needs a non-NaN entry."""
    where = np.nanargmin(values, axis=-1)
    return np.take_along_axis(values, where[..., None], axis=-1)[..., 0], where


#: At most this many tied elements are listed (``n_tied`` counts them all): a perfect
#: classifier on 1,000 classes ties half a million pairs at 1.
MAX_TIED_LISTED = 1000


def with_ties(details: dict[str, Any], tied: Sequence[Any], *, n_tied: int | None = None) -> dict[str, Any]:
    """``details`` with ``n_tied`` and ``tied`` (the first :data:`MAX_TIED_LISTED` of them):
    the elements (classes, pairs, superclasses) that attain the metric's extreme, when more
    than one does. The metric still names the first (the lowest index) as its one element;
    ``n_tied`` declares that this choice was the tie rule, not a finding. ``n_tied`` given:
    ``tied`` may hold only the first of them (no list of half a million pairs is built)."""
    count = len(tied) if n_tied is None else n_tied
    if count < 2:
        return details
    return {**details, "n_tied": count, "tied": list(tied[:MAX_TIED_LISTED])}


def tied_indices(values: np.ndarray, extreme: float | np.ndarray) -> list[int]:
    """The positions of ``values`` equal to ``extreme`` (NaN never is). The metrics' values are
    correctly rounded ratios of integers, so equal ratios are equal floats."""
    return [int(i) for i in np.flatnonzero(values == extreme)]


def n_smallest_mask(keys: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask of the ``n`` smallest entries of each row of ``keys`` ``(R, m)``, ties
    going to the lower position (the first ``n`` of a stable sort), in O(m) per row."""
    if keys.dtype == object:  # Python ints (huge test sets): a stable sort
        mask = np.zeros(keys.shape, dtype=np.bool_)
        np.put_along_axis(mask, np.argsort(keys, axis=-1, kind="stable")[:, :n], True, axis=-1)
        return mask
    nth = np.partition(keys, n - 1, axis=-1)[:, n - 1 : n]
    less = keys < nth
    tied = keys == nth
    room = n - np.count_nonzero(less, axis=-1)
    return less | (tied & (np.cumsum(tied, axis=-1) <= room[:, None]))


def worst_n_pooled_rows(hits: np.ndarray, support: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's worst-n heuristic over the last axis: the ``n`` entries with the lowest
    ``hits / support`` (ties to the lower position), pooled.  ``support > 0`` everywhere.

    Returns ``(value, chosen)`` with ``chosen`` the boolean mask of the ``n`` entries.
    """
    hits = np.asarray(hits)
    rows = hits.reshape(-1, hits.shape[-1])
    chosen = n_smallest_mask(rows / support, n)
    value = np.divide((rows * chosen).sum(axis=-1), (support * chosen).sum(axis=-1), dtype=np.float64)
    return value.reshape(hits.shape[:-1]), chosen.reshape(hits.shape)


def worst_n_pooled_exact_rows(hits: np.ndarray, support: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``min over n-subsets S of sum_S hits / sum_S support`` over the last axis, by
    Dinkelbach iteration in integer arithmetic (see :func:`worst_n_class_recall_exact`).

    ``hits`` is ``(..., m)`` integer, ``support`` ``(m,)`` positive.  Returns
    ``(value, chosen)``: the boolean mask of an optimal set (the ``n`` smallest final keys,
    ties to the lower position).  Rows iterate together until every row has converged.
    """
    hits = np.asarray(hits)
    m = hits.shape[-1]
    rows = hits.reshape(-1, m)
    total = int(support.sum())
    # keys are bounded by total**2; int64 is exact below ~3e9 samples, else use Python ints
    dtype = np.int64 if total < 3_000_000_000 else object
    h = rows.astype(dtype)
    s = support.astype(dtype)
    chosen = worst_n_pooled_rows(rows, support, n)[1]  # heuristic start
    active = np.arange(rows.shape[0])
    for _ in range(m * n + 2):  # never reached: each step strictly improves
        if active.size == 0:
            break
        cur = chosen[active]
        big_h = (h[active] * cur).sum(axis=-1)
        big_n = (s * cur).sum(axis=-1)
        key = big_n[:, None] * h[active] - big_h[:, None] * s[None, :]  # sign of hits_c - lambda support_c
        new = n_smallest_mask(key, n)
        chosen[active] = new
        # sum == 0: no subset has a lower ratio, and new has the same one
        active = active[(key * new).sum(axis=-1) < 0]
    else:  # pragma: no cover - Dinkelbach terminates
        raise RuntimeError("Dinkelbach iteration did not converge")
    value = np.divide((rows * chosen).sum(axis=-1), (support * chosen).sum(axis=-1), dtype=np.float64)
    return value.reshape(hits.shape[:-1]), chosen.reshape(hits.shape)


def pair_values(
    wins_ab: np.ndarray, wins_ba: np.ndarray, n_a: np.ndarray | int, n_b: np.ndarray | int, *, balanced: bool
) -> np.ndarray:
    """Restricted-argmax accuracy of pairs ``{a, b}`` from integer wins and supports
    (broadcast): pooled ``(W_ab + W_ba) / (n_a + n_b)`` or balanced
    ``(W_ab n_b + W_ba n_a) / (2 n_a n_b)``, each one correctly rounded division."""
    if balanced:
        return np.divide(wins_ab * n_b + wins_ba * n_a, 2 * n_a * n_b, dtype=np.float64)
    return np.divide(wins_ab + wins_ba, n_a + n_b, dtype=np.float64)


def worst_superclass_rows(hits: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(min, argmin)`` of ``hits / counts`` over the last axis (superclasses), leaving out
    superclasses with ``counts == 0``; ties go to the first superclass.  Some count must be
    positive."""
    return worst_of_rows(_ratio(hits, np.broadcast_to(counts, np.shape(hits))))


# --------------------------------------------------------------- accuracy and per class


def accuracy(stats: ClassificationStats) -> MetricResult:
    """Standard accuracy A (paper Eq. 1).

    ``A = #{argmax_i s_i == y} / N`` over all ``N`` samples; argmax ties go to the lowest
    class index.  Always defined (``N >= 1``); ``classes`` is empty.
    """
    hits = int(np.count_nonzero(stats.correct))
    return MetricResult(hits / stats.n_samples)


def topk_accuracy(stats: ClassificationStats, k: int) -> MetricResult:
    """Top-k accuracy A@k (paper Eq. 8).

    ``A@k = #{y in top(s, k)} / N``.  ``top(s, k)`` is the first ``k`` classes in the order
    (score descending, class index ascending), i.e. a hit iff ``true_class_rank < k``; this
    differs from scikit-learn's ``top_k_accuracy_score`` only when scores tie.  ``k >= C``
    gives 1.0 (every class is in the top k).  ``A@1 == A``; A@k is non-decreasing in k.
    """
    k = check_count(k, "k")
    hits = int(np.count_nonzero(stats.true_class_rank < k))
    return MetricResult(hits / stats.n_samples)


def class_recall(stats: ClassificationStats) -> np.ndarray:
    """``(C,)`` per-class recall (accuracy on the class's samples), the term of Eq. 2.

    ``recall_c = #{y = c, argmax = c} / #{y = c}``; argmax ties go to the lowest index.
    NaN for classes without samples.
    """
    return class_rates(stats.hits, stats.support, stats.predicted)["recall"]


def class_precision(stats: ClassificationStats) -> np.ndarray:
    """``(C,)`` per-class precision, the term of Eq. 3.

    ``precision_c = #{y = c, argmax = c} / #{argmax = c}``; argmax ties go to the lowest
    index.  NaN for classes that are never predicted (0/0).  A class that is predicted but
    has no samples has precision 0.
    """
    return class_rates(stats.precision_hits, stats.support, stats.predicted)["precision"]


def class_topk_recall(stats: ClassificationStats, k: int) -> np.ndarray:
    """``(C,)`` per-class top-k recall, the term of Eq. 9.

    ``recall@k_c = #{y = c, y in top(s, k)} / #{y = c}`` with the top-k tie rule of
    :func:`topk_accuracy`.  NaN for classes without samples.
    """
    k = check_count(k, "k")
    return _ratio(_topk_hits(stats, k), stats.support)


# ------------------------------------------------------------------------ worst class


def worst_class_accuracy(stats: ClassificationStats) -> MetricResult:
    """Worst-class accuracy (= worst-class recall) WCA (paper Eq. 2).

    ``WCA = min_c #{y = c, argmax = y} / #{y = c}``, minimum over classes with samples
    (classes without samples are excluded and counted in
    ``details["n_classes_without_samples"]``).  Ties: the lowest class index.
    ``classes == (c,)``.  Raises InputError if no class has samples.
    """
    return worst_recall(stats.hits, stats.support)


def worst_class_topk_accuracy(stats: ClassificationStats, k: int) -> MetricResult:
    """Worst-class top-k accuracy WCA@k (paper Eq. 9).

    ``WCA@k = min_c #{y = c, y in top(s, k)} / #{y = c}``; top-k ties to the lower index
    (a hit iff ``true_class_rank < k``).  Classes without samples are excluded and counted
    in ``details["n_classes_without_samples"]``; ties in the minimum go to the lowest class
    index; ``classes == (c,)``.  ``WCA@1 == WCA``.
    """
    return worst_recall(_topk_hits(stats, check_count(k, "k")), stats.support)


def worst_class_precision(stats: ClassificationStats) -> MetricResult:
    """Worst-class precision WCP (paper Eq. 3).

    ``WCP = min_c #{y = c, argmax = c} / #{argmax = c}``.  A never-predicted class has an
    undefined precision (0/0): it is excluded from the minimum and the number of such
    classes is ``details["n_excluded_never_predicted"]`` (always present).  A predicted
    class without samples has precision 0 and is included.  Ties: the lowest class index;
    ``classes == (c,)``.  Since ``N >= 1`` some class is always predicted.
    """
    return worst_precision(stats.precision_hits, stats.predicted)


# ----------------------------------------------------------------------- from the counts
# The worst-class metrics as functions of per-class counts alone, for callers that hold the
# counts but not the samples (classwise.torchmetrics sums them over batches and processes).
# The functions above are these applied to a ClassificationStats.


def worst_recall(hits: np.ndarray, support: np.ndarray) -> MetricResult:
    """``min_c hits_c / support_c`` over the classes with samples: WCA (Eq. 2) when ``hits``
    is the confusion diagonal, WCA@k (Eq. 9) when it counts top-k hits.  ``(C,)`` integer
    counts; the conventions of :func:`worst_class_accuracy` (classes without samples
    excluded and counted, ties to the lowest index, ``classes == (c,)``)."""
    _valid_classes(support)
    recall = _ratio(hits, support)
    value, c = worst_of_rows(recall)
    return MetricResult(float(value), (int(c),), with_ties(_empty_details(support), tied_indices(recall, value)))


def worst_precision(hits: np.ndarray, predicted: np.ndarray) -> MetricResult:
    """``min_c hits_c / predicted_c`` over the classes ever predicted: WCP (Eq. 3) from the
    confusion diagonal and column sums, with the conventions of :func:`worst_class_precision`.
    Raises InputError when no class is predicted (no samples)."""
    prec = _ratio(hits, predicted)
    n_never = int(np.count_nonzero(np.isnan(prec)))
    if n_never == prec.shape[-1]:
        raise InputError("no class is predicted: there are no samples", field="predictions")
    value, c = worst_of_rows(prec)
    return MetricResult(float(value), (int(c),), with_ties({"n_excluded_never_predicted": n_never}, tied_indices(prec, value)))


def worst_n_recall(hits: np.ndarray, support: np.ndarray, n: int, *, exact: bool = False) -> MetricResult:
    """WnCR / WnCR@k (Eqs. 7 and 10) from ``(C,)`` (top-k) hits and supports: the heuristic
    of :func:`worst_n_class_recall` or, with ``exact=True``, the minimum of
    :func:`worst_n_class_recall_exact`, with their conventions."""
    valid = _valid_classes(support)
    m = valid.shape[0]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= m:
        raise InputError(
            f"expected an integer 1 <= n <= {m} (the number of classes with samples), got {n!r}",
            field="n",
        )
    valid_hits, valid_support = hits[valid], support[valid]
    pooled = worst_n_pooled_exact_rows if exact else worst_n_pooled_rows
    value, chosen = pooled(valid_hits, valid_support, int(n))
    worst_first = _by_recall(valid, valid_hits, valid_support, np.flatnonzero(chosen))
    details = _empty_details(support)
    if not exact:
        details = with_ties(details, _boundary_ties(valid, valid_hits / valid_support, chosen))
    return MetricResult(float(value), worst_first, details)


def _boundary_ties(valid: np.ndarray, recall: np.ndarray, chosen: np.ndarray) -> list[int]:
    """The classes whose recall equals the highest recall among the ``chosen`` n, when some of
    them were left out by the tie rule (the heuristic's choice among them is then arbitrary):
    those classes, else none."""
    boundary = recall[chosen].max()
    at_boundary = recall == boundary
    if np.count_nonzero(at_boundary & ~chosen) == 0:
        return []
    return [int(c) for c in valid[at_boundary]]


def worst_pair(pairwise_wins: np.ndarray, support: np.ndarray, *, balanced: bool = False) -> MetricResult:
    """W2CA (Eq. 6 with n = 2) from the ``(C, C)`` pairwise wins (``[a, b]``: samples of
    ``a`` for which ``a`` beats ``b``; the diagonal is ignored) and the ``(C,)`` supports, with
    the conventions of :func:`worst_pair_accuracy`."""
    valid = _valid_classes(support, at_least=2)
    m = valid.shape[0]
    if m == support.shape[0]:
        wins, sup = pairwise_wins, support
    else:
        wins, sup = pairwise_wins[np.ix_(valid, valid)], support[valid]
    value = pair_values(wins, wins.T, sup[:, None], sup[None, :], balanced=balanced)
    value[np.tri(m, dtype=np.bool_)] = np.inf  # keep a < b only
    flat = int(np.argmin(value))  # row-major first minimum -> lexicographically smallest
    i, j = divmod(flat, m)
    at_minimum = np.argwhere(value == value[i, j])  # row-major: lexicographic
    tied = [[int(valid[a]), int(valid[b])] for a, b in at_minimum[:MAX_TIED_LISTED]]
    details = with_ties(_empty_details(support), tied, n_tied=at_minimum.shape[0])
    return MetricResult(float(value[i, j]), (int(valid[i]), int(valid[j])), details)


# ------------------------------------------------------------------------- superclasses


def _validate_superclasses(superclasses: Mapping[Any, Sequence[int]], n_classes: int) -> list[tuple[Any, np.ndarray]]:
    if not isinstance(superclasses, Mapping):
        raise InputError(
            f"expected a mapping from superclass name to class indices, got {type(superclasses).__name__}",
            field="superclasses",
        )
    if len(superclasses) == 0:
        raise InputError("expected at least one superclass, got an empty mapping", field="superclasses")
    out = []
    for name, members in superclasses.items():
        if isinstance(members, (str, bytes)) or not isinstance(members, (Sequence, np.ndarray)):
            raise InputError(
                f"superclass {name!r}: expected a sequence of class indices, got {type(members).__name__}",
                field="superclasses",
            )
        idx = np.asarray(members)
        if idx.size == 0:
            raise InputError(f"superclass {name!r} has no classes", field="superclasses")
        if idx.ndim != 1 or idx.dtype == np.bool_ or not np.issubdtype(idx.dtype, np.integer):
            raise InputError(
                f"superclass {name!r}: expected a flat list of integer class indices, got {list(members)!r}",
                field="superclasses",
            )
        bad = idx[(idx < 0) | (idx >= n_classes)]
        if bad.size:
            raise InputError(
                f"superclass {name!r}: class index {int(bad[0])} is out of range (expected 0 <= index < {n_classes})",
                field="superclasses",
            )
        uniq = np.unique(idx)
        if uniq.shape[0] != idx.shape[0]:
            vals, counts = np.unique(idx, return_counts=True)
            raise InputError(
                f"superclass {name!r}: class index {int(vals[counts > 1][0])} is listed more than once",
                field="superclasses",
            )
        out.append((name, uniq.astype(np.int64)))  # ascending: restricted argmax ties -> lowest
    return out


def worst_superclass(
    per_super: list[tuple[Any, int, int]],
) -> MetricResult:
    """WSupCA / WSupCR from ``per_super``: ``(name, hits, samples)`` per superclass, in the
    mapping's order; the minimum of hits / samples over the superclasses with samples."""
    names = [name for name, _, _ in per_super]
    hits = np.array([h for _, h, _ in per_super], dtype=np.int64)
    counts = np.array([n for _, _, n in per_super], dtype=np.int64)
    n_empty = int(np.count_nonzero(counts == 0))
    if n_empty == len(per_super):
        raise InputError("no superclass has samples in the test set", field="superclasses")
    value, where = worst_superclass_rows(hits, counts)  # ties: the first superclass in mapping order
    details = {"n_superclasses_without_samples": n_empty} if n_empty else {}
    tied = [names[i] for i in tied_indices(_ratio(hits, counts), value)]
    return MetricResult(float(value), (names[int(where)],), with_ties(details, tied))


def worst_superclass_accuracy(
    scores: np.ndarray,
    stats: ClassificationStats,
    superclasses: Mapping[Any, Sequence[int]],
) -> MetricResult:
    """Worst-superclass accuracy WSupCA (paper Eq. 4).

    ``WSupCA = min_S #{y in S, argmax_{i in S} s_i = y} / #{y in S}``: the argmax is
    restricted to the superclass's classes (ties to the lowest class index) and the
    accuracy is pooled over all samples of the superclass (so larger classes weigh more).
    ``scores`` must be the ``(N, C)`` array ``stats`` was computed from.  A superclass
    without samples is excluded and counted in ``details["n_superclasses_without_samples"]``;
    ties in the minimum go to the first superclass in the mapping's order;
    ``classes == (name,)``.  Superclasses may overlap.  Raises InputError on a class index
    out of range (naming the superclass), a duplicate or empty member list, a scores shape
    that does not match ``stats``, or when no superclass has samples.
    ``WSupCA >= WSupCR`` (Eq. 5).
    """
    arr = np.asarray(scores)
    if arr.shape != (stats.n_samples, stats.n_classes):
        raise InputError(
            f"expected shape {(stats.n_samples, stats.n_classes)} (the array the stats were computed from), got {arr.shape}",
            field="scores",
        )
    groups = _validate_superclasses(superclasses, stats.n_classes)
    per_super = [
        (name, int(np.count_nonzero(hit)), int(rows.shape[0]))
        for name, (rows, hit) in zip((name for name, _ in groups), superclass_sample_hits(arr, stats.labels, groups))
    ]
    return worst_superclass(per_super)


def superclass_sample_hits(
    scores: np.ndarray, labels: np.ndarray, groups: list[tuple[Any, np.ndarray]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each validated superclass ``(name, ascending class indices)``: the rows of its
    samples and, per row, whether the argmax restricted to its classes (ties to the lowest
    index) is the true class.  The terms of WSupCA (Eq. 4)."""
    member = np.zeros(scores.shape[1], dtype=np.bool_)
    out = []
    for _, idx in groups:
        member[:] = False
        member[idx] = True
        rows = np.flatnonzero(member[labels])
        hit = np.empty(rows.shape[0], dtype=np.bool_)
        for lo in range(0, rows.shape[0], DEFAULT_CHUNK_ROWS):
            r = rows[lo : lo + DEFAULT_CHUNK_ROWS]
            sub = scores[np.ix_(r, idx)]
            am = np.argmax(sub, axis=1)  # first maximum among ascending indices
            if np.isnan(sub[np.arange(r.shape[0]), am]).any():
                raise InputError("scores contain NaN", field="scores")
            hit[lo : lo + DEFAULT_CHUNK_ROWS] = idx[am] == labels[r]
        out.append((rows, hit))
    return out


def worst_superclass_recall(stats: ClassificationStats, superclasses: Mapping[Any, Sequence[int]]) -> MetricResult:
    """Worst-superclass recall WSupCR (paper Eq. 5).

    ``WSupCR = min_S #{y in S, argmax_i s_i = y} / #{y in S}``: the unrestricted argmax
    (over all classes, ties to the lowest index) must equal the true fine class, pooled
    over the superclass's samples.  Same conventions as :func:`worst_superclass_accuracy`
    (empty superclasses excluded and counted in ``details["n_superclasses_without_samples"]``,
    ties to the first superclass in mapping order, ``classes == (name,)``).
    """
    groups = _validate_superclasses(superclasses, stats.n_classes)
    hits = stats.hits
    per_super = [(name, int(hits[idx].sum()), int(stats.support[idx].sum())) for name, idx in groups]
    return worst_superclass(per_super)


# ---------------------------------------------------------------------- worst n classes


def _by_recall(valid: np.ndarray, hits: np.ndarray, support: np.ndarray, pos: np.ndarray) -> tuple[int, ...]:
    """Class indices of positions ``pos`` ordered by (individual recall, class index)."""
    rec = hits[pos] / support[pos]
    order = np.lexsort((valid[pos], rec))
    return tuple(int(c) for c in valid[pos][order])


def worst_n_class_recall(stats: ClassificationStats, n: int, k: int = 1) -> MetricResult:
    """Worst-n-class (top-k) recall WnCR / WnCR@k, the paper's heuristic (Sec. 3.1).

    Eq. 7 (k = 1) and Eq. 10 (k > 1) define ``min over n-subsets S of
    sum_{c in S} hits_c / sum_{c in S} support_c``.  The paper computes it with a
    heuristic: take the ``n`` classes with the lowest individual (top-k) recall (ties to
    the lower class index) and pool their samples.  This is exact for class-balanced test
    sets and an upper bound otherwise; see :func:`worst_n_class_recall_exact`.
    Classes without samples are excluded (``1 <= n <= #classes with samples``, else
    InputError) and counted in ``details["n_classes_without_samples"]``.
    ``classes`` are the ``n`` chosen class indices, worst first (by recall, then index).
    """
    return worst_n_recall(_topk_hits(stats, check_count(k, "k")), stats.support, n)


def worst_n_class_recall_exact(stats: ClassificationStats, n: int, k: int = 1) -> MetricResult:
    """Exact worst-n-class (top-k) recall WnCR / WnCR@k (paper Eqs. 7 and 10).

    ``WnCR@k = min_{|S| = n} H(S) / N(S)`` with ``H(S) = sum_{c in S} hits_c`` (top-k hits,
    top-k ties to the lower index) and ``N(S) = sum_{c in S} support_c`` over classes with
    samples.  This linear-fractional problem under a cardinality constraint is solved
    exactly by Dinkelbach iteration, in integer arithmetic: with ``lambda = H(S)/N(S)``,
    the ``n`` classes minimising ``N(S) * hits_c - H(S) * support_c`` form the next ``S``;
    the ratio strictly decreases until that minimal sum is 0, which certifies optimality
    (finitely many subsets, so it terminates; in practice after a few steps).  Each step is
    an O(C log C) sort.  It starts from the heuristic set of :func:`worst_n_class_recall`
    and equals it on class-balanced test sets.

    Ties among optimal subsets: the returned set is the ``n`` classes with the smallest
    ``hits_c - lambda* support_c``, ties to the lower class index; ``classes`` lists them
    worst first (by individual recall, then index).  Classes without samples are excluded
    (``details["n_classes_without_samples"]``); ``1 <= n <= #classes with samples``.
    Non-decreasing in ``n``; ``W1CR = WCA``; ``W|C|CR = A`` when every class has samples.
    """
    return worst_n_recall(_topk_hits(stats, check_count(k, "k")), stats.support, n, exact=True)


# -------------------------------------------------------------------------- worst pair


def worst_pair_accuracy(stats: ClassificationStats, *, balanced: bool = False) -> MetricResult:
    """Worst two-class accuracy W2CA (paper Eq. 6 with n = 2).

    For every pair ``{a, b}`` the argmax is restricted to ``{a, b}``: a sample of class
    ``a`` is correct iff ``s_a > s_b`` or (``s_a == s_b`` and ``a < b``), counted in
    ``stats.pairwise_wins[a, b]``.  With ``W = pairwise_wins`` and ``n = support``:

    * pooled (Eq. 6, default): ``(W[a, b] + W[b, a]) / (n_a + n_b)``;
    * ``balanced=True`` (the class-balanced variant of the published code):
      ``(W[a, b] / n_a + W[b, a] / n_b) / 2``, evaluated as one division
      ``(W[a, b] n_b + W[b, a] n_a) / (2 n_a n_b)``.

    The minimum runs over pairs ``a < b`` of classes that both have samples (classes
    without samples are excluded, ``details["n_classes_without_samples"]``); ties go to
    the lexicographically smallest pair; ``classes == (a, b)``.  Vectorised over the
    ``C x C`` matrix.  Raises InputError if fewer than two classes have samples.
    """
    return worst_pair(stats.pairwise_wins, stats.support, balanced=balanced)
