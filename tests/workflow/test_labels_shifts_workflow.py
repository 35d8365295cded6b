"""Shifts of a dataset given by its labels alone (issue 28): a ``shift_sets`` entry of family
``labels``, one labels file per shift, and models given by their predictions on each shift, run
through Snakemake itself on the issue's config shape.

The test writes every file itself: a reference set of 240 samples, a shift ``contrast_c50`` that
holds 200 of them (paired with clean on those ids), a shift ``contrast_c30`` that holds them all,
a shift ``sketch_s`` of 60 other images (unpaired), and three models (one of hard predictions,
one of probabilities, and an observer of hard predictions who sometimes answers ``na``) per
shift, each file in a shuffled row order. The numbers of ``contrast_c50`` in the cross-shift
tables are checked against pandas on the files the test wrote: accuracy, worst-class accuracy,
per-class accuracy, the clean accuracy on the same samples, the flip rate and ``n``; and every
number of the run has one value wherever it appears, the observer's abstentions errors in each
(issue 39). The class-drop tests of each shift (issue 43) are checked against scipy on the
discordant samples counted with pandas (paired shifts) and on each side's counts (the unpaired
one), the models' ranking against pandas' accuracies.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from snakemake_runner import run_snakemake as snakemake

pytestmark = pytest.mark.workflow

NAMES = ["cat", "dog", "owl", "fox"]
MODELS = ("s01", "s02", "s03")
#: The observer who sometimes answers "na": an abstention, an error of its class everywhere.
ABSTAINING = "s03"
ROBUSTNESS = Path("results/tables/contrast/robustness")
DROPS = Path("results/tables/contrast/original/robustness")
SHIFT = "contrast_c50"


def _config() -> dict:
    return {
        "datasets": {
            "contrast": {
                "source": "labels",
                "path": "contrast_c100.csv",
                "shift_sets": {
                    "contrast": {
                        "family": "labels",
                        "files": {"c50": "contrast_c50.csv", "c30": "contrast_c30.csv"},
                        "severities": {"c50": 1, "c30": 2},
                    },
                    "sketch": {"family": "labels", "files": {"s": "sketch_s.csv"}, "paired": False},
                },
            }
        },
        "models": {
            model: {
                "source": "predictions",
                "files": {
                    "clean": f"{model}_c100.csv",
                    "contrast_c50": f"{model}_c50.csv",
                    "contrast_c30": f"{model}_c30.csv",
                    "sketch_s": f"{model}_s.csv",
                },
                **({"abstain": "na"} if model == ABSTAINING else {}),
            }
            for model in MODELS
        },
        "shifts": {"clean": True},
        # only what this test checks
        "analyses": {name: {"enabled": False} for name in ("subset_tests", "reference_tests", "extrapolation")},
    }


def _write_files(workdir: Path) -> None:
    rng = np.random.default_rng(28)
    n, classes = 240, len(NAMES)
    ids = np.array([f"img-{i:04d}" for i in range(n)])
    labels = rng.integers(0, classes, n)
    pd.DataFrame({"sample_id": ids, "label": labels, "class_name": np.array(NAMES)[labels]}).to_csv(
        workdir / "contrast_c100.csv", index=False
    )
    held = {"c100": np.arange(n), "c50": np.sort(rng.choice(n, 200, replace=False)), "c30": np.arange(n)}
    for condition in ("c50", "c30"):
        rows = rng.permutation(held[condition])
        pd.DataFrame({"sample_id": ids[rows], "label": labels[rows]}).to_csv(workdir / f"contrast_{condition}.csv", index=False)
    # other images: ids of their own, compared with all of clean, unpaired
    ids = np.concatenate([ids, [f"sketch-{i:03d}" for i in range(60)]])
    labels = np.concatenate([labels, rng.integers(0, classes, 60)])
    held["s"] = np.arange(n, n + 60)
    pd.DataFrame({"sample_id": ids[held["s"]], "label": labels[held["s"]]}).to_csv(workdir / "sketch_s.csv", index=False)
    accuracy = {"c100": 0.9, "c50": 0.65, "c30": 0.45, "s": 0.7}
    for condition, rows in held.items():
        rows = rng.permutation(rows)
        right = rng.random(rows.size) < accuracy[condition]
        predicted = np.where(right, labels[rows], rng.integers(0, classes, rows.size))
        pd.DataFrame({"sample_id": ids[rows], "prediction": predicted}).to_csv(workdir / f"s01_{condition}.csv", index=False)
        answers = np.where(rng.random(rows.size) < 0.06, "na", np.array(NAMES)[predicted]).astype(object)
        pd.DataFrame({"sample_id": ids[rows], "prediction": answers}).to_csv(
            workdir / f"{ABSTAINING}_{condition}.csv", index=False
        )
        # probabilities peaked on a class that is right as often
        scores = rng.dirichlet(np.ones(classes), rows.size) * 0.5
        scores[np.arange(rows.size), np.where(rng.random(rows.size) < accuracy[condition], labels[rows], predicted)] += 0.5
        frame = pd.DataFrame(scores, columns=[f"score_{j}" for j in range(classes)])
        frame.insert(0, "sample_id", ids[rows])
        frame.to_csv(workdir / f"s02_{condition}.csv", index=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("labels_shifts")
    _write_files(workdir)
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(_config(), sort_keys=False))
    result = snakemake(workdir, configfile)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


def _predicted(workdir: Path, model: str, condition: str) -> pd.Series:
    """The model's predicted class per sample id, from the file the test wrote."""
    frame = pd.read_csv(workdir / f"{model}_{condition}.csv", dtype={"sample_id": str}).set_index("sample_id")
    if "prediction" in frame:
        return frame["prediction"]
    return pd.Series(frame.to_numpy().argmax(axis=1), index=frame.index)


