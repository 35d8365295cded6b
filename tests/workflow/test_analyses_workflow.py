"""The analyses of workflow/rules/analyses.smk through Snakemake itself, on a very small run.

One module-scoped run builds only the analysis outputs (and what they need: training,
inference, the label view) of tests/configs/analyses.yaml plus a user metadata file; the
tests check the tables against the library run directly on the cached logits, and check the
wiring (which jobs a config schedules, which a changed parameter reruns, what a bad
`analyses:` section says) with Snakemake's own dry-run job table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from paths import REPO
from snakemake_runner import run_snakemake as snakemake
from snakemake_runner import scheduled_jobs

from classwise.data.sources import open_split
from classwise.labels.views import aligned_labels
from classwise.logits_io import load_scores

CONFIG = REPO / "tests" / "configs" / "analyses.yaml"
VIEWS = ["original", "cleaned_cl"]
SHIFTS = ["clean", "gaussian_noise_s3"]

pytestmark = pytest.mark.workflow


def targets() -> list[str]:
    """The analysis outputs of the config (what analysis_outputs() lists for it)."""
    out = ["results/analyses/extrapolation_simulation.md"]
    for view in VIEWS:
        base = f"results/analyses/digits/{view}"
        out += [
            f"{base}/linear/subset_tests.md",
            f"{base}/reference_tests_summary.md",
            f"{base}/extrapolation_summary.md",
            f"{base}/linear/extrapolation.png",
        ]
    return out


def write_config(path: Path, mutate=None) -> Path:
    config = yaml.safe_load(CONFIG.read_text())
    config["analyses"].setdefault("features", {})["metadata"] = {"digits": "metadata/digits.csv"}
    if mutate is not None:
        mutate(config)
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, int]]:
    """The analysis outputs built by Snakemake; also the jobs a dry run of the default target
    scheduled before (from scratch)."""
    workdir = tmp_path_factory.mktemp("analyses")
    config = yaml.safe_load(CONFIG.read_text())["datasets"]["digits"]
    ids = open_split(config, "test", name="digits").sample_ids
    (workdir / "metadata").mkdir()
    # A categorical user column (three "writers"), rows in another order than the samples.
    metadata = pd.DataFrame({"sample_id": ids, "writer": [f"w{i % 3}" for i in range(len(ids))]})
    metadata.iloc[::-1].to_csv(workdir / "metadata" / "digits.csv", index=False)
    configfile = write_config(workdir.parent / f"{workdir.name}.yaml")
    planned = scheduled_jobs(workdir, configfile)
    result = snakemake(workdir, configfile, *targets())
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir, configfile, planned


def _options() -> dict:
    return yaml.safe_load(CONFIG.read_text())["analyses"]


def _view_scores(results: Path, view: str, shift: str):
    scores = load_scores(results / "logits" / "digits" / "linear" / f"{shift}.npz")
    if view == "original":
        return scores.scores, scores.labels, scores.sample_ids
    labels = aligned_labels(results / "labels" / "digits" / f"{view}.csv", scores.sample_ids)
    keep = labels >= 0
    return scores.scores[keep], labels[keep], scores.sample_ids[keep]


def test_every_analysis_output_is_written(run: tuple[Path, Path, dict[str, int]]) -> None:
    results = run[0] / "results"
    for target in targets():
        assert (run[0] / target).stat().st_size > 0, target
    for view in VIEWS:
        model_dir = results / "analyses" / "digits" / view / "linear"
        for name in ("subset_tests", "reference_tests", "extrapolation"):
            assert (model_dir / f"{name}.md").read_text().count("\n| ") >= 2, name
            assert "\\toprule" in (model_dir / f"{name}.tex").read_text()
        assert (model_dir / "extrapolation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (results / "logs" / "run_subset_tests" / "digits" / view / "linear.log").exists()
    assert (results / "analyses" / "extrapolation_simulation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_features_are_image_statistics_joined_with_the_metadata(run: tuple[Path, Path, dict[str, int]]) -> None:
    from classwise.testsuites.features import image_features

    features = pd.read_csv(run[0] / "results" / "features" / "digits.csv", dtype={"sample_id": str})
    evaluation = open_split(yaml.safe_load(CONFIG.read_text())["datasets"]["digits"], "test", name="digits")
    expected = image_features(evaluation.images, sample_ids=evaluation.sample_ids)
    assert list(features.columns) == [*expected.columns, "writer"]
    pd.testing.assert_frame_equal(features[expected.columns], expected, check_dtype=False, rtol=1e-12)
    assert features["writer"].tolist() == [f"w{i % 3}" for i in range(len(features))]  # joined by id


@pytest.mark.parametrize("view", VIEWS)
def test_subset_tests_agree_with_the_library_on_the_cached_logits(run: tuple[Path, Path, dict[str, int]], view: str) -> None:
    from classwise.testsuites.subsets import SubsetTestOptions, subset_performance_tests, worst_subsets

    results = run[0] / "results"
    scores, labels, ids = _view_scores(results, view, "clean")
    features = pd.read_csv(results / "features" / "digits.csv", dtype={"sample_id": str}).set_index("sample_id")
    features = features.loc[ids].reset_index()
    tested = ["brightness", "contrast", "sharpness", "writer"]  # height, width, aspect ratio are constant
    options = _options()["subset_tests"]
    expected = subset_performance_tests(
        scores,
        labels,
        features[["sample_id", *tested]],
        options=SubsetTestOptions(metrics=options["metrics"], n_resamples=options["n_resamples"], seed=0),
    )
    model_dir = results / "analyses" / "digits" / view / "linear"
    rows = pd.read_csv(model_dir / "subset_tests_all.csv", keep_default_na=False, na_values=[""])
    assert sorted(rows["feature"].unique()) == sorted(tested)
    for column in ("value", "overall", "p_value", "p_adjusted", "shortfall"):
        np.testing.assert_allclose(rows[column], expected[column], rtol=1e-9, err_msg=column)
    assert rows["status"].tolist() == expected["status"].tolist()
    worst = worst_subsets(expected)
    table = pd.read_csv(model_dir / "subset_tests.csv", keep_default_na=False)
    assert table["subset"].tolist() == worst["subset"].tolist()
    np.testing.assert_allclose(table["shortfall"], worst["shortfall"], rtol=1e-9)
    markdown = (model_dir / "subset_tests.md").read_text()
    assert "| writer | accuracy |" in markdown


@pytest.mark.parametrize("view", VIEWS)
def test_reference_report_agrees_with_the_library(run: tuple[Path, Path, dict[str, int]], view: str) -> None:
    from classwise.testsuites.reference import reference_report, summarise_reports

    results = run[0] / "results"
    sets = {}
    for shift in SHIFTS:
        scores, labels, _ = _view_scores(results, view, shift)
        sets[shift] = (scores, labels)
    expected = reference_report(sets, dataset="digits", model="linear")
    report = pd.read_csv(results / "analyses" / "digits" / view / "linear" / "reference_tests.csv")
    assert report["evaluation"].unique().tolist() == ["gaussian_noise_s3"]
    assert report["metric"].tolist() == expected["metric"].tolist()
    np.testing.assert_allclose(report["evaluation_value"], expected["evaluation_value"], rtol=1e-9)
    assert report["status"].tolist() == expected["status"].tolist()
    summary = pd.read_csv(results / "analyses" / "digits" / view / "reference_tests_summary.csv", keep_default_na=False)
    expected_summary = summarise_reports([expected], by=("model",))
    assert summary["model"].tolist() == ["linear"]
    assert summary["status"].tolist() == expected_summary["status"].tolist()
    assert summary["n_pass"].tolist() == expected_summary["n_pass"].tolist()


def test_extrapolation_agrees_with_the_library(run: tuple[Path, Path, dict[str, int]]) -> None:
    from classwise.extrapolation.methods import CleanexTraining, FitOptions
    from classwise.extrapolation.simulation import MethodComparison, evaluate_methods

    results = run[0] / "results"
    options = _options()["extrapolation"]
    scores, labels, _ = _view_scores(results, "original", "clean")
    training = CleanexTraining(options["cleanex_max_steps"], options["cleanex_tolerance"], options["cleanex_patience"])
    comparison = MethodComparison(
        repetitions=options["repetitions"], seed=0, methods=options["methods"], fit=FitOptions(cleanex=training)
    )
    evaluation = evaluate_methods(scores, labels, options["k1"], 10, comparison)
    model_dir = results / "analyses" / "digits" / "original" / "linear"
    table = pd.read_csv(model_dir / "extrapolation.csv", index_col="method")
    assert table.index.tolist() == options["methods"]
    expected = evaluation.summary().set_index("method")
    # CleaneX trains in float32 torch: the same seed gives the same fit, to rounding
    np.testing.assert_allclose(table["rmse_mean"], expected["rmse_mean"], rtol=1e-6)
    np.testing.assert_allclose(table["rmse_sd"], expected["rmse_sd"], rtol=1e-6)
    # Panel E's numbers, recomputed from the curves the job wrote: each repetition's RMSE over
    # k = 2..10 against the true curve, each method's ratio to CleaneX's, and CleaneX's wins.
    written = pd.read_csv(model_dir / "extrapolation_curves.csv", keep_default_na=False)
    truth = written[written["curve"] == "true"].set_index("k")["accuracy"]
    predicted = written[written["curve"] == "predicted"]
    errors = predicted["accuracy"].to_numpy() - truth.reindex(predicted["k"]).to_numpy()
    rmse = predicted.assign(sq=errors**2).groupby(["method", "repetition"])["sq"].mean() ** 0.5
    for method in ("naive", "kde", "regression"):
        ratio = rmse[method].to_numpy() / rmse["cleanex"].to_numpy()
        assert table.loc[method, "ratio_to_cleanex_median"] == pytest.approx(np.median(ratio), rel=1e-6)
        assert table.loc[method, "cleanex_wins"] == pytest.approx(np.mean(rmse["cleanex"].to_numpy() < rmse[method].to_numpy()))
    assert (model_dir / "extrapolation.png").read_bytes()[:4] == b"\x89PNG"
    np.testing.assert_allclose(table["true_at_k_max"], evaluation.true_curve[-1], rtol=1e-12)
    curves = pd.read_csv(model_dir / "extrapolation_curves.csv", keep_default_na=False)
    true = curves[curves["curve"] == "true"]
    np.testing.assert_allclose(true["accuracy"], evaluation.true_curve, rtol=1e-12)
    assert true["k"].tolist() == list(range(2, 11))
    summary = pd.read_csv(results / "analyses" / "digits" / "original" / "extrapolation_summary.csv", index_col="method")
    np.testing.assert_allclose(summary["linear"], table["rmse_mean"], rtol=1e-12)


def test_simulation_agrees_with_the_library(run: tuple[Path, Path, dict[str, int]]) -> None:
    from classwise.extrapolation.simulation import MethodComparison, run_simulation_benchmark

    options = _options()["simulation"]
    benchmark = run_simulation_benchmark(
        MethodComparison(repetitions=options["repetitions"], seed=0, methods=options["methods"]),
        k1s=options["k1"],
        k2=options["k2"],
    )
    table = pd.read_csv(run[0] / "results" / "analyses" / "extrapolation_simulation.csv")
    assert table["k1"].unique().tolist() == options["k1"]
    merged = table.merge(benchmark.summary(), on=["k1", "method"], suffixes=("", "_lib"))
    assert len(merged) == len(table) == 2 * 3
    np.testing.assert_allclose(merged["rmse_mean"], merged["rmse_mean_lib"], rtol=1e-9)
    document = json.loads((run[0] / "results" / "analyses" / "extrapolation_simulation.json").read_text())
    assert document["settings"]["k2"] == options["k2"]
    log = (run[0] / "results" / "logs" / "simulate_extrapolation.log").read_text()
    for k1 in options["k1"]:
        assert f"k1 = {k1}, repetition {options['repetitions']}/{options['repetitions']}, RMSE: naive" in log


def test_the_default_target_schedules_every_analysis(run: tuple[Path, Path, dict[str, int]]) -> None:
    jobs = run[2]
    per_view = len(VIEWS)  # one model
    assert jobs["compute_image_features"] == 1
    assert jobs["run_subset_tests"] == per_view
    assert jobs["run_reference_tests"] == per_view
    assert jobs["summarise_reference_tests"] == per_view
    assert jobs["evaluate_extrapolation"] == per_view
    assert jobs["summarise_extrapolation"] == per_view
    assert jobs["simulate_extrapolation"] == 1


def test_a_changed_analysis_parameter_reruns_only_its_rule(run: tuple[Path, Path, dict[str, int]]) -> None:
    # Everything else is up to date (the run is complete and deterministic in its inputs).
    configfile = write_config(run[0].parent / "alpha.yaml", lambda c: c["analyses"]["subset_tests"].update(alpha=0.01))
    assert scheduled_jobs(run[0], configfile, *targets()) == {"run_subset_tests": len(VIEWS)}


def test_a_bad_analyses_section_stops_before_any_job(tmp_path: Path) -> None:
    # Unknown keys and wrong types are the schema's (tests/steps/test_steps_analyses.py); a label
    # view no dataset has is checked by the workflow itself.
    configfile = write_config(tmp_path / "bad.yaml", lambda c: c["analyses"].update(label_views=["original", "cleaned"]))
    result = snakemake(tmp_path, configfile, "--dry-run")
    assert result.returncode != 0
    assert "analyses.label_views" in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()
