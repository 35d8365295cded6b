"""CleaneX's stopping rule: a fit stops on a loss plateau or at ``max_steps``, and says which
(classwise.extrapolation.methods.CleanexTraining, CleanexFit)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from scipy.special import log_ndtr

from classwise.errors import InputError
from classwise.extrapolation.methods import (
    CleanexTraining,
    FitOptions,
    _Plateau,
    cleanex_fit,
    extrapolate_with_fit,
    naive_curve,
)
from classwise.extrapolation.rroc import c_x, expected_accuracy
from classwise.extrapolation.simulation import MethodComparison, evaluate_methods

pytest.importorskip("torch")


def stop_step(losses: list[float], tolerance: float, patience: int) -> int | None:
    """The 1-based step at which :class:`_Plateau` says stop, or None."""
    rule = _Plateau(tolerance, patience)
    for step, loss in enumerate(losses, start=1):
        if rule.reached(loss):
            return step
    return None


def test_the_plateau_rule_by_hand() -> None:
    falling = [0.9**i for i in range(20)]  # every step falls 10 %: steps 1-20 all count as falls
    flat = [falling[-1]] * 50
    # The last fall is step 20; the ten steps after it (21..30) have none: stop at step 30.
    assert stop_step(falling + flat, 0.01, 10) == 30
    # Adam's jitter above the lowest loss is no fall, and no reason to go on: the same step.
    jitter = [falling[-1] * (1.05 if i % 2 else 1.0) for i in range(50)]
    assert stop_step(falling + jitter, 0.01, 10) == 30
    # A slow fall of 0.5 % a step passes the 1 % threshold every third step (0.995^3 < 0.99 <
    # 0.995^2): never a plateau with patience 10, and a plateau at once with patience 2.
    slow = [0.995**i for i in range(200)]
    assert stop_step(slow, 0.01, 10) is None
    assert stop_step(slow, 0.01, 2) == 3  # step 1 sets the reference; steps 2 and 3 fall < 1 %
    # tolerance 0: any fall at all keeps training going.
    assert stop_step(slow, 0.0, 2) is None


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": 2.5}, "max_steps"),
        ({"patience": 0}, "patience"),
        ({"tolerance": 1.0}, "tolerance"),
        ({"tolerance": -0.1}, "tolerance"),
        ({"tolerance": True}, "tolerance"),
        ({"lr": 0.0}, "lr"),
        ({"lr": float("inf")}, "lr"),
        ({"beta2": 1.0}, "beta2"),
        ({"beta2": "0.9"}, "beta2"),
    ],
)
def test_bad_training_settings_name_their_field(settings: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        CleanexTraining(**settings)  # type: ignore[arg-type]
    assert info.value.field == field


def high_accuracy_case(n: int = 300, n_classes: int = 5, k_max: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like the digits demo: 5 observed classes, about 97 % accuracy at k = 2. Incorrect scores
    i.i.d. N(0, 1), the correct one N(3, 1), so ``C_x = Phi(s_x)`` and the population curve is
    ``mean_x Phi(s_x)^(k-1)`` for every k (as in test_extrapolation_methods)."""
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((n, n_classes))
    labels = rng.integers(0, n_classes, n)
    correct = rng.normal(3.0, 1.0, n)
    scores[np.arange(n), labels] = correct
    ks = np.arange(2, k_max + 1)
    return scores, labels, np.exp((ks - 1)[None, :] * log_ndtr(correct)[:, None]).mean(axis=0)


def test_a_fit_on_a_known_case_converges_and_reaches_the_observed_curve() -> None:
    scores, labels, truth = high_accuracy_case()
    training = CleanexTraining(max_steps=2000, tolerance=0.01, patience=50)
    fit = cleanex_fit(scores, labels, seed=0, fit=FitOptions(cleanex=training))
    assert fit.converged and fit.steps < training.max_steps
    # The answer it is fitted to: the exact observed curve (checked against brute force in
    # test_extrapolation); the loss is that curve's mean squared error.
    observed = expected_accuracy(scores, labels, np.arange(2, 6))
    fitted = fit.curve(5)
    assert np.sqrt(np.mean((fitted - observed) ** 2)) == pytest.approx(np.sqrt(fit.loss), rel=1e-3)
    assert np.abs(fitted - observed).max() < 2e-3
    # Beyond them, to twice the classes as in the demo: the population curve of the case, which
    # the fit predicts better than the naive curve does (measured: 0.009 and 0.042).
    error = np.sqrt(np.mean((fit.curve(10) - truth) ** 2))
    assert error < 0.02
    assert error < np.sqrt(np.mean((naive_curve(scores, labels, 10) - truth) ** 2)) / 2


