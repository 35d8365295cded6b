"""One number, one value: every output of a finished run read again, each number with one value,
and each the value of the run's table of every number (results/metrics.parquet) wherever it
appears: the data files, the paper tables (in percent, as printed) and the explorer's page."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from classwise.outputs import record_of
from classwise.outputs.numbers import KEY, READ_FILES, READERS, conflicts, rows_of_file

#: A printed percentage has two decimals: half a unit of the last, in a fraction.
PRINTED = 0.5e-4 + 1e-12


def number_files(results: Path) -> list[Path]:
    """Every file below ``results`` that a reader of numbers reads."""
    files = []
    for path in sorted(results.rglob("*")):
        found = record_of(path.relative_to(results).as_posix()) if path.is_file() else None
        if found and found[0].name in READERS and path.name.endswith(found[0].files[READ_FILES[found[0].name]]):
            files.append(path)
    return files


def _lookup(table: pd.DataFrame) -> dict[tuple[str, ...], float]:
    keyed = table[list(KEY)].astype("string").fillna("")
    return dict(zip(map(tuple, keyed.to_numpy().tolist()), table["value"].to_numpy(dtype=np.float64)))


def _same(a: float, b: float, tolerance: float = 1e-12) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tolerance


def assert_one_value_per_number(results: Path) -> pd.DataFrame:
    """The run's table; every number of every data file read again has one value and is in the
    table with that value; the paper tables and the explorer print the table's values."""
    table = pd.read_parquet(results / "metrics.parquet")
    assert len(table), "the run's table of every number is empty"
    files = number_files(results)
    rows = pd.concat([rows_of_file(path, results) for path in files], ignore_index=True)
    disagree = conflicts(rows)
    assert disagree.empty, disagree[[*KEY, "value", "source"]].to_string()
    assert not conflicts(table).shape[0]
    values = _lookup(table)
    read = rows[list(KEY)].astype("string").fillna("")
    missing, different = [], []
    for key, value in zip(map(tuple, read.to_numpy().tolist()), rows["value"].to_numpy(dtype=np.float64)):
        if key not in values:
            missing.append(key)
        elif not _same(values[key], value):
            different.append((key, values[key], value))
    assert not missing, missing[:10]
    assert not different, different[:10]
    _assert_paper_tables(results, table)
    _assert_explorer(results, table)
    return table


def _whole(table: pd.DataFrame) -> dict[tuple[str, str, str, str, str], float]:
    """(dataset, view, model, shift, metric) -> the value over all of the evaluation's samples."""
    whole = table[table["class"].isna() & (table["samples"] == "all")]
    keys = zip(whole["dataset"], whole["label_view"], whole["model"], whole["shift"], whole["metric"])
    return dict(zip(keys, whole["value"].to_numpy(dtype=np.float64)))


def _assert_paper_tables(results: Path, table: pd.DataFrame) -> None:
    """Each cell of the worst-class tables (``93.21``, ``82.42 (1)``) prints the table's value."""
    whole = _whole(table)
    checked = 0
    for path in sorted((results / "tables").glob("*/*/*/worst_class.csv")):
        dataset, view, shift = path.relative_to(results / "tables").parts[:3]
        frame = pd.read_csv(path, dtype=str, keep_default_na=False).set_index("metric")
        for metric, row in frame.iterrows():
            for model, cell in row.items():
                number = re.match(r"-?\d+(\.\d+)?", cell)
                if number is None:
                    continue
                value = whole[(dataset, view, str(model), shift, str(metric))]
                assert abs(float(number[0]) / 100 - value) <= PRINTED, (path, metric, model, cell, value)
                checked += 1
    assert checked, "no worst-class table was read"


def _assert_explorer(results: Path, table: pd.DataFrame) -> None:
    """The explorer's models x shifts table holds the table's A and WCA, its class cells the
    per-class recall (hits / support)."""
    page = (results / "explorer.html").read_text(encoding="utf-8")
    data = json.loads(html.unescape(page.split('id="explorer-data">', 1)[1].split("</script>", 1)[0]))
    whole = _whole(table)
    per_class = table[(table["metric"] == "recall") & (table["samples"] == "all")].dropna(subset=["class"])
    recall = {
        (d, v, m, s, int(c)): x
        for d, v, m, s, c, x in zip(
            per_class["dataset"],
            per_class["label_view"],
            per_class["model"],
            per_class["shift"],
            per_class["class"],
            per_class["value"],
        )
    }
    for view in data["views"]:
        summary = view["summary"]
        for r, (s, m) in enumerate(zip(summary["shift"], summary["model"])):
            shift, model = view["shifts"][s], view["models"][m]
            for column, metric in (("accuracy", "A"), ("worst_class_accuracy", "WCA")):
                shown = summary[column][r]
                expected = whole[(view["dataset"], view["labels"], model, shift, metric)]
                assert _same(np.nan if shown is None else shown, expected), (
                    view["dataset"],
                    model,
                    shift,
                    metric,
                    shown,
                    expected,
                )
        for m, model in enumerate(view["models"]):
            for s, shift in enumerate(view["shifts"]):
                for c, (hits, support) in enumerate(zip(view["hits"][m][s], view["support"][m][s])):
                    if support:
                        expected = recall[(view["dataset"], view["labels"], model, shift, c)]
                        assert abs(hits / support - expected) <= 1e-12, (model, shift, c)
