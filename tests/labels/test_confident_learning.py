"""Confident learning: the numpy implementation against a brute-force transcription of the
definition (plain Python loops), and against cleanlab when that optional package is installed."""

from __future__ import annotations

import numpy as np
import pytest

from classwise.errors import InputError
from classwise.labels.confident_learning import (
    cleaned_cl_labels,
    cleanlab_available,
    confident_joint,
    find_label_issues,
)

FILTERS = ["prune_by_noise_rate", "prune_by_class", "both", "confident_learning"]


def _round_row(row: list[float]) -> list[int]:
    ints = [round(x) for x in row]
    target = round(float(np.sum(row)))
    while sum(ints) != target:
        step = 1 if target > sum(ints) else -1
        # smallest remainder first when rounding down, largest first when up; exact ties (e.g.
        # three x.5 entries) are broken by numpy.argsort's default sort, as cleanlab does
        remainders = np.argsort(np.array(row) - np.array(ints, dtype=float)).tolist()
        if step > 0:
            remainders = remainders[::-1]
        for j in remainders[: abs(target - sum(ints))]:
            ints[j] += step
    return ints


def brute_force_issues(labels: list[int], probs: list[list[float]], filter_by: str, min_per_class: int = 1) -> list[bool]:
    """Confident learning (cleanlab 2.x semantics) written out directly, one sample at a time.

    Sums and means use numpy's reductions, so that floating-point near-ties (e.g. in the rounding
    of the calibrated joint) resolve as in the implementation under test."""
    n, k = len(labels), len(probs[0])
    members = {c: [i for i in range(n) if labels[i] == c] for c in range(k)}
    threshold = [max(float(np.mean([probs[i][c] for i in members[c]])) if members[c] else 2.0, 2e-6) for c in range(k)]
    joint = [[0] * k for _ in range(k)]
    off_diagonal = []
    for i in range(n):
        confident = [c for c in range(k) if probs[i][c] >= threshold[c] - 1e-6]
        if not confident:
            continue
        guess = confident[0] if len(confident) == 1 else max(range(k), key=lambda c: probs[i][c])
        joint[labels[i]][guess] += 1
        if guess != labels[i]:
            off_diagonal.append(i)
    for c in range(k):
        joint[c][c] = max(joint[c][c], 1)
    scaled = [[joint[g][t] / sum(joint[g]) * len(members[g]) for t in range(k)] for g in range(k)]
    total = float(np.sum(scaled))
    joint = [_round_row([x / total * n for x in row]) for row in scaled]
    # prune counts P[true][given]
    prune = [[float(joint[g][t]) for g in range(k)] for t in range(k)]
    for g in range(k):
        raise_by = max(prune[g][g], min_per_class) - prune[g][g]
        nonzero = max(sum(1 for t in range(k) if prune[t][g] != 0) - 1, 1)
        column = [max(prune[t][g] - raise_by / nonzero, 0.0) for t in range(k)]
        column[g] = max(prune[g][g], min_per_class)
        for t in range(k):
            prune[t][g] = int(column[t])
    flagged_rate, flagged_class = [False] * n, [False] * n
    for g in range(k):
        if len(members[g]) <= max(min_per_class, 1):
            continue
        by_p = sorted(members[g], key=lambda i: probs[i][g])
        for i in by_p[: len(members[g]) - prune[g][g]]:
            flagged_class[i] = True
        for t in range(k):
            if t != g and prune[t][g] > 0:
                by_margin = sorted(members[g], key=lambda i: probs[i][t] - probs[i][g], reverse=True)
                for i in by_margin[: prune[t][g]]:
                    flagged_rate[i] = True
    if filter_by == "confident_learning":
        flags = [i in off_diagonal for i in range(n)]
    elif filter_by == "prune_by_class":
        flags = flagged_class
    elif filter_by == "prune_by_noise_rate":
        flags = flagged_rate
    else:
        flags = [a and b for a, b in zip(flagged_rate, flagged_class)]
    for i in range(n):
        bumped = list(probs[i])
        bumped[labels[i]] += 1e-6
        if max(range(k), key=lambda c: bumped[c]) == labels[i]:
            flags[i] = False
    return flags


def _noisy_problem(seed: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k)) * rng.choice([1.0, 3.0])
    logits[np.arange(n), labels] += rng.choice([0.5, 2.0])
    if seed % 4 == 0:
        labels[labels == k - 1] = 0  # a class without samples
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    return labels, probs / probs.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("filter_by", FILTERS)
def test_matches_brute_force_definition(seed: int, filter_by: str) -> None:
    rng = np.random.default_rng(100 + seed)
    labels, probs = _noisy_problem(seed, n=int(rng.integers(30, 120)), k=int(rng.integers(2, 7)))
    min_per_class = [1, 0, 3][seed % 3]
    expected = brute_force_issues(labels.tolist(), probs.tolist(), filter_by, min_per_class)
    got = find_label_issues(labels, probs, filter_by=filter_by, min_examples_per_class=min_per_class, backend="numpy")
    assert got.tolist() == expected


@pytest.mark.skipif(not cleanlab_available(), reason="the optional cleanlab package is not installed")
@pytest.mark.parametrize("filter_by", FILTERS)
def test_matches_cleanlab(filter_by: str) -> None:
    for seed in range(20):
        labels, probs = _noisy_problem(seed, n=200, k=8)
        ours = find_label_issues(labels, probs, filter_by=filter_by, backend="numpy")
        theirs = find_label_issues(labels, probs, filter_by=filter_by, backend="cleanlab")
        np.testing.assert_array_equal(ours, theirs)


def test_flags_planted_label_errors() -> None:
    rng = np.random.default_rng(0)
    n, k = 600, 4
    truth = rng.integers(0, k, size=n)
    probs = np.full((n, k), 0.02)
    probs[np.arange(n), truth] = 0.94
    labels = truth.copy()
    flipped = rng.choice(n, size=30, replace=False)
    labels[flipped] = (truth[flipped] + 1) % k
    cleaned = cleaned_cl_labels(labels, probs, backend="numpy")
    assert set(np.flatnonzero(cleaned == -1).tolist()) == set(flipped.tolist())
    kept = cleaned != -1
    np.testing.assert_array_equal(cleaned[kept], labels[kept])
    joint, off = confident_joint(labels, probs)
    assert joint.sum() == n and sorted(off.tolist()) == sorted(flipped.tolist())


def test_rejects_bad_inputs() -> None:
    probs = np.full((3, 2), 0.5)
    with pytest.raises(InputError, match="filter_by"):
        find_label_issues([0, 1, 0], probs, filter_by="nope")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="labels"):
        find_label_issues([0, 2, 0], probs)
    with pytest.raises(InputError, match="pred_probs"):
        find_label_issues([0, 1, 0], probs * 3)
