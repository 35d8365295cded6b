"""Confidence intervals for proportions, and bounds for minima of proportions.

* :func:`clopper_pearson`: the exact (conservative) binomial interval,
  ``[Beta(a/2; k, n-k+1), Beta(1-a/2; k+1, n-k)]`` quantiles with ``a = 1 - confidence``
  (``0`` when ``k = 0``, ``1`` when ``k = n``); the interval scipy's
  ``binomtest(k, n).proportion_ci(method="exact")`` gives.
* :func:`wilson`: the Wilson score interval (``binomtest(...).proportion_ci("wilson")``).
* :func:`percentile_interval`: the percentile interval of bootstrap replicates.
* :func:`minimum_bound`: an interval for the **minimum** of several proportions (the worst
  class) built from one-sided Clopper-Pearson bounds, with a finite-sample guarantee (see
  its docstring), for the worst-class minima whose percentile bootstrap under-covers.

Every function is vectorised; a proportion with ``n = 0`` trials has the interval (NaN, NaN).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.special import betaincinv, ndtri

from classwise.errors import InputError

__all__ = [
    "IntervalMethod",
    "INTERVAL_METHODS",
    "check_confidence",
    "clopper_pearson",
    "wilson",
    "proportion_interval",
    "percentile_interval",
    "one_sided_lower",
    "one_sided_upper",
    "minimum_bound",
]

IntervalMethod = Literal["clopper-pearson", "wilson"]
INTERVAL_METHODS: tuple[str, ...] = ("clopper-pearson", "wilson")


def check_confidence(confidence: object, field: str = "confidence") -> float:
    """``confidence`` as a float strictly between 0 and 1, else :class:`InputError`."""
    if isinstance(confidence, bool):
        raise InputError(f"expected a number strictly between 0 and 1, got {confidence!r}", field=field)
    try:
        value = float(confidence)  # type: ignore[arg-type]  # any object: float() is the check (below)
    except (TypeError, ValueError):
        raise InputError(f"expected a number strictly between 0 and 1, got {confidence!r}", field=field) from None
    if not 0.0 < value < 1.0:
        raise InputError(f"expected a number strictly between 0 and 1, got {confidence!r}", field=field)
    return value


def _counts(successes: object, trials: object) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(successes)
    n = np.asarray(trials)
    for name, arr in (("successes", k), ("trials", n)):
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
            raise InputError(f"expected counts, got dtype {arr.dtype}", field=name)
    k, n = np.broadcast_arrays(k.astype(np.float64), n.astype(np.float64))
    bad = (k < 0) | (n < 0) | (k > n) | (k != np.floor(k)) | (n != np.floor(n))
    if bad.any():
        where = np.argwhere(bad)[0]
        raise InputError(
            f"expected integer counts with 0 <= successes <= trials, got successes={k[tuple(where)]:g}, "
            f"trials={n[tuple(where)]:g}",
            field="successes",
        )
    return k, n


def one_sided_lower(successes: object, trials: object, alpha: float | np.ndarray) -> np.ndarray:
    """Exact lower confidence bound ``L`` with ``P(L > p) <= alpha``: the ``alpha`` quantile
    of ``Beta(k, n - k + 1)``; 0 when ``k = 0``; NaN when ``n = 0``."""
    k, n = _counts(successes, trials)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), k.shape)
    out = np.full(k.shape, np.nan)
    has = n > 0
    out[has & (k == 0)] = 0.0
    pos = has & (k > 0)
    out[pos] = betaincinv(k[pos], n[pos] - k[pos] + 1.0, alpha[pos])
    return out


def one_sided_upper(successes: object, trials: object, alpha: float | np.ndarray) -> np.ndarray:
    """Exact upper confidence bound ``U`` with ``P(U < p) <= alpha``: the ``1 - alpha``
    quantile of ``Beta(k + 1, n - k)``; 1 when ``k = n``; NaN when ``n = 0``."""
    k, n = _counts(successes, trials)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), k.shape)
    out = np.full(k.shape, np.nan)
    has = n > 0
    out[has & (k == n)] = 1.0
    part = has & (k < n)
    out[part] = betaincinv(k[part] + 1.0, n[part] - k[part], 1.0 - alpha[part])
    return out


def clopper_pearson(successes: object, trials: object, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact Clopper-Pearson interval ``(low, high)`` of ``successes / trials``.

    Each side is a one-sided exact bound at ``(1 - confidence) / 2``; NaN where
    ``trials == 0``.  Same values as ``scipy.stats.binomtest(k, n).proportion_ci(
    confidence_level=confidence, method="exact")``.
    """
    alpha = (1.0 - check_confidence(confidence)) / 2.0
    return one_sided_lower(successes, trials, alpha), one_sided_upper(successes, trials, alpha)


