"""Sufficient statistics of a classifier's scores on a labelled test set.

Every worst-class metric of Bitterwolf et al. (2022), "Classifiers Should Do Well Even on
Their Worst Classes", except the worst-superclass accuracy (Eq. 4), is a function of a few
integer tables computed in one pass over the ``(N, C)`` score matrix:

* ``predictions`` (argmax) and ``confusion`` for A, WCA, WCP, WSupCR, WnCR (Eqs. 1-3, 5, 7),
* ``true_class_rank`` for the top-k metrics A@k, WCA@k, WnCR@k (Eqs. 8-10),
* ``pairwise_wins`` for the worst two-class accuracy W2CA (Eq. 6 with n = 2).

Conventions
-----------
Scores are logits or log-probabilities: higher means more likely.  They are compared as
they are, never passed through a softmax (a float32 softmax saturates and creates ties
that the logits do not have).  Ties are broken towards the lower class index everywhere:

* the prediction is the lowest index among the maximal scores (``np.argmax``);
* class ``j`` ranks ahead of the true class ``y`` iff ``s_j > s_y`` or
  (``s_j == s_y`` and ``j < y``); the top-k set is the first ``k`` classes of the order
  (score descending, index ascending), so "y is in the top k" iff ``rank < k``;
* in the pair ``{a, b}``, ``a`` wins iff ``s_a > s_b`` or (``s_a == s_b`` and ``a < b``),
  which is exactly the argmax restricted to ``{a, b}``.

Abstentions
-----------
A model of hard predictions may abstain on a sample (``abstained``): such a sample is an error
for every accuracy and recall (its true class is ranked behind every class, so it is a top-k
hit for no k, and it wins no pair), and it is never a prediction of any class: its prediction
is ``-1``, the confusion matrix (and so every precision and the class false-positive scores)
counts the samples that name a class only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from classwise.errors import InputError, check_count
from classwise.validation import check_labels, check_score_matrix

__all__ = [
    "ClassificationStats",
    "class_counts",
    "class_rates",
    "compute_stats",
    "macro_rates",
    "ratio",
    "with_label_sets",
]

#: Default number of score rows processed at once.  A chunk costs about
#: ``chunk_rows * C * (itemsize + 2)`` bytes of scratch memory (12 MiB at 2048 x 1000
#: float32); 1-2k rows keep the boolean scratch in cache and were fastest in benchmarks.
DEFAULT_CHUNK_ROWS = 2048

# Boolean rows are summed eight columns at a time through a uint64 view ("SIMD within a
# register"): every byte lane holds a 0/1 count, so a sum of at most 255 words cannot carry
# from one lane into the next.
_MAX_LANE_SUM = 255


@dataclass(frozen=True, eq=False)
class ClassificationStats:
    """Integer summary of ``(scores, labels)``; all arrays are read-only.

    Attributes
    ----------
    n_classes:
        Number of classes ``C`` (the number of score columns).
    labels:
        ``(N,)`` int64 true labels.
    predictions:
        ``(N,)`` int64 argmax of the scores; ties go to the lowest class index; ``-1`` where
        the model abstained.
    support:
        ``(C,)`` int64 number of samples per true class (may contain zeros).
    true_class_rank:
        ``(N,)`` int64 number of classes ranked ahead of the true class ``y``, where ``j``
        ranks ahead of ``y`` iff ``s_j > s_y`` or (``s_j == s_y`` and ``j < y``).  The true
        class is a top-k hit iff ``rank < k``; ``rank == 0`` iff ``prediction == label``.
        Under several correct labels per sample (:func:`with_label_sets`) it is the rank of the
        best-ranked correct class, and the confusion is ``[label, prediction]`` whose diagonal
        is no longer the hits: every count of hits comes from the rank.
    pairwise_wins:
        ``(C, C)`` int64; ``[a, b]`` is the number of samples with label ``a`` for which
        ``a`` beats ``b`` in the pair ``{a, b}``: ``s_a > s_b`` or (``s_a == s_b`` and
        ``a < b``).  The diagonal is 0.  Row ``a`` plus the column ``b`` entries give the
        restricted-argmax accuracy on any pair (paper Eq. 6 with n = 2).
    confusion:
        ``(C, C)`` int64 confusion matrix indexed ``[true, predicted]``, of the samples whose
        prediction names a class (not the abstentions).
    """

    n_classes: int
    labels: np.ndarray
    predictions: np.ndarray
    support: np.ndarray
    true_class_rank: np.ndarray
    pairwise_wins: np.ndarray
    confusion: np.ndarray

    @property
    def n_samples(self) -> int:
        """Number of samples ``N``."""
        return int(self.labels.shape[0])

    @property
    def correct(self) -> np.ndarray:
        """``(N,)`` bool: the sample is classified correctly (``true_class_rank == 0``)."""
        return self.true_class_rank == 0

    @property
    def hits(self) -> np.ndarray:
        """``(C,)`` correctly classified samples per true class: the confusion diagonal, counted
        from :attr:`correct` so that it holds under several correct labels too."""
        return np.bincount(self.labels[self.correct], minlength=self.n_classes).astype(np.int64, copy=False)

    @property
    def precision_hits(self) -> np.ndarray:
        """``(C,)`` correct predictions per predicted class: with one label per sample the
        confusion diagonal (equal to :attr:`hits`); under several correct labels the predictions
        of each class that are in their sample's set."""
        return np.bincount(self.predictions[self.correct], minlength=self.n_classes).astype(np.int64, copy=False)

    @property
    def errors(self) -> int:
        """Number of samples not classified correctly, the abstentions among them."""
        return int(self.n_samples - np.count_nonzero(self.correct))

    @property
    def abstained(self) -> np.ndarray:
        """``(N,)`` bool: the model abstained on the sample (its prediction is ``-1``)."""
        return self.predictions < 0

    @property
    def n_abstained(self) -> int:
        """Number of samples on which the model abstained."""
        return int(np.count_nonzero(self.abstained))

    @property
    def misclassified(self) -> int:
        """Number of samples predicted as a wrong class: :attr:`errors` less the abstentions
        (the denominator of the class false-positive scores, which sum to 1 over the classes)."""
        return self.errors - self.n_abstained

    @property
    def predicted(self) -> np.ndarray:
        """``(C,)`` number of samples predicted as each class (the confusion column sums)."""
        return self.confusion.sum(axis=0)


