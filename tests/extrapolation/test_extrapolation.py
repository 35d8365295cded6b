"""Reversed ROC, rAUC and the exact expected accuracy A_k (classwise.extrapolation.rroc)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import hypergeom
from sklearn.metrics import roc_auc_score

from classwise.errors import InputError
from classwise.extrapolation.rroc import (
    c_x,
    expected_accuracy,
    power_curve,
    rank_counts,
    rauc,
    reversed_roc,
    subsample_classes,
)

ISSUE_SCORES = np.array([[0.9, 0.5, 0.1, 0.3], [0.2, 0.6, 0.7, 0.1], [0.4, 0.3, 0.8, 0.2], [0.1, 0.2, 0.3, 0.9]])
ISSUE_LABELS = np.arange(4)


def brute_force_accuracy(scores: np.ndarray, labels: np.ndarray, k: int, ties: str) -> float:
    """Mean over samples and over all (k-1)-subsets of incorrect classes of the chance that
    the argmax over {correct} + subset is the correct class (ties: 'error' = lost,
    'random' = won with probability 1/(number of classes sharing the top score))."""
    n, n_classes = scores.shape
    total = 0.0
    for i in range(n):
        y = labels[i]
        others = [c for c in range(n_classes) if c != y]
        wins = []
        for subset in itertools.combinations(others, k - 1):
            candidate = scores[i, [y, *subset]]
            top = candidate.max()
            if candidate[0] < top:
                wins.append(0.0)
            elif ties == "error":
                wins.append(float((candidate[1:] < top).all()))
            else:
                wins.append(1.0 / np.count_nonzero(candidate == top))
        total += np.mean(wins)
    return total / n


def test_issue_example_against_hard_coded_values_and_brute_force() -> None:
    expected = [0.916667, 0.833333, 0.75]
    brute = [brute_force_accuracy(ISSUE_SCORES, ISSUE_LABELS, k, "random") for k in (2, 3, 4)]
    np.testing.assert_allclose(brute, expected, atol=1e-6)
    for ties in ("random", "error"):
        np.testing.assert_allclose(expected_accuracy(ISSUE_SCORES, ISSUE_LABELS, ties=ties), brute, rtol=1e-12)
    np.testing.assert_allclose(expected_accuracy(ISSUE_SCORES, ISSUE_LABELS, ks=[4, 2]), [0.75, 11 / 12], rtol=1e-12)
    np.testing.assert_allclose(c_x(ISSUE_SCORES, ISSUE_LABELS), [1, 2 / 3, 1, 1])
    assert rauc(ISSUE_SCORES, ISSUE_LABELS) == pytest.approx(11 / 12)


def test_a1_is_one_and_ak_is_non_increasing() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(200, 30))
    labels = rng.integers(0, 30, 200)
    scores[np.arange(200), labels] += 1.5
    curve = expected_accuracy(scores, labels, ks=np.arange(1, 31))
    assert curve[0] == pytest.approx(1.0)
    assert (np.diff(curve) <= 1e-12).all()
    # A_K = top-1 accuracy (no ties in continuous scores).
    assert curve[-1] == pytest.approx(np.mean(scores.argmax(axis=1) == labels))


@pytest.mark.parametrize("ties", ["random", "error"])
def test_brute_force_with_ties(ties: str) -> None:
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4, size=(25, 7)).astype(float)  # many ties
    labels = rng.integers(0, 7, size=25)
    brute = [brute_force_accuracy(scores, labels, k, ties) for k in range(2, 8)]
    np.testing.assert_allclose(expected_accuracy(scores, labels, ties=ties), brute, rtol=1e-10, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda k: st.tuples(
            st.lists(st.lists(st.integers(0, 3), min_size=k, max_size=k), min_size=1, max_size=6),
            st.lists(st.integers(0, k - 1), min_size=6, max_size=6),
            st.sampled_from(["random", "error"]),
        )
    )
)
def test_property_matches_brute_force(case: tuple[list[list[int]], list[int], str]) -> None:
    rows, label_pool, ties = case
    scores = np.array(rows, dtype=float)
    labels = np.array(label_pool[: len(rows)])
    n_classes = scores.shape[1]
    brute = [brute_force_accuracy(scores, labels, k, ties) for k in range(2, n_classes + 1)]
    np.testing.assert_allclose(expected_accuracy(scores, labels, ties=ties), brute, rtol=1e-10, atol=1e-14)


def test_large_k_matches_hypergeometric_and_stays_finite() -> None:
    """A_k(x) = P(no 'above' class among k-1 drawn) = hypergeom.pmf(0, K-1, U_x, k-1)."""
    rng = np.random.default_rng(2)
    n_classes = 3000
    scores = rng.normal(size=(40, n_classes))
    labels = rng.integers(0, n_classes, 40)
    scores[np.arange(40), labels] += rng.uniform(1.0, 4.0, 40)
    ks = np.array([2, 3, 10, 100, 1000, 2999, 3000])
    counts = rank_counts(scores, labels)
    reference = np.mean([hypergeom.pmf(0, n_classes - 1, u, ks - 1) for u in counts.above], axis=0)
    got = expected_accuracy(scores, labels, ks=ks)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, reference, rtol=1e-9, atol=1e-15)


def test_rauc_equals_a2_trapezoid_and_sklearn_pairwise_auc() -> None:
    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=(60, 9)), 1)  # includes ties
    labels = rng.integers(0, 9, 60)
    scores[np.arange(60), labels] += 0.5
    area = rauc(scores, labels)
    assert area == pytest.approx(expected_accuracy(scores, labels, ks=[2])[0], rel=1e-12)
    fpr, tpr = reversed_roc(scores, labels)
    assert np.trapezoid(tpr, fpr) == pytest.approx(area, rel=1e-12)
    # Per sample: the AUC of "correct class vs incorrect classes" on that sample's scores.
    onehot = np.eye(9, dtype=int)[labels]
    per_sample = [roc_auc_score(onehot[i], scores[i]) for i in range(60)]
    assert area == pytest.approx(np.mean(per_sample), rel=1e-12)
    np.testing.assert_allclose(c_x(scores, labels), per_sample, rtol=1e-12)


@pytest.mark.parametrize("ties", ["random", "error"])
def test_reversed_roc_shape(ties: str) -> None:
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 5, size=(50, 6)).astype(float)
    labels = rng.integers(0, 6, 50)
    fpr, tpr = reversed_roc(scores, labels, ties=ties)
    assert (fpr[0], tpr[0]) == (0.0, 0.0)
    assert (fpr[-1], tpr[-1]) == (1.0, pytest.approx(1.0))
    assert (np.diff(fpr) >= 0).all() and (np.diff(tpr) >= -1e-15).all()
    assert np.trapezoid(tpr, fpr) == pytest.approx(rauc(scores, labels, ties=ties), rel=1e-12)


def test_reversed_roc_of_issue_example() -> None:
    # 1 - C_x = 0, 1/3, 0, 0: three samples jump at u = 0, one at u = 1/3.
    fpr, tpr = reversed_roc(ISSUE_SCORES, ISSUE_LABELS)
    np.testing.assert_allclose(fpr, [0, 0, 1 / 3, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(tpr, [0, 0.75, 0.75, 1, 1, 1])


def test_tie_conventions() -> None:
    scores = np.array([[1.0, 1.0, 0.0], [2.0, 1.0, 2.0]])
    labels = np.array([0, 2])
    np.testing.assert_allclose(c_x(scores, labels, "random"), [0.75, 0.75])
    np.testing.assert_allclose(c_x(scores, labels, "error"), [0.5, 0.5])
    # k = 3: win only if the tie is broken our way (1/2), or never with ties = "error".
    np.testing.assert_allclose(expected_accuracy(scores, labels, ks=[3], ties="random"), [0.5])
    np.testing.assert_allclose(expected_accuracy(scores, labels, ks=[3], ties="error"), [0.0])
    with pytest.raises(InputError, match="ties"):
        c_x(scores, labels, "half")  # type: ignore[arg-type]


def test_power_curve() -> None:
    c = np.array([0.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(power_curve(c, [1, 2, 3, 200]), [1.0, 0.625, 0.5625, 0.5])
    with pytest.raises(InputError):
        power_curve(np.array([1.2]), [2])


def test_subsample_classes_relabels() -> None:
    scores = np.arange(12.0).reshape(4, 3)
    labels = np.array([0, 2, 1, 2])
    sub, sub_labels = subsample_classes(scores, labels, np.array([2, 0]))
    np.testing.assert_array_equal(sub, [[0, 2], [3, 5], [9, 11]])
    np.testing.assert_array_equal(sub_labels, [0, 1, 1])


@pytest.mark.parametrize(
    ("scores", "labels", "field"),
    [
        (np.array([[0.1, np.nan], [0.2, 0.3]]), np.array([0, 1]), "scores"),
        (np.array([[0.1, 0.2]]), np.array([2]), "labels"),
        (np.array([[0.1, 0.2]]), np.array([0.0]), "labels"),
        (np.array([[0.1], [0.2]]), np.array([0, 0]), "scores"),
        (np.array([[0.1, 0.2]]), np.array([0, 1]), "labels"),
    ],
)
def test_bad_input(scores: np.ndarray, labels: np.ndarray, field: str) -> None:
    with pytest.raises(InputError) as info:
        expected_accuracy(scores, labels)
    assert info.value.field == field


def test_bad_ks() -> None:
    with pytest.raises(InputError, match="ks"):
        expected_accuracy(ISSUE_SCORES, ISSUE_LABELS, ks=[5])
    with pytest.raises(InputError, match="ks"):
        expected_accuracy(ISSUE_SCORES, ISSUE_LABELS, ks=[0])
