"""Hard predictions (no scores) through the metric and table steps: the metrics of the confusion
matrix computed, those that need scores skipped with why, the tables saying so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise.errors import InputError
from classwise.logits_io import save_predictions, save_scores
from classwise.metrics.suite import HARD_PREDICTIONS_REASON
from classwise.steps.metrics import DecisivenessSettings, WorstClassSettings, decisiveness_step, worst_class_step
from classwise.steps.reports import worst_class_table_step

C = 4
NAMES = np.array(["ant", "bee", "cat", "dog"])


def _data(seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, C, size=n)
    probs = rng.dirichlet(np.ones(C), size=n)
    probs[np.arange(n), labels] += rng.uniform(0, 2, size=n) * (rng.random(n) < 0.7)
    return probs / probs.sum(axis=1, keepdims=True), labels


def _metrics(tmp_path: Path, cache: Path, name: str) -> dict:
    out = tmp_path / name
    out.mkdir()
    worst_class_step(
        logits_path=cache,
        label_view="original",
        view_labels_path=None,
        settings=WorstClassSettings(superclasses={"small": [0, 1], "big": [2, 3]}, k=2, n=[2, 10]),
        metrics_path=out / "worst_class.json",
        per_class_path=out / "per_class.csv",
        confusion_path=out / "confusion.csv",
    )
    return {"json": out / "worst_class.json", "per_class": out / "per_class.csv"}


def _caches(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    probs, labels = _data()
    ids = np.array([f"s{i}" for i in range(labels.size)])
    soft, hard = tmp_path / "soft.npz", tmp_path / "hard.npz"
    save_scores(soft, scores=probs, kind="probs", labels=labels, sample_ids=ids, class_names=NAMES, metadata={})
    predictions = probs.argmax(axis=1)
    save_predictions(hard, predictions=predictions, labels=labels, sample_ids=ids, class_names=NAMES, metadata={})
    return soft, hard, predictions, labels


def test_hard_predictions_give_the_metrics_of_the_confusion_matrix_and_skip_the_rest(tmp_path: Path) -> None:
    soft, hard, predictions, labels = _caches(tmp_path)
    document = json.loads(_metrics(tmp_path, hard, "hard")["json"].read_text())
    # reference: a naive loop over the classes
    recalls = [np.mean(predictions[labels == c] == c) for c in range(C)]
    precisions = [np.mean(labels[predictions == c] == c) for c in range(C)]
    errors = predictions != labels
    cfps = [np.sum(errors & (predictions == c)) / errors.sum() for c in range(C)]
    metrics = document["metrics"]
    assert metrics["A"]["value"] == pytest.approx(np.mean(predictions == labels))
    assert metrics["WCA"]["value"] == pytest.approx(min(recalls))
    assert metrics["WCA"]["classes"] == [int(np.argmin(recalls))]
    assert metrics["WCP"]["value"] == pytest.approx(min(precisions))
    assert metrics["CFPS_max"]["value"] == pytest.approx(max(cfps))
    for name in ("W2CA", "W2CA_balanced", "WSupCA", "A@2", "WCA@2", "W2CR@2"):
        assert name not in metrics
        assert document["skipped"][name] == HARD_PREDICTIONS_REASON
    assert "n = 10 >= 4 classes" in document["skipped"]["W10CR@2"]  # a trivial metric keeps its reason
    per_class = pd.read_csv(_metrics(tmp_path, hard, "again")["per_class"])
    assert per_class["top2_recall"].isna().all()
    np.testing.assert_allclose(per_class["recall"], recalls, atol=1e-6)  # the CSV has 6 decimals
    # the same predictions with scores give the same confusion metrics
    scored = json.loads(_metrics(tmp_path, soft, "soft")["json"].read_text())
    for name in ("A", "WCA", "WCP", "WSupCR", "W2CR", "CFPS_max"):
        assert scored["metrics"][name]["value"] == pytest.approx(metrics[name]["value"]), name
    assert "W2CA" in scored["metrics"] and "W2CA" not in scored["skipped"]


def test_the_decisiveness_step_refuses_hard_predictions(tmp_path: Path) -> None:
    _, hard, _, _ = _caches(tmp_path)
    with pytest.raises(InputError, match="hard predictions only"):
        decisiveness_step(
            logits_path=hard,
            label_view="original",
            view_labels_path=None,
            settings=DecisivenessSettings(gamma=0.005, gammas=[0.005], bins=5),
            metrics_path=tmp_path / "d.json",
            figure_path=tmp_path / "d.png",
            title="t",
        )
    assert not (tmp_path / "d.json").exists()


def _table(tmp_path: Path, paths: dict[str, Path]) -> tuple[pd.DataFrame, str]:
    out = {kind: tmp_path / f"table.{kind}" for kind in ("md", "csv", "tex")}
    worst_class_table_step(
        metrics_paths=paths, caption="Demo.", markdown_path=out["md"], csv_path=out["csv"], latex_path=out["tex"]
    )
    return pd.read_csv(out["csv"], index_col=0, keep_default_na=False), out["md"].read_text().split("\n\n")[0]


def test_a_table_of_a_scored_and_a_hard_model_shows_n_a_and_says_why(tmp_path: Path) -> None:
    soft, hard, _, _ = _caches(tmp_path)
    frame, caption = _table(
        tmp_path, {"soft": _metrics(tmp_path, soft, "s")["json"], "hard": _metrics(tmp_path, hard, "h")["json"]}
    )
    assert frame.loc["W2CA", "hard"] == "n/a" and frame.loc["WCA@2", "hard"] == "n/a"
    assert frame.loc["W2CA", "soft"] != "n/a"
    assert frame.loc["WCA", "hard"] == frame.loc["WCA", "soft"]
    assert f"n/a for hard: WSupCA, W2CA, A@2, WCA@2, W2CR@2 ({HARD_PREDICTIONS_REASON})." in caption


def test_a_table_of_hard_predictions_only_leaves_the_rows_out_and_says_why(tmp_path: Path) -> None:
    _, hard, _, _ = _caches(tmp_path)
    frame, caption = _table(tmp_path, {"hard": _metrics(tmp_path, hard, "h")["json"]})
    assert list(frame.index) == ["A", "WCA", "WCP", "WSupCR", "W2CR"]
    assert f"Not shown: WSupCA, W2CA, A@2, WCA@2, W2CR@2 ({HARD_PREDICTIONS_REASON})." in caption