def test_the_fit_starts_at_the_observed_two_class_accuracy() -> None:
    scores, labels, _ = high_accuracy_case()
    fit = cleanex_fit(scores, labels, seed=0, fit=FitOptions(cleanex=CleanexTraining(max_steps=1)))
    # One Adam step at lr 1e-4 from the initial bias logit(1 - A_2): A_2 = mean C_x (the rAUC).
    assert fit.curve(2)[0] == pytest.approx(c_x(scores, labels).mean(), abs=0.01)


def test_a_fit_capped_at_too_few_steps_says_it_did_not_converge(caplog: pytest.LogCaptureFixture) -> None:
    scores, labels, _ = high_accuracy_case()
    with caplog.at_level(logging.WARNING, logger="classwise.extrapolation.methods"):
        fit = cleanex_fit(scores, labels, seed=0, fit=FitOptions(cleanex=CleanexTraining(max_steps=5, patience=100)))
    assert not fit.converged and fit.steps == 5
    assert "did not converge: stopped at max_steps = 5" in caplog.text
    assert "did NOT converge" in fit.describe()
    result = extrapolate_with_fit(scores, labels, 8, "cleanex", fit=FitOptions(cleanex=CleanexTraining(max_steps=5)))
    assert result.fit is not None and not result.fit.converged
    assert extrapolate_with_fit(scores, labels, 8, "naive").fit is None


def test_the_evaluation_records_every_fit() -> None:
    scores, labels, _ = high_accuracy_case(n=200, n_classes=8)
    training = CleanexTraining(max_steps=40, tolerance=0.01, patience=10)
    evaluation = evaluate_methods(
        scores,
        labels,
        5,
        8,
        MethodComparison(repetitions=2, seed=0, methods=("naive", "cleanex"), fit=FitOptions(cleanex=training)),
    )
    fits = evaluation.fits
    assert fits["method"].tolist() == ["cleanex", "cleanex"] and fits["repetition"].tolist() == [0, 1]
    summary = evaluation.summary().set_index("method")
    assert summary.loc["cleanex", "fits"] == 2
    assert summary.loc["cleanex", "converged"] == fits["converged"].sum()
    assert summary.loc["cleanex", "steps_max"] == fits["steps"].max() <= 40
    assert np.isnan(summary.loc["naive", "fits"])
    # Each recorded fit is the one a direct call gives (seed * 1000 + repetition, the same classes).
    rng = np.random.default_rng(0)
    for rep in range(2):
        classes = rng.choice(8, size=5, replace=False)
        keep = np.isin(labels, classes)
        remap = np.searchsorted(np.sort(classes), labels[keep])
        direct = cleanex_fit(scores[keep][:, np.sort(classes)], remap, seed=rep, fit=FitOptions(cleanex=training))
        assert (direct.steps, direct.converged) == (fits["steps"][rep], fits["converged"][rep])
        assert direct.loss == fits["final_loss"][rep]


def test_the_same_seed_gives_the_same_bytes() -> None:
    scores, labels, _ = high_accuracy_case()
    training = CleanexTraining(max_steps=100, tolerance=0.01, patience=20)
    a = cleanex_fit(scores, labels, seed=4, fit=FitOptions(cleanex=training))
    b = cleanex_fit(scores, labels, seed=4, fit=FitOptions(cleanex=training))
    c = cleanex_fit(scores, labels, seed=5, fit=FitOptions(cleanex=training))
    assert a.c.tobytes() == b.c.tobytes() and (a.steps, a.loss, a.converged) == (b.steps, b.loss, b.converged)
    assert a.c.tobytes() != c.c.tobytes()
