"""The analysis steps (classwise.steps.testsuites, classwise.steps.extrapolation) on synthetic
logits files, and the schema of the `analyses:` config section."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from paths import REPO

from classwise.errors import InputError
from classwise.logits_io import save_logits
from classwise.plots.extrapolation import extrapolation_figure
from classwise.steps import extrapolation as extrapolation_steps
from classwise.steps import testsuites as testsuite_steps
from classwise.steps.extrapolation import ExtrapolationSettings, SimulationSettings
from classwise.steps.testsuites import ReferenceTestSettings
from classwise.testsuites.features import read_features

SCHEMA = REPO / "workflow" / "schemas" / "analyses.schema.yaml"
N, C = 240, 6


def _logits(seed: int, signal: float, n: int = N, c: int = C) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % c
    logits = rng.normal(size=(n, c))
    logits[np.arange(n), labels] += signal
    return logits.astype(np.float32), labels


def _save(path: Path, seed: int, signal: float) -> Path:
    logits, labels = _logits(seed, signal)
    save_logits(
        path,
        logits=logits,
        labels=labels,
        sample_ids=np.array([f"s{i:04d}" for i in range(N)]),
        class_names=np.array([f"c{j}" for j in range(C)]),
        metadata={"test": True},
    )
    return path


def _outputs(directory: Path, name: str) -> dict[str, Path]:
    return {
        "markdown_path": directory / f"{name}.md",
        "csv_path": directory / f"{name}.csv",
        "latex_path": directory / f"{name}.tex",
    }


def _features(path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "sample_id": [f"s{i:04d}" for i in range(N)][::-1],  # another order than the logits
            "brightness": rng.random(N),
            "height": 8,  # constant: cannot be split
            "group": rng.choice(["a", "b"], N),
        }
    )
    frame.to_csv(path, index=False)
    return path


SUBSET_OPTIONS = {
    "features": None,
    "auc_ovo_max_classes": 100,
    "categorical": [],
    "metrics": ["accuracy", "macro_f1", "average_uncertainty"],
    "n_quantiles": 3,
    "n_resamples": 49,
    "alpha": 0.05,
    "min_effect": 0.0,
    "correction": "holm",
    "min_subset_size": 20,
    "label_set": "present",
}


# ---------------------------------------------------------------------------- schema
def _validated(section: dict) -> dict:
    from snakemake.utils import validate

    validate(section, str(SCHEMA))
    return section


def test_schema_defaults_follow_the_libraries() -> None:
    from classwise.extrapolation.methods import METHODS
    from classwise.extrapolation.simulation import PAPER_K1, PAPER_K2
    from classwise.testsuites.classification import SUBSET_METRICS
    from classwise.testsuites.reference import DEFAULT_THRESHOLDS

    config = _validated({})
    assert config["label_views"] == ["original"]
    assert config["reference_tests"]["thresholds"] == DEFAULT_THRESHOLDS
    assert config["subset_tests"]["metrics"] == list(SUBSET_METRICS)
    assert config["extrapolation"]["methods"] == list(METHODS)
    assert config["simulation"]["methods"] == list(METHODS)
    assert config["extrapolation"]["k1"] == 5  # half the demo's 10 classes
    assert config["extrapolation"]["k2"] is None  # all the classes
    assert _validated({"extrapolation": {"k1": [10, 20], "k2": 100}})["extrapolation"]["k1"] == [10, 20]
    schema = yaml.safe_load(SCHEMA.read_text())
    described = schema["properties"]["simulation"]["description"]
    assert f"k1 = [{PAPER_K1[0]}, {PAPER_K1[1]}], k2 = {PAPER_K2}" in described  # the paper's setting


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"extrapolation": {"k_one": 5}}, "k_one"),
        ({"extrapolation": {"k1": [10, 1]}}, "less than the minimum of 2"),
        ({"extrapolation": {"k1": []}}, "should be non-empty"),
        ({"extrapolation": {"k2": 2}}, "less than the minimum of 3"),
        ({"subset_tests": {"correction": "bonferroni"}}, "bonferroni"),
        ({"reference_tests": {"thresholds": {"acuracy": {"absolute": 0.9}}}}, "acuracy"),
        ({"simulation": {"k2": "2000"}}, "2000"),
        # renamed average_uncertainty: the old name read as the opposite of mean(1 - max p)
        ({"subset_tests": {"metrics": ["accuracy", "average_confidence"]}}, "average_confidence"),
        ({"reference_tests": {"thresholds": {"average_confidence": {"absolute": 0.5}}}}, "average_confidence"),
    ],
)
def test_schema_rejects_unknown_keys_and_wrong_values(section: dict, expected: str) -> None:
    from snakemake.exceptions import WorkflowError

    with pytest.raises(WorkflowError, match=expected):
        _validated(section)


def test_partial_thresholds_keep_the_other_defaults() -> None:
    from classwise.testsuites.reference import resolve_thresholds

    config = _validated({"reference_tests": {"thresholds": {"accuracy": {"absolute": 0.9}}}})
    limits = resolve_thresholds(config["reference_tests"]["thresholds"])
    assert limits["accuracy"] == {"absolute": 0.9, "degradation": 0.1}


# ---------------------------------------------------------------------------- features
def test_image_features_of_an_in_memory_set_with_metadata(tmp_path: Path) -> None:
    from classwise.data.sources import open_split
    from classwise.testsuites.features import image_features

    dataset = {"source": "sklearn_digits", "test_fraction": 0.5, "split_seed": 0}
    evaluation = open_split(dataset, "test", name="digits")
    metadata = tmp_path / "meta.csv"
    pd.DataFrame({"sample_id": evaluation.sample_ids[::-1], "source": "x", "score": 1.5}).to_csv(metadata, index=False)
    out = tmp_path / "features.csv"
    testsuite_steps.image_features_step(
        dataset_name="digits", dataset_cfg=dataset, metadata_path=metadata, batch_size=100, features_path=out
    )
    frame = read_features(out)
    expected = image_features(evaluation.images, sample_ids=evaluation.sample_ids)
    assert list(frame.columns) == [*expected.columns, "source", "score"]
    pd.testing.assert_frame_equal(frame[expected.columns], expected, check_dtype=False, rtol=1e-12)
    assert (frame["source"] == "x").all()

    pd.DataFrame({"sample_id": evaluation.sample_ids, "contrast": 0.0}).to_csv(metadata, index=False)
    with pytest.raises(InputError, match="contrast"):
        testsuite_steps.image_features_step(
            dataset_name="digits", dataset_cfg=dataset, metadata_path=metadata, batch_size=100, features_path=tmp_path / "x.csv"
        )
    assert not (tmp_path / "x.csv").exists()


def test_image_features_of_image_files_use_their_original_size(tmp_path: Path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    sizes = {"cat/a.png": (12, 20), "cat/b.png": (30, 10), "dog/c.png": (16, 16)}
    for name, (height, width) in sizes.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(tmp_path / name)
    out = tmp_path / "features.csv"
    testsuite_steps.image_features_step(
        dataset_name="files",
        dataset_cfg={"source": "image_folder", "root": str(tmp_path)},
        metadata_path=None,
        batch_size=2,
        features_path=out,
        threads=2,
    )
    frame = read_features(out).set_index("sample_id")
    assert "saturation" in frame.columns  # colour images
    for name, (height, width) in sizes.items():
        assert (frame.loc[name, "height"], frame.loc[name, "width"]) == (height, width)
        assert frame.loc[name, "aspect_ratio"] == pytest.approx(width / height)
    assert frame["brightness"].between(0, 1).all()


# ---------------------------------------------------------------------------- subset tests
def test_subset_tests_match_the_library_and_skip_constant_features(tmp_path: Path) -> None:
    from classwise.testsuites.subsets import SubsetSplit, SubsetTestOptions, subset_performance_tests, worst_subsets

    logits = _save(tmp_path / "clean.npz", 0, 2.0)
    features = _features(tmp_path / "features.csv")
    outputs = _outputs(tmp_path, "subset_tests")
    testsuite_steps.subset_tests_step(
        logits_path=logits,
        label_view="original",
        view_labels_path=None,
        features_path=features,
        options=SUBSET_OPTIONS,
        seed=3,
        caption="Subset tests.",
        rows_path=tmp_path / "all.csv",
        **outputs,
    )
    scores, labels = _logits(0, 2.0)
    frame = pd.read_csv(features).set_index("sample_id").loc[[f"s{i:04d}" for i in range(N)]].reset_index()
    expected = subset_performance_tests(
        scores,
        labels,
        frame[["sample_id", "brightness", "group"]],
        split=SubsetSplit(n_quantiles=3),
        options=SubsetTestOptions(metrics=SUBSET_OPTIONS["metrics"], n_resamples=49, seed=3),
    )
    rows = pd.read_csv(tmp_path / "all.csv", keep_default_na=False, na_values=[""])
    assert rows["feature"].unique().tolist() == ["brightness", "group"]  # height is constant
    np.testing.assert_allclose(rows["p_adjusted"], expected["p_adjusted"], rtol=1e-12)
    assert rows["status"].tolist() == expected["status"].tolist()
    worst = worst_subsets(expected)
    table = pd.read_csv(outputs["csv_path"], keep_default_na=False)
    assert list(zip(table["feature"], table["metric"])) == list(zip(worst["feature"], worst["metric"]))
    markdown = outputs["markdown_path"].read_text()
    assert markdown.startswith("Subset tests.\n\n| feature | metric | worst subset |")
    assert markdown.count("\n| brightness |") == 3


def test_subset_tests_under_a_label_view_use_its_samples(tmp_path: Path) -> None:
    logits = _save(tmp_path / "clean.npz", 0, 2.0)
    view = tmp_path / "view.csv"
    _, labels = _logits(0, 2.0)
    view_labels = np.where(np.arange(N) % 4 == 0, -1, labels)
    pd.DataFrame({"sample_id": [f"s{i:04d}" for i in range(N)], "label": view_labels}).to_csv(view, index=False)
    outputs = _outputs(tmp_path, "subset_tests")
    testsuite_steps.subset_tests_step(
        logits_path=logits,
        label_view="cleaned",
        view_labels_path=view,
        features_path=_features(tmp_path / "f.csv"),
        options=dict(SUBSET_OPTIONS, features=["group"], metrics=["accuracy", "auc_ovo"], auc_ovo_max_classes=C - 1),
        seed=0,
        caption="c",
        rows_path=tmp_path / "all.csv",
        **outputs,
    )
    rows = pd.read_csv(tmp_path / "all.csv")
    assert rows.groupby("subset")["n"].first().sum() == N - N // 4  # the removed samples are left out
    assert rows["feature"].unique().tolist() == ["group"]
    assert rows["metric"].unique().tolist() == ["accuracy"]  # auc_ovo left out: more than C - 1 classes


def test_subset_tests_name_unknown_features(tmp_path: Path) -> None:
    logits = _save(tmp_path / "clean.npz", 0, 2.0)
    features = _features(tmp_path / "features.csv")
    for options, field in [
        (dict(SUBSET_OPTIONS, features=["brightnes"]), "analyses.subset_tests.features"),
        (dict(SUBSET_OPTIONS, categorical=["hight"]), "analyses.subset_tests.categorical"),
    ]:
        with pytest.raises(InputError, match=field):
            testsuite_steps.subset_tests_step(
                logits_path=logits,
                label_view="original",
                view_labels_path=None,
                features_path=features,
                options=options,
                seed=0,
                caption="c",
                rows_path=tmp_path / "all.csv",
                **_outputs(tmp_path, "t"),
            )
    short = tmp_path / "short.csv"
    pd.read_csv(features).iloc[:10].to_csv(short, index=False)
    with pytest.raises(InputError, match="have no features"):
        testsuite_steps.subset_tests_step(
            logits_path=logits,
            label_view="original",
            view_labels_path=None,
            features_path=short,
            options=SUBSET_OPTIONS,
            seed=0,
            caption="c",
            rows_path=tmp_path / "all.csv",
            **_outputs(tmp_path, "t"),
        )


# ---------------------------------------------------------------------------- reference tests
def test_reference_reports_and_summary_match_the_library(tmp_path: Path) -> None:
    from classwise.testsuites.reference import ReferenceTestOptions, reference_report, summarise_reports

    paths, expected = {}, []
    for model, signal in (("good", 4.0), ("weak", 1.5)):
        logits_paths = {
            "clean": _save(tmp_path / f"{model}_clean.npz", 0, signal),
            "noise": _save(tmp_path / f"{model}_noise.npz", 1, signal / 3),
        }
        outputs = _outputs(tmp_path, f"reference_{model}")
        testsuite_steps.reference_tests_step(
            logits_paths=logits_paths,
            label_view="original",
            view_labels_path=None,
            settings=ReferenceTestSettings(
                reference="clean", thresholds={"accuracy": {"absolute": 0.6}}, n_bins=10, min_bin_count=10, label_set="present"
            ),
            dataset="synthetic",
            model=model,
            caption="Report.",
            **outputs,
        )
        sets = {shift: _logits(seed, s) for shift, seed, s in (("clean", 0, signal), ("noise", 1, signal / 3))}
        report = reference_report(
            sets, options=ReferenceTestOptions(thresholds={"accuracy": {"absolute": 0.6}}), dataset="synthetic", model=model
        )
        expected.append(report)
        written = testsuite_steps.read_report(outputs["csv_path"])
        assert list(written.columns) == list(report.columns)
        np.testing.assert_allclose(written["evaluation_value"], report["evaluation_value"], rtol=1e-12)
        assert written["status"].tolist() == report["status"].tolist()
        assert "| noise | atc |" in outputs["markdown_path"].read_text()
        paths[model] = outputs["csv_path"]
    outputs = _outputs(tmp_path, "summary")
    testsuite_steps.reference_summary_step(report_paths=paths, caption="Summary.", **outputs)
    summary = pd.read_csv(outputs["csv_path"], keep_default_na=False)
    reference = summarise_reports(expected, by=("model",))
    assert summary["model"].tolist() == ["good", "weak"]
    assert summary["status"].tolist() == reference["status"].tolist()
    assert summary["failed"].tolist() == reference["failed"].tolist()
    assert "fail" in summary["status"].tolist()  # the weak model under noise falls below 0.6


# ---------------------------------------------------------------------------- extrapolation
def test_extrapolation_step_matches_the_library(tmp_path: Path) -> None:
    from classwise.extrapolation.simulation import MethodComparison, evaluate_methods

    logits = _save(tmp_path / "clean.npz", 0, 1.5)
    outputs = _outputs(tmp_path, "extrapolation")
    progress = io.StringIO()  # the rule passes its log file
    extrapolation_steps.extrapolation_step(
        logits_path=logits,
        label_view="original",
        view_labels_path=None,
        settings=ExtrapolationSettings(
            k1=3,
            repetitions=2,
            methods=("naive", "kde", "cleanex"),
            cleanex_max_steps=3,
            cleanex_tolerance=0.01,
            cleanex_patience=100,
            ties="random",
            device="cpu",
            seed=1,
        ),
        title="t",
        caption="Extrapolation.",
        curves_path=tmp_path / "curves.csv",
        figure_path=tmp_path / "figure.png",
        **outputs,
        progress=progress,
    )
    assert progress.getvalue().count("CleaneX fit: 100%") == 2  # one finished bar per repetition
    scores, labels = _logits(0, 1.5)
    evaluation = evaluate_methods(scores, labels, 3, C, MethodComparison(repetitions=2, seed=1, methods=("naive", "kde")))
    table = pd.read_csv(outputs["csv_path"], index_col="method")
    assert table.index.tolist() == ["naive", "kde", "cleanex"]
    expected = evaluation.summary().set_index("method")
    np.testing.assert_allclose(table.loc[["naive", "kde"], "rmse_mean"], expected["rmse_mean"], rtol=1e-12)
    assert (table["k_max"] == C).all() and (table["k1"] == 3).all()
    curves = pd.read_csv(tmp_path / "curves.csv", keep_default_na=False)
    predicted = curves[(curves["curve"] == "predicted") & (curves["method"] == "kde") & (curves["repetition"] == 1)]
    np.testing.assert_allclose(predicted["accuracy"], evaluation.predicted["kde"][1], rtol=1e-12)
    assert len(curves[curves["curve"] == "observed"]) == 2 * 2  # k = 2..k1, two repetitions
    assert (tmp_path / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert outputs["markdown_path"].read_text().count("\n| ") == 4  # header + 3 methods

    # Figure 3 E in the table: each method's RMSE ratio to CleaneX's, from the curves by hand
    true = curves[curves["curve"] == "true"]["accuracy"].to_numpy()

    def rmse(method: str, rep: int) -> float:
        rows = curves[(curves["curve"] == "predicted") & (curves["method"] == method) & (curves["repetition"] == rep)]
        return float(np.sqrt(np.mean((rows["accuracy"].to_numpy() - true) ** 2)))

    for method in ("naive", "kde"):
        ratios = [rmse(method, rep) / rmse("cleanex", rep) for rep in range(2)]
        assert table.loc[method, "ratio_to_cleanex_median"] == pytest.approx(np.median(ratios), rel=1e-9)
        assert table.loc[method, "cleanex_wins"] == pytest.approx(np.mean([r > 1 for r in ratios]))
    assert np.isnan(table.loc["cleanex", "ratio_to_cleanex_median"])
    assert "CleaneX wins" in outputs["markdown_path"].read_text()

    summary = _outputs(tmp_path, "summary")
    extrapolation_steps.extrapolation_summary_step(
        table_paths={"m1": outputs["csv_path"], "m2": outputs["csv_path"]}, caption="S.", **summary
    )
    frame = pd.read_csv(summary["csv_path"], index_col="method")
    assert list(frame.columns) == ["k1", "m1", "m2"] and (frame["k1"] == 3).all()
    np.testing.assert_allclose(frame["m1"], table["rmse_mean"], rtol=1e-12)
    assert "±" in summary["markdown_path"].read_text()


def _extrapolate(directory: Path, logits: Path, **settings: object) -> dict[str, Path]:
    outputs = {
        **_outputs(directory, "extrapolation"),
        "curves_path": directory / "curves.csv",
        "figure_path": directory / "figure.png",
    }
    options = {
        "repetitions": 3,
        "methods": ["naive", "kde"],
        "cleanex_max_steps": 3,
        "cleanex_tolerance": 0.01,
        "cleanex_patience": 100,
        "ties": "random",
        "device": "cpu",
        "seed": 1,
    }
    extrapolation_steps.extrapolation_step(
        logits_path=logits,
        label_view="original",
        view_labels_path=None,
        settings=ExtrapolationSettings.from_config({**options, **settings}),
        title="t",
        caption="c",
        **outputs,
    )
    return outputs


def test_cleanex_fits_that_did_not_converge_are_marked_in_the_tables_and_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logits = _save(tmp_path / "clean.npz", 0, 1.5)
    with caplog.at_level(logging.WARNING, logger="classwise.steps.extrapolation"):
        capped = _extrapolate(tmp_path / "capped", logits, k1=3, methods=["naive", "cleanex"], cleanex_max_steps=3)
    table = pd.read_csv(capped["csv_path"], index_col="method")
    assert (table.loc["cleanex", ["fits", "converged", "steps_median", "steps_max"]] == [3, 0, 3, 3]).all()
    assert table.loc["cleanex", "final_loss_max"] > 0 and table.loc["naive", ["fits", "converged"]].isna().all()
    assert "| 0/3 † | 3 (3) |" in capped["markdown_path"].read_text()
    assert "3 of 3 CleaneX fits did not converge (stopped at max_steps): repetitions [0, 1, 2]" in caplog.text
    # Training that stops on a plateau at once (a 50 % fall needed within 2 steps): converged.
    free = _extrapolate(
        tmp_path / "free",
        logits,
        k1=3,
        methods=["naive", "cleanex"],
        cleanex_max_steps=200,
        cleanex_tolerance=0.5,
        cleanex_patience=2,
    )
    converged = pd.read_csv(free["csv_path"], index_col="method")
    assert converged.loc["cleanex", "converged"] == 3 and converged.loc["cleanex", "steps_max"] < 100
    assert "| 3/3 |" in free["markdown_path"].read_text()

    summary = _outputs(tmp_path, "summary")
    extrapolation_steps.extrapolation_summary_step(
        table_paths={"capped": capped["csv_path"], "free": free["csv_path"]}, caption="S. Source: the paper.", **summary
    )
    text = summary["markdown_path"].read_text()
    assert text.startswith("S. † (n/m): n of the m CleaneX fits did not converge") and "plateaued). Source: the paper.\n" in text
    cleanex_row = next(line for line in text.splitlines() if line.startswith("| cleanex"))
    assert cleanex_row.count("†") == 1 and "† (3/3) |" in cleanex_row  # the capped model's cell only
    assert "n of the m CleaneX fits did not converge" in text
    frame = pd.read_csv(summary["csv_path"], index_col="method")  # the CSV keeps the numbers
    assert frame.loc["cleanex", "capped"] == table.loc["cleanex", "rmse_mean"]


def test_the_extrapolation_step_writes_the_same_bytes_twice(tmp_path: Path) -> None:
    logits = _save(tmp_path / "clean.npz", 0, 1.5)
    settings = {"k1": 3, "methods": ["regression", "cleanex"], "cleanex_max_steps": 200, "cleanex_patience": 20}
    first = _extrapolate(tmp_path / "first", logits, **settings)
    second = _extrapolate(tmp_path / "second", logits, **settings)
    for name in ("csv_path", "markdown_path", "curves_path"):
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_several_k1_and_a_k2_give_one_block_each_independent_of_the_others(tmp_path: Path) -> None:
    logits = _save(tmp_path / "clean.npz", 0, 1.5)
    both = _extrapolate(tmp_path / "both", logits, k1=[3, 2], k2=5)
    alone = _extrapolate(tmp_path / "alone", logits, k1=2, k2=5)
    table = pd.read_csv(both["csv_path"])
    assert table["k1"].tolist() == [3, 3, 2, 2] and (table["k_max"] == 5).all()
    single = pd.read_csv(alone["csv_path"])
    np.testing.assert_allclose(table.loc[table["k1"] == 2, "rmse_mean"], single["rmse_mean"], rtol=1e-12)
    curves = pd.read_csv(both["curves_path"], keep_default_na=False)
    assert sorted(curves["k1"].unique()) == [2, 3] and curves["k"].max() == 5
    assert "| k1 " in both["markdown_path"].read_text()  # rows of several k1 say which
    assert "| k1 " not in alone["markdown_path"].read_text()
    summary = _outputs(tmp_path, "summary")
    extrapolation_steps.extrapolation_summary_step(table_paths={"m": both["csv_path"]}, caption="S.", **summary)
    frame = pd.read_csv(summary["csv_path"])
    assert frame[["k1", "method"]].values.tolist() == [[3, "naive"], [3, "kde"], [2, "naive"], [2, "kde"]]
    with pytest.raises(InputError, match="analyses.extrapolation.k2"):
        _extrapolate(tmp_path / "bad", logits, k1=2, k2=C + 1)
    with pytest.raises(InputError, match="analyses.extrapolation.k1"):
        _extrapolate(tmp_path / "bad", logits, k1=[2, 5], k2=5)


def test_panel_e_draws_the_capped_rmse_ratios_to_cleanex_and_only_with_cleanex() -> None:
    from classwise.extrapolation.simulation import Evaluation, rmse_ratios

    rng = np.random.default_rng(0)
    methods = ["cleanex", "regression", "kde"]
    rmse = pd.DataFrame(
        [{"repetition": r, "method": m, "rmse": rng.uniform(0.01, 0.1), "seconds": 0.0} for r in range(9) for m in methods]
    )
    rmse.loc[(rmse["method"] == "kde") & (rmse["repetition"] < 6), "rmse"] = 1.0  # ratio > 4 in most repetitions
    ks = np.arange(2, 7)

    def evaluation(chosen: list[str]) -> Evaluation:
        return Evaluation(
            k1=3,
            ks=ks,
            true_curve=1.0 / ks,
            observed=np.ones((9, 2)),
            predicted={m: np.ones((9, ks.size)) for m in chosen},
            rmse=rmse[rmse["method"].isin(chosen)].reset_index(drop=True),
        )

    figure = extrapolation_figure(evaluation(methods), title="t")
    panel = next(ax for ax in figure.axes if "RMSE ratio to CleaneX (capped at 4)" in ax.get_title())
    assert panel.get_title().startswith("E: ")  # after A-C (curves) and D (RMSE), as in the paper
    assert [t.get_text() for t in panel.get_xticklabels()] == ["regression / cleanex", "kde / cleanex"]
    wide = rmse.pivot(index="repetition", columns="method", values="rmse")
    lines = panel.get_lines()  # per box: 2 whiskers, 2 caps, the box, the median; then the line at 1
    assert len(lines) == 2 * 6 + 1 and list(lines[-1].get_ydata()) == [1.0, 1.0]
    for box, method in enumerate(("regression", "kde")):
        naive = np.minimum(wide[method].to_numpy() / wide["cleanex"].to_numpy(), 4.0)
        np.testing.assert_allclose(rmse_ratios(rmse)[method], naive, rtol=1e-12)
        assert lines[6 * box + 5].get_ydata()[0] == pytest.approx(np.median(naive))
    assert lines[6 + 5].get_ydata()[0] == 4.0  # kde's median ratio, capped
    without = extrapolation_figure(evaluation(["regression", "kde"]), title="t")
    assert not any("ratio" in ax.get_title() for ax in without.axes)


def test_the_simulation_figure_draws_each_median_in_a_colour_unlike_its_box() -> None:
    from matplotlib.colors import to_rgb
    from matplotlib.patches import PathPatch

    from classwise.extrapolation.simulation import Evaluation, SimulationBenchmark
    from classwise.plots.extrapolation import simulation_figure

    rng = np.random.default_rng(1)
    methods = ["cleanex", "regression", "kde", "naive"]
    rmse = pd.DataFrame([{"repetition": r, "method": m, "rmse": rng.uniform(0.01, 0.1)} for r in range(7) for m in methods])
    ks = np.arange(2, 7)
    evaluation = Evaluation(
        k1=3, ks=ks, true_curve=1.0 / ks, observed=np.ones((7, 2)), predicted={m: np.ones((7, ks.size)) for m in methods},
        rmse=rmse,
    )  # fmt: skip
    benchmark = SimulationBenchmark(evaluations={3: evaluation}, settings={}, seconds=0.0)
    ax = simulation_figure(benchmark, title="t").axes[0]
    medians = [line for line in ax.lines if line.get_gid() == "median"]
    boxes = [patch for patch in ax.patches if isinstance(patch, PathPatch)]
    assert len(medians) == len(boxes) == len(methods)
    for method, median, box in zip(methods, medians, boxes):
        assert median.get_ydata()[0] == pytest.approx(rmse.loc[rmse["method"] == method, "rmse"].median())
        # CleaneX's orange box had matplotlib's orange median: invisible
        assert np.abs(np.subtract(to_rgb(median.get_color()), to_rgb(box.get_facecolor()))).sum() > 0.5, method


def test_extrapolation_needs_fewer_observed_classes_than_the_set_has(tmp_path: Path) -> None:
    logits = _save(tmp_path / "clean.npz", 0, 1.5)
    with pytest.raises(InputError, match="analyses.extrapolation.k1"):
        extrapolation_steps.extrapolation_step(
            logits_path=logits,
            label_view="original",
            view_labels_path=None,
            settings=ExtrapolationSettings(
                k1=C,
                repetitions=1,
                methods=("naive",),
                cleanex_max_steps=1,
                cleanex_tolerance=0.01,
                cleanex_patience=100,
                ties="random",
                device="cpu",
                seed=0,
            ),
            title="t",
            caption="c",
            curves_path=tmp_path / "curves.csv",
            figure_path=tmp_path / "f.png",
            **_outputs(tmp_path, "e"),
        )
    assert not (tmp_path / "e.md").exists()


def test_simulation_step_matches_the_library(tmp_path: Path) -> None:
    from classwise.extrapolation.simulation import MethodComparison, run_simulation_benchmark

    outputs = _outputs(tmp_path, "simulation")
    block = {
        "k2": 12,
        "sigma2": 0.1,
        "repetitions": 2,
        "methods": ["naive", "kde"],
        "cleanex_max_steps": 1,
        "cleanex_tolerance": 0.01,
        "cleanex_patience": 100,
        "device": "cpu",
        "unused": "a key of the block the stage does not read",
    }
    extrapolation_steps.simulation_step(
        settings=SimulationSettings.from_config({**block, "k1": [4, 6]}, seed=0),
        caption="Simulation.",
        json_path=tmp_path / "s.json",
        figure_path=tmp_path / "s.png",
        **outputs,
        threads=2,
    )
    benchmark = run_simulation_benchmark(MethodComparison(repetitions=2, seed=0, methods=("naive", "kde")), k1s=[4, 6], k2=12)
    table = pd.read_csv(outputs["csv_path"])
    np.testing.assert_allclose(table["rmse_mean"], benchmark.summary()["rmse_mean"], rtol=1e-12)
    assert table["k1"].tolist() == [4, 4, 6, 6]
    document = json.loads((tmp_path / "s.json").read_text())
    assert document["settings"]["k2"] == 12 and len(document["rmse_per_repetition"]["4"]) == 4
    assert document["settings"]["threads"] == 2
    assert "seconds" not in outputs["markdown_path"].read_text()  # tables hold no timings
    with pytest.raises(InputError, match="analyses.simulation.k1"):
        extrapolation_steps.simulation_step(
            settings=SimulationSettings.from_config({**block, "k1": [12]}, seed=0),
            caption="c",
            json_path=tmp_path / "x.json",
            figure_path=tmp_path / "x.png",
            **_outputs(tmp_path, "x"),
        )
    with pytest.raises(InputError, match="field 'analyses.simulation.sigma2': missing setting 'sigma2'"):
        without_sigma2 = {key: value for key, value in block.items() if key != "sigma2"}
        SimulationSettings.from_config({**without_sigma2, "k1": [4]}, seed=0)


def test_the_simulation_records_each_cleanex_fit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    outputs = _outputs(tmp_path, "simulation")
    with caplog.at_level(logging.WARNING, logger="classwise.steps.extrapolation"):
        extrapolation_steps.simulation_step(
            settings=SimulationSettings(
                k1=[4],
                k2=12,
                sigma2=0.1,
                repetitions=2,
                methods=("naive", "cleanex"),
                cleanex_max_steps=3,
                cleanex_tolerance=0.01,
                cleanex_patience=100,
                device="cpu",
                seed=0,
            ),
            caption="Simulation.",
            json_path=tmp_path / "s.json",
            figure_path=tmp_path / "s.png",
            **outputs,
        )
    document = json.loads((tmp_path / "s.json").read_text())
    assert document["settings"]["cleanex_max_steps"] == 3 and document["settings"]["cleanex_patience"] == 100
    records = {(r["method"], r["repetition"]): r for r in document["rmse_per_repetition"]["4"]}
    for rep in (0, 1):
        assert records["cleanex", rep]["steps"] == 3 and records["cleanex", rep]["converged"] is False
        assert records["cleanex", rep]["final_loss"] > 0
        assert records["naive", rep]["steps"] is None and records["naive", rep]["converged"] is None
    table = pd.read_csv(outputs["csv_path"], index_col="method")
    assert table.loc["cleanex", "converged"] == 0 and table.loc["cleanex", "fits"] == 2
    assert "0/2 †" in outputs["markdown_path"].read_text()
    assert "simulation, k1 = 4: 2 of 2 CleaneX fits did not converge" in caplog.text


def test_the_extrapolation_scripts_write_cleanex_progress_into_the_rule_log(tmp_path: Path) -> None:
    """The scripts as Snakemake runs them (a stand-in ``snakemake`` object): CleaneX's progress
    bar ends up in the job's log file."""
    import runpy
    from types import SimpleNamespace

    from snakemake.iocontainers import Namedlist

    logits = _save(tmp_path / "clean.npz", 0, 1.5)
    out = _outputs(tmp_path, "e")
    job = SimpleNamespace(
        input=SimpleNamespace(logits=str(logits), labels=[]),
        output=SimpleNamespace(
            markdown=str(out["markdown_path"]),
            csv=str(out["csv_path"]),
            latex=str(out["latex_path"]),
            curves=str(tmp_path / "curves.csv"),
            figure=str(tmp_path / "e.png"),
        ),
        rule="evaluate_extrapolation",
        params=Namedlist(
            fromdict=dict(
                shift="clean",
                k1=3,
                k2=None,
                repetitions=1,
                methods=["naive", "cleanex"],
                cleanex_max_steps=4,
                cleanex_tolerance=0.01,
                cleanex_patience=100,
                ties="random",
                device="cpu",
                seed=0,
            )
        ),  # fmt: skip
        wildcards=Namedlist(fromdict=dict(dataset="d", labels="original", model="m")),
        log=[str(tmp_path / "logs" / "evaluate_extrapolation.log")],
        threads=1,
    )
    runpy.run_path(str(REPO / "scripts" / "evaluate_extrapolation.py"), init_globals={"snakemake": job})
    assert "CleaneX fit: 100%" in Path(job.log[0]).read_text()

    out = _outputs(tmp_path, "s")
    job = SimpleNamespace(
        output=SimpleNamespace(
            markdown=str(out["markdown_path"]),
            csv=str(out["csv_path"]),
            latex=str(out["latex_path"]),
            json=str(tmp_path / "s.json"),
            figure=str(tmp_path / "s.png"),
        ),
        rule="simulate_extrapolation",
        params=Namedlist(
            fromdict=dict(
                k1=[4],
                k2=8,
                sigma2=0.1,
                repetitions=1,
                methods=["cleanex"],
                cleanex_max_steps=4,
                cleanex_tolerance=0.01,
                cleanex_patience=100,
                device="cpu",
                seed=0,
            )
        ),  # fmt: skip
        wildcards=Namedlist(),
        log=[str(tmp_path / "logs" / "simulate_extrapolation.log")],
        threads=1,
    )
    runpy.run_path(str(REPO / "scripts" / "simulate_extrapolation.py"), init_globals={"snakemake": job})
    assert "CleaneX fit: 100%" in Path(job.log[0]).read_text()