def _expected(workdir: Path, model: str) -> dict:
    """The numbers of SHIFT for ``model``, by pandas on the test's own files."""
    shift_labels = pd.read_csv(workdir / "contrast_c50.csv", dtype={"sample_id": str}).set_index("sample_id")["label"]
    frame = pd.DataFrame(
        {
            "label": shift_labels,
            "shifted": _predicted(workdir, model, "c50").reindex(shift_labels.index),
            "clean": _predicted(workdir, model, "c100").reindex(shift_labels.index),
        }
    )
    per_class = (frame["shifted"] == frame["label"]).groupby(frame["label"]).mean()
    clean_per_class = (frame["clean"] == frame["label"]).groupby(frame["label"]).mean()
    return {
        "n": len(frame),
        "accuracy": float((frame["shifted"] == frame["label"]).mean()),
        "clean_accuracy": float((frame["clean"] == frame["label"]).mean()),
        "per_class": per_class,
        "wca": float(per_class.min()),
        "clean_wca": float(clean_per_class.min()),
        "worst": NAMES[int(per_class.idxmin())],
        "flip_rate": float((frame["shifted"] != frame["clean"]).mean()),
    }


@pytest.mark.parametrize("model", ["s01", "s02"])
def test_the_shift_summary_of_a_labels_shift_agrees_with_pandas(run: Path, model: str) -> None:
    summary = pd.read_csv(run / ROBUSTNESS / "shift_summary.csv").set_index(["shift", "model"])
    assert set(summary.index.get_level_values("shift")) == {"clean", "contrast_c50", "contrast_c30", "sketch_s"}
    row = summary.loc[(SHIFT, model)]
    expected = _expected(run, model)
    assert row["n"] == expected["n"] == 200 and row["reference_n"] == 240 and row["pairing"] == "subset"
    assert row["accuracy"] == pytest.approx(expected["accuracy"])
    assert row["worst_class_accuracy"] == pytest.approx(expected["wca"])
    assert row["worst_class_name"] == expected["worst"] or row["worst_class_tied"] > 1
    # the change from clean is measured on the same 200 samples, not on all 240
    assert row["reference_accuracy"] == pytest.approx(expected["clean_accuracy"])
    assert row["accuracy_change"] == pytest.approx(expected["accuracy"] - expected["clean_accuracy"])
    assert row["worst_class_accuracy_change"] == pytest.approx(expected["wca"] - expected["clean_wca"])


def test_the_class_by_shift_matrix_and_the_flip_rate_agree_with_pandas(run: Path) -> None:
    matrix = pd.read_csv(run / ROBUSTNESS / "class_shift_accuracy.csv").set_index(["model", "class"])
    tests = pd.read_csv(run / ROBUSTNESS / "transformation_tests_s01.csv").set_index("shift")
    expected = _expected(run, "s01")
    np.testing.assert_allclose(matrix.loc["s01", SHIFT].to_numpy(), expected["per_class"].sort_index().to_numpy())
    assert tests.loc[SHIFT, "n_samples"] == 200 and tests.loc["contrast_c30", "n_samples"] == 240
    assert tests.loc[SHIFT, "flip_rate"] == pytest.approx(expected["flip_rate"])
    assert tests.loc[SHIFT, "clean_accuracy"] == pytest.approx(expected["clean_accuracy"])


