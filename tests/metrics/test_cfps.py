"""Class False Positive Score, class-wise accuracy, model similarity and targeted attacks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, recall_score

from classwise.errors import InputError
from classwise.metrics.cfps import (
    cfps_max,
    class_false_positive_score,
    class_wise_accuracy,
    off_diagonal_error_profile,
    prediction_cosine_similarity,
    targeted_success_rate,
    targeted_success_rate_per_class,
)
from classwise.metrics.result import MetricResult


def _confusion(y, pred, c):
    return confusion_matrix(y, pred, labels=np.arange(c))


# ============================================================================ CFPS
def test_hand_check():
    y = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([0, 1, 1, 1, 1, 0])
    cm = _confusion(y, pred, 3)
    np.testing.assert_allclose(class_false_positive_score(cm), [1 / 3, 2 / 3, 0.0], rtol=1e-15)
    result = cfps_max(cm, class_names=["a", "b", "c"])
    assert isinstance(result, MetricResult)
    assert result.value == pytest.approx(2 / 3)
    assert result.classes == (1,)
    assert result.details == {"n_errors": 3, "class_name": "b"}


def test_against_brute_force_count():
    rng = np.random.default_rng(0)
    for c in (2, 5, 10):
        y = rng.integers(0, c, 300)
        pred = np.where(rng.random(300) < 0.6, y, rng.integers(0, c, 300))
        scores = class_false_positive_score(_confusion(y, pred, c))
        n_errors = sum(1 for a, b in zip(y, pred) if a != b)
        for k in range(c):
            fp = sum(1 for a, b in zip(y, pred) if b == k and a != k)
            assert scores[k] == pytest.approx(fp / n_errors, rel=1e-15)
        assert scores.sum() == pytest.approx(1.0, rel=1e-12)


def test_no_errors_gives_zeros():
    cm = np.diag([5, 3, 0, 2])
    np.testing.assert_array_equal(class_false_positive_score(cm), np.zeros(4))
    result = cfps_max(cm)
    assert result.value == 0.0 and result.classes == () and result.details["n_errors"] == 0


def test_cfps_max_ties_go_to_the_lowest_index():
    cm = np.array([[0, 1, 1], [0, 5, 0], [0, 0, 5]])  # classes 1 and 2 each take one error
    result = cfps_max(cm)
    assert result.classes == (1,) and result.value == pytest.approx(0.5)
    assert "class_name" not in result.details


def test_cfps_accepts_averaged_float_confusions():
    a = np.array([[8, 2, 0], [1, 9, 0], [0, 3, 7]])
    b = np.array([[9, 0, 1], [0, 10, 0], [0, 1, 9]])
    avg = (a + b) / 2
    expected = np.array([0.5, 3.0, 0.5]) / 4.0  # column false positives / all errors of the average
    np.testing.assert_allclose(class_false_positive_score(avg), expected, rtol=1e-15)


@pytest.mark.parametrize(
    "confusion",
    [np.zeros((2, 3)), np.zeros((0, 0)), np.array([[1, -1], [0, 1]]), np.array([[1.0, np.nan], [0, 1]]), np.ones(3)],
)
def test_bad_confusion_raises(confusion):
    with pytest.raises(InputError):
        class_false_positive_score(confusion)


def test_class_names_length_is_checked():
    with pytest.raises(InputError):
        cfps_max(np.array([[1, 1], [0, 1]]), class_names=["only one"])


# ============================================================================ class-wise accuracy
def test_class_wise_accuracy_matches_sklearn_recall():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 7, 500)
    pred = np.where(rng.random(500) < 0.7, y, rng.integers(0, 7, 500))
    expected = recall_score(y, pred, labels=np.arange(7), average=None)
    np.testing.assert_allclose(class_wise_accuracy(_confusion(y, pred, 7)), expected, rtol=1e-15)


def test_class_wise_accuracy_is_nan_without_samples():
    y = np.array([0, 0, 2, 2])
    pred = np.array([0, 1, 1, 2])
    acc = class_wise_accuracy(_confusion(y, pred, 3))
    assert acc[0] == 0.5 and math.isnan(acc[1]) and acc[2] == 0.5


# ============================================================================ model similarity
def _reference_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of the off-diagonal row-normalised confusions, by explicit loops."""
    c = a.shape[0]
    va, vb = [], []
    for i in range(c):
        sa, sb = a[i].sum(), b[i].sum()
        for j in range(c):
            if i != j:
                va.append(a[i, j] / sa if sa else 0.0)
                vb.append(b[i, j] / sb if sb else 0.0)
    dot = sum(x * y for x, y in zip(va, vb))
    return dot / math.sqrt(sum(x * x for x in va) * sum(y * y for y in vb))


