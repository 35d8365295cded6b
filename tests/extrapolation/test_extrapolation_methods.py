"""Extrapolation methods and the paper's simulation (classwise.extrapolation.methods/simulation)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_ndtr, ndtr, ndtri

from classwise.errors import InputError
from classwise.extrapolation.methods import (
    METHODS,
    CleanexTraining,
    FitOptions,
    GaussianBasis,
    basis_centres,
    cleanex_fit,
    cleanex_inputs,
    extrapolate,
    kde_c,
    regression_curve,
    silverman_bandwidth,
)
from classwise.extrapolation.rroc import c_x, expected_accuracy, power_curve
from classwise.extrapolation.simulation import MethodComparison, evaluate_methods, simulate_scores

K_OBSERVED = 40
K_MAX = 400


def gaussian_marginal_case(n: int, n_classes: int, k_max: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A marginal classifier with a known accuracy curve.

    Incorrect-class scores are i.i.d. N(0, 1), so a sample whose correct score is ``s``
    has ``C_x = Phi(s)`` exactly, and the population curve on ``k`` classes is
    ``mean_x Phi(s_x)^(k-1)`` for every ``k`` (observed or not); ``s_x ~ N(2, 1)``.
    """
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n, n_classes))
    labels = rng.integers(0, n_classes, n)
    correct = rng.normal(2.0, 1.0, n)
    scores[np.arange(n), labels] = correct
    ks = np.arange(2, k_max + 1)
    truth = np.exp((ks - 1)[None, :] * log_ndtr(correct)[:, None]).mean(axis=0)
    return scores, labels, truth