def test_shifts_with_a_severity_are_the_corrupted_copies_the_corruption_errors_average(run: Path) -> None:
    errors = pd.read_csv(run / ROBUSTNESS / "corruption_errors.csv").set_index(["model", "class"])
    matrix = pd.read_csv(run / ROBUSTNESS / "class_shift_accuracy.csv").set_index(["model", "class"])
    mean_error = 1 - (matrix[SHIFT] + matrix["contrast_c30"]) / 2
    np.testing.assert_allclose(errors["mean_corruption_error"].sort_index(), mean_error.sort_index())


def test_the_severity_curves_run_from_clean_along_the_configured_severities(run: Path) -> None:
    curves = pd.read_csv(run / ROBUSTNESS / "severity_curves.csv").set_index(["model", "family", "severity"])
    summary = pd.read_csv(run / ROBUSTNESS / "shift_summary.csv").set_index(["shift", "model"])
    assert sorted(curves.index) == [(model, "contrast", severity) for model in MODELS for severity in (0, 1, 2)]
    for severity, shift in ((0, "clean"), (1, "contrast_c50"), (2, "contrast_c30")):
        assert curves.loc[("s01", "contrast", severity), "shift"] == shift
        assert curves.loc[("s01", "contrast", severity), "accuracy"] == pytest.approx(summary.loc[(shift, "s01"), "accuracy"])
    assert curves.loc[("s02", "contrast", 1), "worst_class_accuracy"] == pytest.approx(_expected(run, "s02")["wca"])
    assert (run / "results/figures/contrast/robustness/severity_curves.png").stat().st_size > 0


def _answers(workdir: Path, condition: str) -> pd.DataFrame:
    """The abstaining observer's answer to each sample of ``condition`` beside its label: the
    class index, -1 for "na"."""
    labels = pd.read_csv(workdir / "contrast_c100.csv", dtype={"sample_id": str}).set_index("sample_id")["label"]
    if condition != "c100":
        labels = pd.read_csv(
            workdir / f"{'sketch' if condition == 's' else 'contrast'}_{condition}.csv", dtype={"sample_id": str}
        )
        labels = labels.set_index("sample_id")["label"]
    answers = pd.read_csv(workdir / f"{ABSTAINING}_{condition}.csv", dtype={"sample_id": str}, keep_default_na=False)
    answers = answers.set_index("sample_id")["prediction"].map({name: i for i, name in enumerate(NAMES)}).fillna(-1)
    return pd.DataFrame({"label": labels, "answer": answers.reindex(labels.index).astype(int)})


def test_every_number_of_a_study_with_abstentions_has_one_value(run: Path) -> None:
    """Issue 39: an observer who answers "na" has one accuracy per condition wherever it appears
    (the shift summary recomputed it without the abstentions), each an error: pandas on the
    files the test wrote agrees; the flip rate is over the samples answered both times."""
    from numbers_invariant import assert_one_value_per_number

    table = assert_one_value_per_number(run / "results")
    summary = pd.read_csv(run / ROBUSTNESS / "shift_summary.csv").set_index(["shift", "model"])
    for shift, condition in (("clean", "c100"), ("contrast_c50", "c50"), ("contrast_c30", "c30"), ("sketch_s", "s")):
        frame = _answers(run, condition)
        accuracy = float((frame["answer"] == frame["label"]).mean())
        per_class = (frame["answer"] == frame["label"]).groupby(frame["label"]).mean()
        row = table[
            (table["model"] == ABSTAINING) & (table["shift"] == shift) & (table["samples"] == "all") & table["class"].isna()
        ]
        numbers = row.set_index("metric")["value"]
        assert numbers["A"] == pytest.approx(accuracy) and numbers["WCA"] == pytest.approx(per_class.min())
        coverage = float((frame["answer"] >= 0).mean())
        assert numbers["coverage"] == pytest.approx(coverage) and coverage < 1
        assert summary.loc[(shift, ABSTAINING), "accuracy"] == pytest.approx(accuracy)
        assert row["n_abstained"].iloc[0] == int((frame["answer"] < 0).sum()) > 0
    assert summary.loc[("sketch_s", ABSTAINING), "pairing"] == "unpaired"
    assert summary.loc[("sketch_s", ABSTAINING), "reference_n"] == 240 and summary.loc[("sketch_s", ABSTAINING), "n"] == 60
    clean, shifted = _answers(run, "c100"), _answers(run, "c50")
    both = shifted.join(clean["answer"].rename("clean"))
    tests = pd.read_csv(run / ROBUSTNESS / f"transformation_tests_{ABSTAINING}.csv").set_index("shift")
    answered = both[(both["answer"] >= 0) & (both["clean"] >= 0)]
    assert tests.loc[SHIFT, "flip_rate_n"] == len(answered) < len(both)
    assert tests.loc[SHIFT, "flip_rate"] == pytest.approx(float((answered["answer"] != answered["clean"]).mean()))
    assert tests.loc[SHIFT, "clean_accuracy"] == pytest.approx(float((both["clean"] == both["label"]).mean()))


