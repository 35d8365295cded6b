"""Exact tests and intervals for the change of a proportion (a class's accuracy), vectorised.

Every function takes arrays of counts (one entry per class, or any broadcastable shape) and
returns an array of p-values or interval limits: no Python loop over the entries. The two
situations of a class under a shift:

**Paired** (the shift holds the same samples as clean, matched by sample id). Each sample
falls in one cell of a 2 x 2 table: correct in both (``both``), only under the first condition
(``only_first``), only under the second (``only_second``), in neither (``neither``).

* :func:`mcnemar_exact`: McNemar's exact test, two-sided: given the ``b + c`` discordant
  samples, ``b = only_first`` is ``Binomial(b + c, 1/2)`` when both conditions have the same
  accuracy, so ``p = min(1, 2 P(X <= min(b, c)))``, the p-value of
  ``scipy.stats.binomtest(b, b + c, 0.5)``; ``p = 1`` without a discordant sample.
* :func:`newcombe_paired_interval`: Newcombe's (1998b) hybrid score interval for the paired
  difference ``p_first - p_second`` (his method 10; "square-and-add" in Fagerland, Lydersen and
  Laake, 2017, ch. 8): with ``l_i, u_i`` the Wilson limits of ``p_first = (both + only_first) / n``
  and ``p_second = (both + only_second) / n``,
  ``low = d - sqrt((p1 - l1)^2 - 2 phi (p1 - l1)(u2 - p2) + (u2 - p2)^2)``,
  ``high = d + sqrt((u1 - p1)^2 - 2 phi (u1 - p1)(p2 - l2) + (p2 - l2)^2)``, where ``phi`` is
  the correlation of the table, ``A / sqrt(product of the four margins)`` with
  ``A = both * neither - only_first * only_second`` shrunk as Newcombe does: ``A - n/2`` when
  ``A > n/2``, 0 when ``0 <= A <= n/2``, ``A`` when negative (0 when a margin is 0).

**Unpaired** (other samples; ``k1`` of ``n1`` against ``k2`` of ``n2``):

* :func:`fisher_exact`: Fisher's exact test, two-sided: given the ``k1 + k2`` successes, ``k1``
  is hypergeometric; ``p`` sums the probabilities of the outcomes no more likely than the one
  observed, "no more likely" up to a relative ``1e-7`` (R's ``fisher.test`` tolerance; scipy's
  ``fisher_exact`` uses ``1e-14``, the tests agree with it to ``1e-9``).
* :func:`boschloo_exact`: Boschloo's exact unconditional test, two-sided as scipy defines it:
  twice the smaller of the one-sided p-values, each the supremum over the common success rate
  ``pi`` of the probability of the tables whose one-sided Fisher p-value is at most the
  observed one. It is never less powerful than Fisher's (its p-value is at most Fisher's
  one-sided one). See :func:`boschloo_exact` for how it is vectorised.
* :func:`newcombe_unpaired_interval`: Newcombe's (1998a) hybrid score interval for
  ``k1/n1 - k2/n2`` (his method 10): ``low = d - sqrt((p1 - l1)^2 + (u2 - p2)^2)``,
  ``high = d + sqrt((u1 - p1)^2 + (p2 - l2)^2)`` with the Wilson limits ``l_i, u_i`` (statsmodels'
  ``confint_proportions_2indep(..., method="newcomb")``).

A test or interval with ``n = 0`` on a side is NaN: there is nothing to test.

References: Newcombe, R. G. (1998a), Interval estimation for the difference between independent
proportions: comparison of eleven methods, Stat. Med. 17, 873-890; Newcombe, R. G. (1998b),
Improved confidence intervals for the difference between binomial proportions based on paired
data, Stat. Med. 17, 2635-2650; Boschloo, R. D. (1970), Raised conditional level of significance
for the 2 x 2-table when testing the equality of two probabilities, Stat. Neerl. 24, 1-35.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.special import bdtr, gammaln

from classwise.errors import InputError
from classwise.metrics.intervals import check_confidence, wilson

__all__ = [
    "UNPAIRED_TESTS",
    "UnpairedTest",
    "boschloo_exact",
    "check_unpaired_test",
    "fisher_exact",
    "mcnemar_exact",
    "newcombe_paired_interval",
    "newcombe_unpaired_interval",
]

UnpairedTest = Literal["fisher", "boschloo"]
#: The exact tests of two independent samples, by the name ``class_drops`` takes.
UNPAIRED_TESTS: tuple[str, ...] = ("fisher", "boschloo")

#: Relative tolerance of "no more likely than the observed table" (R's ``fisher.test``).
FISHER_TOLERANCE = 1e-7
#: Relative tolerance of "a one-sided Fisher p-value at most the observed one" (scipy's
#: ``boschloo_exact``: equal statistics computed along different paths still compare equal).
BOSCHLOO_TOLERANCE = 1e-13
#: Grid of the nuisance parameter of Boschloo's test before the local refinement.
BOSCHLOO_GRID = 128
#: Golden-section steps of the refinement: the bracket shrinks to 0.618^30 ~ 5e-7 of two grid steps.
BOSCHLOO_REFINE_STEPS = 30
#: Entries of a scratch grid (rows x support) computed at once (about 32 MiB of float64).
_CHUNK_ENTRIES = 4_000_000


def check_unpaired_test(test: object) -> UnpairedTest:
    """``test`` if it is one of :data:`UNPAIRED_TESTS`, else :class:`InputError`."""
    if test == "fisher":
        return "fisher"
    if test == "boschloo":
        return "boschloo"
    raise InputError(f"expected one of {', '.join(UNPAIRED_TESTS)}, got {test!r}", field="unpaired_test")


def _counts(*arrays: object) -> tuple[np.ndarray, ...]:
    """The arrays as broadcast int64 counts, else :class:`InputError`."""
    out = []
    for arr in np.broadcast_arrays(*(np.asarray(a) for a in arrays)):
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
            raise InputError(f"expected counts, got dtype {arr.dtype}", field="counts")
        if np.any((arr < 0) | (arr != np.floor(arr))):
            raise InputError("expected non-negative integer counts", field="counts")
        out.append(arr.astype(np.int64))
    return tuple(out)


# ----------------------------------------------------------------------------- paired


def mcnemar_exact(only_first: object, only_second: object) -> np.ndarray:
    """Two-sided exact McNemar p-value from the discordant counts (see the module docstring)."""
    b, c = _counts(only_first, only_second)
    discordant = b + c
    out = np.ones(b.shape, dtype=np.float64)
    has = discordant > 0
    out[has] = np.minimum(1.0, 2.0 * bdtr(np.minimum(b, c)[has], discordant[has], 0.5))
    return out


def newcombe_paired_interval(
    both: object, only_first: object, only_second: object, neither: object, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval ``(low, high)`` for ``p_first - p_second`` of paired
    samples (see the module docstring); NaN where there is no sample."""
    conf = check_confidence(confidence)
    a, b, c, d = _counts(both, only_first, only_second, neither)
    n = a + b + c + d
    first, second = a + b, a + c
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = first / n, second / n
    l1, u1 = wilson(first, n, conf)
    l2, u2 = wilson(second, n, conf)
    # the margins' product overflows int64 at a few 10^4 samples: in floats
    margins = first.astype(np.float64) * (n - first) * second * (n - second)
    excess = (a * d - b * c).astype(np.float64)
    shrunk = np.where(excess > n / 2.0, excess - n / 2.0, np.where(excess >= 0, 0.0, excess))
    phi = np.zeros(n.shape)
    np.divide(shrunk, np.sqrt(margins), out=phi, where=margins > 0)
    difference = p1 - p2
    below = np.sqrt(np.maximum((p1 - l1) ** 2 - 2.0 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    above = np.sqrt(np.maximum((u1 - p1) ** 2 - 2.0 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return np.maximum(difference - below, -1.0), np.minimum(difference + above, 1.0)


# ----------------------------------------------------------------------------- unpaired


def newcombe_unpaired_interval(
    k1: object, n1: object, k2: object, n2: object, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's hybrid score interval ``(low, high)`` for ``k1/n1 - k2/n2`` of independent
    samples (see the module docstring); NaN where ``n1`` or ``n2`` is 0."""
    conf = check_confidence(confidence)
    x1, m1, x2, m2 = _counts(k1, n1, k2, n2)
    _check_at_most(x1, m1)
    _check_at_most(x2, m2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p1, p2 = x1 / m1, x2 / m2
    l1, u1 = wilson(x1, m1, conf)
    l2, u2 = wilson(x2, m2, conf)
    difference = p1 - p2
    low = difference - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = difference + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return np.maximum(low, -1.0), np.minimum(high, 1.0)


def _check_at_most(k: np.ndarray, n: np.ndarray) -> None:
    if np.any(k > n):
        raise InputError("expected successes <= trials", field="counts")


def _log_comb(n: np.ndarray | float, k: np.ndarray | float) -> np.ndarray:
    """``log C(n, k)`` elementwise (float arguments, as the grids hold them)."""
    return np.asarray(gammaln(np.add(n, 1.0)) - gammaln(np.add(k, 1.0)) - gammaln(np.subtract(n, k) + 1.0))


def fisher_exact(k1: object, n1: object, k2: object, n2: object) -> np.ndarray:
    """Two-sided Fisher exact p-value of ``k1`` of ``n1`` against ``k2`` of ``n2`` (see the
    module docstring); NaN where ``n1`` or ``n2`` is 0.

    Vectorised over the tables: each row of a padded grid holds the support of its table's
    hypergeometric distribution, ``max(0, s - n2) .. min(s, n1)`` with ``s = k1 + k2``; the
    p-value sums, in logs, the probabilities of the row at most the observed one's."""
    x1, m1, x2, m2 = _counts(k1, n1, k2, n2)
    _check_at_most(x1, m1)
    _check_at_most(x2, m2)
    out = np.full(x1.shape, np.nan)
    tested = np.flatnonzero(((m1 > 0) & (m2 > 0)).ravel())
    if tested.size == 0:
        return out
    k, n, s, total = x1.ravel()[tested], m1.ravel()[tested], (x1 + x2).ravel()[tested], (m1 + m2).ravel()[tested]
    lo = np.maximum(0, s - (total - n))
    width = np.minimum(s, n) - lo + 1
    p = np.empty(tested.size)
    rows = max(1, _CHUNK_ENTRIES // int(width.max()))
    for start in range(0, tested.size, rows):  # chunks bound the scratch grid, not a loop over tables
        part = slice(start, start + rows)
        p[part] = _fisher_rows(k[part], n[part], s[part], total[part], lo[part], width[part])
    out.flat[tested] = np.minimum(p, 1.0)
    return out


def _fisher_rows(k: np.ndarray, n: np.ndarray, s: np.ndarray, total: np.ndarray, lo: np.ndarray, width: np.ndarray) -> np.ndarray:
    steps = np.arange(int(width.max()))
    x = (lo[:, None] + steps[None, :]).astype(np.float64)
    inside = steps[None, :] < width[:, None]
    # log P(X = x), X ~ Hypergeometric(total, s successes, n draws): C(s, x) C(total - s, n - x) / C(total, n)
    fs, ft, fn = s[:, None].astype(np.float64), total[:, None].astype(np.float64), n[:, None].astype(np.float64)
    with np.errstate(invalid="ignore"):
        log_pmf = _log_comb(fs, x) + _log_comb(ft - fs, fn - x) - _log_comb(ft, fn)
    observed = np.take_along_axis(log_pmf, (k - lo)[:, None], axis=1)
    kept = inside & (log_pmf <= observed + np.log1p(FISHER_TOLERANCE))
    return np.exp(_log_sum_exp(np.where(kept, log_pmf, -np.inf), axis=1))


def _log_sum_exp(values: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.log(np.sum(np.exp(values - top), axis=axis)) + np.squeeze(top, axis=axis)


def boschloo_exact(
    k1: object, n1: object, k2: object, n2: object, *, grid: int = BOSCHLOO_GRID, refine_steps: int = BOSCHLOO_REFINE_STEPS
) -> np.ndarray:
    """Two-sided Boschloo exact p-value of ``k1`` of ``n1`` against ``k2`` of ``n2``, as
    ``scipy.stats.boschloo_exact`` defines it (see the module docstring); NaN where ``n1`` or
    ``n2`` is 0.

    How it is vectorised. For sample sizes ``(n1, n2)``, the one-sided ("less") statistic of a
    table ``(x1, x2)`` is ``P(X1 <= x1 | x1 + x2 = s)``, which increases with ``x1`` among the
    tables of one total ``s``: the rejection region of an observed table (the tables whose
    statistic is at most its own) holds, for each ``s``, the first ``m(s)`` tables of that
    total. Its probability at a common success rate ``pi`` is the polynomial
    ``sum_s c(s) pi^s (1 - pi)^(n1 + n2 - s)`` with ``c(s)`` the summed ``C(n1, x1) C(n2, x2)``
    of those ``m(s)`` tables: a cumulative log-sum along each ``s``. The supremum over ``pi``
    is taken on a grid of ``grid`` values, then refined around the best one by
    ``refine_steps`` golden-section steps, every observed table at once (distinct tables
    computed once). The "greater" side is the "less" side of the swapped samples. What loops
    in Python is the distinct pairs of sample sizes (one on a class-balanced test set), not the
    classes; a pair costs ``O(K (n1 + n2) min(n1, n2))`` for ``K`` distinct observed tables
    (about 0.1 s for a thousand classes of 50 samples a side).

    scipy maximises over ``pi`` with ``shgo`` from 32 points; the tests check agreement to
    1e-9 relative."""
    x1, m1, x2, m2 = _counts(k1, n1, k2, n2)
    _check_at_most(x1, m1)
    _check_at_most(x2, m2)
    out = np.full(x1.shape, np.nan)
    tested = np.flatnonzero(((m1 > 0) & (m2 > 0)).ravel())
    if tested.size == 0:
        return out
    tables = np.stack([m1.ravel()[tested], m2.ravel()[tested], x1.ravel()[tested], x2.ravel()[tested]], axis=1)
    unique, inverse = np.unique(tables, axis=0, return_inverse=True)
    p = np.empty(unique.shape[0])
    sizes, by_size = np.unique(unique[:, :2], axis=0, return_inverse=True)
    for i, (size1, size2) in enumerate(sizes):  # distinct pairs of sample sizes, not classes
        rows = np.flatnonzero(by_size.ravel() == i)
        first, second = unique[rows, 2], unique[rows, 3]
        less = _boschloo_less(int(size1), int(size2), first, second, grid, refine_steps)
        greater = _boschloo_less(int(size2), int(size1), second, first, grid, refine_steps)
        p[rows] = np.minimum(1.0, 2.0 * np.minimum(less, greater))
    out.flat[tested] = p[inverse.ravel()]
    return out


def _boschloo_less(n1: int, n2: int, x1: np.ndarray, x2: np.ndarray, grid: int, refine_steps: int) -> np.ndarray:
    """One-sided ("less": the first rate below the second) Boschloo p-values of the tables
    ``(x1, x2)`` of sizes ``(n1, n2)`` (see :func:`boschloo_exact`)."""
    total = n1 + n2
    sums = np.arange(total + 1)
    width = min(n1, n2) + 1
    first = np.maximum(0, sums - n2)[:, None] + np.arange(width)[None, :]  # x1 of the tables of total s
    inside = first <= np.minimum(sums, n1)[:, None]
    a = np.where(inside, first, 0).astype(np.float64)
    b = np.where(inside, sums[:, None] - first, 0).astype(np.float64)
    log_weight = np.where(inside, _log_comb(np.float64(n1), a) + _log_comb(np.float64(n2), b), -np.inf)
    # the statistic, P(X1 <= x1 | s): a cumulative sum along each row, scaled so that the row ends at 1
    pmf = np.exp(log_weight - _log_sum_exp(log_weight, axis=1)[:, None])
    statistic = np.cumsum(pmf, axis=1)
    statistic /= statistic[sums, inside.sum(axis=1) - 1][:, None]
    s_obs = x1 + x2
    observed = statistic[s_obs, x1 - np.maximum(0, s_obs - n2)]
    threshold = observed * (1.0 + BOSCHLOO_TOLERANCE)
    cumulative = np.logaddexp.accumulate(log_weight, axis=1)
    # c(s) of each observed table: the cumulative weight of the m(s) tables at or below its statistic
    counts = inside.sum(axis=1)
    m = np.empty((x1.size, total + 1), dtype=np.int64)
    for s in sums:  # the totals of successes (n1 + n2 + 1 of them), each over every table at once
        m[:, s] = np.searchsorted(statistic[s, : counts[s]], threshold, side="right")
    coefficients = np.where(m > 0, cumulative[sums[None, :], np.maximum(m - 1, 0)], -np.inf)
    failures = total - sums

    def log_p(pi: np.ndarray) -> np.ndarray:
        """log P(region) of each observed table at its own ``pi`` (K,)."""
        return _log_sum_exp(coefficients + sums * np.log(pi)[:, None] + failures * np.log1p(-pi)[:, None], axis=1)

    # Chebyshev points: dense near 0 and 1, where a table with all or no successes on a small
    # side puts a narrow peak
    points = (1.0 - np.cos(np.pi * (np.arange(grid + 2) / (grid + 1)))) / 2.0
    points = np.clip(points, 1e-12, 1.0 - 1e-12)
    on_grid = _log_p_grid(coefficients, sums, failures, points)
    best = np.argmax(on_grid, axis=1)
    best_value = on_grid[np.arange(x1.size), best]
    lo = points[np.maximum(best - 1, 0)]
    hi = points[np.minimum(best + 1, grid + 1)]
    golden = (np.sqrt(5.0) - 1.0) / 2.0
    left, right = hi - golden * (hi - lo), lo + golden * (hi - lo)
    f_left, f_right = log_p(left), log_p(right)
    for _ in range(refine_steps):  # golden-section steps, every table at once
        move_right = f_left < f_right  # the maximum lies in [left, hi]
        lo = np.where(move_right, left, lo)
        hi = np.where(move_right, hi, right)
        new_left = np.where(move_right, right, hi - golden * (hi - lo))
        new_right = np.where(move_right, lo + golden * (hi - lo), left)
        f_new = log_p(np.where(move_right, new_right, new_left))
        f_left, f_right = np.where(move_right, f_right, f_new), np.where(move_right, f_new, f_left)
        left, right = new_left, new_right
    return np.minimum(np.exp(np.maximum(best_value, np.maximum(f_left, f_right))), 1.0)


def _log_p_grid(coefficients: np.ndarray, sums: np.ndarray, failures: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``(K, G)``: ``log sum_s exp(c[k, s]) pi_g^s (1 - pi_g)^(n - s)``, as one matrix product of
    the scaled terms: each row of ``c`` scaled by its maximum, each column of the binomial terms
    by theirs (so neither overflows; a product that underflows is a value far below the maximum
    over the grid, which is what is sought)."""
    exponent = sums[:, None] * np.log(points)[None, :] + failures[:, None] * np.log1p(-points)[None, :]  # (s, G)
    top_c = np.max(coefficients, axis=1, keepdims=True)
    top_e = np.max(exponent, axis=0, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(coefficients - top_c) @ np.exp(exponent - top_e)) + top_c + top_e
