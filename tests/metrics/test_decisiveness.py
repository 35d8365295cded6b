"""Probabilities, generalized means and Nelson's reported / measured metrics."""

from __future__ import annotations

import json
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import special, stats

from classwise.errors import InputError
from classwise.metrics import decisiveness as nd
from classwise.metrics.decisiveness import (
    MeasuredCalibration,
    NelsonMetrics,
    calibration_slope,
    gamma_sweep,
    generalized_mean,
    generalized_mean_log,
    measured_metrics,
    reported_metrics,
)
from classwise.metrics.probabilities import Probabilities

RHOS = (1.0, 0.5, 2.0, -2.0 / 3.0, -1.0, -3.0)


def _calibrated(seed: int, n: int = 20000, c: int = 10, scale: float = 2.0):
    """Logits and labels drawn from the model's own softmax (a perfectly calibrated model)."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, c)) * scale
    p = special.softmax(logits, axis=1)
    labels = (p.cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1).clip(max=c - 1)
    return logits, labels


def _all_probs(probabilities: Probabilities) -> np.ndarray:
    return np.concatenate([p for _, p in probabilities.iter_chunks()])


# ============================================================================ Probabilities
class TestProbabilities:
    def test_logits_match_scipy_softmax(self):
        rng = np.random.default_rng(0)
        x = (rng.standard_normal((37, 6)) * 5).astype(np.float32)
        y = rng.integers(0, 6, 37)
        pr = Probabilities.from_scores(x, "logits")
        assert (pr.n_samples, pr.n_classes) == (37, 6)
        reference = special.log_softmax(x.astype(np.float64), axis=1)
        np.testing.assert_allclose(pr.correct_class_log_prob(y), reference[np.arange(37), y], rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(_all_probs(pr), np.exp(reference), rtol=1e-13, atol=1e-16)
        assert pr.correct_class_log_prob(y).dtype == np.float64

    def test_extreme_logits_do_not_overflow(self):
        x = np.array([[1000.0, 0.0, -1000.0], [-5000.0, -5000.0, -5001.0]])
        pr = Probabilities.from_scores(x, "logits")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lp = pr.correct_class_log_prob(np.array([2, 0]))
            p = _all_probs(pr)
        assert lp[0] == pytest.approx(-2000.0, rel=1e-12)  # exact log-softmax, far below exp range
        assert lp[1] == pytest.approx(-np.log(2 + np.exp(-1.0)), rel=1e-12)
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
        assert p[0, 0] == 1.0 and p[0, 2] == 0.0

    def test_chunks_are_consecutive_fresh_float64_blocks(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((20, 4)).astype(np.float32)
        pr = Probabilities.from_scores(x, "logits")
        chunks = list(pr.iter_chunks(chunk_rows=7))
        assert [(s.start, s.stop) for s, _ in chunks] == [(0, 7), (7, 14), (14, 20)]
        assert all(p.dtype == np.float64 and p.shape == (s.stop - s.start, 4) for s, p in chunks)
        chunks[0][1][:] = -1.0  # modifying a yielded block must not touch the source
        np.testing.assert_array_equal(np.concatenate([p for _, p in pr.iter_chunks(7)]), _all_probs(pr))

    def test_correct_class_prob_is_bitwise_the_chunk_entry(self):
        # measured_metrics picks edges from correct_class_prob and counts from iter_chunks;
        # the two must agree to the last bit.
        rng = np.random.default_rng(2)
        x = (rng.standard_normal((3001, 13)) * 7).astype(np.float32)
        y = rng.integers(0, 13, 3001)
        pr = Probabilities.from_scores(x, "logits")
        for rows in (1, 64, 4096):
            gathered = np.concatenate([p[np.arange(p.shape[0]), y[s]] for s, p in pr.iter_chunks(rows)])
            np.testing.assert_array_equal(pr.correct_class_prob(y), gathered)

    def test_probs_kind(self):
        p = np.array([[0.7, 0.3, 0.0], [0.2, 0.2, 0.6]], dtype=np.float32)
        pr = Probabilities.from_scores(p, "probs")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lp = pr.correct_class_log_prob(np.array([2, 1]))
        assert lp[0] == -np.inf
        assert lp[1] == pytest.approx(np.log(float(np.float32(0.2))), rel=1e-15)
        np.testing.assert_array_equal(_all_probs(pr), p.astype(np.float64))

    def test_predictions_are_argmax(self):
        rng = np.random.default_rng(3)
        x = rng.standard_normal((50, 5))
        np.testing.assert_array_equal(Probabilities.from_scores(x, "logits").predictions(), x.argmax(axis=1))

    @pytest.mark.parametrize(
        "scores, kind",
        [
            (np.array([[0.0, np.nan]]), "logits"),
            (np.array([[0.0, np.inf]]), "logits"),
            (np.array([[-np.inf, -np.inf]]), "logits"),
            (np.array([0.1, 0.9]), "logits"),
            (np.array([[1, 2]]), "logits"),
            (np.zeros((0, 3)), "logits"),
            (np.array([[0.5, 0.6]]), "probs"),
            (np.array([[1.2, -0.2]]), "probs"),
            (np.array([[0.5, np.nan]]), "probs"),
            (np.array([[0.5, 0.5]]), "softmax"),
        ],
    )
    def test_bad_scores_raise(self, scores, kind):
        with pytest.raises(InputError):
            Probabilities.from_scores(scores, kind)

    @pytest.mark.parametrize("labels", [np.array([0, 3]), np.array([0, -1]), np.array([0.0, 1.0]), np.array([0])])
    def test_bad_labels_raise(self, labels):
        pr = Probabilities.from_scores(np.zeros((2, 3)), "logits")
        with pytest.raises(InputError):
            pr.correct_class_log_prob(labels)

    def test_measured_never_materialises_the_float64_matrix(self):
        rng = np.random.default_rng(4)
        n, c = 10000, 400
        x = rng.standard_normal((n, c), dtype=np.float32)
        y = rng.integers(0, c, n)
        tracemalloc.start()
        try:
            pr = Probabilities.from_scores(x, "logits")
            measured_metrics(pr, y)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 0.25 * n * c * 8  # the full float64 matrix would be 32 MB


# ============================================================================ generalized mean
class TestGeneralizedMean:
    def test_against_scipy_pmean_and_gmean(self):
        rng = np.random.default_rng(5)
        x = rng.uniform(0.01, 1.0, 500)
        w = rng.uniform(0.0, 3.0, 500)
        for rho in RHOS:
            assert generalized_mean(x, rho) == pytest.approx(stats.pmean(x, rho), rel=1e-12)
            assert generalized_mean(x, rho, weights=w) == pytest.approx(stats.pmean(x, rho, weights=w), rel=1e-12)
        assert generalized_mean(x, 0.0) == pytest.approx(stats.gmean(x), rel=1e-12)
        assert generalized_mean(x, 0.0, weights=w) == pytest.approx(stats.gmean(x, weights=w), rel=1e-12)

    def test_against_textbook_formula(self):
        rng = np.random.default_rng(6)
        x = rng.uniform(0.001, 1.0, 40).tolist()
        for rho in RHOS:
            textbook = (sum(v**rho for v in x) / len(x)) ** (1.0 / rho)
            assert generalized_mean(np.array(x), rho) == pytest.approx(textbook, rel=1e-12)
        product = 1.0
        for v in x:
            product *= v
        assert generalized_mean(np.array(x), 0.0) == pytest.approx(product ** (1 / len(x)), rel=1e-12)

    def test_integer_weights_equal_repetition(self):
        x = np.array([0.9, 0.2, 0.05, 0.6])
        w = np.array([3, 1, 0, 2])
        for rho in (1.0, 0.0, -2.0 / 3.0):
            assert generalized_mean(x, rho, weights=w) == pytest.approx(generalized_mean(np.repeat(x, w), rho), rel=1e-13)

    def test_hand_worked_example(self):
        p = np.array([0.9, 0.5, 0.1])
        assert round(generalized_mean(p, 1.0), 6) == 0.5
        assert round(generalized_mean(p, 0.0), 6) == 0.355689
        assert round(generalized_mean(p, -2.0 / 3.0), 6) == 0.263355
        m = reported_metrics(np.log(p))  # all values above the default gamma = 0.005
        assert (round(m.decisiveness, 6), round(m.geometric_accuracy, 6), round(m.robustness, 6)) == (
            0.5,
            0.355689,
            0.263355,
        )

    def test_gamma_clips_below(self):
        x = np.array([0.0, 1e-4, 0.003, 0.2, 0.9])
        for rho in (1.0, 0.0, -2.0 / 3.0):
            expected = stats.pmean(np.maximum(x, 0.01), rho) if rho != 0 else stats.gmean(np.maximum(x, 0.01))
            assert generalized_mean(x, rho, gamma=0.01) == pytest.approx(expected, rel=1e-12)
        assert generalized_mean(np.array([0.001, 0.5]), 1.0, gamma=0.01) == pytest.approx(0.255, rel=1e-12)
        # values above gamma are unchanged
        assert generalized_mean(np.array([0.3, 0.5]), 0.0, gamma=0.2) == pytest.approx(np.sqrt(0.15), rel=1e-12)

    def test_gamma_zero_with_a_zero_probability(self):
        x = np.array([0.0, 0.5, 0.9])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert generalized_mean(x, 0.0) == 0.0
            assert generalized_mean(x, -2.0 / 3.0) == 0.0
            assert generalized_mean(x, -1.0) == 0.0
            d = generalized_mean(x, 1.0)
            assert np.isfinite(d) and d == pytest.approx(1.4 / 3, rel=1e-12)
            assert generalized_mean_log(np.array([-np.inf, -np.inf]), 1.0) == 0.0

    def test_log_space_needs_no_representable_probabilities(self):
        # exp(-1000) underflows to 0, so a linear-space geometric mean would give 0.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert generalized_mean_log(np.array([-1000.0, 0.0]), 0.0) == pytest.approx(np.exp(-500.0), rel=1e-12)
            assert generalized_mean_log(np.array([-1000.0, 0.0]), 1.0) == pytest.approx(0.5, rel=1e-12)
            assert generalized_mean_log(np.full(5000, -700.0), -2.0 / 3.0) == pytest.approx(np.exp(-700.0), rel=1e-10)
        tiny = np.full(2000, 1e-200)
        assert generalized_mean(tiny, 0.0) == pytest.approx(1e-200, rel=1e-10)

    def test_log_and_linear_forms_agree(self):
        rng = np.random.default_rng(7)
        x = rng.uniform(0.0, 1.0, 300)
        for rho in RHOS + (0.0,):
            assert generalized_mean_log(np.log(x), rho, gamma=0.02) == pytest.approx(
                generalized_mean(x, rho, gamma=0.02), rel=1e-13
            )

    @pytest.mark.parametrize(
        "call",
        [
            lambda: generalized_mean(np.array([]), 1.0),
            lambda: generalized_mean(np.array([0.5, np.nan]), 1.0),
            lambda: generalized_mean(np.array([0.5, -0.1]), 1.0),
            lambda: generalized_mean(np.array([0.5]), np.inf),
            lambda: generalized_mean(np.array([0.5, 0.2]), 1.0, weights=np.array([1.0])),
            lambda: generalized_mean(np.array([0.5, 0.2]), 1.0, weights=np.array([0.0, 0.0])),
            lambda: generalized_mean(np.array([0.5, 0.2]), 1.0, weights=np.array([1.0, -1.0])),
            lambda: generalized_mean(np.array([0.5, 0.2]), 1.0, gamma=-0.1),
            lambda: generalized_mean_log(np.array([np.inf]), 1.0),
        ],
    )
    def test_bad_input_raises(self, call):
        with pytest.raises(InputError):
            call()


# ============================================================================ metric families
@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(0.0, 1.0)),
    st.sampled_from([0.0, 0.001, 0.005, 0.1]),
)
def test_reported_ordering(p, gamma):
    with np.errstate(divide="ignore"):
        m = reported_metrics(np.log(p), gamma=gamma)
    tol = 1e-12
    assert m.robustness <= m.geometric_accuracy * (1 + tol) + 1e-300
    assert m.geometric_accuracy <= m.decisiveness * (1 + tol) + 1e-300


@st.composite
def _logits_and_labels(draw):
    n = draw(st.integers(1, 25))
    c = draw(st.integers(2, 5))
    # quarter-integer logits: plenty of exact ties, no denormal pathologies
    x = draw(hnp.arrays(np.float64, (n, c), elements=st.integers(-40, 40).map(lambda v: v / 4)))
    y = draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, c - 1)))
    return x, y


@settings(max_examples=60, deadline=None)
@given(_logits_and_labels(), st.sampled_from([0.0, 0.005, 0.1]), st.integers(1, 6))
def test_measured_from_logits_equals_measured_from_equivalent_probs(data, gamma, bins):
    x, y = data
    from_logits = Probabilities.from_scores(x, "logits")
    from_probs = Probabilities.from_scores(_all_probs(from_logits), "probs")
    a = measured_metrics(from_logits, y, gamma=gamma, n_bins=bins)
    b = measured_metrics(from_probs, y, gamma=gamma, n_bins=bins)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.n_correct, b.n_correct)
    np.testing.assert_array_equal(a.n_incorrect, b.n_incorrect)
    assert a.metrics == b.metrics
    # ordering of the measured family, and the bookkeeping
    m = a.metrics
    assert m.robustness <= m.geometric_accuracy * (1 + 1e-12)
    assert m.geometric_accuracy <= m.decisiveness * (1 + 1e-12)
    assert a.n_correct.sum() == x.shape[0]
    assert a.n_correct.sum() + a.n_incorrect.sum() == x.size
    assert 1 <= a.n_bins <= bins


# ============================================================================ measured metrics
def _brute_force_counts(p: np.ndarray, y: np.ndarray, edges: np.ndarray):
    """Nc, Ni by an explicit loop over all N x C probabilities and the bins' intervals."""
    k = edges.size - 1
    nc = np.zeros(k, dtype=np.int64)
    ni = np.zeros(k, dtype=np.int64)
    for i in range(p.shape[0]):
        for c in range(p.shape[1]):
            v = p[i, c]
            j = k - 1  # the last bin is closed and takes everything from its left edge up
            for b in range(k - 1):
                if edges[b] <= v < edges[b + 1]:
                    j = b
                    break
            if c == y[i]:
                nc[j] += 1
            else:
                ni[j] += 1
    return nc, ni