@pytest.fixture(scope="module")
def gaussian_case() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`gaussian_marginal_case` with 800 samples, 40 observed classes, k up to 400."""
    return gaussian_marginal_case(n=800, n_classes=K_OBSERVED, k_max=K_MAX)


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


def test_every_method_returns_a_valid_curve(gaussian_case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    scores, labels, _ = gaussian_case
    for method in METHODS:
        curve = extrapolate(scores[:200], labels[:200], 60, method, fit=FitOptions(cleanex=CleanexTraining(max_steps=20)))
        assert curve.shape == (59,)
        assert np.isfinite(curve).all() and (curve >= 0).all() and (curve <= 1).all()
        assert (np.diff(curve) <= 1e-12).all(), method


def test_naive_matches_the_observed_range_but_not_beyond(gaussian_case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    scores, labels, truth = gaussian_case
    curve = extrapolate(scores, labels, K_MAX, "naive")
    observed = slice(0, K_OBSERVED - 1)
    assert rmse(curve[observed], truth[observed]) < 0.05
    # Samples that beat all 39 observed classes get C_x = 1 and stay "correct" for ever.
    assert curve[-1] - truth[-1] > 0.1
    np.testing.assert_allclose(curve[0], c_x(scores, labels).mean())


def test_kde_recovers_the_gaussian_curve(gaussian_case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    scores, labels, truth = gaussian_case
    curve = extrapolate(scores, labels, K_MAX, "kde")
    # The kernel smooths the incorrect-score tail (variance 1 + h^2): a small upward bias.
    assert rmse(curve, truth) < 0.05
    assert rmse(curve, truth) < rmse(extrapolate(scores, labels, K_MAX, "naive"), truth)


def test_kde_c_against_a_direct_computation() -> None:
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(7, 12))
    labels = rng.integers(0, 12, 7)
    got = kde_c(scores, labels)
    for i in range(7):
        wrong = np.delete(scores[i], labels[i])
        sd = wrong.std(ddof=1)
        iqr = np.subtract(*np.percentile(wrong, [75, 25]))
        h = 0.9 * min(sd, iqr / 1.34) * len(wrong) ** -0.2
        assert got[i] == pytest.approx(ndtr((scores[i, labels[i]] - wrong) / h).mean(), rel=1e-12)
    # Degenerate rows (all incorrect scores equal) still get a positive bandwidth.
    assert (silverman_bandwidth(np.zeros((2, 5))) > 0).all()


def test_regression_recovers_the_gaussian_curve(gaussian_case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    scores, labels, truth = gaussian_case
    # C_x = Phi(s_x), s_x ~ N(2, 1): exactly one basis function of width 1.
    assert rmse(regression_curve(scores, labels, K_MAX, fit=FitOptions(bandwidths=(1.0,))), truth) < 0.01
    # With the width chosen from 0.1..1.0 on random halves of the classes the choice
    # varies with the seed (measured RMSE 0.004 to 0.054 over seeds 0-5).
    for seed in (0, 1):
        curve = extrapolate(scores, labels, K_MAX, "regression", seed=seed)
        assert rmse(curve, truth) < 0.06
        # Fitted on the exact observed curve: close to it where it is observed.
        assert rmse(curve[: K_OBSERVED - 1], expected_accuracy(scores, labels)) < 0.005


def test_gaussian_basis_against_quantile_quadrature() -> None:
    sigma = 0.2
    mus = basis_centres(sigma, 50)
    assert np.isinf(mus[-1]) and mus[0] == pytest.approx(-mus[-2])
    ks = np.array([1, 2, 7, 50, 800])
    got = GaussianBasis(mus, sigma)(ks)
    nodes = ndtri((np.arange(20000) + 0.5) / 20000)
    for j in (0, len(mus) // 2, len(mus) - 2):
        reference = np.exp((ks - 1)[:, None] * log_ndtr(mus[j] + sigma * nodes)[None, :]).mean(axis=1)
        np.testing.assert_allclose(got[:, j], reference, atol=2e-5)
    np.testing.assert_allclose(got[:, -1], 1.0)
    np.testing.assert_allclose(got[0], 1.0, atol=1e-12)


def test_cleanex_inputs_are_standardised_and_sorted() -> None:
    scores = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    x = cleanex_inputs(scores, np.array([0, 2]))
    raw = np.array([[3.0, 1.0, 2.0], [4.0, 0.0, 5.0]])
    np.testing.assert_allclose(x, (raw - raw.mean()) / raw.std())


def test_cleanex_is_seeded_and_leaves_the_global_rng_alone(gaussian_case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    import torch

    scores, labels, _ = gaussian_case
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = cleanex_fit(scores[:200], labels[:200], seed=7, fit=FitOptions(cleanex=CleanexTraining(max_steps=30)))
    after = torch.rand(1)
    b = cleanex_fit(scores[:200], labels[:200], seed=7, fit=FitOptions(cleanex=CleanexTraining(max_steps=30)))
    c = cleanex_fit(scores[:200], labels[:200], seed=8, fit=FitOptions(cleanex=CleanexTraining(max_steps=30)))
    assert torch.equal(before, after)
    np.testing.assert_array_equal(a.c, b.c)
    assert not np.array_equal(a.c, c.c)
    with pytest.raises(InputError, match="steps"):
        cleanex_fit(scores, labels, fit=FitOptions(cleanex=CleanexTraining(max_steps=0)))


def test_cleanex_recovers_the_gaussian_curve() -> None:
    # Smaller than ``gaussian_case`` to keep training to a few seconds on a CPU.  Measured
    # on this case: the loss leaves its plateau (~3e-3) after ~800 Adam steps; from
    # ~1,000 steps the extrapolation RMSE is 0.02-0.04 (naive: 0.2).
    scores, labels, truth = gaussian_marginal_case(n=200, n_classes=30, k_max=K_MAX)
    fit = cleanex_fit(
        scores, labels, seed=0, fit=FitOptions(cleanex=CleanexTraining(max_steps=1500, tolerance=0.0, patience=1500))
    )
    assert fit.loss < 1e-4
    curve = power_curve(np.clip(fit.c, 0.0, 1.0), np.arange(2, K_MAX + 1))
    assert rmse(curve, truth) < 0.05
    assert rmse(curve, truth) < rmse(extrapolate(scores, labels, K_MAX, "naive"), truth) / 3


def test_simulation_is_seeded_and_shaped() -> None:
    a, labels = simulate_scores(3, n_classes=20, per_class=4)
    b, _ = simulate_scores(3, n_classes=20, per_class=4)
    assert a.shape == (80, 20) and labels.shape == (80,)
    np.testing.assert_array_equal(a, b)
    assert (a <= 0).all()
    np.testing.assert_array_equal(np.bincount(labels), np.full(20, 4))


def test_evaluate_methods_on_a_small_simulation() -> None:
    scores, labels = simulate_scores(0, n_classes=300)
    evaluation = evaluate_methods(
        scores, labels, 60, 300, MethodComparison(repetitions=2, seed=0, methods=("naive", "kde", "regression"))
    )
    assert evaluation.ks[0] == 2 and evaluation.ks[-1] == 300
    np.testing.assert_allclose(evaluation.true_curve, expected_accuracy(scores, labels))
    assert evaluation.observed.shape == (2, 59)
    summary = evaluation.summary().set_index("method")
    assert list(summary.index) == ["naive", "kde", "regression"]
    assert (summary["repetitions"] == 2).all()
    # Measured on this simulation: regression ~0.02, naive and KDE ~0.1.
    assert summary.loc["regression", "rmse_mean"] < 0.05
    assert summary.loc["regression", "rmse_mean"] < summary.loc["naive", "rmse_mean"]
    assert (evaluation.predicted["naive"][:, -1] > evaluation.true_curve[-1]).all()  # biased upward


def test_evaluate_methods_logs_each_repetition(caplog: pytest.LogCaptureFixture) -> None:
    scores, labels = simulate_scores(1, n_classes=40)
    with caplog.at_level(logging.INFO, logger="classwise.extrapolation.simulation"):
        evaluation = evaluate_methods(scores, labels, 10, 40, MethodComparison(repetitions=3, seed=0, methods=("naive", "kde")))
    lines = [r.getMessage() for r in caplog.records if r.name == "classwise.extrapolation.simulation"]
    assert [line.split(", RMSE")[0] for line in lines] == [f"k1 = 10, repetition {r}/3" for r in (1, 2, 3)]
    for rep, line in enumerate(lines):  # noqa: B007 - read by the query string as @rep
        for method in ("naive", "kde"):
            rmse = evaluation.rmse.query("repetition == @rep and method == @method")["rmse"].item()
            assert f"{method} {rmse:.4f} (" in line


def test_evaluate_methods_rejects_bad_settings() -> None:
    scores, labels = simulate_scores(0, n_classes=10, per_class=2)
    with pytest.raises(InputError, match="k_max"):
        evaluate_methods(scores, labels, 5, 11, MethodComparison(repetitions=1, seed=0))
    with pytest.raises(InputError, match="k1"):
        evaluate_methods(scores, labels, 1, 10, MethodComparison(repetitions=1, seed=0))
    with pytest.raises(InputError, match="methods"):
        MethodComparison(repetitions=1, seed=0, methods=("magic",))
    with pytest.raises(InputError, match="method"):
        extrapolate(scores, labels, 10, "magic")
    with pytest.raises(InputError, match="k_max"):
        extrapolate(scores, labels, 1, "naive")


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: FitOptions(ties="coin"), "ties"),
        (lambda: FitOptions(bandwidths=()), "bandwidths"),
        (lambda: FitOptions(bandwidths=(0.5, 0.0)), "bandwidths"),
        (lambda: FitOptions(cleanex={"max_steps": 10}), "cleanex"),
        (lambda: MethodComparison(repetitions=0, seed=0), "repetitions"),
        (lambda: MethodComparison(repetitions=1, seed=0, methods=()), "methods"),
        (lambda: MethodComparison(repetitions=1, seed=0, methods="naive"), "methods"),
        (lambda: MethodComparison(repetitions=1, seed=0, fit=CleanexTraining()), "fit"),
    ],
)
def test_method_records_refuse_bad_values_when_made(make, field: str) -> None:
    """The fit options and the comparison are checked when made, before any class is drawn."""
    with pytest.raises(InputError) as info:
        make()
    assert info.value.field == field


def test_method_records_hold_their_sequences_as_tuples() -> None:
    assert FitOptions(bandwidths=[0.5, 1.0]).bandwidths == (0.5, 1.0)
    comparison = MethodComparison(repetitions=2, seed=1, methods=["naive", "kde"])
    assert comparison.methods == ("naive", "kde") and comparison.fit == FitOptions()


def test_cleanex_progress_bar_changes_nothing_but_the_stream() -> None:
    import io

    from classwise.extrapolation.methods import cleanex_fit

    rng = np.random.default_rng(2)
    scores, labels = rng.normal(size=(30, 5)), np.arange(30) % 5
    stream = io.StringIO()
    shown = cleanex_fit(scores, labels, seed=3, fit=FitOptions(cleanex=CleanexTraining(max_steps=20), progress=stream))
    silent = cleanex_fit(scores, labels, seed=3, fit=FitOptions(cleanex=CleanexTraining(max_steps=20)))
    np.testing.assert_array_equal(shown.c, silent.c)
    text = stream.getvalue()
    assert "CleaneX fit: 100%" in text and "20/20" in text and f"loss={silent.loss:.2e}" in text  # the final loss


def _long_rmse(values: dict[str, list[float]]) -> pd.DataFrame:
    rows = [
        {"repetition": r, "method": m, "rmse": v, "seconds": 0.0} for r in range(3) for m, vs in values.items() for v in [vs[r]]
    ]
    return pd.DataFrame(rows)


def test_rmse_ratios_to_cleanex_are_paired_by_repetition_and_capped() -> None:
    from classwise.extrapolation.simulation import RATIO_CAP, reference_comparison, rmse_ratios

    rng = np.random.default_rng(4)
    values = {m: rng.uniform(0.01, 0.1, 3).tolist() for m in ("naive", "cleanex", "kde")}
    values["kde"][0] = 20 * values["cleanex"][0]  # two of three beyond the cap: the table's
    values["kde"][1] = 50 * values["cleanex"][1]  # median (uncapped) is too
    values["naive"][2] = values["cleanex"][2]  # a tie: not a CleaneX win
    rmse = _long_rmse(values)
    ratios = rmse_ratios(rmse)
    assert list(ratios) == ["naive", "kde"]
    comparison = reference_comparison(rmse)
    for method in ("naive", "kde"):
        naive_ratios = [values[method][r] / values["cleanex"][r] for r in range(3)]
        np.testing.assert_allclose(ratios[method], [min(v, RATIO_CAP) for v in naive_ratios], rtol=1e-12)
        assert comparison.loc[method, "ratio_median"] == pytest.approx(sorted(naive_ratios)[1])
        wins = sum(values["cleanex"][r] < values[method][r] for r in range(3)) / 3
        assert comparison.loc[method, "reference_wins"] == pytest.approx(wins)
    assert ratios["kde"][1] == RATIO_CAP and comparison.loc["kde", "ratio_median"] == pytest.approx(20.0)


def test_rmse_ratios_of_zero_errors() -> None:
    from classwise.extrapolation.simulation import rmse_ratios

    rmse = _long_rmse({"cleanex": [0.0, 0.0, 0.1], "kde": [0.0, 0.2, 0.1]})
    np.testing.assert_array_equal(rmse_ratios(rmse)["kde"], [1.0, 4.0, 1.0])
    with pytest.raises(InputError, match="'cleanex' among the methods"):
        rmse_ratios(_long_rmse({"kde": [0.1, 0.1, 0.1]}))