def test_similarity_against_loop_reference():
    rng = np.random.default_rng(2)
    confusions = {name: rng.integers(0, 20, (6, 6)) + np.diag(rng.integers(50, 100, 6)) for name in "pqr"}
    names, s = prediction_cosine_similarity(confusions)
    assert names == ["p", "q", "r"]
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert s[i, j] == pytest.approx(_reference_similarity(confusions[a], confusions[b]), rel=1e-12)
    np.testing.assert_allclose(s, s.T, rtol=0, atol=0)
    np.testing.assert_allclose(np.diag(s), 1.0, rtol=1e-12)


def test_similarity_extremes():
    same = np.array([[8, 2, 0], [0, 9, 1], [1, 0, 9]])
    disjoint = np.array([[8, 0, 2], [1, 9, 0], [0, 1, 9]])  # errors where `same` has none
    names, s = prediction_cosine_similarity({"a": same, "twice": 2 * same, "b": disjoint})
    assert s[0, 1] == pytest.approx(1.0, rel=1e-12)  # more samples, same error rates
    assert s[0, 2] == pytest.approx(0.0, abs=1e-15)  # never the same mistake
    vec = off_diagonal_error_profile(same)
    np.testing.assert_allclose(vec, [0, 0.2, 0, 0, 0, 0.1, 0.1, 0, 0], rtol=1e-15)


def test_similarity_is_informative_where_full_matrices_are_not():
    # Two 90%-accurate 10-class models whose (structured) error patterns are unrelated:
    # the full row-normalised matrices look alike (> 0.98), the error profiles do not.
    rng = np.random.default_rng(3)

    def model():
        m = np.zeros((10, 10))
        for i in range(10):
            row = np.insert(0.1 * rng.dirichlet(np.full(9, 0.3)), i, 0.9)
            m[i] = rng.multinomial(1000, row)
        return m

    a, b = model(), model()
    _, s = prediction_cosine_similarity({"a": a, "b": b})
    full_a, full_b = (a / a.sum(1, keepdims=True)).ravel(), (b / b.sum(1, keepdims=True)).ravel()
    full = full_a @ full_b / np.linalg.norm(full_a) / np.linalg.norm(full_b)
    assert full > 0.98
    assert s[0, 1] < 0.8


def test_similarity_of_an_error_free_model_is_nan():
    names, s = prediction_cosine_similarity({"perfect": np.diag([3, 4]), "other": np.array([[3, 1], [0, 4]])})
    assert np.isnan(s[0]).all() and np.isnan(s[:, 0]).all() and s[1, 1] == pytest.approx(1.0)


def test_similarity_shapes_must_agree():
    with pytest.raises(InputError):
        prediction_cosine_similarity({"a": np.eye(3), "b": np.eye(4)})
    with pytest.raises(InputError):
        prediction_cosine_similarity({})


# ============================================================================ targeted attacks
def test_targeted_success_rate_against_loop():
    rng = np.random.default_rng(4)
    n, c = 400, 6
    labels = rng.integers(0, c, n)
    targets = rng.integers(0, c, n)
    predictions = np.where(rng.random(n) < 0.4, targets, rng.integers(0, c, n))
    attacked = [i for i in range(n) if labels[i] != targets[i]]
    hits = [i for i in attacked if predictions[i] == targets[i]]
    assert targeted_success_rate(predictions, targets, labels) == pytest.approx(len(hits) / len(attacked), rel=1e-15)
    per_class = targeted_success_rate_per_class(predictions, targets, labels, c)
    for t in range(c):
        tried = [i for i in attacked if targets[i] == t]
        assert per_class[t] == pytest.approx(sum(predictions[i] == t for i in tried) / len(tried), rel=1e-15)


def test_targeted_success_rate_ignores_samples_already_of_the_target():
    labels = np.array([0, 1, 2, 2])
    targets = np.array([0, 2, 2, 0])
    predictions = np.array([0, 2, 2, 1])  # sample 0 and 2 are of their target: not attacks
    assert targeted_success_rate(predictions, targets, labels) == 0.5
    per_class = targeted_success_rate_per_class(predictions, targets, labels, 4)
    assert per_class[0] == 0.0 and per_class[2] == 1.0
    assert np.isnan(per_class[1]) and np.isnan(per_class[3])  # never targets of an attack
    assert math.isnan(targeted_success_rate(np.array([1]), np.array([1]), np.array([1])))


@pytest.mark.parametrize(
    "arrays",
    [
        (np.array([0, 1]), np.array([0]), np.array([0, 1])),
        (np.array([0.0, 1.0]), np.array([0, 1]), np.array([0, 1])),
        (np.array([0, -1]), np.array([0, 1]), np.array([0, 1])),
    ],
)
def test_targeted_bad_input_raises(arrays):
    with pytest.raises(InputError):
        targeted_success_rate(*arrays)


def test_targeted_per_class_range_is_checked():
    with pytest.raises(InputError):
        targeted_success_rate_per_class(np.array([0, 3]), np.array([1, 0]), np.array([0, 1]), 3)