def _right(workdir: Path, model: str, condition: str) -> pd.DataFrame:
    """Per sample of ``condition``: its label and whether ``model`` got it right (an abstention:
    wrong), from the files the test wrote."""
    if model == ABSTAINING:
        answers = _answers(workdir, condition)
        return pd.DataFrame({"label": answers["label"], "right": answers["answer"] == answers["label"]})
    name = {"c100": "contrast_c100", "c50": "contrast_c50", "c30": "contrast_c30", "s": "sketch_s"}[condition]
    labels = pd.read_csv(workdir / f"{name}.csv", dtype={"sample_id": str}).set_index("sample_id")["label"]
    predicted = _predicted(workdir, model, condition).reindex(labels.index)
    return pd.DataFrame({"label": labels, "right": predicted == labels})


def test_the_class_drop_tests_agree_with_scipy_on_the_files_the_test_wrote(run: Path) -> None:
    from scipy.stats import binomtest, fisher_exact

    from classwise.metrics.class_drops import COLUMNS

    table = pd.read_csv(run / DROPS / "class_drops.csv", dtype={"class_name": str})
    assert list(table.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert set(table["shift"]) == {"contrast_c50", "contrast_c30", "sketch_s"} and len(table) == 3 * 3 * len(NAMES)
    for model in MODELS:
        clean = _right(run, model, "c100")
        for shift, condition, pairing in (("contrast_c50", "c50", "paired_subset"), ("contrast_c30", "c30", "paired")):
            both = _right(run, model, condition).join(clean["right"].rename("clean"))
            rows = table[(table["model"] == model) & (table["shift"] == shift)].set_index("class")
            assert (rows["pairing"] == pairing).all() and rows["n_clean"].sum() == len(both)
            for c, group in both.groupby("label"):
                lost, gained = int((group["clean"] & ~group["right"]).sum()), int((~group["clean"] & group["right"]).sum())
                expected = binomtest(lost, lost + gained, 0.5).pvalue if lost + gained else 1.0
                assert rows.loc[c, "p_value"] == pytest.approx(expected, rel=1e-9), (model, shift, c)
                assert rows.loc[c, "change"] == pytest.approx(group["right"].mean() - group["clean"].mean())
        other = _right(run, model, "s")
        rows = table[(table["model"] == model) & (table["shift"] == "sketch_s")].set_index("class")
        assert (rows["pairing"] == "unpaired").all() and (rows["test"] == "fisher_exact").all()
        for c in range(len(NAMES)):
            k, n = int(other[other["label"] == c]["right"].sum()), int((other["label"] == c).sum())
            k0, n0 = int(clean[clean["label"] == c]["right"].sum()), int((clean["label"] == c).sum())
            assert rows.loc[c, "p_value"] == pytest.approx(fisher_exact([[k, n - k], [k0, n0 - k0]]).pvalue, rel=1e-6)
        # one family per model: its 3 shifts x 4 classes, Benjamini-Hochberg at the default q
        mine = table[table["model"] == model]
        assert (mine["family_size"] == 3 * len(NAMES)).all() and (mine["adjustment"] == "bh").all() and (mine["q"] == 0.05).all()
    markdown = (run / DROPS / "class_drops.md").read_text()
    assert "Benjamini-Hochberg" in markdown and "q = 0.05" in markdown and "contrast_c50 (n = 200 of 240)" in markdown
    assert (run / DROPS / "class_drop_counts.csv").is_file()
    assert (run / "results/figures/contrast/original/robustness/class_drops.png").stat().st_size > 0
    readme = (run / "results/README.md").read_text()
    assert "`tables/contrast/original/robustness/class_drops.md`" in readme


def test_the_models_are_ranked_on_the_samples_they_share(run: Path) -> None:
    ranking = pd.read_csv(run / f"results/tables/contrast/original/{SHIFT}/model_ranking.csv")
    a = ranking[ranking["metric"] == "A"].set_index("model")
    assert set(a.index) == set(MODELS) and (a["n_samples"] == 200).all() and (a["replicates"] == 1000).all()
    for model in MODELS:
        assert a.loc[model, "value"] == pytest.approx(_right(run, model, "c50")["right"].mean())
        assert a.loc[model, "rank_low"] <= a.loc[model, "rank"] <= a.loc[model, "rank_high"]
    assert list(a.sort_values("value", ascending=False)["rank"]) == sorted(a["rank"])


def _files(root: Path) -> dict[str, bytes]:
    """Every result file below ``root`` but the logs (a job's log ends with its own timings) and
    the batches' kept copies."""
    results = root / "results"
    return {
        str(path.relative_to(results)): path.read_bytes()
        for path in sorted(results.rglob("*"))
        if path.is_file() and path.relative_to(results).parts[0] not in ("logs", "batches")
    }


def test_shift_batches_write_the_files_of_one_job_per_shift(run: Path, tmp_path: Path) -> None:
    """The run above batched the dataset's shifts (it is evaluated only on files of predictions):
    one job per model (imports, metrics) or per label view (tables, figures) over its shifts.
    The same config with one job per shift (``jobs.batch_shifts: never``) writes the same bytes,
    and each shift's job log is where its own job would have written it."""
    batch_logs = sorted(path.name for path in (run / "results/logs").iterdir() if "_batch_contrast" in path.name)
    assert batch_logs == [
        "aggregate_decisiveness_tables_batch_contrast.log",
        "aggregate_worst_class_tables_batch_contrast.log",
        "compare_models_batch_contrast.log",
        # s02 alone has scores
        "compute_decisiveness_metrics_batch_contrast_s02.log",
        *(f"compute_worst_class_metrics_batch_contrast_{model}.log" for model in MODELS),
        *(f"import_predictions_batch_contrast_{model}.log" for model in MODELS),
        "plot_class_wise_figures_batch_contrast.log",
    ]
    assert (run / "results/logs/compute_worst_class_metrics/contrast/original/s01/contrast_c50.log").exists()
    _write_files(tmp_path)
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump({**_config(), "jobs": {"batch_shifts": "never"}}, sort_keys=False))
    result = snakemake(tmp_path, configfile)
    assert result.returncode == 0, result.stderr[-4000:]
    assert not any("_batch_" in path.name for path in (tmp_path / "results/logs").iterdir())
    batched, per_shift = _files(run), _files(tmp_path)
    assert batched.keys() == per_shift.keys()
    assert [name for name in batched if batched[name] != per_shift[name]] == []


