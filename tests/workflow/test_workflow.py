"""The workflow end to end, through Snakemake itself, on a small version of the demo."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from paths import REPO
from results_readme import listed_files, written_files
from snakemake_runner import job_counts, scheduled_jobs
from snakemake_runner import run_snakemake as snakemake

from classwise.logits_io import load_scores
from classwise.metrics import worst_class as wc
from classwise.metrics.bootstrap import BootstrapSettings
from classwise.metrics.catalogue import MetricParameters
from classwise.metrics.stats import compute_stats

TINY_CONFIG = REPO / "tests" / "configs" / "tiny.yaml"
SHIFTS = ["clean", "gaussian_noise_s3", "pgd_linf_eps0.1", "transfer_linear_pgd_linf_eps0.1"]
MODELS = ["linear", "mlp"]

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The run, through the console of `make run` (--logger classwise): one run for the files,
    which every test checks, and for what the console prints (test_the_console_...)."""
    workdir = tmp_path_factory.mktemp("run")
    result = snakemake(workdir, TINY_CONFIG, "--logger", "classwise")
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir, result


@pytest.fixture(scope="module")
def finished_run(tiny_run: tuple[Path, subprocess.CompletedProcess[str]]) -> Path:
    return tiny_run[0]


def test_the_console_fits_one_screen_and_names_the_three_things_to_open(tiny_run) -> None:
    """Not a terminal here: a line per tenth of the jobs, then what to open, with paths."""
    workdir, result = tiny_run
    lines = (result.stdout + result.stderr).splitlines()
    assert len(lines) <= 25, "\n".join(lines)
    progress = [line for line in lines if line.startswith("[")]
    total = int(re.search(r"^Running (\d+) jobs on 2 cores; ", "\n".join(lines), re.MULTILINE).group(1))
    assert len(progress) <= 11 and progress[-1].startswith(f"[{total}/{total}] 100 %"), progress
    results = workdir / "results"
    done = lines.index(next(line for line in lines if line.startswith(f"Done: {total} jobs in ")))
    opened = [line.split()[0] for line in lines[done + 1 : done + 4]]
    assert opened == [str(results / "explorer.html"), f"{results / 'tables'}/", str(results / "README.md")]
    assert f"e.g. {results / 'tables/digits/original/clean/worst_class.md'}" in lines[done + 2]
    assert lines[-1].startswith(f"Snakemake's full log: {workdir / '.snakemake/log'}/")


def test_every_table_is_written(finished_run: Path) -> None:
    import re

    import pandas as pd

    for shift in SHIFTS:
        table_dir = finished_run / "results" / "tables" / "digits" / "original" / shift
        markdown = (table_dir / "worst_class.md").read_text()
        assert "| metric | linear | mlp |" in markdown
        for row in ("A", "WCA", "WCP", "WSupCA", "WSupCR", "W2CR", "W5CR", "W2CA", "A@3", "WCA@3", "W5CR@3"):
            assert f"| {row} |" in markdown, row
        assert (table_dir / "worst_class.tex").read_text().count("\\\\") == 13  # header + 12 rows
        assert (table_dir / "worst_class.csv").read_text().splitlines()[0] == "metric,linear,mlp"
        # the bootstrap is on (tests/configs/tiny.yaml): the same rows with intervals, and the two models compared
        paper = pd.read_csv(table_dir / "worst_class.csv", index_col=0, dtype=str)
        intervals = pd.read_csv(table_dir / "worst_class_intervals.csv", index_col=0, dtype=str)
        assert intervals.index.equals(paper.index) and intervals.columns.equals(paper.columns)
        for cell, with_interval in zip(paper.to_numpy().ravel(), intervals.to_numpy().ravel()):
            assert re.fullmatch(re.escape(cell) + r" \[\d\d+\.\d\d, \d\d+\.\d\d\]", with_interval), with_interval
        comparison = (table_dir / "model_comparison.md").read_text()
        assert "| metric | mlp - linear |" in comparison and "* marks a difference" in comparison


