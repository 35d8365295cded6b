"""The steps that gather a run's outputs (classwise.steps.reports.numbers_step and explorer_step)
on the metrics step's files of tiny outputs (tests/metric_files.py), each number against a count
by hand from the labels and predictions."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from metric_files import write_metric_files

from classwise.errors import InputError
from classwise.steps import reports

NAMES = ["ant", "bee", "cow"]
ABSTAINED = -1
IDS = np.array([f"x{i:02d}" for i in range(20)])
LABELS = np.arange(20) % 3
#: model -> shift -> predictions (fog_s2: m1 abstains on three samples, each an error)
PREDICTED = {
    "m1": {
        "clean": np.where(np.arange(20) % 5 == 0, (LABELS + 1) % 3, LABELS),
        "fog_s2": np.where(np.arange(20) % 4 == 1, ABSTAINED, np.where(np.arange(20) % 3 == 2, 0, LABELS)),
    },
    "m2": {
        "clean": np.where(np.arange(20) < 15, LABELS, 2),
        "fog_s2": np.zeros(20, dtype=np.int64),
    },
}


def _metric_files(out: Path, models: tuple[str, ...] = ("m1", "m2")) -> dict[str, dict[str, object]]:
    """The metrics step's files of every (model, shift) of :data:`PREDICTED` below ``out``, in the
    output directory's layout (metrics/<dataset>/<labels>/<model>/<shift>/)."""
    return {
        model: {
            shift: write_metric_files(out / "metrics" / "d" / "original" / model, shift, IDS, LABELS, predicted, NAMES)
            for shift, predicted in PREDICTED[model].items()
        }
        for model in models
    }


def _recall(labels: np.ndarray, predicted: np.ndarray) -> list[float]:
    """Each class's share of its samples predicted as it (an abstention an error)."""
    return [float(np.mean(predicted[labels == c] == c)) for c in range(len(NAMES))]


# ---------------------------------------------------------------------------- numbers_step


def _numbers(out: Path, files: list[Path]) -> tuple[Path, Path]:
    table, whole = out / "metrics.parquet", out / "metrics.csv"
    reports.numbers_step(
        files=files, shift_families={"clean": ["clean", None], "fog_s2": ["fog", 2]}, table_path=table, whole_set_path=whole
    )
    return table, whole


def _decisiveness(folder: Path, n: int, accuracy: float) -> Path:
    """A decisiveness.json beside worst_class.json: it reports the accuracy A too."""
    path = folder / "decisiveness.json"
    path.write_text(json.dumps({"n_samples": n, "accuracy": accuracy, "metrics": {}}))
    return path


def test_numbers_step_tables_every_number_of_the_files_once_as_counted_by_hand(tmp_path: Path) -> None:
    out = tmp_path / "results"
    metric = _metric_files(out, ("m1",))["m1"]
    clean = Path(metric["clean"].worst_class).parent
    agreeing = _decisiveness(clean, 20, float(np.mean(PREDICTED["m1"]["clean"] == LABELS)))  # the same A: one number
    files = [Path(f) for shift in metric.values() for f in (shift.worst_class, shift.per_class)] + [agreeing]
    table_path, whole_path = _numbers(out, files)
    table = pd.read_parquet(table_path)
    assert set(table["dataset"]) == {"d"} and set(table["label_view"]) == {"original"} and set(table["model"]) == {"m1"}
    for shift, predicted in PREDICTED["m1"].items():
        rows = table[table["shift"] == shift]
        a = rows[rows["metric"] == "A"]
        assert len(a) == 1  # worst_class.json's and decisiveness.json's A: one row
        a = a.iloc[0]
        assert a["value"] == pytest.approx(np.mean(predicted == LABELS), abs=1e-12)
        assert a["n"] == 20 and a["n_abstained"] == np.sum(predicted == ABSTAINED)
        assert a["source"] == f"metrics/d/original/m1/{shift}/worst_class.json"
        recall = rows[rows["metric"] == "recall"].sort_values("class")
        assert recall["class"].tolist() == [0, 1, 2] and recall["class_name"].tolist() == NAMES
        np.testing.assert_allclose(recall["value"].to_numpy(), _recall(LABELS, predicted), atol=1e-12)
        assert set(recall["n_abstained"]) == {np.sum(predicted == ABSTAINED)}  # filled in from the evaluation
        assert set(recall["source"]) == {f"metrics/d/original/m1/{shift}/per_class.csv"}
    assert np.sum(PREDICTED["m1"]["fog_s2"] == ABSTAINED) == 5
    families = table.drop_duplicates("shift").set_index("shift")
    assert families.loc["clean", "family"] == "clean" and np.isnan(families.loc["clean", "severity"])
    assert families.loc["fog_s2", "family"] == "fog" and families.loc["fog_s2", "severity"] == 2.0
    # the CSV: exactly the rows of the whole set (no class), with the same values
    whole = pd.read_csv(whole_path, keep_default_na=False, na_values=[""])
    assert whole["class"].isna().all()
    expected = table[table["class"].isna()]
    assert len(whole) == len(expected)
    assert dict(zip(zip(whole["shift"], whole["metric"]), whole["value"])) == pytest.approx(
        dict(zip(zip(expected["shift"], expected["metric"]), expected["value"])), nan_ok=True
    )


