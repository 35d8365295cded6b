"""Predictions from anywhere (issue #28): class names, abstentions, timm inference.py's outputs
and cleanlab's arrays as predictions files, through the pipeline's import and classwise
metrics; bad input named by file, field and rows. The timm files are written here in the
layouts of timm's inference.py (its data_dict and save_results)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise.cli import main
from classwise.errors import InputError
from classwise.logits_io import load_outputs, load_scores
from classwise.predictions_io import check_outputs_file, file_has_scores, import_outputs

N, C = 8, 4
IDS = np.array([f"img_{i}.jpg" for i in range(N)])
LABELS = np.array([0, 1, 2, 3, 0, 1, 2, 3])
NAMES = np.array(["ant", "bee", "cat", "dog"])


def _logits(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(N, C)).astype(np.float32)
    logits[np.arange(N), LABELS] += 1.5
    return logits


def _import(path: Path, tmp_path: Path, **overrides) -> Path:
    cache = tmp_path / "cache" / "clean.npz"
    arguments = dict(sample_ids=IDS, labels=LABELS, class_names=NAMES, dataset="d", cache_path=cache, metadata={})
    arguments.update(overrides)
    import_outputs(path, **arguments)
    return cache


# ------------------------------------------------------------------------------ timm layouts


def _timm_frame(outputs: np.ndarray, *, topk: int, separate: bool, output_col: str = "prob") -> pd.DataFrame:
    """timm inference.py's results frame (--include-index), from its data_dict code."""
    if topk:
        order = np.argsort(-outputs, axis=1, kind="stable")[:, :topk]
        all_indices, all_outputs = order, np.take_along_axis(outputs, order, axis=1)
    else:
        all_indices, all_outputs = None, outputs
    data_dict: dict[str, object] = {"filename": list(IDS)}
    if separate and all_outputs.shape[-1] > 1:
        if all_indices is not None:
            for i in range(all_indices.shape[-1]):
                data_dict[f"index_{i}"] = all_indices[:, i]
        for i in range(all_outputs.shape[-1]):
            data_dict[f"{output_col}_{i}"] = all_outputs[:, i]
    else:
        if all_indices is not None:
            if all_indices.shape[-1] == 1:
                all_indices = all_indices.squeeze(-1)
            data_dict["index"] = list(all_indices)
        if all_outputs.shape[-1] == 1:
            all_outputs = all_outputs.squeeze(-1)
        data_dict[output_col] = list(all_outputs)
    return pd.DataFrame(data=data_dict)


