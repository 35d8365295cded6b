"""The class-drop tests of a dataset and label view (classwise.steps.robustness.class_drops_step,
rule test_class_drops): every (model, shift, class) against scipy on counts taken with pandas
from the arrays the test wrote, paired by sample id, unpaired for other images, an abstention an
error; the family of one adjustment is a model's shifts x classes; a label view is the metrics
step's; and the files the workflow lists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from metric_files import write_metric_files
from scipy.stats import binomtest, false_discovery_control, fisher_exact

from classwise.errors import InputError
from classwise.metrics.class_drops import COLUMNS
from classwise.steps.robustness import class_drop_table, class_drops_step

NAMES = ["knife", "oven", "cup", "owl"]
SETTINGS = {"q": 0.05, "adjustment": "bh", "unpaired_test": "fisher", "confidence": 0.95}
#: (model, shift) -> (ids, labels, predicted)
Evaluations = dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _evaluations() -> Evaluations:
    """Two models on 400 clean samples; ``fog`` holds them all and costs class 2 most of its
    accuracy, ``attack`` holds 120 of them, ``sketch`` 160 other images. ``m2`` abstains (-1)."""
    rng = np.random.default_rng(43)
    n = 400
    ids = np.array([f"t{i:04d}" for i in range(n)])
    labels = rng.integers(0, len(NAMES), n)
    subset = np.sort(rng.choice(n, 120, replace=False))
    other = np.array([f"sketch-{i:03d}" for i in range(160)])
    other_labels = rng.integers(0, len(NAMES), other.size)
    out: Evaluations = {}
    for model, abstain in (("m1", 0.0), ("m2", 0.06)):
        clean = np.where(rng.random(n) < 0.9, labels, (labels + 1) % len(NAMES))
        keep = rng.random(n) < 0.8  # a shifted outcome tied to the clean one, as in a real shift
        fog = np.where(keep, clean, np.where(rng.random(n) < 0.85, labels, (labels + 2) % len(NAMES)))
        fog[(labels == 2) & (rng.random(n) < 0.75)] = 0  # class 2 breaks under fog
        attack = np.where(rng.random(subset.size) < 0.5, labels[subset], (labels[subset] + 1) % len(NAMES))
        sketch = np.where(rng.random(other.size) < 0.8, other_labels, (other_labels + 3) % len(NAMES))
        for predicted in (clean, fog, attack, sketch):
            predicted[rng.random(predicted.size) < abstain] = -1
        out[(model, "clean")] = (ids, labels, clean)
        out[(model, "fog")] = (ids, labels, fog)
        out[(model, "attack")] = (ids[subset], labels[subset], attack)
        out[(model, "sketch")] = (other, other_labels, sketch)
    return out


def _write(root: Path, evaluations: Evaluations) -> dict[str, dict[str, Path]]:
    """The outputs files and the metrics step's files of ``evaluations`` in the workflow's
    layout below ``root``; model -> shift -> outputs file."""
    files: dict[str, dict[str, Path]] = {}
    for (model, shift), (ids, labels, predicted) in evaluations.items():
        written = write_metric_files(root / "metrics/d/original" / model, shift, ids, labels, predicted, NAMES)
        files.setdefault(model, {})[shift] = Path(written.outputs)
    return files


def _paths(root: Path, stem: str) -> dict[str, Path]:
    folder = root / "tables/d/original/robustness"
    folder.mkdir(parents=True, exist_ok=True)
    return {key: folder / f"{stem}.{suffix}" for key, suffix in (("markdown", "md"), ("csv", "csv"), ("latex", "tex"))}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Evaluations]:
    root = tmp_path_factory.mktemp("class_drops")
    evaluations = _evaluations()
    files = _write(root, evaluations)
    figure = root / "figures/d/original/robustness/class_drops.png"
    figure.parent.mkdir(parents=True)
    class_drops_step(
        outputs=files,
        label_view="original",
        view_labels_path=None,
        unpaired_shifts=["sketch"],
        settings=SETTINGS,
        families={"fog": "fog", "attack": "pgd", "sketch": "sketch"},
        captions={"drops": "Class drops on d.", "counts": "Counts on d."},
        title="d: class drops",
        drops_paths=_paths(root, "class_drops"),
        counts_paths=_paths(root, "class_drop_counts"),
        figure_path=figure,
    )
    return root, evaluations


def _table(root: Path) -> pd.DataFrame:
    return pd.read_csv(root / "tables/d/original/robustness/class_drops.csv", dtype={"class_name": str})


def _frame(evaluations: Evaluations, model: str, shift: str) -> pd.DataFrame:
    ids, labels, predicted = evaluations[(model, shift)]
    return pd.DataFrame({"label": labels, "right": predicted == labels}, index=pd.Index(ids, name="sample_id"))


def test_a_paired_shift_is_mcnemar_s_exact_test_of_the_discordant_samples(run: tuple[Path, Evaluations]) -> None:
    root, evaluations = run
    table = _table(root)
    assert list(table.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert len(table) == 2 * 3 * len(NAMES)  # models x shifts (not clean) x classes
    for model in ("m1", "m2"):
        for shift, pairing in (("fog", "paired"), ("attack", "paired_subset")):
            shifted = _frame(evaluations, model, shift)
            both = shifted.join(_frame(evaluations, model, "clean")["right"].rename("clean"), how="inner")
            rows = table[(table["model"] == model) & (table["shift"] == shift)].set_index("class")
            assert (rows["pairing"] == pairing).all()
            for c, group in both.groupby("label"):
                clean_only = int((group["clean"] & ~group["right"]).sum())
                shift_only = int((~group["clean"] & group["right"]).sum())
                expected = binomtest(clean_only, clean_only + shift_only, 0.5).pvalue if clean_only + shift_only else 1.0
                row = rows.loc[c]
                assert row["p_value"] == pytest.approx(expected, rel=1e-9), (model, shift, c)
                assert (row["clean_only_correct"], row["shift_only_correct"]) == (clean_only, shift_only)
                assert row["n_clean"] == row["n_shift"] == len(group)
                # an abstention (-1) is never right: an error of its class
                assert row["accuracy_clean"] == pytest.approx(group["clean"].mean())
                assert row["change"] == pytest.approx(group["right"].mean() - group["clean"].mean())
    fog = table[(table["model"] == "m1") & (table["shift"] == "fog")].set_index("class_name")
    assert fog.loc["cup", "significant"] and fog.loc["cup", "change"] < -0.4


def test_other_images_are_fisher_s_exact_test_against_every_clean_sample(run: tuple[Path, Evaluations]) -> None:
    root, evaluations = run
    table = _table(root)
    for model in ("m1", "m2"):
        clean, sketch = _frame(evaluations, model, "clean"), _frame(evaluations, model, "sketch")
        rows = table[(table["model"] == model) & (table["shift"] == "sketch")].set_index("class")
        assert (rows["pairing"] == "unpaired").all() and (rows["test"] == "fisher_exact").all()
        for c in range(len(NAMES)):
            k, n = int(sketch[sketch["label"] == c]["right"].sum()), int((sketch["label"] == c).sum())
            k0, n0 = int(clean[clean["label"] == c]["right"].sum()), int((clean["label"] == c).sum())
            assert rows.loc[c, "p_value"] == pytest.approx(fisher_exact([[k, n - k], [k0, n0 - k0]]).pvalue, rel=1e-6)
            assert (rows.loc[c, "n_shift"], rows.loc[c, "n_clean"]) == (n, n0)


def test_the_family_of_one_adjustment_is_a_model_s_shifts_x_classes(run: tuple[Path, Evaluations]) -> None:
    table = _table(run[0])
    for _, rows in table.groupby("model"):
        np.testing.assert_allclose(rows["p_adjusted"], false_discovery_control(rows["p_value"], method="bh"), rtol=1e-12)
        assert (rows["family_size"] == 3 * len(NAMES)).all() and (rows["significant"] == (rows["p_adjusted"] <= 0.05)).all()


def test_the_tables_list_the_significant_changes_and_say_how_they_were_found(run: tuple[Path, Evaluations]) -> None:
    root, _ = run
    table = _table(root)
    markdown = (root / "tables/d/original/robustness/class_drops.md").read_text()
    significant = table[table["significant"]]
    assert len(significant) and markdown.count("\n| m1 |") + markdown.count("\n| m2 |") == len(significant)
    assert f"{len(table)} tests" in markdown and "Paired on a subset of the clean samples: attack (n = 120 of 400)" in markdown
    assert "Unpaired, other images against every clean sample: sketch (n = 160)" in markdown
    largest = significant.sort_values("change").iloc[0]  # listed first
    assert (
        markdown.split("|:--|", 1)[1]
        .split("\n", 2)[1]
        .startswith(f"| {largest['model']} | {largest['shift']} | {largest['class_name']} |")
    )
    counts = pd.read_csv(root / "tables/d/original/robustness/class_drop_counts.csv").set_index(["model", "class_name"])
    assert counts.loc[("m1", "cup"), "n_shifts_dropped"] >= 1 and (counts["n_shifts_tested"] == 3).all()
    assert (root / "figures/d/original/robustness/class_drops.png").stat().st_size > 10_000


def test_under_a_label_view_the_samples_and_labels_are_the_metrics_step_s(tmp_path: Path) -> None:
    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    evaluations = {key: value for key, value in _evaluations().items() if key[0] == "m2" and key[1] in ("clean", "fog")}
    files = _write(tmp_path, evaluations)
    ids, labels, _ = evaluations[("m2", "clean")]
    view = np.where(np.arange(labels.size) % 7 == 0, -1, np.where(np.arange(labels.size) % 11 == 0, (labels + 1) % 4, labels))
    view_path = tmp_path / "view.csv"
    pd.DataFrame({"sample_id": ids, "label": view}).to_csv(view_path, index=False)
    table = class_drop_table(files, label_view="cleaned", view_labels_path=view_path, settings=SETTINGS)
    per_class = {}
    for shift in ("clean", "fog"):
        out = tmp_path / shift
        out.mkdir()
        worst_class_step(
            logits_path=files["m2"][shift], label_view="cleaned", view_labels_path=view_path,
            settings=WorstClassSettings(superclasses={}, k=1, n=[]),
            metrics_path=out / "w.json", per_class_path=out / "p.csv", confusion_path=out / "c.csv",
        )  # fmt: skip
        per_class[shift] = pd.read_csv(out / "p.csv")
    assert (table["pairing"] == "paired").all() and table["n_clean"].sum() == int((view >= 0).sum())
    np.testing.assert_array_equal(table["n_clean"], per_class["clean"]["support"])
    np.testing.assert_array_equal(table["accuracy_clean"], per_class["clean"]["recall"])
    np.testing.assert_array_equal(table["accuracy_shift"], per_class["fog"]["recall"])


def test_a_paired_shift_without_a_clean_sample_is_refused_naming_its_file(tmp_path: Path) -> None:
    evaluations = {key: value for key, value in _evaluations().items() if key[0] == "m1" and key[1] in ("clean", "sketch")}
    files = _write(tmp_path, evaluations)
    with pytest.raises(InputError, match="shares no sample id with clean") as error:
        class_drop_table(files, settings=SETTINGS)  # sketch not named unpaired
    assert "sketch" in str(error.value) and error.value.field == "sample_ids"
