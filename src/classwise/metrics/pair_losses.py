"""The worst two-class accuracy (W2CA) of many bootstrap replicates, exactly and fast.

For the pair ``{a, b}`` only the samples of ``a`` and ``b`` matter, and only the
misclassified ones among them: a correctly classified sample of ``a`` beats every other
class.  Write ``L_ab`` for the misclassified samples of class ``a`` that rank ``b`` ahead
(``s_b > s_a``, or equal with ``b < a``: the complement of "``a`` wins the pair").  A
bootstrap replicate gives every sample a weight ``w_s`` (how often it was drawn), and

    W_ab = n_a - sum_{s in L_ab} w_s,        pair value = (W_ab + W_ba) / (n_a + n_b)

(balanced variant: ``(W_ab n_b + W_ba n_a) / (2 n_a n_b)``), with the supports ``n``
fixed by the stratified resampling.  Evaluating every pair in every replicate costs
``B * sum_s rank_s`` (the total size of the ``L`` sets), which is large when ranks have a
heavy tail.  Instead each replicate evaluates a **candidate** set of pairs exactly (a sparse
product of the ``L`` indicator matrix with the replicate weights) and **proves** that no other
pair can be the minimum:

* a pair ``{a, b}`` with ``m_ab = |L_ab|``, ``m_ba = |L_ba|`` loses at most
  ``T(m_ab) + T(m_ba)`` weighted samples, where ``T(m)`` is the largest sum of ``m``
  weights of misclassified samples of any one class in this replicate.  With
  ``H(t)`` = the largest number of misclassified samples of one class with weight at least
  ``t``, ``T(m) = sum_t min(m, H(t))`` bounds every class's sum of its ``m`` largest
  weights (layer-cake formula);
* pairs are grouped by ``(max(m_ab, m_ba), min(m_ab, m_ba))``; a group whose bound cannot
  reach the best candidate (strictly, as rationals in integers) is ruled out for that
  replicate; otherwise all its pairs join the candidates and the check repeats.  Pairs with
  ``m_ab = m_ba = 0`` have value 1 in every replicate; the lexicographically first pair is
  always a candidate, so they never decide a tie.

So the result is exactly :func:`classwise.metrics.worst_class.worst_pair_accuracy` of the
resampled data (the tests compare them), at a cost that adapts to the data: a model whose
confusions concentrate on few pairs needs few candidates; scores whose misclassified
samples rank many classes ahead need most pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from classwise.metrics.stats import ClassificationStats
from classwise.metrics.worst_class import pair_values

if TYPE_CHECKING:
    import scipy.sparse as sp

#: Pairs with the lowest full-sample values that every replicate evaluates from the start.
INITIAL_CANDIDATES = 256
#: Pairs with more losses than this on one side are always candidates (their top-sum bounds
#: would need long tables; such pairs are few and usually near the minimum anyway).
LOSS_CAP = 64
#: Level 2 builds the per-class table of top sums (``C x (max_loss + 1)`` entries per
#: replicate) once the opened pairs times this factor outnumber it; else pair by pair.
TABLE_FACTOR = 2
#: Rows of scores compared at once when the L sets are built.
_CHUNK_ROWS = 1024
#: Pairs whose bounds are checked at once.
_PAIR_CHUNK = 16384
#: Rows reduced at once when looking for each replicate's best pair.
_ROW_BLOCK = 2048
#: Pairs without any loss (value 1 in every replicate) named with their tie share: all such
#: pairs share the same share, so the first few (lexicographically) are all a ranking can show.
ZERO_LOSS_NAMED = 8


@dataclass(frozen=True)
class PairReplicates:
    """Per replicate: the pooled and balanced W2CA and their pairs ``(a, b)``, ``a < b`` (the
    lexicographically first of the tied ones); per pair, its replicates as the worst, ``1/t``
    for a replicate in which ``t`` pairs tie (``pooled_shares``, ``balanced_shares``)."""

    pooled: np.ndarray
    pooled_pairs: np.ndarray
    balanced: np.ndarray
    balanced_pairs: np.ndarray
    n_candidates: np.ndarray  # candidates evaluated in each replicate's block
    pooled_shares: dict[tuple[int, int], float] = field(default_factory=dict)
    balanced_shares: dict[tuple[int, int], float] = field(default_factory=dict)


class PairLosses:
    """The ``L_ab`` sets of one model on one test set, ready for replicate weights."""

    def __init__(self, scores: np.ndarray, stats: ClassificationStats):
        c = stats.n_classes
        self.n_classes = c
        self.support = stats.support
        self.valid = np.flatnonzero(stats.support > 0)
        # Misclassified samples, grouped by class (the order of the weight rows).
        mis = np.flatnonzero(stats.true_class_rank > 0)
        mis = mis[np.argsort(stats.labels[mis], kind="stable")]
        self.misclassified = mis
        mis_class = stats.labels[mis]
        counts = np.bincount(mis_class, minlength=c)
        self.mis_starts = np.r_[0, np.cumsum(counts)[:-1]]
        self.mis_counts = counts
        keys, members = [], []
        key_dtype = np.int32 if c * c < 2**31 else np.int64
        col = np.arange(c)
        for lo in range(0, mis.shape[0], _CHUNK_ROWS):
            rows = mis[lo : lo + _CHUNK_ROWS]
            chunk = np.asarray(scores[rows])
            y = stats.labels[rows]
            s_y = chunk[np.arange(rows.shape[0]), y][:, None]
            ahead = (chunk > s_y) | ((chunk == s_y) & (col[None, :] < y[:, None]))
            r, j = np.nonzero(ahead)
            keys.append((y[r] * c + j).astype(key_dtype))
            members.append((lo + r).astype(np.int32))
        key = np.concatenate(keys) if keys else np.empty(0, key_dtype)
        del keys
        member = np.concatenate(members) if members else np.empty(0, np.int32)
        del members
        order = np.argsort(key, kind="stable")
        self.members = member[order]
        del member, order
        self.pointer = np.r_[0, np.cumsum(np.bincount(key, minlength=c * c))]
        loss = np.diff(self.pointer).reshape(c, c)
        # The L sets are the complement of the pairwise wins: a built-in consistency check.
        expected = stats.support[:, None] - stats.pairwise_wins
        np.fill_diagonal(expected, 0)
        if not np.array_equal(loss, expected):  # pragma: no cover - would be a bug
            raise RuntimeError("pairwise losses disagree with the pairwise wins")
        valid_support = stats.support[self.valid]
        self.equal_supports = bool(np.all(valid_support == valid_support[0])) if valid_support.size else True
        # Weighted losses of a pair are integers at most n_a + n_b: int16 sums are exact and fastest.
        self._dtype = np.int16 if 2 * int(stats.support.max()) < 2**15 else np.float64
        self._groups(loss)
        self._initial(loss)

    # ------------------------------------------------------------------ setup
    def _groups(self, loss: np.ndarray) -> None:
        """Pairs with some loss, grouped by ``(max(m_ab, m_ba), min(m_ab, m_ba))``; pairs
        with more than :data:`LOSS_CAP` losses on a side are always candidates instead."""
        v = self.valid
        n = self.support
        ia, ib = np.triu_indices(v.shape[0], 1)
        a, b = v[ia], v[ib]
        m_ab, m_ba = loss[a, b], loss[b, a]
        some = (m_ab + m_ba) > 0
        # Pairs without a loss have value 1 in every replicate: never candidates past the first,
        # but tied at the minimum whenever it is 1 (triu order is lexicographic).
        self.n_zero_loss = int(np.count_nonzero(~some))
        self.zero_loss_head = np.stack([a[~some][:ZERO_LOSS_NAMED], b[~some][:ZERO_LOSS_NAMED]], axis=1)
        big = np.maximum(m_ab, m_ba) > LOSS_CAP
        self.heavy_pairs = np.stack([a[big], b[big]], axis=1)
        keep = some & ~big
        a, b, m_ab, m_ba = a[keep], b[keep], m_ab[keep], m_ba[keep]
        hi, lo = np.maximum(m_ab, m_ba), np.minimum(m_ab, m_ba)
        uniq, group_of = np.unique(hi * (LOSS_CAP + 1) + lo, return_inverse=True)
        order = np.argsort(group_of, kind="stable")
        self.pair_a, self.pair_b = a[order], b[order]
        self.pair_m_ab, self.pair_m_ba = m_ab[order], m_ba[order]
        self.group_ptr = np.r_[0, np.cumsum(np.bincount(group_of, minlength=uniq.shape[0]))]
        self.group_hi, self.group_lo = uniq // (LOSS_CAP + 1), uniq % (LOSS_CAP + 1)
        den_min = np.full(uniq.shape[0], np.iinfo(np.int64).max)
        n_min = np.full(uniq.shape[0], np.iinfo(np.int64).max)
        np.minimum.at(den_min, group_of, n[a] + n[b])
        np.minimum.at(n_min, group_of, np.minimum(n[a], n[b]))
        self.group_den_min, self.group_n_min = den_min, n_min
        self.max_loss = int(self.group_hi.max()) if uniq.size else 0

    def _initial(self, loss: np.ndarray) -> None:
        v = self.valid
        n = self.support
        ia, ib = np.triu_indices(v.shape[0], 1)
        a, b = v[ia], v[ib]
        take = min(INITIAL_CANDIDATES, a.shape[0])
        if take == 0:
            self.initial_pairs = np.empty((0, 2), dtype=np.int64)
            self.initial_zero_loss = 0
            return
        picks = [np.array([0])]  # the lexicographically first pair decides ties at value 1
        for balanced in (False, True):
            value = pair_values(n[a] - loss[a, b], n[b] - loss[b, a], n[a], n[b], balanced=balanced)
            picks.append(np.argpartition(value, take - 1)[:take])
        pick = np.unique(np.concatenate(picks))
        first = np.stack([a[pick], b[pick]], axis=1)
        self.initial_pairs = np.unique(np.concatenate([first, self.heavy_pairs]), axis=0)
        initial = self.initial_pairs
        self.initial_zero_loss = int(
            np.count_nonzero((loss[initial[:, 0], initial[:, 1]] + loss[initial[:, 1], initial[:, 0]]) == 0)
        )

    # ------------------------------------------------------------------ replicates
    def _matrix(self, pairs: np.ndarray, directions: tuple[int, ...]) -> sp.csr_matrix:
        """Rows: ``pairs``; columns: misclassified samples; 1 where the sample is in
        ``L_ab`` (direction 0) or ``L_ba`` (direction 1), for the directions asked for."""
        import scipy.sparse as sp  # here, not above: only the bootstrap builds these matrices

        c = self.n_classes
        keys = [pairs[:, d] * c + pairs[:, 1 - d] for d in directions]
        key = np.stack(keys, axis=1).ravel()  # a pair's directions are adjacent
        start, stop = self.pointer[key], self.pointer[key + 1]
        lengths = (stop - start).reshape(pairs.shape[0], len(directions)).sum(axis=1)
        indptr = np.r_[0, np.cumsum(lengths)]
        piece = np.r_[0, np.cumsum(stop - start)]
        idx = np.repeat(start - piece[:-1], stop - start) + np.arange(piece[-1])
        data = np.ones(indptr[-1], dtype=self._dtype)
        return sp.csr_matrix((data, self.members[idx], indptr), shape=(pairs.shape[0], self.misclassified.shape[0]))

    def _losses(self, pairs: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Replicate losses ``(f, g)`` of ``pairs``: weighted ``|L_ab|`` and ``|L_ba|``.  With
        equal supports only ``f + g`` matters (returned as ``f``, with ``g = None``)."""
        if self.equal_supports:
            return self._matrix(pairs, (0, 1)) @ w, None
        return self._matrix(pairs, (0,)) @ w, self._matrix(pairs, (1,)) @ w

    def _weights_at_least(self, weights: np.ndarray) -> np.ndarray:
        """``H[c, t, r]``: how many misclassified samples of class ``c`` have weight at least
        ``t`` in replicate ``r`` (``t = 1 .. max weight``)."""
        n_rep = weights.shape[1]
        levels = int(weights.max()) + 1 if weights.size else 1
        segment = np.repeat(np.arange(self.n_classes), self.mis_counts)
        key = (segment[:, None] * levels + weights.astype(np.int64)) * n_rep + np.arange(n_rep)[None, :]
        hist = np.bincount(key.ravel(), minlength=self.n_classes * levels * n_rep)
        hist = hist.reshape(self.n_classes, levels, n_rep).astype(np.int16 if self._dtype == np.int16 else np.int64)
        return np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:]

    def _top_sums(self, at_least: np.ndarray, max_m: int | None = None) -> np.ndarray:
        """``T[..., m, r] = sum_t min(m, H[..., t, r])`` for ``m = 0 .. max_m`` (default
        ``max_loss``): at least the sum of the ``m`` largest weights (layer-cake formula);
        ``at_least`` is ``(..., t, R)``."""
        m = np.arange((self.max_loss if max_m is None else max_m) + 1, dtype=at_least.dtype)[:, None]
        top = np.zeros((*at_least.shape[:-2], m.shape[0], at_least.shape[-1]), dtype=at_least.dtype)
        part = np.empty_like(top)
        for t in range(at_least.shape[-2]):
            np.minimum(m, at_least[..., t, None, :], out=part)
            top += part
        return top

    @staticmethod
    def _pair_top(classes: np.ndarray, m: np.ndarray, at_least: np.ndarray) -> np.ndarray:
        """``(P, R)``: :meth:`_top_sums` of ``classes[p]`` at ``m[p]``, pair by pair."""
        m = m.astype(at_least.dtype)[:, None, None]
        return np.minimum(m, at_least[classes]).sum(axis=1, dtype=at_least.dtype)

    def replicates(self, weights: np.ndarray) -> PairReplicates:
        """Exact W2CA (pooled and balanced) of each column of ``weights``.

        ``weights`` is ``(N_misclassified, R)``: the replicate weight of each misclassified
        sample, in the order of :attr:`misclassified`.
        """
        w = np.ascontiguousarray(weights, dtype=self._dtype)
        n_rep = w.shape[1]
        at_least = self._weights_at_least(w)
        # Level 1 bounds every class at once: H_any(t) = max over classes of H_c(t).
        top_any = self._top_sums(at_least.max(axis=0)).astype(np.int64)  # (m, R)
        top: np.ndarray | None = None  # per-class table T[c, m, r], built when many pairs need it
        open_group = np.ones(self.group_hi.shape[0], dtype=np.bool_)
        pooled, balanced = _Running.empty(n_rep), _Running.empty(n_rep)
        ties = _Ties(), _Ties()
        n_candidates = 0
        new = self.initial_pairs
        while new.shape[0]:
            n_candidates += new.shape[0]
            self._merge(new, w, pooled, balanced, ties)
            # Level 1: whole groups, with the largest top sums of any class.
            groups = np.flatnonzero(open_group)
            ub = top_any[self.group_hi[groups]] + top_any[self.group_lo[groups]]
            if self.equal_supports:
                reach = ub >= pooled.num[None, :]
            else:
                reach = _reached(pooled, balanced, ub, ub, self.group_den_min[groups, None], self.group_n_min[groups, None])
            opened = groups[reach.any(axis=1)]
            open_group[opened] = False
            # Level 2: the pairs of opened groups, with their own classes' top sums: from a
            # per-class table when many pairs need them, else pair by pair.
            n_open = int((self.group_ptr[opened + 1] - self.group_ptr[opened]).sum())
            if top is None and TABLE_FACTOR * n_open > self.n_classes * (self.max_loss + 1):
                top = self._top_sums(at_least)
            new = self._reaching_pairs(opened, top, at_least, pooled, balanced)
        return PairReplicates(
            pooled=pooled.value,
            pooled_pairs=pooled.pair,
            balanced=balanced.value,
            balanced_pairs=balanced.pair,
            n_candidates=np.full(n_rep, n_candidates),
            pooled_shares=self._tie_shares(ties[0], pooled),
            balanced_shares=self._tie_shares(ties[1], balanced),
        )

    def _tie_shares(self, ties: _Ties, best: _Running) -> dict[tuple[int, int], float]:
        """Per pair, the replicates in which it is the worst, ``1/t`` for each of ``t`` tied
        pairs: the evaluated pairs that equal the final best (every pair that can tie was
        evaluated: the bounds admit ties), and the pairs without any loss when the best is 1."""
        pairs, replicate = ties.at(best.value)
        at_one = best.value == 1.0
        never_evaluated = self.n_zero_loss - self.initial_zero_loss
        tied = np.bincount(replicate, minlength=best.value.shape[0]) + np.where(at_one, never_evaluated, 0)
        weight = 1.0 / np.maximum(tied, 1)
        unique, which = np.unique(pairs, axis=0, return_inverse=True)
        totals = np.bincount(which.reshape(-1), weights=weight[replicate], minlength=unique.shape[0])
        shares = {(int(a), int(b)): float(t) for (a, b), t in zip(unique, totals)}
        if never_evaluated > 0 and at_one.any():
            uniform = float(weight[at_one].sum())  # the same for every pair without a loss
            for a, b in self.zero_loss_head:
                shares.setdefault((int(a), int(b)), uniform)
        return shares

    def _merge(self, pairs: np.ndarray, w: np.ndarray, pooled: _Running, balanced: _Running, ties: tuple[_Ties, _Ties]) -> None:
        """Evaluate ``pairs`` (sorted by ``(a, b)``) exactly and keep each replicate's best, and
        in ``ties`` every pair that equals it (a later, lower best drops them)."""
        f, g = self._losses(pairs, w)
        n = self.support
        na, nb = n[pairs[:, 0]], n[pairs[:, 1]]
        cols = np.arange(w.shape[1])
        if g is None:
            # Equal supports: the pair with the most losses is the minimum of both variants;
            # argmax takes the first, i.e. the smallest (a, b) among ties.
            rows = _first_extreme(f, largest=True)
            loss = f[rows, cols].astype(np.int64)
            # one support: the value falls with the loss alone, so the pairs of the batch with the
            # largest loss tie, in both variants
            i, r = np.nonzero(f == f[rows, cols][None, :])
            for (running, variant), tie in zip(((pooled, False), (balanced, True)), ties):
                value = pair_values(na[rows] - loss, nb[rows], na[rows], nb[rows], balanced=variant)
                num, den = (loss, na[rows] + nb[rows]) if not variant else (loss * nb[rows], na[rows] * nb[rows])
                running.update(value, pairs[rows], num, den)
                tie.add(pairs[i], r, value[r], running.value)
            return
        f, g = f.astype(np.int64), g.astype(np.int64)
        for (running, variant), tie in zip(((pooled, False), (balanced, True)), ties):
            value = pair_values(na[:, None] - f, nb[:, None] - g, na[:, None], nb[:, None], balanced=variant)
            rows = _first_extreme(value, largest=False)  # first: the smallest (a, b) among ties
            fr, gr, nar, nbr = f[rows, cols], g[rows, cols], na[rows], nb[rows]
            num, den = (fr + gr, nar + nbr) if not variant else (fr * nbr + gr * nar, nar * nbr)
            running.update(value[rows, cols], pairs[rows], num, den)
            i, r = np.nonzero(value == value[rows, cols][None, :])
            tie.add(pairs[i], r, value[i, r], running.value)

    def _reaching_pairs(
        self,
        groups: np.ndarray,
        top: np.ndarray | None,
        at_least: np.ndarray,
        pooled: _Running,
        balanced: _Running,
    ) -> np.ndarray:
        """Pairs of ``groups`` whose own bound reaches the best in some replicate, sorted."""
        if groups.size == 0:
            return np.empty((0, 2), dtype=np.int64)
        lengths = self.group_ptr[groups + 1] - self.group_ptr[groups]
        offsets = np.r_[0, np.cumsum(lengths)]
        idx = np.repeat(self.group_ptr[groups] - offsets[:-1], lengths) + np.arange(offsets[-1])
        n = self.support
        out = []
        rows = None if top is None else top.reshape(-1, top.shape[-1])  # row c * (max_loss + 1) + m
        best = pooled.num.astype(top.dtype if top is not None else at_least.dtype)
        if rows is not None and self.equal_supports:
            # First without the replicate axis: a pair whose largest bound over the replicates
            # stays below the smallest best loss is ruled out for all of them.
            width = self.max_loss + 1
            highest = rows.max(axis=1).astype(np.int64)
            pair_high = highest[self.pair_a[idx] * width + self.pair_m_ab[idx]]
            pair_high += highest[self.pair_b[idx] * width + self.pair_m_ba[idx]]
            idx = idx[pair_high >= int(best.min())]
        for lo in range(0, idx.shape[0], _PAIR_CHUNK):
            i = idx[lo : lo + _PAIR_CHUNK]
            a, b = self.pair_a[i], self.pair_b[i]
            if rows is None:
                t_a, t_b = self._pair_top(a, self.pair_m_ab[i], at_least), self._pair_top(b, self.pair_m_ba[i], at_least)
            else:
                width = self.max_loss + 1
                t_a = np.take(rows, a * width + self.pair_m_ab[i], axis=0)  # (P, R)
                t_b = np.take(rows, b * width + self.pair_m_ba[i], axis=0)
            if self.equal_supports:  # one denominator: compare the losses themselves (exact in
                t_a += t_b  # the table's dtype: at most n_a + n_b)
                t_a -= best[None, :]
                reach = t_a.max(axis=1) >= 0
            else:
                t_a, t_b = t_a.astype(np.int64), t_b.astype(np.int64)
                na, nb = n[a][:, None], n[b][:, None]
                reach = _reached(pooled, balanced, t_a + t_b, t_a * nb + t_b * na, na + nb, na * nb).any(axis=1)
            out.append(i[reach])
        hit = np.concatenate(out)
        order = np.lexsort((self.pair_b[hit], self.pair_a[hit]))
        return np.stack([self.pair_a[hit][order], self.pair_b[hit][order]], axis=1)