def test_decisiveness_tables_show_reported_and_measured(finished_run: Path) -> None:
    import pandas as pd
    from scipy.special import log_softmax

    from classwise.metrics.decisiveness import reported_metrics

    for shift in SHIFTS:
        table_dir = finished_run / "results" / "tables" / "digits" / "original" / shift
        table = (table_dir / "decisiveness.csv").read_text().splitlines()
        assert table[0] == "metric,linear,mlp"
        cells = {line.split(",")[0]: line.split(",")[1:] for line in table[1:]}
        assert list(cells) == ["Prediction Accuracy", "Geometric Accuracy", "Robustness", "Decisiveness", "Calibration slope"]
        for column, model in enumerate(MODELS):
            scores = load_scores(finished_run / "results" / "logits" / "digits" / model / f"{shift}.npz")
            log_p = log_softmax(scores.scores.astype(np.float64), axis=1)[np.arange(scores.n_samples), scores.labels]
            reported = reported_metrics(log_p, gamma=0.005)
            reported_cell, measured_cell = cells["Geometric Accuracy"][column].split(" / ")
            assert float(reported_cell) == pytest.approx(reported.geometric_accuracy, abs=5e-4)
            assert 0.0 <= float(measured_cell) <= 1.0
        sweep = (table_dir / "gamma_sweep.csv").read_text().splitlines()
        assert sweep[0] == "gamma,linear: robustness,linear: geometric accuracy,linear: decisiveness," + (
            "mlp: robustness,mlp: geometric accuracy,mlp: decisiveness"
        )
        assert [line.split(",")[0] for line in sweep[1:]] == ["0.05", "0.01", "0.005", "0.001", "0"]
        # the bootstrap is on: beside Table 1 the same with intervals, "0.913 [0.905, 0.921] / ..."
        paper = pd.read_csv(table_dir / "decisiveness.csv", index_col=0, dtype=str)
        with_intervals = pd.read_csv(table_dir / "decisiveness_intervals.csv", index_col=0, dtype=str)
        assert with_intervals.index.equals(paper.index) and with_intervals.columns.equals(paper.columns)
        for cell, interval_cell in zip(paper.to_numpy().ravel(), with_intervals.to_numpy().ravel()):
            parts = interval_cell.split(" / ")
            assert [part.split(" [")[0] for part in parts] == cell.split(" / "), (cell, interval_cell)
            assert all(part.endswith("]") for part in parts), interval_cell