def test_per_class_figures_past_50_classes_name_the_lowest_recall_and_the_highest_cfps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the CFPS figure named the 20 classes of lowest CFPS, the best ones."""
    import classwise.plots.classwise as plots
    from classwise.steps.reports import per_class_figures_step

    drawn = {}
    monkeypatch.setattr(plots, "save_png", lambda figure, path: drawn.setdefault(Path(path).stem, figure))
    rng = np.random.default_rng(0)
    names = [f"class{k}" for k in range(60)]
    per_class, metrics, frames = {}, {}, {}
    for model in ("a", "b"):
        frames[model] = pd.DataFrame({"name": names, "recall": rng.random(60), "cfps": rng.random(60)})
        per_class[model] = tmp_path / f"{model}.csv"
        frames[model].to_csv(per_class[model], index=False)
        metrics[model] = tmp_path / f"{model}.json"
        metrics[model].write_text(json.dumps({"metrics": {"A": {"value": 0.5}}}))
    per_class_figures_step(
        per_class_paths=per_class,
        metrics_paths=metrics,
        title="t",
        recall_path=tmp_path / "recall.png",
        cfps_path=tmp_path / "cfps.png",
    )
    for stem, column, order in (("recall", "recall", 1), ("cfps", "cfps", -1)):
        mean = (frames["a"][column] + frames["b"][column]).to_numpy() / 2
        expected = [names[k] for k in np.argsort(order * mean, kind="stable")[:20]]
        named = drawn[stem].axes[1]
        assert [label.get_text() for label in named.get_yticklabels()] == expected, stem