def _lane_counts(words: np.ndarray) -> np.ndarray:
    """Per-row number of True bytes in a ``(b, W)`` uint64 view of a 0/1 bool matrix."""
    b, n_words = words.shape
    total = np.zeros(b, dtype=np.int64)
    for lo in range(0, n_words, _MAX_LANE_SUM):
        part = words[:, lo : lo + _MAX_LANE_SUM].sum(axis=1, dtype=np.uint64)
        total += part.view(np.uint8).reshape(b, 8).sum(axis=1, dtype=np.int64)
    return total


def compute_stats(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    n_classes: int | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    abstained: np.ndarray | None = None,
) -> ClassificationStats:
    """Compute :class:`ClassificationStats` from logits and integer labels.

    Parameters
    ----------
    scores:
        ``(N, C)`` floating-point logits or log-probabilities (higher = more likely).  Any
        float dtype; float16 is widened to float32 chunk by chunk (exactly).  ``+-inf`` is
        allowed (``-inf`` is log 0); NaN is rejected.  A memory-mapped array works.
    labels:
        ``(N,)`` integer true labels in ``[0, C)``.
    n_classes:
        Optional expected number of classes; must equal ``C`` when given.
    chunk_rows:
        Rows processed at once; bounds the scratch memory (about ``chunk_rows * C * 6``
        bytes for float32 scores) without changing the result.
    abstained:
        Optional ``(N,)`` bool: the samples on which the model abstained (their score rows
        are ignored). Such a sample's prediction is ``-1``, its true class ranks behind every
        class (rank ``C``) and loses every pair, and the confusion leaves it out (see the
        module's conventions).

    Raises
    ------
    InputError
        On a non-2-D or non-float ``scores``, non-integer or out-of-range ``labels``, a
        length mismatch, a wrong ``n_classes``, NaN scores or a bad ``chunk_rows``.

    Notes
    -----
    One pass over the rows, sorted by label (so that rows of a class are contiguous):
    per chunk, ``ahead[r, j] = s_j > s_y or (s_j == s_y and j < y)`` is one boolean matrix
    that yields both the rank of the true class (its row sums) and, summed over the rows
    of each label, ``pairwise_wins[a, b] = support[a] - ahead_counts[a, b]`` (``b != a``),
    because for ``b != a`` "b ranks ahead of a" and "a beats b" are complementary.
    """
    arr = check_score_matrix(scores, field="scores")
    n_samples, c = arr.shape
    if n_classes is not None:
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)):
            raise InputError(f"expected an integer, got {n_classes!r}", field="n_classes")
        if int(n_classes) != c:
            raise InputError(f"scores have {c} columns but n_classes={int(n_classes)}", field="n_classes")
    chunk_rows = check_count(chunk_rows, "chunk_rows")
    y_all = check_labels(labels, n_samples, c)
    if y_all is labels:  # frozen below: never the caller's array
        y_all = y_all.copy()
    abstain = _abstained_mask(abstained, n_samples)

    support = np.bincount(y_all, minlength=c).astype(np.int64, copy=False)
    already_sorted = bool(np.all(y_all[1:] >= y_all[:-1]))
    order = None if already_sorted else np.argsort(y_all, kind="stable")

    n_words = -(-c // 8)
    b_max = int(min(chunk_rows, n_samples))
    ahead_buf = np.zeros((b_max, n_words * 8), dtype=np.bool_)  # padding columns stay False
    eq_buf = np.empty((b_max, c), dtype=np.bool_)
    col = np.arange(c)
    ahead_counts = np.zeros((c, c), dtype=np.int64)  # [label a, class j]: j ranked ahead of a
    rank = np.empty(n_samples, dtype=np.int64)
    pred = np.empty(n_samples, dtype=np.int64)
    widen = arr.dtype.itemsize < 4  # float16: compare in float32 (exact, and SIMD-friendly)

    for start in range(0, n_samples, b_max):
        stop = min(start + b_max, n_samples)
        b = stop - start
        rows: slice | np.ndarray
        if order is None:
            rows = slice(start, stop)
            chunk = arr[start:stop]
        else:
            rows = order[start:stop]
            chunk = arr[rows]
        if widen:
            chunk = chunk.astype(np.float32)
        y = y_all[rows]
        r = np.arange(b)

        p = np.argmax(chunk, axis=1)  # first maximum; first NaN if the row has one
        if np.isnan(chunk[r, p]).any():
            bad = int(r[np.isnan(chunk[r, p])][0])
            sample = start + bad if order is None else int(order[start + bad])
            raise InputError(f"row {sample} contains NaN; scores must be numbers", field="scores")
        pred[rows] = p

        s_y = chunk[r, y][:, None]
        ahead = ahead_buf[:b]
        np.greater(chunk, s_y, out=ahead[:, :c])
        eq = eq_buf[:b]
        np.equal(chunk, s_y, out=eq)
        if np.count_nonzero(eq) > b:  # some class ties with the true class (not only itself)
            tied = np.flatnonzero(np.count_nonzero(eq, axis=1) > 1)
            ahead[tied, :c] |= eq[tied] & (col[None, :] < y[tied, None])

        if abstain is not None:  # ranked behind every class: a hit for no k, a loss in every pair
            ahead[abstain[rows], :c] = True

        words = ahead.view(np.uint64)
        rank[rows] = _lane_counts(words)

        # Sum the ahead rows of each label: segments start at every label change and at
        # least every 255 rows, so the bytewise uint64 sums cannot overflow a lane.
        change = np.flatnonzero(y[1:] != y[:-1]) + 1
        starts = np.union1d(np.r_[0, change], np.arange(0, b, _MAX_LANE_SUM))
        seg = np.add.reduceat(words, starts, axis=0).view(np.uint8)[:, :c]
        seg_labels = y[starts]
        first = np.flatnonzero(np.r_[True, seg_labels[1:] != seg_labels[:-1]])
        if first.shape[0] == starts.shape[0]:
            ahead_counts[seg_labels] += seg
        else:  # a label spans several segments
            ahead_counts[seg_labels[first]] += np.add.reduceat(seg, first, axis=0, dtype=np.int64)

    pairwise_wins = support[:, None] - ahead_counts
    np.fill_diagonal(pairwise_wins, 0)
    if abstain is None:
        confusion = np.bincount(y_all * c + pred, minlength=c * c).reshape(c, c).astype(np.int64, copy=False)
    else:
        pred[abstain] = -1
        named = ~abstain
        keys = y_all[named] * c + pred[named]
        confusion = np.bincount(keys, minlength=c * c).reshape(c, c).astype(np.int64, copy=False)

    for a in (y_all, pred, support, rank, pairwise_wins, confusion):
        a.setflags(write=False)
    return ClassificationStats(
        n_classes=int(c),
        labels=y_all,
        predictions=pred,
        support=support,
        true_class_rank=rank,
        pairwise_wins=pairwise_wins,
        confusion=confusion,
    )


def _abstained_mask(abstained: np.ndarray | None, n_samples: int) -> np.ndarray | None:
    """``abstained`` as an ``(N,)`` bool array, None when nothing is abstained (the fast path)."""
    if abstained is None:
        return None
    mask = np.asarray(abstained)
    if mask.dtype != np.bool_ or mask.shape != (n_samples,):
        raise InputError(f"expected ({n_samples},) booleans, got {mask.dtype} of shape {mask.shape}", field="abstained")
    return mask if mask.any() else None


def with_label_sets(stats: ClassificationStats, best_rank: np.ndarray) -> ClassificationStats:
    """``stats`` under several correct labels per sample: ``true_class_rank`` replaced by
    ``best_rank``, the rank of each sample's best-ranked correct class
    (:func:`classwise.labels.real.best_set_rank`). Labels, support, predictions and the
    confusion stay those of the original (one) label, so per-class figures group by it; a
    sample is correct iff its rank is 0. The pairwise wins still count the original label and
    mean nothing here: the callers leave out the pair metrics. An abstention stays an error."""
    rank = np.asarray(best_rank, dtype=np.int64).copy()
    if rank.shape != stats.true_class_rank.shape:
        raise InputError(f"expected one rank per sample {stats.true_class_rank.shape}, got {rank.shape}", field="best_rank")
    rank[stats.abstained] = stats.n_classes  # an abstention is correct under no set
    rank.setflags(write=False)
    return dataclasses.replace(stats, true_class_rank=rank)


# ---------------------------------------------------------------------------- per-class rates
# Precision, recall and F1 per class, and their macro averages, from the three count vectors
# that the confusion matrix summarises. Everything that reports these rates (the worst-class
# metrics, the per-class table, the subset and reference test suites, the transformation
# tests) computes them here, so that all agree to the last bit.

#: The rates of :func:`class_rates` / :func:`macro_rates`.
RATES: tuple[str, ...] = ("precision", "recall", "f1")


def class_counts(labels: np.ndarray, predictions: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hits, support, predicted)`` per class of aligned label and prediction arrays.

    ``labels`` and ``predictions`` are int64 class indices in ``[0, n_classes)`` of the same
    shape: ``(m,)`` gives ``(C,)`` counts; ``(B, m)`` (one multiset of samples per row, e.g.
    bootstrap resamples) gives ``(B, C)`` counts, by one ``bincount`` over row-offset keys.
    ``hits_c = #{y = c, ŷ = c}``, ``support_c = #{y = c}``, ``predicted_c = #{ŷ = c}``: the
    diagonal, row sums and column sums of the confusion matrix.
    """
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(predictions, dtype=np.int64)
    c = int(n_classes)
    if y.ndim == 1:
        return (
            np.bincount(y[y == p], minlength=c),
            np.bincount(y, minlength=c),
            np.bincount(p, minlength=c),
        )
    b = y.shape[0]
    offsets = (np.arange(b, dtype=np.int64) * c)[:, None]
    true_keys = (offsets + y).ravel()
    support = np.bincount(true_keys, minlength=b * c).reshape(b, c)
    predicted = np.bincount((offsets + p).ravel(), minlength=b * c).reshape(b, c)
    hits = np.bincount(true_keys[(y == p).ravel()], minlength=b * c).reshape(b, c)
    return hits, support, predicted


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` as float64 with NaN where ``den == 0`` (no warnings)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def class_rates(hits: np.ndarray, support: np.ndarray, predicted: np.ndarray) -> dict[str, np.ndarray]:
    """Per-class ``precision = hits / predicted``, ``recall = hits / support`` and
    ``f1 = 2 hits / (support + predicted)`` (= ``2 TP / (2 TP + FP + FN)``), each ``(..., C)``
    float64 with NaN where the ratio is 0/0 (a class never predicted, without samples, or both).
    """
    return {
        "precision": ratio(hits, predicted),
        "recall": ratio(hits, support),
        "f1": ratio(2 * np.asarray(hits), np.asarray(support) + np.asarray(predicted)),
    }


def macro_rates(
    hits: np.ndarray,
    support: np.ndarray,
    predicted: np.ndarray,
    *,
    label_set: str = "present",
    rates: tuple[str, ...] = RATES,
) -> dict[str, np.ndarray]:
    """Macro averages of :func:`class_rates` over the last axis, as scikit-learn's
    ``precision_score`` / ``recall_score`` / ``f1_score`` with ``average="macro"`` and
    ``zero_division=0``: an undefined (0/0) rate counts 0.

    ``label_set="present"`` averages over the classes with samples or predictions (sklearn's
    ``labels=None``); ``"all"`` over all ``C`` classes (``labels=range(C)``). Returns
    ``{rate: (...) float64}`` for the requested ``rates``.
    """
    support, predicted = np.asarray(support), np.asarray(predicted)
    if label_set == "present":
        in_set = (support + predicted) > 0
    elif label_set == "all":
        in_set = np.ones(support.shape, dtype=bool)
    else:
        raise InputError(f"label_set must be 'present' or 'all', got {label_set!r}", field="label_set")
    n_in_set = in_set.sum(axis=-1)
    per_class = class_rates(hits, support, predicted)
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in rates:
            rate = per_class[name]
            out[name] = np.where(in_set & ~np.isnan(rate), rate, 0.0).sum(axis=-1) / n_in_set
    return out