def _save_timm(frame: pd.DataFrame, path: Path, fmt: str) -> Path:
    """timm inference.py's save_results."""
    if fmt == "parquet":
        frame.set_index("filename").to_parquet(path)
    elif fmt == "json":
        frame.set_index("filename").to_json(path, indent=4, orient="index")
    elif fmt == "json-split":
        frame.to_json(path, indent=4, orient="split", index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


TIMM_LAYOUTS = [("csv", True), ("parquet", True), ("json", False), ("json-split", False), ("parquet", False)]


@pytest.mark.parametrize(("fmt", "separate"), TIMM_LAYOUTS)
def test_timm_outputs_ranking_every_class_are_the_scores_in_class_order(tmp_path: Path, fmt: str, separate: bool) -> None:
    probs = _softmax(_logits())
    suffix = ".json" if fmt.startswith("json") else f".{fmt}"
    path = _save_timm(_timm_frame(probs, topk=C, separate=separate), tmp_path / f"timm{suffix}", fmt)
    assert file_has_scores(path)
    cached = load_scores(_import(path, tmp_path))
    assert cached.kind == "probs"
    np.testing.assert_allclose(cached.scores, probs, rtol=0, atol=1e-6)  # CSV / JSON text round trip
    assert cached.sample_ids.tolist() == IDS.tolist()


@pytest.mark.parametrize(("fmt", "separate"), TIMM_LAYOUTS)
def test_timm_top_k_outputs_are_hard_top_k_predictions(tmp_path: Path, fmt: str, separate: bool) -> None:
    logits = _logits(1)
    suffix = ".json" if fmt.startswith("json") else f".{fmt}"
    path = _save_timm(_timm_frame(logits, topk=2, separate=separate, output_col="logit"), tmp_path / f"t{suffix}", fmt)
    assert not file_has_scores(path)
    cached = load_outputs(_import(path, tmp_path))
    assert cached.hard_predictions and cached.top_k == 2
    with np.load(tmp_path / "cache" / "clean.npz") as archive:
        np.testing.assert_array_equal(archive["predictions"], np.argsort(-logits, axis=1, kind="stable")[:, :2])


def test_timm_top_1_csv_has_one_index_column(tmp_path: Path) -> None:
    logits = _logits(2)
    path = _save_timm(_timm_frame(logits, topk=1, separate=True), tmp_path / "top1.csv", "csv")
    assert pd.read_csv(path).columns.tolist() == ["filename", "index", "prob"]  # timm squeezes a top-1
    with np.load(_import(path, tmp_path)) as archive:
        np.testing.assert_array_equal(archive["predictions"], logits.argmax(axis=1))


def test_timm_topk_0_gives_every_score_without_indices(tmp_path: Path) -> None:
    logits = _logits(3)
    path = _save_timm(_timm_frame(logits, topk=0, separate=True, output_col="logit"), tmp_path / "all.csv", "csv")
    cached = load_scores(_import(path, tmp_path))
    assert cached.kind == "logits"
    np.testing.assert_allclose(cached.scores, logits, rtol=1e-6)


def test_a_timm_file_of_another_class_count_is_named(tmp_path: Path) -> None:
    wider = _softmax(np.random.default_rng(4).normal(size=(N, C + 2)).astype(np.float32))
    full = _save_timm(_timm_frame(wider, topk=C + 2, separate=True), tmp_path / "six.csv", "csv")
    with pytest.raises(InputError, match=r"six\.csv: field 'logit\* / prob\*': has 6 score columns, dataset 'd' has 4 classes"):
        _import(full, tmp_path)
    top = _save_timm(_timm_frame(wider, topk=2, separate=True), tmp_path / "top.csv", "csv")
    with pytest.raises(InputError) as info:
        check_outputs_file(top, dataset="d", n_classes=C, sample_ids=IDS)
    message = str(info.value)
    assert "top.csv: field 'index*': names class" in message and "dataset 'd' has 4 classes" in message
    rows = np.flatnonzero((np.argsort(-wider, axis=1, kind="stable")[:, :2] >= C).any(axis=1))
    assert repr(str(IDS[rows[0]])) in message  # the first offending rows, by sample id


def test_a_bad_row_of_a_file_in_another_order_is_named_by_its_own_line(tmp_path: Path) -> None:
    """The predictions are checked before they are put in the dataset's order: the line is the file's."""
    frame = _timm_frame(_logits(), topk=2, separate=True, output_col="logit").iloc[::-1]
    frame.iloc[1, frame.columns.get_loc("index_1")] = 9  # data row 1: sample IDS[N - 2], line 3
    path = tmp_path / "top.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError) as info:
        _import(path, tmp_path)
    assert f"line 3, sample ids ['{IDS[N - 2]}']" in str(info.value)


def test_a_timm_file_without_its_indices_says_how_to_get_them(tmp_path: Path) -> None:
    frame = pd.DataFrame({"filename": IDS, "label_0": "ant", "label_1": "bee", "prob_0": 0.6, "prob_1": 0.3})
    frame.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(InputError, match="field 'index': .*--include-index"):
        _import(tmp_path / "t.csv", tmp_path)


# --------------------------------------------------------------------- names and abstentions


def test_names_and_indices_give_the_same_cache_and_abstentions_are_kept(tmp_path: Path) -> None:
    predictions = np.array([0, 1, -1, 3, 1, -1, 2, -1])
    by_index = pd.DataFrame({"sample_id": IDS, "prediction": predictions.astype(object)})
    by_index.loc[5, "prediction"] = "?"  # the configured token
    cells = np.where(predictions >= 0, NAMES[predictions], "").astype(object)
    cells[5] = "?"
    by_name = pd.DataFrame({"sample_id": IDS, "label": NAMES[LABELS], "prediction": cells})
    by_index.to_csv(tmp_path / "i.csv", index=False)
    by_name.to_csv(tmp_path / "n.csv", index=False)
    first = _import(tmp_path / "i.csv", tmp_path / "a", abstain="?")
    second = _import(tmp_path / "n.csv", tmp_path / "b", abstain="?")
    with np.load(first) as a, np.load(second) as b:
        np.testing.assert_array_equal(a["predictions"], predictions)
        np.testing.assert_array_equal(b["predictions"], predictions)
    assert load_outputs(first).abstained.tolist() == (predictions < 0).tolist()


def test_an_unknown_class_name_names_the_file_the_field_and_the_rows(tmp_path: Path) -> None:
    cells = NAMES[LABELS].astype(object)
    cells[[3, 6]] = "cow"
    pd.DataFrame({"sample_id": IDS, "prediction": cells}).to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(InputError) as info:
        _import(tmp_path / "p.csv", tmp_path)
    message = str(info.value)
    assert "p.csv: field 'prediction': 'cow' is no class of dataset 'd': unknown classes in lines 5, 8" in message
    assert "'img_3.jpg', 'img_6.jpg'" in message
    assert not (tmp_path / "cache").exists()


def test_a_file_of_another_dataset_s_ids_is_named(tmp_path: Path) -> None:
    other = np.array([f"other_{i}" for i in range(N)])
    pd.DataFrame({"sample_id": other, "prediction": LABELS}).to_csv(tmp_path / "o.csv", index=False)
    for check in (
        lambda: _import(tmp_path / "o.csv", tmp_path),
        lambda: check_outputs_file(tmp_path / "o.csv", dataset="d", n_classes=C, sample_ids=IDS),
    ):
        with pytest.raises(InputError) as info:
            check()
        message = str(info.value)
        assert "o.csv: field 'sample_id': 8 of the 8 samples of dataset 'd' have no row in this file" in message
        assert "'img_0.jpg'" in message and "'other_0'" in message


def test_an_npy_of_probabilities_is_the_dataset_s_samples_in_order(tmp_path: Path) -> None:
    probs = _softmax(_logits(5)).astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    np.save(tmp_path / "pyx.npy", probs)
    cached = load_scores(_import(tmp_path / "pyx.npy", tmp_path))
    np.testing.assert_array_equal(cached.scores, probs)
    np.save(tmp_path / "short.npy", probs[:-1])
    with pytest.raises(InputError, match=r"short\.npy: field 'rows': has 7 rows, dataset 'd' has 8 samples"):
        check_outputs_file(tmp_path / "short.npy", dataset="d", n_classes=C, sample_ids=IDS)


# ---------------------------------------------------------------------------------- the CLI


def _hard_csv(path: Path, seed: int, *, abstain: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.arange(40) % C
    predictions = np.where(rng.random(40) < 0.7, labels, rng.integers(0, C, 40)).astype(object)
    predictions[rng.random(40) < abstain] = ""
    pd.DataFrame({"sample_id": [f"s{i}" for i in range(40)], "label": labels, "prediction": predictions}).to_csv(
        path, index=False
    )
    return labels, np.array([-1 if p == "" else int(p) for p in predictions])


def test_the_cli_takes_many_csv_files_into_one_json_each_and_a_summary(tmp_path: Path) -> None:
    folder = tmp_path / "preds"
    folder.mkdir()
    truth = {f"m{i}": _hard_csv(folder / f"m{i}.csv", i) for i in range(3)}
    out = tmp_path / "out"
    assert main(["metrics", str(folder), "--out-dir", str(out), "--classes", str(C), "--compare", "--bootstrap", "20"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    assert summary["name"].tolist() == ["m0", "m1", "m2"]
    for name, (labels, predictions) in truth.items():
        document = json.loads((out / f"{name}.json").read_text())
        row = summary.set_index("name").loc[name]
        # reference: pandas by hand; abstentions (-1) are errors
        frame = pd.DataFrame({"y": labels, "p": predictions})
        assert document["metrics"]["A"]["value"] == pytest.approx((frame.y == frame.p).mean())
        recall = frame.assign(hit=frame.y == frame.p).groupby("y").hit.mean()
        assert document["metrics"]["WCA"]["value"] == pytest.approx(recall.min())
        assert row["A"] == pytest.approx(document["metrics"]["A"]["value"])
        assert row["coverage"] == pytest.approx((frame.p >= 0).mean())
    pairs = json.loads((out / "compare.json").read_text())["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [("m0", "m1"), ("m0", "m2"), ("m1", "m2")]
    assert "W2CA" not in pairs[0]["metrics"] and "A" in pairs[0]["metrics"]


def test_the_cli_takes_a_glob_and_a_timm_file_with_labels(tmp_path: Path) -> None:
    logits = _logits(6)
    _save_timm(_timm_frame(logits, topk=2, separate=True, output_col="logit"), tmp_path / "timm.csv", "csv")
    pd.DataFrame({"sample_id": IDS, "label": NAMES[LABELS]}).to_csv(tmp_path / "labels.csv", index=False)
    (tmp_path / "names.txt").write_text("\n".join(NAMES) + "\n")
    out = tmp_path / "m.json"
    arguments = ["--labels", str(tmp_path / "labels.csv"), "--classes", str(tmp_path / "names.txt"), "--k", "2"]
    assert main(["metrics", str(tmp_path / "ti*.csv"), "--out", str(out), *arguments]) == 0
    document = json.loads(out.read_text())
    top2 = np.argsort(-logits, axis=1, kind="stable")[:, :2]
    assert document["metrics"]["A"]["value"] == pytest.approx(np.mean(top2[:, 0] == LABELS))
    assert document["metrics"]["A@2"]["value"] == pytest.approx(np.mean((top2 == LABELS[:, None]).any(axis=1)))
    assert "W2CA" in document["skipped"] and document["class_names"] == NAMES.tolist()


def test_the_cli_reads_cleanlab_arrays_with_their_labels(tmp_path: Path) -> None:
    probs = _softmax(_logits(7)).astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    np.save(tmp_path / "pyx.npy", probs)
    np.save(tmp_path / "labels.npy", LABELS.astype(np.uint16))
    out = tmp_path / "m.json"
    assert main(["metrics", str(tmp_path / "pyx.npy"), "--labels", str(tmp_path / "labels.npy"), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["A"]["value"] == pytest.approx(np.mean(probs.argmax(axis=1) == LABELS))


def test_cli_errors_name_the_file_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(2):
        _hard_csv(tmp_path / f"m{i}.csv", i)
    out = tmp_path / "out"
    assert main(["metrics", str(tmp_path / "m0.csv"), str(tmp_path / "m1.csv")]) == 2
    assert "need --out-dir" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"sample_id": ["s0"], "label": [0], "prediction": ["cow"]}).to_csv(bad, index=False)
    assert main(["metrics", str(tmp_path / "m0.csv"), str(bad), "--out-dir", str(out)]) == 2
    assert f"{bad}: field 'prediction': gives classes by name" in capsys.readouterr().err
    assert not out.exists()
    timm = _save_timm(_timm_frame(_logits(), topk=2, separate=True), tmp_path / "timm.csv", "csv")
    assert main(["metrics", str(timm), "--out", str(tmp_path / "t.json")]) == 2
    assert f"{timm}: field 'label': gives no labels" in capsys.readouterr().err