def test_figures_are_drawn(finished_run: Path) -> None:
    figures = finished_run / "results" / "figures" / "digits" / "original"
    for shift in SHIFTS:
        names = ["per_class_recall.png", "per_class_cfps.png", "worst_probability.png"]
        names += [f"{kind}_{model}.png" for kind in ("confusion", "reliability") for model in MODELS]
        for name in names:
            assert (figures / shift / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_tables_agree_with_metrics_recomputed_from_cached_logits(finished_run: Path) -> None:
    results = finished_run / "results"
    for shift in SHIFTS:
        table = (results / "tables" / "digits" / "original" / shift / "worst_class.csv").read_text().splitlines()
        cells = {line.split(",")[0]: line.split(",")[1:] for line in table[1:]}
        for column, model in enumerate(MODELS):
            scores = load_scores(results / "logits" / "digits" / model / f"{shift}.npz")
            stats = compute_stats(scores.scores, scores.labels)
            accuracy = float(cells["A"][column])
            assert accuracy == pytest.approx(100 * wc.accuracy(stats).value, abs=0.005)
            worst = wc.worst_class_accuracy(stats)
            assert cells["WCA"][column].startswith(f"{100 * worst.value:.2f} ({scores.class_names[worst.classes[0]]})")


def test_intervals_and_comparisons_follow_the_library_on_the_cached_logits(finished_run: Path) -> None:
    import pandas as pd

    from classwise.metrics.compare import compare_models

    results = finished_run / "results"
    shift = "pgd_linf_eps0.1"
    files = {model: load_scores(results / "logits" / "digits" / model / f"{shift}.npz") for model in MODELS}
    superclasses = {"round": [0, 6, 8, 9], "straight": [1, 4, 7], "curved": [2, 3, 5]}
    expected = compare_models(
        files, superclasses=superclasses, parameters=MetricParameters(k=3, ns=[2, 5]), bootstrap=BootstrapSettings(50, seed=1)
    )
    table = pd.read_csv(results / "tables" / "digits" / "original" / shift / "model_comparison.csv")
    assert len(table) == 12 and set(table["model_a"]) == {"linear"} and set(table["model_b"]) == {"mlp"}
    for row in table.itertuples():
        metric = expected[("linear", "mlp")].metrics[row.metric]
        assert (row.difference, row.ci_low, row.ci_high, row.p_value) == pytest.approx(
            (metric.difference, *metric.ci, metric.p_value), abs=1e-12
        ), row.metric
        assert row.excludes_zero == (metric.ci[0] > 0 or metric.ci[1] < 0)
    document = json.loads((results / "metrics" / "digits" / "original" / "mlp" / shift / "worst_class.json").read_text())
    assert document["bootstrap"]["replicates"] == 50 and document["bootstrap"]["seed"] == 1
    wca = document["metrics"]["WCA"]
    low, high = wca["ci_bound"]
    cells = pd.read_csv(results / "tables" / "digits" / "original" / shift / "worst_class_intervals.csv", index_col=0)
    assert cells.loc["WCA", "mlp"].endswith(f"[{100 * low:.2f}, {100 * high:.2f}]")
    per_class = pd.read_csv(results / "metrics" / "digits" / "original" / "mlp" / shift / "per_class.csv")
    top = wca["worst_probability"][0]
    assert per_class["worst_recall_probability"][top["classes"][0]] == pytest.approx(top["probability"], abs=1e-6)


def test_label_view_reuses_the_clean_logits_with_its_own_labels(finished_run: Path) -> None:
    import pandas as pd

    from classwise.labels.views import aligned_labels

    results = finished_run / "results"
    view = results / "labels" / "digits" / "cleaned_cl.csv"
    frame = pd.read_csv(view, dtype={"sample_id": str})
    assert list(frame.columns) == ["sample_id", "label"]
    assert (frame["label"] == -1).any() and (frame["label"] >= 0).sum() > 0.8 * len(frame)
    table = (results / "tables" / "digits" / "cleaned_cl" / "clean" / "worst_class.csv").read_text().splitlines()
    cells = {line.split(",")[0]: line.split(",")[1:] for line in table[1:]}
    assert "W2CA_balanced" in cells  # Table 2 shape for cleaned labels
    for column, model in enumerate(MODELS):
        scores = load_scores(results / "logits" / "digits" / model / "clean.npz")
        labels = aligned_labels(view, scores.sample_ids)
        keep = labels >= 0
        stats = compute_stats(scores.scores[keep], labels[keep], n_classes=scores.n_classes)
        assert float(cells["A"][column]) == pytest.approx(100 * wc.accuracy(stats).value, abs=0.005)
    # Only the clean shift is evaluated under the view, and no inference reran for it.
    assert not (results / "tables" / "digits" / "cleaned_cl" / "gaussian_noise_s3").exists()
    assert (finished_run / "results" / "README.md").read_text().startswith("# Results")


def test_the_readme_lists_every_table_figure_and_data_file_the_run_wrote(finished_run: Path) -> None:
    """Every .md, .csv, .tex, .png and .html of the run (paper tables, robustness, analyses, per-model
    numbers, label views, features, the explorer) is a row of results/README.md or a file beside
    one; and the README lists nothing the run did not write."""
    results = finished_run / "results"
    listed = listed_files((results / "README.md").read_text())
    written = written_files(results)
    assert {path.split("/")[0] for path in written} >= {"tables", "figures", "analyses", "metrics", "labels", "features"}
    assert "explorer.html" in written
    assert any(path.startswith("tables/digits/robustness/") for path in written)
    assert sorted(written - listed) == []
    assert sorted(path for path in listed if not (results / path).is_file()) == []


def test_every_number_has_one_value_wherever_it_appears(finished_run: Path) -> None:
    """The run's table of every number (results/metrics.parquet) holds each number once, each
    file of numbers, paper table and the explorer hold its value, and A of every (model, shift)
    is the accuracy of the cached logits (issue 39)."""
    from numbers_invariant import assert_one_value_per_number

    results = finished_run / "results"
    table = assert_one_value_per_number(results)
    accuracy = table[(table["metric"] == "A") & (table["samples"] == "all") & (table["label_view"] == "original")]
    assert set(accuracy["shift"]) == set(SHIFTS) and set(accuracy["model"]) == set(MODELS)
    for row in accuracy.itertuples():
        scores = load_scores(results / "logits" / row.dataset / row.model / f"{row.shift}.npz")
        assert row.value == pytest.approx(np.mean(scores.scores.argmax(axis=1) == scores.labels))
        assert row.n == scores.labels.size and row.n_abstained == 0
    whole = (results / "metrics.csv").read_text().splitlines()
    assert whole[0].split(",")[:9] == [
        "dataset",
        "label_view",
        "model",
        "shift",
        "family",
        "severity",
        "metric",
        "class",
        "value",
    ]
    assert len(whole) - 1 == int(table["class"].isna().sum())


def test_class_wise_robustness_outputs(finished_run: Path) -> None:
    import pandas as pd

    from classwise.metrics.cfps import class_false_positive_score

    results = finished_run / "results"
    figures = results / "figures" / "digits" / "robustness"
    for name in ("classwise_robustness.png", "prediction_similarity.png", "corruption_grid.png", "targeted_success.png"):
        assert (figures / name).read_bytes()[:4] == b"\x89PNG", name
    # Figure 4 under every untargeted attack on the models, transferred ones included
    assert sorted(p.name for p in (figures / "mean_confusion").glob("*.png")) == [
        "pgd_linf_eps0.1.png",
        "transfer_linear_pgd_linf_eps0.1.png",
    ]
    table = pd.read_csv(results / "tables" / "digits" / "robustness" / "classwise.csv")
    row = table[(table["shift"] == "pgd_linf_eps0.1") & (table["model"] == "mlp")].sort_values("class")
    scores = load_scores(results / "logits" / "digits" / "mlp" / "pgd_linf_eps0.1.npz")
    confusion = compute_stats(scores.scores, scores.labels).confusion
    np.testing.assert_allclose(row["cfps"], class_false_positive_score(confusion), atol=1e-9)
    tests = pd.read_csv(results / "tables" / "digits" / "robustness" / "transformation_tests_linear.csv", index_col=0)
    assert list(tests.index) == ["gaussian_noise_s3"] and set(tests["status"]) <= {"pass", "warn", "fail"}
    targeted = pd.read_csv(results / "tables" / "digits" / "robustness" / "targeted_success.csv")
    assert sorted(targeted["target"]) == [0, 1]
    # Targeted attacks do not enter the metric tables.
    assert not (results / "tables" / "digits" / "original" / "pgd_targeted_0").exists()
    # The view across shifts: the summary's WCA is the minimum of the class x shift matrix.
    for name in ("worst_classes_by_shift.png", "accuracy_spread.png"):
        assert (figures / name).read_bytes()[:4] == b"\x89PNG", name
    summary = pd.read_csv(results / "tables" / "digits" / "robustness" / "shift_summary.csv", index_col=[0, 1])
    matrix = pd.read_csv(results / "tables" / "digits" / "robustness" / "class_shift_accuracy.csv", index_col=[0, 1, 2])
    assert summary.loc[("gaussian_noise_s3", "mlp"), "worst_class_accuracy"] == pytest.approx(
        matrix.loc["mlp"]["gaussian_noise_s3"].min()
    )
    assert summary.loc[("pgd_linf_eps0.1", "mlp"), "accuracy"] == pytest.approx(np.trace(confusion) / confusion.sum())
    # PGD attacks every clean image: compared with clean on all of them, matched by sample id
    clean = load_scores(results / "logits" / "digits" / "mlp" / "clean.npz")
    pgd = summary.loc[("pgd_linf_eps0.1", "mlp")]
    assert (pgd["pairing"], pgd["n"], pgd["reference_n"]) == ("same samples", clean.n_samples, clean.n_samples)
    assert pgd["reference_accuracy"] == pytest.approx(np.mean(clean.scores.argmax(axis=1) == clean.labels))
    errors = pd.read_csv(results / "tables" / "digits" / "robustness" / "corruption_errors.csv", index_col=[0, 1, 2])
    assert errors.loc["mlp"]["clean_error"].to_numpy() == pytest.approx(1 - matrix.loc["mlp"]["clean"].to_numpy())


def test_transfer_matrix_reads_the_source_s_own_attack(finished_run: Path) -> None:
    """tiny.yaml transfers pgd_linf_eps0.1 from linear: on linear itself (white-box) the logits
    are its own PGD shift's, bit for bit; the matrix's cells follow the cached logits."""
    import pandas as pd

    from classwise.robustness.transfer import transfer_cell

    results = finished_run / "results"
    shift = "transfer_linear_pgd_linf_eps0.1"
    own = np.load(results / "logits" / "digits" / "linear" / "pgd_linf_eps0.1.npz")["logits"]
    white_box = np.load(results / "logits" / "digits" / "linear" / f"{shift}.npz")["logits"]
    np.testing.assert_array_equal(white_box, own)
    cells = pd.read_csv(results / "tables" / "digits" / "robustness" / "transfer_matrix.csv")
    assert list(zip(cells["source"], cells["attack"], cells["target"])) == [
        ("linear", "pgd_linf_eps0.1", "linear"),
        ("linear", "pgd_linf_eps0.1", "mlp"),
    ]
    mlp = transfer_cell(
        results / "logits" / "digits" / "mlp" / "clean.npz", results / "logits" / "digits" / "mlp" / f"{shift}.npz"
    )
    assert cells.iloc[1]["robust_accuracy"] == pytest.approx(mlp["robust_accuracy"])
    assert str(cells.iloc[1]["worst_class"]) == mlp["worst_class"]
    assert "linear / pgd_linf_eps0.1" in (results / "tables" / "digits" / "robustness" / "transfer_matrix.md").read_text()


def test_logits_files_follow_the_documented_format(finished_run: Path) -> None:
    path = finished_run / "results" / "logits" / "digits" / "mlp" / "gaussian_noise_s3.npz"
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["class_names", "labels", "logits", "sample_ids"]
        assert archive["logits"].dtype == np.float32
        assert archive["labels"].dtype == np.int64
        assert archive["logits"].shape == (archive["labels"].shape[0], 10)
    metadata = json.loads(path.with_suffix(".json").read_text())
    assert metadata["shift"]["name"] == "gaussian_noise_s3"
    assert metadata["model"]["name"] == "mlp"
    assert {"dataset", "preprocessing", "code_version", "seed"} <= set(metadata)


def test_shifts_change_the_logits(finished_run: Path) -> None:
    logits = finished_run / "results" / "logits" / "digits" / "linear"
    clean = load_scores(logits / "clean.npz")
    for shift in SHIFTS[1:]:
        shifted = load_scores(logits / f"{shift}.npz")
        np.testing.assert_array_equal(shifted.labels, clean.labels)
        assert not np.allclose(shifted.scores, clean.scores)
    attacked = load_scores(logits / "pgd_linf_eps0.1.npz")
    accuracy = lambda s: float((s.scores.argmax(1) == s.labels).mean())  # noqa: E731
    assert accuracy(attacked) < accuracy(clean)


def test_every_job_wrote_its_log(finished_run: Path) -> None:
    logs = finished_run / "results" / "logs"
    assert (logs / "train_model" / "linear.log").stat().st_size > 0  # progress bars
    assert (logs / "infer" / "digits" / "mlp" / "clean.log").exists()
    assert (finished_run / "results" / "benchmarks" / "infer" / "digits" / "mlp" / "clean.tsv").exists()


def test_second_run_schedules_no_job(finished_run: Path) -> None:
    result = snakemake(finished_run, TINY_CONFIG, "--dry-run")
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_rerun_from_scratch_with_the_bootstrap_off_gives_byte_identical_logits_and_paper_tables(
    finished_run: Path, tmp_path: Path
) -> None:
    compared = [
        *(f"logits/digits/{m}/{s}.npz" for m in MODELS for s in SHIFTS),
        *(f"tables/digits/original/{s}/worst_class.{kind}" for s in SHIFTS for kind in ("csv", "md", "tex")),
        *(f"tables/digits/original/{s}/decisiveness.csv" for s in SHIFTS),
    ]
    # The paper's tables do not depend on the bootstrap (on in the finished run). Only what is
    # compared is rebuilt (from scratch: training included), to keep the suite short.
    config = _write_config(tmp_path / "off.yaml", lambda c: c["metrics"]["bootstrap"].update(replicates=0))
    result = snakemake(tmp_path, config, *(f"results/{relative}" for relative in compared))
    assert result.returncode == 0, result.stderr[-4000:]
    for relative in compared:
        assert (tmp_path / "results" / relative).read_bytes() == (finished_run / "results" / relative).read_bytes(), relative
    assert not list((tmp_path / "results" / "tables").rglob("*_intervals.csv"))


def _write_config(path: Path, mutate) -> Path:
    config = yaml.safe_load(TINY_CONFIG.read_text())
    mutate(config)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c.update(modles=c.pop("models")), "modles"),
        (lambda c: c["models"]["linear"].update(epochs="ten"), "ten"),
        (lambda c: c["shifts"].update(corruptions=["gaussian_noize"]), "gaussian_noize"),
        (lambda c: c["models"]["mlp"].update(train_on="cifar"), "models.mlp.train_on"),
        (
            lambda c: c["metrics"]["bootstrap"].update(confidence=1.5),
            "field 'metrics.bootstrap.confidence': expected a value < 1",
        ),
        (
            lambda c: c.setdefault("inference", {}).update(models_per_decode=0),
            "field 'inference.models_per_decode': expected a value >= 1, got 0",
        ),
    ],
    ids=["unknown-key", "wrong-type", "unknown-corruption", "dangling-reference", "bad-confidence", "no-model-per-decode"],
)
def test_bad_config_stops_before_any_job_naming_the_key(tmp_path: Path, mutate, expected: str) -> None:
    configfile = _write_config(tmp_path / "bad.yaml", mutate)
    result = snakemake(tmp_path, configfile, "--dry-run")
    assert result.returncode != 0
    assert expected in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def _mutated(finished_run: Path, name: str, mutate) -> Path:
    return _write_config(finished_run.parent / f"{finished_run.name}_{name}.yaml", mutate)