class TestMeasured:
    def test_brute_force_counts_and_weighted_means(self):
        rng = np.random.default_rng(8)
        n, c = 60, 4
        p = rng.dirichlet(np.full(c, 0.7), size=n)
        y = rng.integers(0, c, n)
        mc = measured_metrics(Probabilities.from_scores(p, "probs"), y, gamma=0.005, n_bins=5)
        nc, ni = _brute_force_counts(p, y, mc.edges)
        np.testing.assert_array_equal(mc.n_correct, nc)
        np.testing.assert_array_equal(mc.n_incorrect, ni)
        f = nc / (nc + ni)
        np.testing.assert_allclose(mc.fraction_correct, f, rtol=1e-15)
        fc = np.maximum(f, 0.005)
        assert mc.metrics.decisiveness == pytest.approx(np.sum(nc * fc) / n, rel=1e-12)
        assert mc.metrics.geometric_accuracy == pytest.approx(np.exp(np.sum(nc * np.log(fc)) / n), rel=1e-12)
        assert mc.metrics.robustness == pytest.approx((np.sum(nc * fc ** (-2 / 3)) / n) ** (-1.5), rel=1e-12)
        correct = p[np.arange(n), y]
        for j in range(mc.n_bins):  # mean reported probability per bin
            inside = (correct >= mc.edges[j]) & ((correct < mc.edges[j + 1]) | (j == mc.n_bins - 1))
            assert mc.mean_reported[j] == pytest.approx(correct[inside].mean(), rel=1e-12)

    def test_equal_populations_without_singularities(self):
        rng = np.random.default_rng(9)
        x = rng.standard_normal((1003, 7))
        y = rng.integers(0, 7, 1003)
        for bins in (1, 3, 10, 17):
            mc = measured_metrics(Probabilities.from_scores(x, "logits"), y, gamma=1e-4, n_bins=bins)
            assert mc.n_bins == bins
            assert not mc.singular.any()
            assert mc.n_correct.sum() == 1003
            assert mc.n_correct.max() - mc.n_correct.min() <= 1
            assert np.all(np.diff(mc.edges) > 0)

    def test_singular_top_bin_weighted_by_population(self):
        rng = np.random.default_rng(10)
        n, c, n_one = 100, 4, 40
        p = np.zeros((n, c))
        p[:n_one, 0] = 1.0  # 40 samples: the correct class has probability exactly 1
        correct = rng.uniform(0.1, 0.9, n - n_one)
        p[n_one:, 0] = correct
        p[n_one:, 1:] = (1 - correct)[:, None] * rng.dirichlet(np.ones(c - 1), size=n - n_one)
        y = np.zeros(n, dtype=np.int64)
        mc = measured_metrics(Probabilities.from_scores(p, "probs"), y, gamma=0.005, n_bins=10)
        assert mc.singular.tolist() == [False] * 9 + [True]
        assert mc.edges[-2] == 1 - 0.005 and mc.edges[-1] == 1.0  # the "above 0.995" bin
        assert mc.n_correct[-1] == n_one  # 40 > N/B = 10: overfull, kept as one bin
        rest = mc.n_correct[:-1]
        assert rest.sum() == n - n_one and rest.max() - rest.min() <= 1  # 60 values in 9 bins
        assert mc.fraction_correct[-1] == 1.0
        # weighted by population: the singular bin carries 40 % of the decisiveness
        nc, ni = _brute_force_counts(p, y, mc.edges)
        np.testing.assert_array_equal(mc.n_correct, nc)
        np.testing.assert_array_equal(mc.n_incorrect, ni)
        f = np.maximum(nc / (nc + ni), 0.005)
        assert mc.metrics.decisiveness == pytest.approx(np.dot(nc, f) / n, rel=1e-12)
        unweighted = f.mean()
        assert abs(mc.metrics.decisiveness - unweighted) > 0.01  # so the weighting is visible

    def test_singular_bottom_bin_and_gamma_zero_windows(self):
        n = 50
        correct = np.concatenate([np.zeros(20), np.linspace(0.2, 0.8, 20), np.ones(10)])
        p = np.stack([correct, 1 - correct], axis=1)
        y = np.zeros(n, dtype=np.int64)
        pr = Probabilities.from_scores(p, "probs")
        mc = measured_metrics(pr, y, gamma=0.01, n_bins=4)  # N/B = 12.5: only the bottom is overfull
        assert mc.singular[0] and not mc.singular[1:].any()
        assert mc.edges[1] == 0.01 and mc.n_correct[0] == 20
        assert mc.n_correct[1:].max() - mc.n_correct[1:].min() <= 1
        exactly = np.concatenate([np.zeros(10), np.linspace(0.2, 0.8, 40)])  # 10 = N/B zeros
        p_exact = np.stack([exactly, 1 - exactly], axis=1)
        mc_exact = measured_metrics(Probabilities.from_scores(p_exact, "probs"), y, gamma=0.01, n_bins=5)
        assert not mc_exact.singular.any() and mc_exact.n_bins == 5  # "more than N/B" is strict
        mc0 = measured_metrics(pr, y, gamma=0.0, n_bins=5)  # N/B = 10: windows are {0} and {1}
        assert mc0.singular[0] and not mc0.singular[-1]  # 10 ones are not more than N/B
        assert mc0.n_correct[0] == 20
        mc1 = measured_metrics(pr, y, gamma=0.0, n_bins=6)  # N/B = 8.3: now {1} is overfull too
        assert mc1.singular[0] and mc1.singular[-1]
        assert mc1.edges[-2] == 1.0 and mc1.n_correct[-1] == 10
        nc, ni = _brute_force_counts(p, y, mc1.edges)
        np.testing.assert_array_equal(mc1.n_correct, nc)
        np.testing.assert_array_equal(mc1.n_incorrect, ni)
        # {0}: 20 correct zeros + 10 incorrect zeros; {1}: 10 correct ones + 20 incorrect ones
        assert mc1.fraction_correct[0] == pytest.approx(20 / 30)
        assert mc1.fraction_correct[-1] == pytest.approx(10 / 30)

    def test_ties_are_never_split(self):
        # sorted correct probabilities 0.2 x3, 0.5 x2, 0.7: cuts at 2 and 4 fall inside ties
        correct = np.array([0.5, 0.2, 0.7, 0.2, 0.5, 0.2])
        p = np.stack([correct, 1 - correct], axis=1)
        y = np.zeros(6, dtype=np.int64)
        mc = measured_metrics(Probabilities.from_scores(p, "probs"), y, gamma=0.01, n_bins=3)
        np.testing.assert_array_equal(mc.edges, [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(mc.n_correct, [3, 3])
        # incorrect probabilities 1 - p: 0.8 x3 and 0.5 x2 go up, 0.3 down
        np.testing.assert_array_equal(mc.n_incorrect, [1, 5])

    def test_ties_on_random_data_share_a_bin(self):
        rng = np.random.default_rng(11)
        x = rng.integers(-3, 4, size=(400, 3)).astype(np.float64)  # few distinct probabilities
        y = rng.integers(0, 3, 400)
        pr = Probabilities.from_scores(x, "logits")
        mc = measured_metrics(pr, y, gamma=0.001, n_bins=8)
        correct = pr.correct_class_prob(y)
        which = np.searchsorted(mc.edges[1:-1], correct, side="right")
        for v in np.unique(correct):
            assert np.unique(which[correct == v]).size == 1
        np.testing.assert_array_equal(np.bincount(which, minlength=mc.n_bins), mc.n_correct)

    def test_symmetric_two_class_hand_case(self):
        # correct probabilities 1/16, 3/16, ..., 15/16 (exact in binary), two classes: the
        # incorrect probabilities are the same set, so every bin of 2 holds 2 of each, f = 1/2.
        correct = np.arange(1, 16, 2) / 16
        p = np.stack([correct, 1 - correct], axis=1)
        mc = measured_metrics(Probabilities.from_scores(p, "probs"), np.zeros(8, dtype=np.int64), gamma=0.01, n_bins=4)
        np.testing.assert_array_equal(mc.edges, [0.0, 5 / 16, 9 / 16, 13 / 16, 1.0])
        np.testing.assert_array_equal(mc.n_correct, [2] * 4)
        np.testing.assert_array_equal(mc.n_incorrect, [2] * 4)
        np.testing.assert_array_equal(mc.mean_reported, [2 / 16, 6 / 16, 10 / 16, 14 / 16])
        for value in mc.metrics.to_json().values():
            assert value == pytest.approx(0.5, rel=1e-14)

    def test_perfectly_calibrated_model(self):
        # Labels sampled from the model's own probabilities.  With N = 20000 and 100 bins
        # (200 samples each) the measured metrics are within 0.01 of the reported ones and the
        # slope within 0.05 of 1.  (With the default 10 bins the wide lowest bin pulls the
        # measured robustness down; decisiveness stays within 0.01.)
        for seed in (0, 1):
            x, y = _calibrated(seed)
            pr = Probabilities.from_scores(x, "logits")
            reported = reported_metrics(pr.correct_class_log_prob(y))
            measured = measured_metrics(pr, y, n_bins=100).metrics
            for name in ("decisiveness", "geometric_accuracy", "robustness"):
                assert getattr(measured, name) == pytest.approx(getattr(reported, name), abs=0.01), name
            assert calibration_slope(reported, measured) == pytest.approx(1.0, abs=0.05)
            coarse = measured_metrics(pr, y, n_bins=10).metrics
            assert coarse.decisiveness == pytest.approx(reported.decisiveness, abs=0.01)

    def test_over_and_underconfident_models(self):
        x, y = _calibrated(2)
        slopes = {}
        for temperature in (1.5, 0.6):  # reported = softmax(T * logits), labels from T = 1
            pr = Probabilities.from_scores(x * temperature, "logits")
            reported = reported_metrics(pr.correct_class_log_prob(y))
            slopes[temperature] = calibration_slope(reported, measured_metrics(pr, y, n_bins=100).metrics)
        assert slopes[1.5] < 0.9  # overconfident
        assert slopes[0.6] > 1.1  # underconfident

    def test_to_json_is_strict_json(self):
        correct = np.concatenate([np.zeros(5), np.ones(5)])
        p = np.stack([correct, 1 - correct], axis=1)
        mc = measured_metrics(Probabilities.from_scores(p, "probs"), np.zeros(10, dtype=np.int64), n_bins=3)
        payload = json.loads(json.dumps(mc.to_json(), allow_nan=False))
        assert payload["n_correct"] == mc.n_correct.tolist()
        assert isinstance(mc, MeasuredCalibration)

    @pytest.mark.parametrize("kwargs", [{"gamma": 0.5}, {"gamma": -0.01}, {"n_bins": 0}, {"n_bins": 2.5}])
    def test_bad_arguments_raise(self, kwargs):
        pr = Probabilities.from_scores(np.zeros((4, 3)), "logits")
        with pytest.raises(InputError):
            measured_metrics(pr, np.zeros(4, dtype=np.int64), **kwargs)


# ============================================================================ slope and sweep
def test_calibration_slope():
    reported = NelsonMetrics(decisiveness=0.8, geometric_accuracy=0.6, robustness=0.4)
    measured = NelsonMetrics(decisiveness=0.7, geometric_accuracy=0.6, robustness=0.5)
    assert calibration_slope(reported, measured) == pytest.approx(0.5)
    assert calibration_slope(reported, reported) == pytest.approx(1.0)
    flat = NelsonMetrics(0.3, 0.3, 0.3)
    assert np.isnan(calibration_slope(flat, measured))


def test_gamma_sweep_matches_reported_metrics():
    rng = np.random.default_rng(12)
    lp = np.log(rng.beta(2.0, 0.5, 500))
    lp[:5] = -np.inf  # a few zero probabilities: robustness collapses at gamma = 0
    rows = gamma_sweep(lp)
    assert [r["gamma"] for r in rows] == [0.05, 0.01, 0.005, 0.001, 0.0]
    for row in rows:
        assert set(row) == {"gamma", "robustness", "geometric_accuracy", "decisiveness"}
        m = reported_metrics(lp, gamma=row["gamma"])
        assert (row["robustness"], row["geometric_accuracy"], row["decisiveness"]) == (
            m.robustness,
            m.geometric_accuracy,
            m.decisiveness,
        )
    robustness = [r["robustness"] for r in rows]
    assert all(a > b for a, b in zip(robustness, robustness[1:]))  # smaller gamma, smaller robustness
    assert robustness[-1] == 0.0
    assert rows[-1]["decisiveness"] > 0


def test_module_constants():
    assert (nd.DECISIVENESS_RHO, nd.GEOMETRIC_RHO, nd.ROBUSTNESS_RHO) == (1.0, 0.0, -2.0 / 3.0)
    assert nd.DEFAULT_GAMMA == 0.005