def test_numbers_step_refuses_two_values_of_one_number_naming_both_files_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "results"
    clean = _metric_files(out, ("m1",))["m1"]["clean"]
    other = _decisiveness(Path(clean.worst_class).parent, 20, 0.5)  # A is 0.8 in worst_class.json
    with pytest.raises(InputError, match="1 numbers have more than one value") as raised:
        _numbers(out, [Path(clean.worst_class), other])
    assert raised.value.field == "value"
    assert "worst_class.json" in str(raised.value) and "decisiveness.json" in str(raised.value)
    assert not (out / "metrics.parquet").exists() and not (out / "metrics.csv").exists()


def test_numbers_step_refuses_a_file_no_reader_knows_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "results"
    clean = _metric_files(out, ("m1",))["m1"]["clean"]
    with pytest.raises(InputError, match="no reader of numbers for this file") as raised:
        _numbers(out, [Path(clean.worst_class), Path(clean.confusion)])
    assert raised.value.path == str(clean.confusion)
    assert not (out / "metrics.parquet").exists() and not (out / "metrics.csv").exists()


def test_numbers_step_refuses_a_file_outside_the_output_directory_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "results"
    clean = _metric_files(out, ("m1",))["m1"]["clean"]
    elsewhere = tmp_path / "elsewhere" / "worst_class.json"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(Path(clean.worst_class).read_bytes())
    with pytest.raises(InputError, match="expected a file below the run's output directory") as raised:
        _numbers(out, [Path(clean.worst_class), elsewhere])
    assert raised.value.path == str(elsewhere)
    assert not (out / "metrics.parquet").exists()


# ---------------------------------------------------------------------------- explorer_step


def _view_entry(files: dict[str, dict[str, object]], labels: str = "original") -> dict[str, object]:
    """A view as the workflow passes it (classwise.pipeline.explorer.explorer_views)."""
    return {
        "dataset": "d",
        "labels": labels,
        "models": list(files),
        "shifts": list(PREDICTED["m1"]),
        "files": {
            model: {
                shift: {"per_class": str(f.per_class), "confusion": str(f.confusion), "worst_class": str(f.worst_class)}
                for shift, f in by_shift.items()
            }
            for model, by_shift in files.items()
        },
        "shift_summary": None,
    }


def _page_data(path: Path) -> dict:
    page = path.read_text(encoding="utf-8")
    return json.loads(html.unescape(page.split('id="explorer-data">', 1)[1].split("</script>", 1)[0]))


def test_explorer_step_puts_every_class_count_of_every_model_and_shift_in_the_page(tmp_path: Path) -> None:
    files = _metric_files(tmp_path / "results")
    page = tmp_path / "results" / "explorer.html"
    reports.explorer_step(
        views=[_view_entry(files)], description="A tiny run & its <classes>.", confidence=0.9, explorer_path=page, title="mini"
    )
    data = _page_data(page)
    assert data["title"] == "mini" and data["description"] == "A tiny run & its <classes>." and data["confidence"] == 0.9
    (view,) = data["views"]
    assert view["dataset"] == "d" and view["labels"] == "original" and view["classes"] == NAMES
    assert view["models"] == ["m1", "m2"] and view["shifts"] == ["clean", "fog_s2"] and view["reference"] == "clean"
    for i, model in enumerate(view["models"]):
        for j, shift in enumerate(view["shifts"]):
            predicted = PREDICTED[model][shift]
            hits = [int(np.sum((LABELS == c) & (predicted == c))) for c in range(len(NAMES))]
            assert view["support"][i][j] == np.bincount(LABELS, minlength=3).tolist()
            assert view["hits"][i][j] == hits, (model, shift)
    # the models x shifts table: worst_class.json's A of each (shift, model), no change from clean
    # without the robustness step's shift summary
    summary = view["summary"]
    for row in range(len(summary["shift"])):
        model, shift = view["models"][summary["model"][row]], view["shifts"][summary["shift"][row]]
        assert summary["accuracy"][row] == pytest.approx(np.mean(PREDICTED[model][shift] == LABELS), abs=1e-12)
        assert summary["accuracy_change"][row] is None and summary["pairing"][row] == ""
    assert not view["hasShiftSummary"]


def test_explorer_step_reads_every_view_before_writing_the_page(tmp_path: Path) -> None:
    files = _metric_files(tmp_path / "results")
    broken = _view_entry(files, labels="cleaned")
    del broken["files"]["m2"]["fog_s2"]["confusion"]
    page = tmp_path / "results" / "explorer.html"
    with pytest.raises(InputError, match="no confusion file given for model 'm2' under shift 'fog_s2'") as raised:
        reports.explorer_step(views=[_view_entry(files), broken], description="", confidence=0.95, explorer_path=page)
    assert raised.value.field is not None and "d/cleaned" in raised.value.field
    assert not page.exists()
