"""Exact tests and intervals for the change of a proportion.

References: scipy.stats (``binomtest`` on the discordant pairs, ``fisher_exact``,
``boschloo_exact``), statsmodels' ``confint_proportions_2indep(method="newcomb")``, published
intervals (Newcombe, 1998a, Table II; Fagerland, Lydersen and Laake, 2017, chapters 4 and 8)
and hand-worked examples.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import confint_proportions_2indep

from classwise.errors import InputError
from classwise.metrics import proportions


def _tables(rng: np.random.Generator, count: int, largest: int) -> tuple[np.ndarray, ...]:
    n1 = rng.integers(1, largest, count)
    n2 = rng.integers(1, largest, count)
    k1 = rng.binomial(n1, rng.uniform(0, 1, count))
    k2 = rng.binomial(n2, rng.uniform(0, 1, count))
    return k1, n1, k2, n2


# ----------------------------------------------------------------------------- McNemar


def test_mcnemar_is_the_binomial_test_of_the_discordant_pairs():
    b, c = np.meshgrid(np.arange(26), np.arange(26), indexing="ij")
    b, c = b.ravel()[1:], c.ravel()[1:]  # (0, 0): no discordant pair, below
    expected = [stats.binomtest(int(x), int(x + y), 0.5).pvalue for x, y in zip(b, c)]
    np.testing.assert_allclose(proportions.mcnemar_exact(b, c), expected, rtol=1e-12)
    assert proportions.mcnemar_exact(0, 0) == 1.0


def test_mcnemar_hand_worked_example():
    # b = 7 samples right clean only, c = 1 right under the shift only: X ~ Binomial(8, 1/2),
    # P(X <= 1) = (1 + 8) / 256, two-sided p = 18 / 256 = 0.0703125.
    assert proportions.mcnemar_exact(7, 1) == pytest.approx(18 / 256, rel=1e-14)
    assert proportions.mcnemar_exact(1, 7) == pytest.approx(18 / 256, rel=1e-14)
    assert proportions.mcnemar_exact(4, 4) == 1.0


# ----------------------------------------------------------------------------- Fisher, Boschloo


def test_fisher_matches_scipy():
    rng = np.random.default_rng(0)
    k1, n1, k2, n2 = _tables(rng, 400, 80)
    k1[:4], n1[:4], k2[:4], n2[:4] = [0, 5, 3, 0], [5, 5, 3, 9], [0, 7, 0, 9], [7, 7, 4, 9]  # zero margins
    expected = [stats.fisher_exact([[a, n - a], [b, m - b]]).pvalue for a, n, b, m in zip(k1, n1, k2, n2)]
    np.testing.assert_allclose(proportions.fisher_exact(k1, n1, k2, n2), expected, rtol=1e-9)
    # large classes (CIFAR: 1,000 a class), a tiny p-value
    big = (np.array([930, 640, 1000]), np.array([1000, 1000, 1000]), np.array([910, 700, 990]), np.array([1000, 1000, 1000]))
    expected = [stats.fisher_exact([[a, n - a], [b, m - b]]).pvalue for a, n, b, m in zip(*big)]
    np.testing.assert_allclose(proportions.fisher_exact(*big), expected, rtol=1e-9)


def test_fisher_hand_worked_and_published_examples():
    # 3 of 3 against 0 of 3: given 3 successes in 6, P(X1 = x) = C(3, x) C(3, 3 - x) / C(6, 3)
    # = 1, 9, 9, 1 (/ 20); the outcomes no more likely than x = 3 are x = 0 and 3: p = 2 / 20.
    assert proportions.fisher_exact(3, 3, 0, 3) == pytest.approx(0.1, rel=1e-13)
    # Fagerland, Lydersen and Laake (2017), ch. 4 (Ritland et al., 2007: 0 of 16 against 15 of 72)
    assert round(float(proportions.fisher_exact(0, 16, 15, 72)), 5) == 0.06287


def test_boschloo_hand_worked_example():
    # 2 of 2 against 0 of 2. The one-sided statistic of the swapped table (0 of 2 against 2 of 2)
    # is P(X1 <= 0 | 2 successes in 4, 2 drawn) = C(2, 0) C(2, 2) / C(4, 2) = 1/6; every other of
    # the 9 tables has a statistic of 1/2 or more (s = 1: 1/2, 1; s = 2: 1/6, 5/6, 1; s = 3: 1/2,
    # 1; s = 0, 4: 1), so the region is that table alone, of probability (1 - pi)^2 pi^2, at most
    # 1/16 (pi = 1/2). The other side's statistic is 1 (its region is every table: p = 1).
    # Two-sided: 2 min(1/16, 1) = 1/8.
    assert proportions.boschloo_exact(2, 2, 0, 2) == pytest.approx(1 / 8, rel=1e-9)
    assert proportions.boschloo_exact(0, 2, 2, 2) == pytest.approx(1 / 8, rel=1e-9)


def test_untested_tables_are_nan():
    assert np.isnan(proportions.fisher_exact([0, 3], [0, 4], [1, 0], [2, 0])).all()
    assert np.isnan(proportions.boschloo_exact(0, 0, 1, 2))
    low, high = proportions.newcombe_unpaired_interval(0, 0, 1, 2)
    assert np.isnan(low) and np.isnan(high)


def test_boschloo_matches_scipy_and_is_at_most_twice_the_smaller_one_sided_fisher():
    rng = np.random.default_rng(1)
    k1, n1, k2, n2 = _tables(rng, 20, 16)
    k1[:3], n1[:3], k2[:3], n2[:3] = [17, 0, 5], [22, 4, 5], [3, 0, 5], [3, 6, 5]  # a narrow peak near 1; all 0; all 1
    mine = proportions.boschloo_exact(k1, n1, k2, n2)
    expected = [stats.boschloo_exact([[a, b], [n - a, m - b]]).pvalue for a, n, b, m in zip(k1, n1, k2, n2)]
    np.testing.assert_allclose(mine, expected, rtol=1e-9)
    one_sided = [
        min(stats.fisher_exact([[a, n - a], [b, m - b]], alternative=side).pvalue for side in ("less", "greater"))
        for a, n, b, m in zip(k1, n1, k2, n2)
    ]
    assert np.all(mine <= np.minimum(1.0, 2.0 * np.asarray(one_sided)) * (1 + 1e-12))


# ----------------------------------------------------------------------------- intervals


def _wilson(k: int, n: int, confidence: float) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return ci.low, ci.high


def _newcombe_paired_textbook(a: int, b: int, c: int, d: int, confidence: float) -> tuple[float, float]:
    """Newcombe (1998b), method 10, written out for one table from scipy's Wilson limits."""
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = _wilson(a + b, n, confidence)
    l2, u2 = _wilson(a + c, n, confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    excess = a * d - b * c
    if margins == 0:
        phi = 0.0
    elif excess > n / 2:
        phi = (excess - n / 2) / margins**0.5
    elif excess >= 0:
        phi = 0.0
    else:
        phi = excess / margins**0.5
    low = p1 - p2 - ((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2) ** 0.5
    high = p1 - p2 + ((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2) ** 0.5
    return low, high


@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_newcombe_paired_interval_matches_the_textbook_formula(confidence):
    rng = np.random.default_rng(2)
    cells = rng.integers(0, 30, size=(300, 4))
    cells[:5] = [[5, 0, 0, 0], [0, 0, 0, 7], [3, 4, 0, 0], [0, 2, 2, 0], [40, 1, 0, 2]]  # empty margins, phi > 0
    low, high = proportions.newcombe_paired_interval(*cells.T, confidence=confidence)
    expected = np.array([_newcombe_paired_textbook(*map(int, row), confidence) for row in cells])
    np.testing.assert_allclose(low, expected[:, 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(high, expected[:, 1], rtol=1e-10, atol=1e-12)
    estimate = (cells[:, 1] - cells[:, 2]) / cells.sum(axis=1)
    assert np.all((low <= estimate + 1e-15) & (estimate <= high + 1e-15))


def test_newcombe_paired_interval_published_example():
    # Fagerland, Lydersen and Laake (2017), ch. 8, Cavo et al. (2012): 59 both, 6 first only,
    # 16 second only, 80 neither: -0.0621 (95% CI -0.1186 to -0.0046).
    low, high = proportions.newcombe_paired_interval(59, 6, 16, 80)
    assert (round(float(low), 4), round(float(high), 4)) == (-0.1186, -0.0046)


def test_newcombe_unpaired_interval_matches_statsmodels_and_the_published_tables():
    rng = np.random.default_rng(3)
    k1, n1, k2, n2 = _tables(rng, 300, 60)
    low, high = proportions.newcombe_unpaired_interval(k1, n1, k2, n2)
    expected = np.array([confint_proportions_2indep(a, n, b, m, method="newcomb") for a, n, b, m in zip(k1, n1, k2, n2)])
    np.testing.assert_allclose(low, expected[:, 0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(high, expected[:, 1], rtol=1e-12, atol=1e-14)
    # Newcombe (1998a), Table II, method 10: (a) 56/70 - 48/80, (b) 9/10 - 3/10, (e) 0/10 - 0/20,
    # (g) 10/10 - 0/20; Fagerland et al. (2017), ch. 4, Perondi et al. (2004): 7/34 - 1/34.
    published = {
        (56, 70, 48, 80): (0.0524, 0.3339),
        (9, 10, 3, 10): (0.1705, 0.8090),
        (0, 10, 0, 20): (-0.1611, 0.2775),
        (10, 10, 0, 20): (0.6791, 1.0000),
        (7, 34, 1, 34): (0.0189, 0.3404),
    }
    for counts, interval in published.items():
        low, high = proportions.newcombe_unpaired_interval(*counts)
        assert (round(float(low), 4), round(float(high), 4)) == interval, counts


def test_bad_counts_are_refused():
    with pytest.raises(InputError):
        proportions.fisher_exact(5, 4, 1, 2)
    with pytest.raises(InputError):
        proportions.mcnemar_exact(-1, 2)
    with pytest.raises(InputError, match="unpaired_test"):
        proportions.check_unpaired_test("barnard")
