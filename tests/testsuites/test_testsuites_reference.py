"""Reference-vs-evaluation tests: ATC, calibration curves, statuses and reports."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve as sk_calibration_curve

from classwise.errors import InputError
from classwise.testsuites.classification import to_probabilities
from classwise.testsuites.reference import (
    REFERENCE_METRICS,
    ReferenceTestOptions,
    atc_predicted_accuracy,
    atc_threshold,
    calibration_curve,
    calibration_mse,
    compare_to_reference,
    reference_report,
    resolve_thresholds,
    summarise_reports,
)


def _rows(max_probs: list[float], correct: list[bool], c: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Probability rows whose max is ``max_probs`` at class 0, labels 0 (correct) or 1."""
    m = np.asarray(max_probs)
    p = np.column_stack([m, *([(1 - m) / (c - 1)] * (c - 1))])
    return p, np.where(correct, 0, 1)


def _model(seed: int, n: int, c: int, signal: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    logits = rng.normal(size=(n, c)).astype(np.float32)
    logits[np.arange(n), y] += signal
    return logits, y


# ---------------------------------------------------------------------------- ATC
def test_atc_hand_built_case() -> None:
    conf = np.array([0.9, 0.5, 0.7, 0.6, 0.8])
    correct = np.array([True, False, False, True, True])  # accuracy 3/5
    t = atc_threshold(conf, correct)
    assert t == pytest.approx(0.65)  # midpoint of the 3rd and 4th largest (0.7, 0.6)
    assert atc_predicted_accuracy(conf, t) == pytest.approx(0.6)  # = reference accuracy
    assert atc_predicted_accuracy(np.array([0.95, 0.66, 0.64, 0.3]), t) == pytest.approx(0.5)


def test_atc_ties_and_edge_cases() -> None:
    conf = np.array([0.9, 0.7, 0.7, 0.5])
    t = atc_threshold(conf, np.array([True, True, False, False]))
    assert t == 0.7  # c_(2) == c_(3): the tie does not exceed
    assert atc_predicted_accuracy(conf, t) == 0.25
    assert atc_threshold(conf, np.ones(4, dtype=bool)) == -math.inf
    assert atc_predicted_accuracy(conf, -math.inf) == 1.0
    assert atc_threshold(conf, np.zeros(4, dtype=bool)) == math.inf
    assert atc_predicted_accuracy(conf, math.inf) == 0.0
    a = 0.5
    b = np.nextafter(a, 0.0)  # adjacent floats: the midpoint must stay below the upper one
    t = atc_threshold(np.array([a, b]), np.array([True, False]))
    assert atc_predicted_accuracy(np.array([a, b]), t) == 0.5
    with pytest.raises(InputError):
        atc_threshold(conf, np.array([1, 0, 1, 0]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_atc_exceedance_equals_accuracy_on_the_reference(seed: int) -> None:
    logits, y = _model(seed, 400, 6, 1.2)
    p = to_probabilities(logits)
    correct = p.argmax(1) == y
    t = atc_threshold(p.max(1), correct)
    assert atc_predicted_accuracy(p.max(1), t) == pytest.approx(correct.mean())


def test_atc_in_the_report_matches_hand_built_case() -> None:
    ref_p, ref_y = _rows([0.9, 0.5, 0.7, 0.6, 0.8], [True, False, False, True, True])
    ev_p, ev_y = _rows([0.95, 0.66, 0.64, 0.4], [True, False, True, False])
    table = compare_to_reference(ref_p, ref_y, ev_p, ev_y, kind="probs").set_index("metric")
    atc = table.loc["atc"]
    assert atc["atc_threshold"] == pytest.approx(0.65)
    assert atc["atc_reference_exceedance"] == pytest.approx(0.6)
    assert atc["reference_value"] == pytest.approx(0.6)
    assert atc["evaluation_value"] == pytest.approx(0.5)
    assert atc["evaluation_actual"] == pytest.approx(0.5)


# ---------------------------------------------------------------------------- calibration
@pytest.mark.parametrize(("seed", "n_bins"), [(0, 10), (1, 5), (2, 15)])
def test_calibration_curve_matches_sklearn(seed: int, n_bins: int) -> None:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.2, 1.0, 300)
    conf[:20] = np.round(conf[:20], 1)  # values on bin edges
    conf[20] = 1.0
    correct = rng.uniform(size=300) < conf
    curve = calibration_curve(conf, correct, n_bins)
    prob_true, prob_pred = sk_calibration_curve(correct, conf, n_bins=n_bins, strategy="uniform")
    filled = curve.count > 0
    np.testing.assert_allclose(curve.accuracy[filled], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve.mean_confidence[filled], prob_pred, rtol=0, atol=1e-12)
    assert np.isnan(curve.accuracy[~filled]).all() and curve.count.sum() == 300


def test_calibration_mse_over_shared_bins() -> None:
    ref = calibration_curve(np.array([0.15, 0.15, 0.55, 0.95]), np.array([True, False, True, True]), 10)
    ev = calibration_curve(np.array([0.12, 0.18, 0.58, 0.58]), np.array([True, True, False, False]), 10)
    # shared bins: (0.1, 0.2] acc 0.5 vs 1.0 (2 and 2 samples), (0.5, 0.6] acc 1.0 vs 0.0 (1 and 2)
    assert calibration_mse(ref, ev) == pytest.approx((0.25 + 1.0) / 2)
    assert calibration_mse(ref, ev, min_bin_count=2) == pytest.approx(0.25)
    assert math.isnan(calibration_mse(ref, ev, min_bin_count=3))
    lone = calibration_curve(np.array([0.05]), np.array([True]), 10)
    assert math.isnan(calibration_mse(ref, lone))
    with pytest.raises(InputError):
        calibration_mse(ref, calibration_curve(np.array([0.5]), np.array([True]), 5))


# ---------------------------------------------------------------------------- reports
@pytest.mark.parametrize("seed", [0, 1])
def test_report_metrics_match_sklearn(seed: int) -> None:
    ref_logits, ref_y = _model(seed, 300, 5, 2.0)
    ev_logits, ev_y = _model(seed + 100, 200, 5, 0.8)
    table = compare_to_reference(ref_logits, ref_y, ev_logits, ev_y).set_index("metric")
    assert list(table.index) == list(REFERENCE_METRICS)
    for logits, y, col in [(ref_logits, ref_y, "reference_value"), (ev_logits, ev_y, "evaluation_value")]:
        p = to_probabilities(logits)
        pred = logits.argmax(1)
        assert table.loc["macro_f1", col] == pytest.approx(skm.f1_score(y, pred, average="macro", zero_division=0))
        assert table.loc["macro_precision", col] == pytest.approx(skm.precision_score(y, pred, average="macro", zero_division=0))
        assert table.loc["macro_recall", col] == pytest.approx(skm.recall_score(y, pred, average="macro", zero_division=0))
        assert table.loc["accuracy", col] == pytest.approx(skm.accuracy_score(y, pred))
        assert table.loc["auc_ovo", col] == pytest.approx(skm.roc_auc_score(y, p, multi_class="ovo", labels=np.arange(5)))
        assert table.loc["average_uncertainty", col] == pytest.approx(np.mean(1 - p.max(1)))
        assert table.loc["positive_prediction_rate", col] == pytest.approx(np.bincount(pred).max() / len(y))
    ref_curve = calibration_curve(to_probabilities(ref_logits).max(1), ref_logits.argmax(1) == ref_y)
    ev_curve = calibration_curve(to_probabilities(ev_logits).max(1), ev_logits.argmax(1) == ev_y)
    want = calibration_mse(ref_curve, ev_curve, min_bin_count=10)
    assert table.loc["calibration_mse", "evaluation_value"] == pytest.approx(want)
    assert table.loc["atc", "evaluation_actual"] == pytest.approx(table.loc["accuracy", "evaluation_value"])
    # degradation is signed so that positive means worse
    assert table.loc["accuracy", "degradation"] == pytest.approx(
        table.loc["accuracy", "reference_value"] - table.loc["accuracy", "evaluation_value"]
    )
    assert table.loc["average_uncertainty", "degradation"] == pytest.approx(
        table.loc["average_uncertainty", "evaluation_value"] - table.loc["average_uncertainty", "reference_value"]
    )


def test_statuses_follow_the_thresholds() -> None:
    ref_logits, ref_y = _model(3, 300, 4, 3.0)  # accuracy ~0.9
    ev_logits, ev_y = _model(4, 300, 4, 1.5)  # accuracy ~0.6
    thresholds = {
        "accuracy": {"absolute": 0.8, "degradation": 0.05},  # fail (absolute wins over warn)
        "macro_f1": {"absolute": 0.1, "degradation": 0.05},  # warn
        "macro_recall": {"absolute": 0.1, "degradation": 0.9},  # pass
        "macro_precision": {"absolute": None, "degradation": None},  # info
        "average_uncertainty": {"absolute": 0.01},  # lower is better: fail above 0.01
        "calibration_mse": {"absolute": 1.0},
    }
    table = compare_to_reference(
        ref_logits, ref_y, ev_logits, ev_y, options=ReferenceTestOptions(thresholds=thresholds)
    ).set_index("metric")
    assert table.loc["accuracy", "status"] == "fail"
    assert table.loc["macro_f1", "status"] == "warn"
    assert table.loc["macro_recall", "status"] == "pass"
    assert table.loc["macro_precision", "status"] == "info"
    assert table.loc["average_uncertainty", "status"] == "fail"
    assert table.loc["calibration_mse", "status"] == "pass"
    assert math.isnan(table.loc["calibration_mse", "degradation"])
    assert "below absolute threshold" in table.loc["accuracy", "reason"]


def test_unlabelled_evaluation_keeps_label_free_metrics() -> None:
    ref_logits, ref_y = _model(5, 200, 3, 2.0)
    ev_logits, _ = _model(6, 150, 3, 1.0)
    table = compare_to_reference(ref_logits, ref_y, ev_logits, None).set_index("metric")
    for m in ["average_uncertainty", "atc", "positive_prediction_rate"]:
        assert np.isfinite(table.loc[m, "evaluation_value"]) and table.loc[m, "status"] != "skipped"
    for m in ["calibration_mse", "macro_f1", "macro_precision", "macro_recall", "accuracy", "auc_ovo"]:
        assert table.loc[m, "status"] == "skipped"
    assert math.isnan(table.loc["atc", "evaluation_actual"])


def test_reference_report_and_summary_across_models() -> None:
    reports = []
    for model, signal in [("good", 3.0), ("bad", 0.3)]:
        sets = {
            "clean": _model(7, 200, 4, 3.0),
            "blur": _model(8, 200, 4, signal),
            "unlabelled": (_model(9, 100, 4, signal)[0], None),
        }
        reports.append(reference_report(sets, dataset="digits", model=model))
    report = pd.concat(reports, ignore_index=True)
    assert list(report.columns[:5]) == ["dataset", "model", "reference", "evaluation", "metric"]
    assert len(report) == 2 * 2 * len(REFERENCE_METRICS)
    assert set(report["evaluation"]) == {"blur", "unlabelled"}
    summary = summarise_reports(reports).set_index("model")
    assert summary.loc["bad", "status"] == "fail"
    assert "blur:accuracy" in summary.loc["bad", "failed"]
    assert summary.loc["good", "n_fail"] == 0
    counts = summary[["n_fail", "n_warn", "n_pass", "n_info", "n_skipped"]].sum(axis=1)
    assert (counts == summary["n_tests"]).all()


def test_threshold_and_input_errors() -> None:
    with pytest.raises(InputError) as err:
        resolve_thresholds({"f1": {"absolute": 0.5}})
    assert err.value.field == "thresholds.f1"
    with pytest.raises(InputError):
        resolve_thresholds({"accuracy": {"minimum": 0.5}})
    with pytest.raises(InputError):
        resolve_thresholds({"accuracy": {"absolute": True}})
    assert resolve_thresholds({"accuracy": {"absolute": None}})["accuracy"] == {"absolute": None, "degradation": 0.1}
    ref_logits, ref_y = _model(0, 50, 3, 1.0)
    with pytest.raises(InputError):
        compare_to_reference(ref_logits, ref_y, _model(1, 50, 4, 1.0)[0])
    with pytest.raises(InputError):
        reference_report({"blur": (ref_logits, ref_y)})
    with pytest.raises(InputError):
        reference_report({"clean": (ref_logits, None)})


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"thresholds": {"f1": {"absolute": 0.5}}}, "thresholds.f1"),
        ({"n_bins": 0}, "n_bins"),
        ({"min_bin_count": 0}, "min_bin_count"),
        ({"label_set": "some"}, "label_set"),
        ({"reference": None}, "reference"),
    ],
)
def test_reference_test_options_refuse_bad_values_when_made(values: dict[str, object], field: str) -> None:
    """The options are checked when the record is made, before any score is read."""
    with pytest.raises(InputError) as err:
        ReferenceTestOptions(**values)  # type: ignore[arg-type]
    assert err.value.field == field
