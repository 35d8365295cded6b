"""The run's table of every number (classwise.outputs.numbers): each reader against numbers
computed independently from the per-sample arrays, one value per key, and the views across
shifts reading what the metrics step wrote (an abstention an error everywhere, issue 39)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from metric_files import write_metric_files
from sklearn.metrics import precision_score, recall_score

from classwise.errors import InputError
from classwise.outputs import OUTPUTS
from classwise.outputs.numbers import COLUMNS, KEY, READ_FILES, READERS, conflicts, number_table, rows_of_file

NAMES = ["knife", "oven", "cup"]
ABSTAINED = -1


#: Records that hold numbers but no reader, and why: each is a view of numbers the table holds
#: from the file it was made from, or not a number of a model under a shift.
WITHOUT_READER = {
    "worst_class_table": "worst_class.json in percent (tests/numbers_invariant.py checks each cell)",
    "worst_class_intervals_table": "worst_class.json's values and intervals in percent",
    "decisiveness_table": "decisiveness.json, rounded",
    "decisiveness_intervals_table": "decisiveness.json's values and intervals, rounded",
    "gamma_sweep_table": "decisiveness.json's gamma sweep, rounded",
    "confusion_counts": "counts of (true, predicted) pairs: C x C per evaluation, the explorer's and figures' input",
    "label_view": "labels, not numbers",
    "cached_outputs": "a model's outputs per sample, which every number is computed from",
    "explorer": "a page of the table's numbers (tests/numbers_invariant.py checks them)",
    "numbers": "the table itself",
    "gates": "pass or fail of the table's numbers against the config's bounds",
    "image_features": "per-sample image features, the subset tests' input",
    "model_comparison_table": "differences of two models: not yet in the table",
    "model_ranking_table": "ranks of the models on the samples they share: not yet in the table",
    "class_drop_counts": "class_drops.csv's significant rows counted per class (the table holds every test)",
    "subset_tests": "the analyses' tests: not yet in the table",
    "subset_tests_all": "the analyses' tests: not yet in the table",
    "reference_tests": "the analyses' tests: not yet in the table",
    "reference_tests_summary": "the analyses' tests: not yet in the table",
    "extrapolation_table": "accuracy extrapolated to more classes: not yet in the table",
    "extrapolation_curves": "accuracy extrapolated to more classes: not yet in the table",
    "extrapolation_summary": "accuracy extrapolated to more classes: not yet in the table",
    "simulation_table": "a simulation of the extrapolation, no model's numbers",
    "targeted_success_table": "targeted attacks' success rates: not yet in the table",
    "robust_fairness_table": "robust fairness under one attack: not yet in the table",
    "transfer_matrix": "transfer attacks' accuracies: not yet in the table",
}


def test_every_record_of_numbers_has_a_reader_or_says_why_not() -> None:
    data = {name for name, record in OUTPUTS.items() if record.kind in ("data", "table")}
    assert data == set(READERS) | set(WITHOUT_READER)
    assert not set(READERS) & set(WITHOUT_READER)
    for name in READERS:
        assert READ_FILES[name] in OUTPUTS[name].files, name


def _outputs(rng: np.random.Generator, n: int, accuracy: float, abstain: float) -> tuple[np.ndarray, np.ndarray]:
    labels = rng.integers(0, len(NAMES), n)
    right = rng.random(n) < accuracy
    predicted = np.where(right, labels, rng.integers(0, len(NAMES), n))
    predicted[rng.random(n) < abstain] = ABSTAINED
    return labels, predicted


def test_the_metrics_files_read_as_pandas_counts_them_an_abstention_an_error(tmp_path: Path) -> None:
    rng = np.random.default_rng(39)
    labels, predicted = _outputs(rng, 160, 0.8, 0.05)
    ids = np.array([f"t{i:03d}" for i in range(labels.size)])
    files = write_metric_files(tmp_path / "metrics/d/original/m", "clean", ids, labels, predicted, NAMES)
    rows = pd.concat([rows_of_file(files.worst_class, tmp_path), rows_of_file(files.per_class, tmp_path)])
    assert list(rows.columns) == list(COLUMNS)
    whole = rows[rows["class"].isna()].set_index("metric")
    assert whole.loc["A", "value"] == pytest.approx(np.mean(predicted == labels))  # -1 is never a label
    assert whole.loc["A", "n"] == 160 and whole.loc["A", "n_abstained"] == np.sum(predicted == ABSTAINED) > 0
    assert whole.loc["coverage", "value"] == pytest.approx(np.mean(predicted != ABSTAINED))
    recall = recall_score(labels, predicted, labels=[0, 1, 2], average=None)
    per_class = rows[rows["metric"] == "recall"].set_index("class")
    np.testing.assert_allclose(per_class["value"].to_numpy(dtype=float), recall)
    assert whole.loc["WCA", "value"] == pytest.approx(recall.min())
    assert whole.loc["WCA", "worst"] == NAMES[int(np.argmin(recall))]
    answered = predicted != ABSTAINED
    precision = precision_score(labels[answered], predicted[answered], labels=[0, 1, 2], average=None, zero_division=np.nan)
    np.testing.assert_allclose(rows[rows["metric"] == "precision"]["value"].to_numpy(dtype=float), precision)
    assert (per_class["ci_low"] <= per_class["value"]).all() and (per_class["ci_method"] == "Clopper-Pearson (exact)").all()


def _robustness(tmp_path: Path, evaluations: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]], **options) -> Path:  # type: ignore[no-untyped-def]
    """The class-wise robustness step over the metrics step's files of ``evaluations``
    (shift -> model -> (ids, labels, predicted)), its outputs below ``tmp_path/tables/d/robustness``."""
    from classwise.steps.robustness import AcrossShiftsPaths, classwise_robustness_step

    files = {
        shift: {
            model: write_metric_files(tmp_path / "metrics/d/original" / model, shift, ids, labels, predicted, NAMES)
            for model, (ids, labels, predicted) in by_model.items()
        }
        for shift, by_model in evaluations.items()
    }
    tables, figures = tmp_path / "tables/d/robustness", tmp_path / "figures/d/robustness"
    tables.mkdir(parents=True)
    figures.mkdir(parents=True)

    def table(stem: str) -> dict[str, Path]:
        return {
            suffix: tables / f"{stem}.{extension}" for suffix, extension in (("markdown", "md"), ("csv", "csv"), ("latex", "tex"))
        }

    classwise_robustness_step(
        files=files,
        attack_shifts=[],
        title="d",
        figure_path=figures / "classwise_robustness.png",
        similarity_path=figures / "prediction_similarity.png",
        mean_confusion_dir=figures / "mean_confusion",
        table_paths=table("classwise"),
        across_shifts=AcrossShiftsPaths(
            shift_summary=table("shift_summary"),
            corruption_errors=table("corruption_errors"),
            class_shift_accuracy=tables / "class_shift_accuracy.csv",
            class_shift_cfps=tables / "class_shift_cfps.csv",
            worst_classes_figure=figures / "worst_classes_by_shift.png",
            spread_figure=figures / "accuracy_spread.png",
            severity_curves=table("severity_curves"),
            severity_figure=figures / "severity_curves.png",
        ),
        **options,
    )
    return tables


def test_the_views_across_shifts_read_the_metrics_step_s_numbers_of_a_model_that_abstains(tmp_path: Path) -> None:
    """Issue 39: the shift summary recomputed A from the confusion, which leaves the abstentions
    out (0.8679 beside worst_class.json's 0.8625); every file of the run now holds one value."""
    rng = np.random.default_rng(7)
    ids = np.array([f"t{i:03d}" for i in range(160)])
    clean = _outputs(rng, 160, 0.85, 0.05)
    contrast = (clean[0], _outputs(rng, 160, 0.6, 0.1)[1])
    subset = np.sort(rng.choice(160, 40, replace=False))
    attacked = (clean[0][subset], _outputs(rng, 40, 0.3, 0.1)[1])
    evaluations = {
        "clean": {"s01": (ids, *clean)},
        "contrast": {"s01": (ids, *contrast)},
        "attack": {"s01": (ids[subset], *attacked)},
    }
    tables = _robustness(tmp_path, evaluations, corrupted_shifts=["contrast"], severity_steps={"contrast": ["contrast", 1]})
    summary = pd.read_csv(tables / "shift_summary.csv").set_index(["shift", "model"])
    for shift, (labels, predicted) in (("clean", clean), ("contrast", contrast), ("attack", attacked)):
        assert summary.loc[(shift, "s01"), "accuracy"] == pytest.approx(np.mean(labels == predicted))
        assert summary.loc[(shift, "s01"), "n_abstained"] == np.sum(predicted == ABSTAINED)
    # clean on the attacked 40, abstentions errors there too
    assert summary.loc[("attack", "s01"), "reference_accuracy"] == pytest.approx(np.mean(clean[0][subset] == clean[1][subset]))
    assert summary.loc[("attack", "s01"), "pairing"] == "subset"
    matrix = pd.read_csv(tables / "class_shift_accuracy.csv").set_index(["model", "class"])
    np.testing.assert_allclose(
        matrix.loc["s01", "contrast"].to_numpy(), recall_score(contrast[0], contrast[1], labels=[0, 1, 2], average=None)
    )
    files = [*sorted((tmp_path / "metrics").rglob("worst_class.json")), *sorted((tmp_path / "metrics").rglob("per_class.csv"))]
    files += [
        tables / f"{stem}.csv"
        for stem in (
            "shift_summary",
            "class_shift_accuracy",
            "class_shift_cfps",
            "classwise",
            "severity_curves",
            "corruption_errors",
        )
    ]
    table = number_table([rows_of_file(path, tmp_path) for path in files])
    assert conflicts(table).empty
    a = table[(table["metric"] == "A") & (table["shift"] == "clean")].set_index("samples")
    assert a.loc["all", "value"] == pytest.approx(np.mean(clean[0] == clean[1]))
    assert a.loc["of attack", "n"] == 40 and a.loc["of attack", "value"] == pytest.approx(
        summary.loc[("attack", "s01"), "reference_accuracy"]
    )
    # the shift summary's pairing joins the metrics step's row of the same number
    row = table[(table["metric"] == "A") & (table["shift"] == "attack")].iloc[0]
    assert row["pairing"] == "subset" and row["reference_n"] == 160 and row["source"].endswith("worst_class.json")


def test_the_class_drop_tests_hold_the_recall_every_other_file_holds_on_the_same_samples(tmp_path: Path) -> None:
    """class_drops.csv's class accuracies are numbers of the table: under a shift paired on every
    clean sample both sides are per_class.csv's recall (n the evaluation's, samples all), clean on
    a subset shift's samples is the class x shift matrix's ``clean on attack`` (samples of
    attack), other images are compared with all of clean; one value each."""
    from classwise.steps.robustness import class_drops_step

    rng = np.random.default_rng(43)
    ids = np.array([f"t{i:03d}" for i in range(160)])
    clean = _outputs(rng, 160, 0.85, 0.05)
    contrast = (clean[0], _outputs(rng, 160, 0.6, 0.1)[1])
    subset = np.sort(rng.choice(160, 40, replace=False))
    attacked = (clean[0][subset], _outputs(rng, 40, 0.3, 0.1)[1])
    other = _outputs(rng, 60, 0.7, 0.0)
    evaluations = {
        "clean": {"s01": (ids, *clean)},
        "contrast": {"s01": (ids, *contrast)},
        "attack": {"s01": (ids[subset], *attacked)},
        "sketch": {"s01": (np.array([f"o{i:02d}" for i in range(60)]), *other)},
    }
    tables = _robustness(tmp_path, evaluations, unpaired_shifts=["sketch"])
    view = tmp_path / "tables/d/original/robustness"
    view.mkdir(parents=True)
    figure = tmp_path / "figures/d/original/robustness/class_drops.png"
    figure.parent.mkdir(parents=True)

    def table_paths(stem: str) -> dict[str, Path]:
        return {key: view / f"{stem}.{suffix}" for key, suffix in (("markdown", "md"), ("csv", "csv"), ("latex", "tex"))}

    class_drops_step(
        outputs={"s01": {shift: tmp_path / "metrics/d/original/s01" / shift / "outputs.npz" for shift in evaluations}},
        label_view="original",
        view_labels_path=None,
        unpaired_shifts=["sketch"],
        settings={"q": 0.05, "adjustment": "holm", "unpaired_test": "fisher", "confidence": 0.9},
        families={},
        captions={"drops": "", "counts": ""},
        title="d",
        drops_paths=table_paths("class_drops"),
        counts_paths=table_paths("class_drop_counts"),
        figure_path=figure,
    )
    drops = rows_of_file(view / "class_drops.csv", tmp_path)
    assert list(drops.columns) == list(COLUMNS)
    files = [
        *sorted((tmp_path / "metrics").rglob("per_class.csv")),
        tables / "class_shift_accuracy.csv",
        tables / "classwise.csv",
    ]
    table = number_table([*(rows_of_file(path, tmp_path) for path in files), drops])  # one value per key, or an error
    recall = table[table["metric"] == "recall"].set_index(["shift", "samples", "class"])
    assert len(recall) == len(table[table["metric"] == "recall"].drop_duplicates(list(KEY)))
    from_drops = drops[drops["metric"] == "recall"].set_index(["shift", "samples", "class"]).sort_index()
    # nothing new: every class accuracy of the tests is a number another file holds, with its n
    assert set(from_drops.index) <= set(recall[~recall["source"].str.endswith("class_drops.csv")].index)
    assert from_drops.loc[("clean", "of attack"), "n"].eq(40).all() and from_drops.loc[("sketch", "all"), "n"].eq(60).all()
    assert from_drops.loc[("clean", "all"), "n"].eq(160).all()
    change = drops[drops["metric"] == "recall_change"].set_index("shift")
    assert set(change["pairing"]) == {"same samples", "subset", "unpaired"} and (change["reference_n"] == 160).all()
    assert change.loc["attack", "samples"].eq("all").all() and change.loc["attack", "n"].eq(40).all()
    assert change["ci_method"].str.endswith(", 90 %").all() and (change["ci_low"] <= change["value"]).all()
    adjusted = drops[drops["metric"] == "recall_change_p_adjusted"]
    assert adjusted["ci_method"].eq("Holm over the model's 9 tests, q = 0.05").all()
    tests = drops[drops["metric"] == "recall_change_p_value"].set_index("shift")["ci_method"]
    assert set(tests.loc["sketch"]) == {"Fisher's exact test, two-sided"} and set(tests.loc["contrast"]) == {
        "McNemar's exact test, two-sided"
    }


def test_two_values_of_one_number_are_refused_naming_their_files() -> None:
    def row(value: float, source: str, **other: object) -> dict[str, object]:
        base = {
            "dataset": "d",
            "label_view": "original",
            "model": "m",
            "shift": "clean",
            "metric": "A",
            "n": 160,
            "samples": "all",
        }
        return {**base, **other, "value": value, "source": source}

    same = pd.DataFrame(
        [row(0.8625, "a.json"), row(0.8625, "b.csv"), row(np.nan, "c", metric="WCP"), row(np.nan, "d", metric="WCP")]
    )
    assert conflicts(same).empty
    assert len(number_table([same])) == 2
    two = pd.DataFrame([row(0.8625, "worst_class.json"), row(0.8679, "shift_summary.csv"), row(0.8679, "x", n=159)])
    assert set(conflicts(two)["source"]) == {"worst_class.json", "shift_summary.csv"}
    with pytest.raises(InputError, match="1 numbers have more than one value") as info:
        number_table([two])
    assert "shift_summary.csv" in str(info.value) and "worst_class.json" in str(info.value)
    undefined = pd.DataFrame([row(np.nan, "a"), row(0.5, "b")])
    assert len(conflicts(undefined)) == 2
    assert KEY == ("dataset", "label_view", "model", "shift", "metric", "class", "n", "samples")