def test_changing_a_metric_parameter_reruns_only_that_family(finished_run: Path) -> None:
    config = _mutated(finished_run, "k", lambda c: c["metrics"]["worst_class"].update(k=2))
    jobs = scheduled_jobs(finished_run, config)
    assert set(jobs) == {
        "compute_worst_class_metrics",
        "aggregate_worst_class_tables",
        "plot_class_wise_figures",
        "compare_models",  # compares the models on the same metrics
        "analyse_classwise_robustness",  # reads the confusion matrices the same job writes
        "build_explorer",  # reads the per-class numbers and confusions the same job writes
        "collect_numbers",  # reads every file of numbers
        "all",
    }
    assert jobs["compute_worst_class_metrics"] == len(MODELS) * (len(SHIFTS) + 1)  # + the cleaned_cl view


def test_adding_a_model_adds_only_its_jobs(finished_run: Path) -> None:
    def add_model(config):
        config["models"]["linear2"] = dict(config["models"]["linear"], seed=1)

    jobs = scheduled_jobs(finished_run, _mutated(finished_run, "model", add_model))
    assert jobs["train_model"] == 1
    assert jobs["infer"] == len(SHIFTS)  # the new model's inference only: cached logits are reused
    assert jobs["compute_worst_class_metrics"] == len(SHIFTS) + 1
    assert "build_label_view" not in jobs  # the view's reference model is unchanged


