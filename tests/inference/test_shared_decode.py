"""Which models a job feeding several from one decode holds together
(classwise.inference.shared_decode; tests/outputs/test_kept.py: what it keeps, and
tests/inference/test_stream_overlap.py runs the job itself)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from classwise.inference.shared_decode import take_batches

# --------------------------------------------------------------------------- batches held together


def test_batches_keep_one_key_each_and_hold_at_most_size_items_worked_example() -> None:
    items = ["a1", "a2", "b1", "a3", "b2", "c1"]
    # a1 a2 reach 2: give out [a1 a2]; b1 a3 reach 2: the largest, the first of equal ones, is b;
    # a3 b2: a; b2 c1: b; c1 is left at the end
    assert list(take_batches(items, key=lambda item: item[0], size=2)) == [["a1", "a2"], ["b1"], ["a3"], ["b2"], ["c1"]]
    # room for all: one batch per key at the end, in the order the keys came
    assert list(take_batches(items, key=lambda item: item[0], size=10)) == [["a1", "a2", "a3"], ["b1", "b2"], ["c1"]]


@pytest.mark.parametrize("seed", range(20))
def test_batches_against_a_brute_force_account(seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 3, size=int(rng.integers(0, 15))).tolist()
    items = list(enumerate(keys))
    size = int(rng.integers(1, 5))
    consumed = [0]

    def counted() -> Any:
        for item in items:
            consumed[0] += 1
            yield item

    given = 0
    batches = []
    for batch in take_batches(counted(), key=lambda item: item[1], size=size):
        assert 1 <= len(batch) <= size and len({key for _, key in batch}) == 1
        assert consumed[0] - given <= size  # never more than size items held
        given += len(batch)
        batches.append(batch)
    assert sorted(item for batch in batches for item in batch) == items  # every item once
    for batch in batches:
        assert [index for index, _ in batch] == sorted(index for index, _ in batch)  # in their order
    if size == 1:
        assert batches == [[item] for item in items]