def test_a_changed_predictions_file_recomputes_its_own_shift_only(run: Path, tmp_path: Path) -> None:
    """Snakemake reruns the batches that read a changed file whole; each takes back the files of
    the shifts whose inputs and parameters are unchanged (its kept copies) and runs only the
    changed shift, so only that shift's files and the cross-shift views change."""
    import shutil

    workdir = tmp_path / "copy"
    shutil.copytree(run, workdir)  # time stamps kept: nothing to do before the change
    logs = workdir / "results/logs"
    untouched = {
        path: path.stat().st_mtime_ns
        for path in (
            logs / "import_predictions/contrast/s01/contrast_c30.log",
            logs / "compute_worst_class_metrics/contrast/original/s01/contrast_c30.log",
            logs / "import_predictions_batch_contrast_s02.log",
        )
    }
    before = _files(workdir)
    frame = pd.read_csv(workdir / "s01_c50.csv", dtype={"sample_id": str})
    frame.loc[0, "prediction"] = (frame.loc[0, "prediction"] + 1) % len(NAMES)
    frame.to_csv(workdir / "s01_c50.csv", index=False)
    result = snakemake(workdir, workdir / "config.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    assert {path: path.stat().st_mtime_ns for path in untouched} == untouched
    assert "3 of 4 shifts up to date" in (logs / "compute_worst_class_metrics_batch_contrast_s01.log").read_text()
    after = _files(workdir)
    changed = {name for name in after if after[name] != before.get(name)}
    across = ("explorer.html", "README.md", "metrics.parquet", "metrics.csv")
    per_shift = {name for name in changed if "/robustness/" not in name and name not in across}
    assert per_shift and all("contrast_c50" in name for name in per_shift)
    assert "metrics/contrast/original/s01/contrast_c50/worst_class.json" in per_shift