def test_adding_a_corruption_adds_only_its_inference_and_metrics(finished_run: Path) -> None:
    config = _mutated(finished_run, "corruption", lambda c: c["shifts"].update(corruptions=["gaussian_noise", "rain"]))
    jobs = scheduled_jobs(finished_run, config)
    assert "train_model" not in jobs
    assert jobs["infer"] == len(MODELS)
    assert jobs["compute_worst_class_metrics"] == len(MODELS)
    assert jobs["aggregate_worst_class_tables"] == 1


@pytest.mark.parametrize("setting", [{"precision": "bf16"}, {"channels_last": True}], ids=["bf16", "channels-last"])
def test_changing_precision_or_layout_reruns_every_inference_and_no_training(finished_run: Path, setting) -> None:
    config = _mutated(finished_run, "precision", lambda c: c.setdefault("inference", {}).update(setting))
    jobs = scheduled_jobs(finished_run, config)
    assert "train_model" not in jobs
    # every cached logits file is remade (the targeted-attack analysis's too)
    assert jobs["infer"] == len(list((finished_run / "results" / "logits").rglob("*.npz"))) >= len(MODELS) * len(SHIFTS)
    # the default written out is the default: nothing reruns
    default = _mutated(
        finished_run, "fp32", lambda c: c.setdefault("inference", {}).update(precision="fp32", channels_last=False)
    )
    assert scheduled_jobs(finished_run, default) == {}


