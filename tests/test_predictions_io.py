"""A model's outputs from the user's file (classwise.predictions_io): the three formats, matching
by sample id, and the errors that name the file, the field and the ids."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise.errors import InputError
from classwise.logits_io import load_outputs, load_scores, sidecar_path
from classwise.predictions_io import file_has_scores, import_outputs, read_outputs

N, C = 8, 3
IDS = np.array([f"img-{i:02d}" for i in range(N)])
LABELS = np.array([0, 1, 2, 0, 1, 2, 0, 1])
NAMES = np.array(["cat", "dog", "eel"])


def _probs(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(C), size=N)


def _order() -> np.ndarray:
    return np.random.default_rng(1).permutation(N)


def _import(path: Path, tmp_path: Path, **overrides) -> tuple[str, Path]:
    cache = tmp_path / "cache" / "clean.npz"
    arguments = dict(sample_ids=IDS, labels=LABELS, class_names=NAMES, dataset="d", cache_path=cache, metadata={"m": 1})
    arguments.update(overrides)
    return import_outputs(path, **arguments), cache


def _scores_csv(path: Path, scores: np.ndarray, *, labels: bool = True, order: np.ndarray | None = None) -> Path:
    order = _order() if order is None else order
    frame = pd.DataFrame({"sample_id": IDS[order]})
    if labels:
        frame["label"] = LABELS[order]
    for j in range(scores.shape[1]):
        frame[f"score_{j}"] = scores[order, j]
    frame.to_csv(path, index=False)
    return path


def test_a_csv_of_probabilities_in_another_order_is_cached_in_the_dataset_s_order(tmp_path: Path) -> None:
    probs = _probs()
    kind, cache = _import(_scores_csv(tmp_path / "p.csv", probs), tmp_path)
    cached = load_scores(cache)
    assert kind == "probs" == cached.kind
    np.testing.assert_allclose(cached.scores, probs, rtol=0, atol=1e-15)  # CSV text round trip
    assert cached.sample_ids.tolist() == IDS.tolist()
    assert cached.labels.tolist() == LABELS.tolist()
    assert cached.class_names.tolist() == NAMES.tolist()
    sidecar = json.loads(sidecar_path(cache).read_text())
    assert sidecar["m"] == 1
    assert sidecar["outputs"]["format"] == "csv-scores"
    assert sidecar["outputs"]["kind"] == "probs"
    assert len(sidecar["outputs"]["sha256"]) == 64


def test_csv_scores_off_the_simplex_are_logits(tmp_path: Path) -> None:
    logits = np.log(_probs()) + 3.0
    kind, cache = _import(_scores_csv(tmp_path / "l.csv", logits, labels=False), tmp_path)
    assert kind == "logits" == load_scores(cache).kind
    np.testing.assert_allclose(load_scores(cache).scores, logits, rtol=1e-12)


@pytest.mark.parametrize("kind", ["logits", "probs"])
def test_an_npz_in_the_logits_format_keeps_its_kind(tmp_path: Path, kind: str) -> None:
    order = _order()
    scores = _probs() if kind == "probs" else np.log(_probs()).astype(np.float32)
    path = tmp_path / "s.npz"
    np.savez(path, **{kind: scores[order]}, labels=LABELS[order], sample_ids=IDS[order])
    assert _import(path, tmp_path)[0] == kind
    cached = load_scores(tmp_path / "cache" / "clean.npz")
    np.testing.assert_array_equal(cached.scores, scores)
    assert cached.scores.dtype == scores.dtype


def test_hard_predictions_from_a_csv_are_cached_without_scores(tmp_path: Path) -> None:
    predictions = np.array([0, 2, 2, 0, 1, 1, 0, 0])
    order = _order()
    path = tmp_path / "hard.csv"
    pd.DataFrame({"sample_id": IDS[order], "prediction": predictions[order]}).to_csv(path, index=False)
    assert not file_has_scores(path)
    kind, cache = _import(path, tmp_path)
    assert kind == "predictions"
    with pytest.raises(InputError, match="hard predictions only"):
        load_scores(cache)
    cached = load_outputs(cache)
    assert cached.hard_predictions
    np.testing.assert_array_equal(cached.scores.argmax(axis=1), predictions)
    np.testing.assert_array_equal(cached.labels, LABELS)


def test_hard_predictions_from_an_npz(tmp_path: Path) -> None:
    path = tmp_path / "hard.npz"
    np.savez(path, predictions=np.zeros(N, dtype=np.int64), sample_ids=IDS)
    assert not file_has_scores(path)
    assert _import(path, tmp_path)[0] == "predictions"


def test_which_files_hold_scores_is_told_from_the_header(tmp_path: Path) -> None:
    assert file_has_scores(_scores_csv(tmp_path / "p.csv", _probs()))
    path = tmp_path / "s.npz"
    np.savez(path, logits=np.zeros((N, C)), sample_ids=IDS)
    assert file_has_scores(path)


def test_missing_and_extra_ids_are_both_named(tmp_path: Path) -> None:
    frame = pd.read_csv(_scores_csv(tmp_path / "p.csv", _probs()), dtype={"sample_id": str})
    frame = frame[frame["sample_id"] != "img-03"]
    frame.loc[frame["sample_id"] == "img-05", "sample_id"] = "stranger"
    frame.to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(InputError) as info:
        _import(tmp_path / "p.csv", tmp_path)
    message = str(info.value)
    assert str(tmp_path / "p.csv") in message and "field 'sample_id'" in message
    assert "2 of the 8 samples of dataset 'd' have no row in this file" in message
    assert "'img-03'" in message and "'img-05'" in message
    assert "1 row(s) of this file name no sample of dataset 'd'" in message and "'stranger'" in message
    assert not (tmp_path / "cache").exists()


def test_a_repeated_id_is_named(tmp_path: Path) -> None:
    path = tmp_path / "hard.csv"
    pd.DataFrame({"sample_id": [*IDS, "img-04"], "prediction": [0] * (N + 1)}).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"duplicate sample ids in this file: \['img-04'\]"):
        _import(path, tmp_path)


def test_labels_that_differ_from_the_dataset_s_are_named(tmp_path: Path) -> None:
    path = _scores_csv(tmp_path / "p.csv", _probs(), order=np.arange(N))
    frame = pd.read_csv(path)
    frame.loc[2, "label"] = 0
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"field 'label': labels differ from those of dataset 'd' on 1 of 8 samples.*'img-02'"):
        _import(path, tmp_path)


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (pd.DataFrame({"sample_id": IDS, "score_0": 0.5, "score_1": 0.5}), "has 2 score columns, dataset 'd' has 3 classes"),
        (pd.DataFrame({"sample_id": IDS, "score_0": 0.5, "score_2": 0.5}), "field 'score_2': expected the columns sample_id"),
        (pd.DataFrame({"sample_id": IDS, "prediction": [0, 1, 2, 3, 0, 0, 0, 0]}), "predicted classes must lie in [0, 3)"),
        (pd.DataFrame({"sample_id": IDS, "prediction": [0.5] * N}), "field 'prediction': expected integer class indices"),
        (pd.DataFrame({"sample_id": IDS, "prediction": 0, "confidence": 1.0}), "unexpected columns ['confidence']"),
        (pd.DataFrame({"sample_id": IDS, "predictions": 0}), "named 'prediction' (singular)"),
        (pd.DataFrame({"id": IDS, "prediction": 0}), "field 'sample_id': expected a 'sample_id' column"),
        (pd.DataFrame({"sample_id": IDS, "score_0": "x", "score_1": 1.0, "score_2": 0.0}), "field 'score_0': expected numbers"),
    ],
)
def test_bad_csv_files_name_the_file_and_the_field(tmp_path: Path, frame: pd.DataFrame, expected: str) -> None:
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError) as info:
        _import(path, tmp_path)
    assert expected in str(info.value)
    assert str(path) in str(info.value)
    assert not (tmp_path / "cache").exists()


def test_an_npz_without_sample_ids_cannot_be_matched(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    np.savez(path, probs=_probs(), labels=LABELS)
    with pytest.raises(InputError, match="missing array 'sample_ids', needed to match"):
        read_outputs(path)


def test_unknown_extensions_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file does not exist"):
        file_has_scores(tmp_path / "nope.csv")
    (tmp_path / "p.json").write_text("{}")
    with pytest.raises(InputError, match=r"expected a \.npz file .* or a \.csv file"):
        read_outputs(tmp_path / "p.json")


def test_row_locations_are_a_csv_s_lines_and_other_files_0_based_data_rows() -> None:
    from classwise.validation import row_locations

    assert row_locations([0], "a.csv") == "line 2"  # the header is line 1
    assert row_locations([0, 3], "a.CSV.gz") == "lines 2, 5"
    assert row_locations([4], "a.npz") == "data row 4 (0-based)"
    assert row_locations(np.arange(12), "a.parquet", limit=3) == "data rows 0, 1, 2 and 9 more (0-based)"
    assert row_locations(np.array([1, 2]), None) == "rows 1, 2"  # an array in memory: its indices
    assert row_locations([1]) == "rows 1"


@pytest.mark.parametrize(("suffix", "where"), [(".csv", "lines 3, 6"), (".json", "data rows 1, 4 (0-based)")])
def test_rows_in_the_reader_s_messages_are_located_as_the_file_numbers_them(tmp_path: Path, suffix: str, where: str) -> None:
    classes = [[0, 1, 2]] * N
    classes[1] = classes[4] = [0, 1.5, 2]  # not class indices
    frame = pd.DataFrame({"filename": IDS, "index": classes, "prob": [list(row) for row in _probs()]})
    path = tmp_path / f"timm{suffix}"
    if suffix == ".csv":
        separate = pd.DataFrame({"filename": IDS})
        for j in range(C):
            separate[f"index_{j}"] = [row[j] for row in classes]
            separate[f"prob_{j}"] = _probs()[:, j]
        separate.to_csv(path, index=False)
    else:
        frame.set_index("filename").to_json(path, orient="index")
    with pytest.raises(InputError) as info:
        read_outputs(path)
    assert f"found other values in {where}" in str(info.value) and str(path) in str(info.value)


def test_rounded_probabilities_are_read_as_logits_as_before_with_a_warning_or_as_probabilities_when_asked(
    tmp_path: Path,
) -> None:
    rounded = np.round(_probs(), 2)
    rounded[3] = [0.33, 0.33, 0.33]  # 1/3 each, rounded: a row sums to 0.99
    path = _scores_csv(tmp_path / "rounded.csv", rounded, order=np.arange(N))
    outputs = read_outputs(path)
    assert outputs.kind == "logits" and outputs.read_as is not None and outputs.read_as.kind == "logits"
    assert "The farthest row, line 5, sums to 0.99" in str(outputs.read_as.warning)
    assert _import(path, tmp_path)[0] == "logits"  # what the pipeline caches is unchanged
    asked = read_outputs(path, kind="probs")
    assert asked.kind == "probs" and asked.read_as is not None and asked.read_as.renormalise
    np.testing.assert_allclose(asked.values, rounded / rounded.sum(axis=1, keepdims=True))


def test_every_format_says_what_its_scores_were_read_as(tmp_path: Path) -> None:
    probs = _probs()
    csv = read_outputs(_scores_csv(tmp_path / "p.csv", probs)).read_as
    assert csv is not None and csv.to_json()["read_as"] == "probabilities"
    timm = tmp_path / "timm.csv"
    pd.DataFrame({"filename": IDS, **{f"prob_{j}": probs[:, j] for j in range(C)}}).to_csv(timm, index=False)
    assert read_outputs(timm).read_as.to_json() == {"read_as": "probabilities", "why": "the file says probs (its 'prob' columns)"}
    npz = tmp_path / "s.npz"
    np.savez(npz, logits=np.log(probs), labels=LABELS, sample_ids=IDS)
    assert read_outputs(npz).read_as.why == "the file says logits (its array 'logits')"
    hard = tmp_path / "h.csv"
    pd.DataFrame({"sample_id": IDS, "prediction": LABELS}).to_csv(hard, index=False)
    assert read_outputs(hard).read_as.to_json()["read_as"] == "hard predictions"
    np.save(tmp_path / "p.npy", probs)
    assert read_outputs(tmp_path / "p.npy").read_as.kind == "probs"
