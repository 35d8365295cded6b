"""One input, one verdict: every entry point validates scores and labels through classwise.validation."""

from __future__ import annotations

import numpy as np
import pytest

from classwise.errors import InputError, check_count
from classwise.labels.confident_learning import find_label_issues
from classwise.logits_io import validate_scores
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.stats import compute_stats
from classwise.testsuites.classification import classification_metrics
from classwise.validation import PROB_ROW_TOLERANCE, check_labels, check_probabilities

PROBS = np.array([[0.25, 0.75], [0.5, 0.5], [1.0, 0.0]])
LABELS = np.array([1, 0, 0])


def _entry_points(probs: np.ndarray, labels: np.ndarray):
    yield lambda: validate_scores(probs, labels, kind="probs")
    yield lambda: Probabilities.from_scores(probs, "probs").check_labels(labels)
    yield lambda: classification_metrics(probs, labels)
    yield lambda: find_label_issues(labels, probs, backend="numpy")


@pytest.mark.parametrize(
    ("probs", "labels", "field", "text"),
    [
        (PROBS, np.array([1, 2, 0]), "labels", "labels must lie in [0, 2): label 2 at position 1 is out of range"),
        (PROBS, np.array([1, 0]), "labels", "expected shape (3,)"),
        (PROBS, LABELS.astype(float), "labels", "expected integer class indices, got dtype float64"),
        (PROBS + np.array([[0, 2 * PROB_ROW_TOLERANCE]] * 3), LABELS, None, "sum to 1 (within 0.001); rows 0, 1, 2"),
        (np.where(PROBS == 1.0, np.nan, PROBS), LABELS, None, "NaN or infinite"),
    ],
)
def test_every_entry_point_gives_the_same_message(probs, labels, field, text) -> None:
    messages = set()
    for call in _entry_points(probs, labels):
        with pytest.raises(InputError) as info:
            call()
        assert text in str(info.value)
        if field is not None:
            assert info.value.field == field
        messages.add(str(info.value).split(": ", 1)[-1])
    assert len(messages) == 1, messages


def test_probability_rows_within_the_tolerance_pass() -> None:
    nearly = PROBS + np.array([[0.0, 0.9 * PROB_ROW_TOLERANCE]] * 3)
    check_probabilities(nearly)
    assert compute_stats(np.log(nearly + 1e-12), LABELS).n_samples == 3
    assert check_labels(np.array([1, 0, 0], dtype=np.int32), 3, 2).dtype == np.int64


def test_hard_predictions_are_checked_like_labels() -> None:
    """A file of hard predictions (logits_io) goes through check_labels: any length but zero."""
    assert check_labels(np.array([2, 0, 1]), None, 3).tolist() == [2, 0, 1]
    with pytest.raises(InputError, match=r"expected a 1-D array of class indices, got shape \(0,\)"):
        check_labels(np.array([], dtype=np.int64), None, 3, field="predictions")
    assert check_labels(np.array([], dtype=np.int64), 0, 3).size == 0  # labels of no sample: their count is known
    with pytest.raises(InputError, match=r"predictions must lie in \[0, 3\): prediction 3 at position 1"):
        check_labels(np.array([0, 3]), None, 3, field="predictions", noun="prediction")


# A grid of what callers pass as a count: ints (and one past int64), bools, floats (integral
# ones too), numpy scalars of every kind, strings, None and containers.
COUNT_CANDIDATES = [
    *range(-3, 6),
    10**30,
    True,
    False,
    0.0,
    1.0,
    2.5,
    float("nan"),
    float("inf"),
    np.int8(3),
    np.int64(-1),
    np.int64(7),
    np.uint8(2),
    np.uint64(0),
    np.bool_(True),
    np.float64(2.0),
    np.array(3),
    "3",
    "",
    None,
    [1],
    (2,),
]


def _is_count(value: object, minimum: int) -> bool:
    """The brute-force verdict, by type name rather than by the checker's test: a Python int or a
    numpy integer scalar (bools of either kind are not) whose value is at least ``minimum``."""
    integer = type(value) is int or type(value).__name__ in {"int8", "int64", "uint8", "uint64"}
    return integer and int(value) >= minimum  # type: ignore[call-overload]


@pytest.mark.parametrize("minimum", [-2, 0, 1, 2, 5])
def test_check_count_accepts_exactly_the_integers_at_least_the_minimum(minimum: int) -> None:
    for value in COUNT_CANDIDATES:
        if _is_count(value, minimum):
            got = check_count(value, "n", minimum=minimum)
            assert type(got) is int and got == int(value), value  # type: ignore[call-overload]
        else:
            with pytest.raises(InputError) as info:
                check_count(value, "n", minimum=minimum)
            assert info.value.field == "n" and info.value.path is None, value
            assert info.value.message == f"expected an integer >= {minimum}, got {value!r}", value
    assert check_count(7, "n") == 7  # the default minimum is 1
    with pytest.raises(InputError):
        check_count(0, "n")


def test_check_count_names_what_the_number_is_and_the_file() -> None:
    with pytest.raises(InputError) as info:
        check_count(-1, "models.m.targets", minimum=0, meaning="a class index", path="config.yaml")
    assert str(info.value) == "config.yaml: field 'models.m.targets': expected an integer >= 0 (a class index), got -1"