def test_models_sharing_a_decode_take_over_the_shifts_that_run_no_model_with_infer_s_threads(finished_run: Path) -> None:
    """inference.models_per_decode 2: one infer_models_digits job per shift that runs no model
    (clean, the corruption) writes both models' logits; the attacks keep their cached per-model
    infer jobs; a profile's infer threads are the group job's (classwise.pipeline.decode_groups)."""
    config = _mutated(finished_run, "decode", lambda c: c.setdefault("inference", {}).update(models_per_decode=2))
    result = snakemake(finished_run, config, "--dry-run", "--set-threads", "infer=2")  # at most --cores 2
    assert result.returncode == 0, result.stderr[-4000:]
    jobs = job_counts(result.stdout)
    # clean, gaussian_noise_s3: remade once (their parameters are the group's now, and no record
    # says what the files the infer jobs made were made from)
    assert jobs["infer_models_digits"] == 2
    assert "infer" not in jobs and "train_model" not in jobs
    blocks = [job for job in result.stdout.split("\nrule ") if job.startswith("infer_models_digits:")]
    assert len(blocks) == 2 and all("threads: 2" in block for block in blocks)
    assert all("results/logits/digits/linear/" in block and "results/logits/digits/mlp/" in block for block in blocks)


def test_code_changes_are_listed_and_forced_reruns_are_scoped(finished_run: Path) -> None:
    result = snakemake(finished_run, TINY_CONFIG, "--list-changes", "code")
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.strip() == ""  # nothing edited since the run
    jobs = scheduled_jobs(finished_run, TINY_CONFIG, "--forcerun", "compute_decisiveness_metrics")
    # the table of every number reads decisiveness.json too
    assert set(jobs) == {"compute_decisiveness_metrics", "aggregate_decisiveness_tables", "collect_numbers", "all"}