@dataclass
class _Ties:
    """The evaluated pairs that equalled their replicate's best when evaluated, with their
    values: a pair that ties the final minimum was among them (it equalled the best of its
    batch, and no earlier best was lower than the final one)."""

    pairs: list[np.ndarray] = field(default_factory=list)
    replicates: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)

    def add(self, pairs: np.ndarray, replicates: np.ndarray, values: np.ndarray, best: np.ndarray) -> None:
        """Keep the ``pairs[k]`` whose ``values[k]`` equal ``best`` of ``replicates[k]``."""
        keep = values == best[replicates]
        self.pairs.append(pairs[keep])
        self.replicates.append(replicates[keep])
        self.values.append(values[keep])

    def at(self, best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(pairs, replicates)`` of the kept pairs equal to the final ``best``, each
        (pair, replicate) once (a pair may be evaluated twice: first as an initial candidate)."""
        if not self.pairs:
            return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64)
        pairs, replicates, values = (np.concatenate(x) for x in (self.pairs, self.replicates, self.values))
        keep = values == best[replicates]
        rows = np.unique(np.column_stack([replicates[keep], pairs[keep]]), axis=0)
        return rows[:, 1:], rows[:, 0]


@dataclass
class _Running:
    """Each replicate's best pair so far: its value, the pair, and its loss ratio
    ``num / den`` in integers (pooled: ``(f + g) / (n_a + n_b)``; balanced:
    ``(f n_b + g n_a) / (n_a n_b)``)."""

    value: np.ndarray
    pair: np.ndarray
    num: np.ndarray
    den: np.ndarray

    @classmethod
    def empty(cls, n_rep: int) -> _Running:
        return cls(
            np.full(n_rep, np.inf),
            np.full((n_rep, 2), np.iinfo(np.int64).max, dtype=np.int64),
            np.zeros(n_rep, dtype=np.int64),
            np.ones(n_rep, dtype=np.int64),
        )

    def update(self, value: np.ndarray, pair: np.ndarray, num: np.ndarray, den: np.ndarray) -> None:
        same = value == self.value
        earlier = (pair[:, 0] < self.pair[:, 0]) | ((pair[:, 0] == self.pair[:, 0]) & (pair[:, 1] < self.pair[:, 1]))
        better = (value < self.value) | (same & earlier)
        self.value = np.where(better, value, self.value)
        self.pair = np.where(better[:, None], pair, self.pair)
        self.num = np.where(better, num, self.num)
        self.den = np.where(better, den, self.den)


def _reached(
    pooled: _Running,
    balanced: _Running,
    loss: np.ndarray,
    loss_balanced: np.ndarray,
    den: np.ndarray,
    den_balanced: np.ndarray,
) -> np.ndarray:
    """``(P, R)``: whether a pair whose loss ratio is at most ``loss / den`` (balanced:
    ``loss_balanced / den_balanced``) could tie with or beat the best of a replicate."""
    return (loss * pooled.den[None, :] >= pooled.num[None, :] * den) | (
        loss_balanced * balanced.den[None, :] >= balanced.num[None, :] * den_balanced
    )


def _first_extreme(values: np.ndarray, *, largest: bool) -> np.ndarray:
    """Per column, the first row holding the column's maximum (or minimum).

    Row blocks keep the reductions along contiguous memory (an argmax over axis 0 of a tall
    array is several times slower)."""
    n_rows, n_cols = values.shape
    best_row = np.zeros(n_cols, dtype=np.int64)
    best = values[0].copy()
    for lo in range(0, n_rows, _ROW_BLOCK):
        block = values[lo : lo + _ROW_BLOCK]
        extreme = block.max(axis=0) if largest else block.min(axis=0)
        better = extreme > best if largest else extreme < best
        if lo == 0:
            better[:] = True
        if better.any():
            cols = np.flatnonzero(better)
            sub = block[:, cols]
            best_row[cols] = lo + (np.argmax(sub, axis=0) if largest else np.argmin(sub, axis=0))
            best[cols] = extreme[cols]
    return best_row