def wilson(successes: object, trials: object, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval ``(low, high)`` (without continuity correction).

    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``p = k/n`` and
    ``z`` the ``1 - (1 - confidence)/2`` normal quantile; NaN where ``trials == 0``.  Same
    values as ``binomtest(k, n).proportion_ci(method="wilson")``.
    """
    z = float(ndtri(1.0 - (1.0 - check_confidence(confidence)) / 2.0))
    k, n = _counts(successes, trials)
    low = np.full(k.shape, np.nan)
    high = np.full(k.shape, np.nan)
    has = n > 0
    kk, nn = k[has], n[has]
    p = kk / nn
    denom = 1.0 + z * z / nn
    centre = p + z * z / (2.0 * nn)
    spread = z * np.sqrt(p * (1.0 - p) / nn + z * z / (4.0 * nn * nn))
    low[has] = np.clip((centre - spread) / denom, 0.0, 1.0)
    high[has] = np.clip((centre + spread) / denom, 0.0, 1.0)
    return low, high


def proportion_interval(
    successes: object, trials: object, confidence: float = 0.95, method: str = "clopper-pearson"
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clopper_pearson` or :func:`wilson`, by name."""
    if method == "clopper-pearson":
        return clopper_pearson(successes, trials, confidence)
    if method == "wilson":
        return wilson(successes, trials, confidence)
    raise InputError(f"expected one of {', '.join(INTERVAL_METHODS)}, got {method!r}", field="interval")


def percentile_interval(replicates: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates: the ``(1 -+ confidence)/2`` quantiles
    (numpy's default linear interpolation).  NaN replicates (an undefined metric in a
    replicate) are left out; all NaN gives (NaN, NaN)."""
    alpha = 1.0 - check_confidence(confidence)
    values = np.asarray(replicates, dtype=np.float64)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(values, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def minimum_bound(
    successes: object,
    trials: object,
    confidence: float = 0.95,
    *,
    n_smallest: int = 1,
) -> tuple[float, float]:
    """Interval for ``theta = min over n-subsets S of sum_S p_i t_i / sum_S t_i`` of the
    unknown proportions ``p_i`` of items with ``trials`` ``t_i`` (``n_smallest = 1``: the
    smallest proportion, e.g. the worst-class accuracy; ``n``: the worst-n pooled recall;
    items are classes or pairs of classes), from their ``successes`` ``k_i``.

    With ``a = 1 - confidence`` and ``m`` items with ``t_i > 0``:

    * **low**: the one-sided exact lower bound at level ``a/2`` of the pooled proportion,
      ``L(K, T)``, taken at the smallest possible pooled count ``K = sum of the n smallest
      k_i`` and the largest possible pooled size ``T = sum of the n largest t_i`` (``L``
      increases in ``K`` and decreases in ``T``, so this is at most ``L`` of the true worst
      set ``S*``).  ``L`` of ``S*`` exceeds ``theta`` with probability at most ``a/2``: for
      ``n = 1`` that is the Clopper-Pearson guarantee; for a pooled count of independent
      Bernoulli trials with unequal ``p_i`` by Hoeffding's (1956) comparison of the
      Poisson-binomial with the binomial tail.
    * **high**: ``min over S of sum_S u_i t_i / sum_S t_i`` with ``u_i`` the one-sided exact
      upper bounds at level ``a / (2 m)`` (Bonferroni over the items): with probability at
      least ``1 - a/2`` every ``u_i >= p_i``, and then the minimum over ``S`` of the pooled
      upper bounds is at least ``theta``.

    So the interval covers ``theta`` with probability at least ``confidence``, whatever the
    number of items and however close their proportions are; the price is a wide upper side
    when there are many items.  Items with ``t_i = 0`` are ignored.
    """
    conf = check_confidence(confidence)
    k, n = _counts(successes, trials)
    k, n = k.ravel(), n.ravel()
    keep = n > 0
    k, n = k[keep], n[keep]
    m = k.shape[0]
    if isinstance(n_smallest, bool) or not isinstance(n_smallest, (int, np.integer)) or not 1 <= n_smallest <= m:
        raise InputError(f"expected an integer 1 <= n <= {m} (items with trials), got {n_smallest!r}", field="n")
    alpha = 1.0 - conf
    pooled_k = np.sort(k)[:n_smallest].sum()
    pooled_n = np.sort(n)[::-1][:n_smallest].sum()
    low = float(one_sided_lower(pooled_k, pooled_n, alpha / 2.0))
    # Many items share a (k, t) pair (pairs of classes: ~C^2/2 items, few distinct counts).
    kn, inverse = np.unique(np.stack([k, n]), axis=1, return_inverse=True)
    upper = one_sided_upper(kn[0], kn[1], alpha / (2.0 * m))[inverse.ravel()]
    high = float(_min_pooled(upper * n, n, n_smallest))
    return low, high


def _min_pooled(weighted: np.ndarray, sizes: np.ndarray, n: int) -> float:
    """``min over n-subsets S of sum_S weighted / sum_S sizes`` (Dinkelbach on floats)."""
    if np.all(sizes == sizes[0]):
        return float(np.sort(weighted)[:n].sum() / (n * sizes[0]))
    pos = np.argsort(weighted / sizes, kind="stable")[:n]
    ratio = weighted[pos].sum() / sizes[pos].sum()
    for _ in range(sizes.shape[0] + 2):  # strictly decreasing ratio; finitely many subsets
        new = np.argsort(weighted - ratio * sizes, kind="stable")[:n]
        new_ratio = weighted[new].sum() / sizes[new].sum()
        if not new_ratio < ratio:
            break
        ratio = new_ratio
    return float(ratio)
