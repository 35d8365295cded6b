"""Benjamini-Hochberg and Holm adjustments.

References: statsmodels' ``multipletests`` (``fdr_bh``, ``holm``) and a hand-worked example.
"""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from classwise.errors import InputError
from classwise.metrics.multiple_testing import adjust_p_values, benjamini_hochberg, holm, reject

STATSMODELS = {"bh": "fdr_bh", "holm": "holm"}


def _p_values(rng: np.random.Generator, m: int) -> np.ndarray:
    """A mix of signals (small), nulls (uniform), exact ties and the values 0 and 1."""
    p = np.concatenate([rng.uniform(0, 1e-3, m // 5), rng.uniform(0, 1, m - m // 5)])
    p[:6] = [0.0, 1.0, 0.02, 0.02, 0.02, 1.0]
    return rng.permutation(p)


@pytest.mark.parametrize("adjustment", ["bh", "holm"])
@pytest.mark.parametrize("m", [1, 2, 7, 300])
def test_adjusted_p_values_and_decisions_match_statsmodels(adjustment, m):
    rng = np.random.default_rng(m)
    p = _p_values(rng, max(m, 6))[:m]
    for q in (0.01, 0.05, 0.2):
        expected_reject, expected, _, _ = multipletests(p, alpha=q, method=STATSMODELS[adjustment])
        np.testing.assert_allclose(adjust_p_values(p, adjustment), expected, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(reject(p, q, adjustment), expected_reject)


@pytest.mark.parametrize("adjustment", ["bh", "holm"])
def test_nan_is_no_test_and_stays_out_of_the_family_whatever_the_shape(adjustment):
    rng = np.random.default_rng(3)
    p = _p_values(rng, 60).reshape(6, 10)
    p[1, 3] = p[4, 0] = p[5, 9] = np.nan
    tested = ~np.isnan(p)
    adjusted = adjust_p_values(p, adjustment)
    assert adjusted.shape == p.shape
    assert np.isnan(adjusted[~tested]).all()
    _, expected, _, _ = multipletests(p[tested], method=STATSMODELS[adjustment])  # m = 57, not 60
    np.testing.assert_allclose(adjusted[tested], expected, rtol=1e-12, atol=0)
    assert not reject(p, 0.999, adjustment)[~tested].any()
    assert np.isnan(adjust_p_values(np.full(4, np.nan), adjustment)).all()


def test_hand_worked_example():
    # p = (0.01, 0.04, 0.03, 0.005), m = 4; sorted: 0.005, 0.01, 0.03, 0.04.
    # BH: p_(i) m / i = 0.02, 0.02, 0.04, 0.04; running minimum from the top: the same.
    #     In input order: 0.02, 0.04, 0.04, 0.02 -> every test is significant at q = 0.05.
    # Holm: p_(i) (m - i + 1) = 0.02, 0.03, 0.06, 0.04; running maximum: 0.02, 0.03, 0.06, 0.06.
    #     In input order: 0.03, 0.06, 0.06, 0.02 -> only 0.01 and 0.005 at 0.05.
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02], rtol=1e-15)
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02], rtol=1e-15)
    assert reject(p, 0.05, "bh").tolist() == [True, True, True, True]
    assert reject(p, 0.05, "holm").tolist() == [True, False, False, True]


def test_bad_input_names_its_field():
    with pytest.raises(InputError, match="p_value"):
        benjamini_hochberg([0.1, 1.5])
    with pytest.raises(InputError, match="adjustment"):
        adjust_p_values([0.1], "bonferroni")
    with pytest.raises(InputError, match="'q'"):
        reject([0.1], 1.0)
