"""What a job feeding several models from one decode keeps and holds together
(classwise.inference.shared_decode): the batches of models, the fingerprints and the record, and which
cached files are stale (tests/inference/test_stream_overlap.py runs the job itself)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from classwise.inference.shared_decode import (
    RECORD,
    fingerprint,
    prune_group,
    read_group_record,
    share_file,
    stale_models,
    take_batches,
    write_group_record,
)

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


# --------------------------------------------------------------------------- what a group job keeps


def test_fingerprints_ignore_key_order_and_follow_every_value() -> None:
    base = {"model": {"a": 1, "b": [1, 2]}, "seed": 0}
    assert fingerprint(base) == fingerprint({"seed": 0, "model": {"b": [1, 2], "a": 1}})
    assert fingerprint(base) != fingerprint({**base, "seed": 1})
    assert fingerprint(base) != fingerprint({**base, "model": {"a": 1, "b": [2, 1]}})


def test_a_missing_or_unreadable_record_trusts_no_file(tmp_path: Path) -> None:
    write_group_record(tmp_path / "group" / "clean.json", "digits", "clean", {"b": "2", "a": "1"})
    assert read_group_record(tmp_path / "group" / "clean.json") == {"a": "1", "b": "2"}
    assert read_group_record(tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert read_group_record(tmp_path / "bad.json") == {}
    (tmp_path / "old.json").write_text(json.dumps({"fingerprints": ["a"]}))
    assert read_group_record(tmp_path / "old.json") == {}
    (tmp_path / "ok.json").write_text(json.dumps({"fingerprints": {"m": "f"}}))
    assert read_group_record(tmp_path / "ok.json") == {"m": "f"}


def test_stale_models_say_why_and_keep_the_rest(tmp_path: Path) -> None:
    def made(name: str, when: float) -> list[Path]:
        paths = [tmp_path / f"{name}.npz", tmp_path / f"{name}.json"]
        for path in paths:
            path.write_text(name)
            os.utime(path, (when, when))
        return paths

    weights = tmp_path / "weights.pt"
    weights.write_text("w")
    os.utime(weights, (2000, 2000))
    outputs = {
        "kept": made("kept", 3000),
        "missing": [tmp_path / "missing.npz", tmp_path / "missing.json"],
        "changed": made("changed", 3000),
        "unrecorded": made("unrecorded", 3000),
        "older": made("older", 1000),
    }
    fingerprints = {name: f"f-{name}" for name in outputs}
    recorded = {"kept": "f-kept", "changed": "f-before", "older": "f-older", "missing": "f-missing"}
    inputs = {name: [weights] for name in outputs}
    reasons = stale_models(outputs, fingerprints, recorded, inputs)
    assert set(reasons) == {"missing", "changed", "unrecorded", "older"}  # "kept" is kept
    assert reasons["missing"] == "no missing.npz, missing.json"
    assert reasons["changed"] == "made from other parameters"
    assert reasons["unrecorded"] == "not in the group's record"
    assert reasons["older"] == f"{weights} is newer"
    # one of the two files missing is enough
    (tmp_path / "kept.json").unlink()
    assert stale_models({"kept": outputs["kept"]}, fingerprints, recorded, inputs) == {"kept": "no kept.json"}


def test_a_shared_file_is_the_same_bytes_survives_the_source_and_replaces_the_target(tmp_path: Path) -> None:
    source, target = tmp_path / "a" / "x.npz", tmp_path / "b" / "x.npz"
    source.parent.mkdir()
    source.write_bytes(b"logits")
    share_file(source, target)
    assert target.read_bytes() == b"logits" and os.stat(target).st_ino == os.stat(source).st_ino  # a link here
    source.unlink()  # Snakemake removes the output: the group's copy stays
    assert target.read_bytes() == b"logits"
    other = tmp_path / "other.npz"
    other.write_bytes(b"new")
    share_file(other, target)
    assert target.read_bytes() == b"new" and sorted(p.name for p in target.parent.iterdir()) == ["x.npz"]


def test_pruning_a_group_leaves_its_models_files_and_record(tmp_path: Path) -> None:
    for name in ["a.npz", "a.json", "gone.npz", "gone.json", RECORD, ".a.npz.12.tmp"]:
        (tmp_path / name).write_text(name)
    prune_group(tmp_path, ["a"])
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["a.npz", "a.json", RECORD])
