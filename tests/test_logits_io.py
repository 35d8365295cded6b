"""The cached-logits format: round trip, determinism, validation messages, atomicity."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from classwise.errors import InputError
from classwise.logits_io import (
    ROUNDED_PROB_TOLERANCE,
    decide_score_kind,
    load_outputs,
    load_scores,
    save_logits,
    save_predictions,
    save_scores,
    sidecar_path,
    stored_kind,
    write_npz_deterministic,
)


def _example(n: int = 12, c: int = 4, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "logits": rng.normal(size=(n, c)).astype(np.float32),
        "labels": rng.integers(0, c, size=n),
        "sample_ids": np.array([f"s{i}" for i in range(n)]),
        "class_names": np.array([f"class {j}" for j in range(c)]),
    }


def test_round_trip_keeps_arrays_and_writes_sidecar(tmp_path: Path) -> None:
    example = _example()
    path = tmp_path / "clean.npz"
    save_logits(path, **example, metadata={"model": "m"})
    loaded = load_scores(path)
    assert loaded.kind == "logits"
    np.testing.assert_array_equal(loaded.scores, example["logits"])
    assert loaded.scores.dtype == np.float32
    np.testing.assert_array_equal(loaded.labels, example["labels"])
    assert loaded.labels.dtype == np.int64
    assert loaded.sample_ids.tolist() == example["sample_ids"].tolist()
    assert loaded.class_names.tolist() == example["class_names"].tolist()
    assert json.loads(sidecar_path(path).read_text()) == {"model": "m"}


def test_same_arrays_give_identical_bytes(tmp_path: Path) -> None:
    example = _example()
    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    save_logits(first, **example, metadata={})
    save_logits(second, **example, metadata={})
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_numpy_reads_the_file_without_pickles(tmp_path: Path) -> None:
    path = tmp_path / "x.npz"
    write_npz_deterministic(path, {"a": np.arange(3), "b": np.array(["x", "yy"])})
    with np.load(path, allow_pickle=False) as archive:
        assert archive["a"].tolist() == [0, 1, 2]
        assert archive["b"].tolist() == ["x", "yy"]


def test_probs_files_and_optional_arrays(tmp_path: Path) -> None:
    path = tmp_path / "p.npz"
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])
    np.savez(path, probs=probs, labels=np.array([1, 0]))
    loaded = load_scores(path)
    assert loaded.kind == "probs"
    assert loaded.class_names.tolist() == ["0", "1"]
    assert loaded.sample_ids.tolist() == ["0", "1"]


@pytest.mark.parametrize(
    ("arrays", "expected"),
    [
        ({"labels": np.array([0])}, "missing array 'logits'"),
        ({"logits": np.zeros((2, 3), np.float32)}, "missing array 'labels'"),
        ({"logits": np.zeros((2, 3), np.float32), "labels": np.array([0, 3])}, "labels must lie in [0, 3)"),
        ({"logits": np.zeros((2, 3), np.float32), "labels": np.array([0, 1, 2])}, "field 'labels'"),
        ({"logits": np.zeros((3,), np.float32), "labels": np.array([0, 1, 2])}, "2-D array"),
        ({"logits": np.zeros((2, 3), np.int32), "labels": np.array([0, 1])}, "floating-point"),
        ({"logits": np.array([[0.0, np.nan], [1.0, 2.0], [np.inf, 0.0]]), "labels": np.array([0, 1, 0])}, "rows 0, 2"),
        ({"probs": np.array([[0.5, 0.6]]), "labels": np.array([0])}, "sum to 1"),
        ({"probs": np.array([[0.5, 0.5]]), "logits": np.array([[0.5, 0.5]]), "labels": np.array([0])}, "both"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(tmp_path: Path, arrays: dict, expected: str) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(InputError) as info:
        load_scores(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)


def test_missing_and_non_npz_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_scores(tmp_path / "nope.npz")
    junk = tmp_path / "junk.npz"
    junk.write_text("not a zip")
    with pytest.raises(InputError, match="not a readable .npz"):
        load_scores(junk)


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np.lib.format, "write_array", disk_full)
    with pytest.raises(OSError, match="No space left"):
        save_logits(tmp_path / "clean.npz", **_example(), metadata={})
    assert list(tmp_path.iterdir()) == []


def test_probabilities_are_cached_as_probs_and_float64_is_kept(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(3), size=5)
    path = tmp_path / "p.npz"
    save_scores(
        path,
        scores=probs,
        kind="probs",
        labels=np.array([0, 1, 2, 0, 1]),
        sample_ids=np.array([f"s{i}" for i in range(5)]),
        class_names=np.array(["a", "b", "c"]),
        metadata={},
    )
    loaded = load_scores(path)
    assert loaded.kind == "probs"
    assert loaded.scores.dtype == np.float64
    np.testing.assert_array_equal(loaded.scores, probs)
    assert stored_kind(path) == "probs"


def _hard_example(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    predictions = np.array([2, 0, 1, 1, 3])
    labels = np.array([2, 1, 1, 0, 3])
    path = tmp_path / "hard.npz"
    save_predictions(
        path,
        predictions=predictions,
        labels=labels,
        sample_ids=np.array([f"s{i}" for i in range(5)]),
        class_names=np.array(["a", "b", "c", "d"]),
        metadata={"kind": "predictions"},
    )
    return path, predictions, labels


def test_hard_predictions_are_read_as_their_one_hot_encoding(tmp_path: Path) -> None:
    path, predictions, labels = _hard_example(tmp_path)
    assert stored_kind(path) == "predictions"
    loaded = load_outputs(path)
    assert loaded.hard_predictions
    assert loaded.scores.shape == (5, 4)
    np.testing.assert_array_equal(loaded.scores.argmax(axis=1), predictions)
    np.testing.assert_array_equal(loaded.scores.sum(axis=1), np.ones(5))
    np.testing.assert_array_equal(loaded.labels, labels)
    assert loaded.class_names.tolist() == ["a", "b", "c", "d"]
    assert not load_outputs(tmp_path / "hard.npz").extra


def test_a_reader_that_needs_scores_refuses_hard_predictions_naming_the_file(tmp_path: Path) -> None:
    path, _, _ = _hard_example(tmp_path)
    with pytest.raises(InputError, match="hard predictions only") as info:
        load_scores(path)
    assert str(path) in str(info.value)


def test_scores_files_read_the_same_with_either_reader(tmp_path: Path) -> None:
    path = tmp_path / "clean.npz"
    save_logits(path, **_example(), metadata={})
    first, second = load_scores(path), load_outputs(path)
    assert not second.hard_predictions
    np.testing.assert_array_equal(first.scores, second.scores)


@pytest.mark.parametrize(
    ("predictions", "expected"),
    [
        (np.array([0, 4, 1, 1, 1]), "predictions must lie in [0, 4): prediction 4 at data row 1 (0-based)"),
        (np.array([0.0, 1.0, 1.0, 1.0, 1.0]), "expected integer class indices"),
    ],
)
def test_bad_hard_predictions_are_refused_and_nothing_is_written(tmp_path: Path, predictions: np.ndarray, expected: str) -> None:
    path = tmp_path / "hard.npz"
    with pytest.raises(InputError) as info:
        save_predictions(
            path,
            predictions=predictions,
            labels=np.zeros(5, dtype=np.int64),
            sample_ids=np.arange(5),
            class_names=np.array(["a", "b", "c", "d"]),
            metadata={},
        )
    assert expected in str(info.value)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------- probabilities or logits, and why


def _rows(*sums: float) -> np.ndarray:
    """Non-negative rows of three scores with the given sums."""
    return np.array([[0.5 * total, 0.3 * total, 0.2 * total] for total in sums])


def test_rows_on_the_simplex_within_the_tolerance_are_probabilities_as_before() -> None:
    decision = decide_score_kind(_rows(1.0, 1.0009, 0.9991), path="p.csv")
    assert decision.kind == "probs" and decision.warning is None and not decision.renormalise
    assert decision.to_json() == {"read_as": "probabilities", "why": "every row is non-negative and sums to 1 within 0.001"}


@pytest.mark.parametrize(("path", "where"), [("p.csv", "line 3"), ("p.npy", "data row 1 (0-based)")])
def test_rounded_probabilities_are_logits_with_a_warning_naming_the_farthest_row(path: str, where: str) -> None:
    decision = decide_score_kind(_rows(1.004, 0.985, 1.01 - 1e-9), path=path)
    assert decision.kind == "logits" and not decision.renormalise
    assert decision.why == f"a row sums to 0.985 ({where}): outside the tolerance 0.001 of probabilities"
    assert decision.warning is not None
    assert decision.warning.startswith(f"{path}: the scores are read as logits")
    assert f"The farthest row, {where}, sums to 0.985" in decision.warning and "--kind probs" in decision.warning
    assert "pipeline key" in str(decide_score_kind(_rows(0.99), how_to_say_probs="the pipeline key").warning)


@pytest.mark.parametrize(
    ("scores", "why"),
    [
        (_rows(1.0, 1.0 + 2 * ROUNDED_PROB_TOLERANCE), "a row sums to 1.04 (data row 1 (0-based))"),  # too far off for rounding
        (
            np.array([[0.5, 0.6, -0.1], [0.2, 0.3, 0.5]]),
            "a score is negative (data row 0 (0-based): -0.1); probabilities are not",
        ),
        (np.array([[0.5, np.nan, 0.5], [0.2, 0.3, 0.5]]), "data row 0 (0-based) holds NaN or infinite values"),
    ],
)
def test_scores_plainly_not_probabilities_are_logits_without_a_warning(scores: np.ndarray, why: str) -> None:
    decision = decide_score_kind(scores, path="s.npz")
    assert decision.kind == "logits" and decision.warning is None and decision.why.startswith(why), decision.why


def test_asked_for_probabilities_rounded_rows_are_renormalised_and_others_refused() -> None:
    scores = _rows(1.0, 0.99, 1.0005)
    decision = decide_score_kind(scores, path="p.csv", requested="probs")
    assert decision.kind == "probs" and decision.renormalise and decision.warning is None
    assert "1 rows summing to 1 only within 0.02 renormalised (the farthest, line 3, summed to 0.99)" in decision.why
    np.testing.assert_allclose(decision.applied(scores).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert decide_score_kind(_rows(1.0), requested="probs").why == "as asked (kind 'probs')"
    assert decide_score_kind(_rows(1.0), requested="logits").kind == "logits"
    with pytest.raises(InputError) as info:
        decide_score_kind(_rows(1.0, 1.0, 1.3), path="p.npy", requested="probs")
    assert info.value.field == "kind" and "data row 2 (0-based) sums to 1.3" in str(info.value)


def test_a_file_that_says_its_kind_is_read_as_it_says_and_another_asked_kind_is_refused() -> None:
    decision = decide_score_kind(_rows(1.0), path="s.npz", stated=("logits", "its array 'logits'"))
    assert decision.to_json() == {"read_as": "logits", "why": "the file says logits (its array 'logits')"}
    assert decide_score_kind(_rows(1.0), stated=("probs", "its array 'probs'"), requested="probs").kind == "probs"
    with pytest.raises(InputError, match=r"s\.npz: field 'kind': the file says its scores are 'logits'"):
        decide_score_kind(_rows(1.0), path="s.npz", stated=("logits", "its array 'logits'"), requested="probs")


def test_loaded_files_say_how_their_scores_were_read(tmp_path: Path) -> None:
    example = _example()
    path = tmp_path / "clean.npz"
    save_logits(path, **example, metadata={})
    assert load_outputs(path).read_as.to_json() == {"read_as": "logits", "why": "the file says logits (its array 'logits')"}
    with pytest.raises(InputError, match="field 'kind'"):
        load_outputs(path, kind="probs")
    hard = tmp_path / "hard.npz"
    save_predictions(
        hard, predictions=example["labels"], **{k: v for k, v in example.items() if k not in ("logits",)}, metadata={}
    )
    assert load_outputs(hard, kind="probs").read_as.to_json()["read_as"] == "hard predictions"
