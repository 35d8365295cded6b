"""Models given by files of their outputs (source: predictions) on a dataset given by its labels
(source: labels), through Snakemake itself, on real model outputs: the cross-validated MNIST
test-set probabilities of the label-errors study (../shared/data/mnist-predictions/).

One module-scoped run of the issue's minimal config, plus a second model with hard predictions
only and the config's gates (one of which fails): the worst-class table is checked against the
library run on the published arrays, the hard model's score metrics are n/a with a note, and
the failed gate fails the run after every other output is written. The test writes the label
file and the predictions files itself, in its temporary directory, from the shared arrays.

The class names of the label file come from a user: two are hostile (markup and a script's
quotes, given to the worst class by recall and by precision, so that the worst-class table
names them) and three are not Latin. The run's explorer (a run of predictions only, of one
shift) and its HTML report are opened in headless Chromium: every name shows as written, as
text, and no script of theirs runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from browser import browser, check_class_panel, new_page, open_offline
from paths import REPO, SHARED_DATA
from snakemake_runner import job_counts, scheduled_jobs
from snakemake_runner import run_snakemake as snakemake

from classwise import tables
from classwise.metrics.catalogue import MetricParameters, paper_rows
from classwise.metrics.suite import HARD_PREDICTIONS_REASON, evaluate

pytestmark = pytest.mark.workflow

MNIST = SHARED_DATA / "mnist-predictions"
#: The label file's class names: 9 is the worst class by recall (WCA), 7 by precision (WCP).
NAMES = ["zero", "one", "два", "三", "ארבע", "five", "six", '"; alert(1); "', "eight", "<img src=x onerror=alert(1)>"]
TABLES = Path("results/tables/mnist/original/clean")
STYLESHEET = REPO / "workflow" / "report" / "report.css"


def _published() -> tuple[np.ndarray, np.ndarray]:
    probs, labels = MNIST / "mnist_test_set_pyx.npy", MNIST / "mnist_test_set_original_labels.npy"
    if not (probs.is_file() and labels.is_file()):
        pytest.fail(f"the shared test data {MNIST} is missing (see /work/shared/data/README.md); this test needs it")
    return np.load(probs), np.load(labels).astype(np.int64)


def _config(gates: dict) -> dict:
    return {
        "datasets": {"mnist": {"source": "labels", "path": "labels.csv"}},
        "models": {
            "net": {"source": "predictions", "files": {"clean": "net_clean.npz"}},
            "hard": {"source": "predictions", "files": {"clean": "hard_clean.csv"}},
        },
        "shifts": {"clean": True},
        # only what this test checks (extrapolation would train CleaneX for minutes)
        "analyses": {name: {"enabled": False} for name in ("subset_tests", "reference_tests", "extrapolation")},
        "gates": gates,
    }


FAILING_GATES = {"WCA": {"min": 0.9}, "W2CA": {"min": 0.99, "models": ["net"]}, "CFPS_max": {"max": 0.1}}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    """The workdir after a run whose CFPS_max gate fails, and that run's result."""
    probs, labels = _published()
    workdir = tmp_path_factory.mktemp("predictions")
    ids = np.array([f"mnist-test-{i:05d}" for i in range(labels.size)])
    pd.DataFrame({"sample_id": ids, "label": labels, "class_name": np.array(NAMES)[labels]}).to_csv(
        workdir / "labels.csv", index=False
    )
    order = np.random.default_rng(0).permutation(labels.size)  # matched by id, not by position
    np.savez(workdir / "net_clean.npz", probs=probs[order], labels=labels[order], sample_ids=ids[order])
    pd.DataFrame({"sample_id": ids[order], "prediction": probs.argmax(axis=1)[order]}).to_csv(
        workdir / "hard_clean.csv", index=False
    )
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(_config(FAILING_GATES), sort_keys=False))
    return workdir, snakemake(workdir, configfile), (probs, labels)


def test_the_metrics_land_where_they_land_for_any_model(run) -> None:
    workdir, result, _ = run
    assert "Error in rule enforce_gates" in result.stderr, result.stderr[-4000:]
    for model in ("net", "hard"):
        assert (workdir / "results/metrics/mnist/original" / model / "clean/worst_class.json").is_file()
        assert (workdir / "results/figures/mnist/original/clean" / f"confusion_{model}.png").is_file()
    assert (workdir / "results/logits/mnist/hard/clean.npz").is_file()
    assert (workdir / "results/tables/mnist/robustness/classwise.md").is_file()


def test_the_worst_class_table_agrees_with_the_library_on_the_published_arrays(run) -> None:
    workdir, _, (probs, labels) = run
    expected = evaluate(probs, labels, kind="probs", parameters=MetricParameters(k=5, ns=[10, 100])).to_json()
    frame = pd.read_csv(workdir / TABLES / "worst_class.csv", index_col=0, keep_default_na=False)
    assert list(frame.columns) == ["net", "hard"]
    rows = [row for row in paper_rows([10, 100], 5, superclasses=False) if row not in expected["skipped"]]
    assert list(frame.index) == rows == ["A", "WCA", "WCP", "W2CA", "A@5", "WCA@5"]
    for row in rows:
        assert frame.loc[row, "net"] == tables.format_cell(expected["metrics"][row], NAMES), row
    assert frame.loc["A", "net"] == "99.13"  # the README's measured accuracy
    for row in ("A", "WCA", "WCP"):  # the same argmax: the same confusion matrix
        assert frame.loc[row, "hard"] == frame.loc[row, "net"]
    for row in ("W2CA", "A@5", "WCA@5"):
        assert frame.loc[row, "hard"] == "n/a"
    caption = (workdir / TABLES / "worst_class.md").read_text().split("\n\n")[0]
    assert f"n/a for hard: W2CA, A@5, WCA@5 ({HARD_PREDICTIONS_REASON})." in caption


def test_hard_predictions_skip_what_needs_scores_and_the_readme_says_so(run) -> None:
    workdir, _, _ = run
    decisiveness = pd.read_csv(workdir / TABLES / "decisiveness.csv", index_col=0)
    assert list(decisiveness.columns) == ["net"]
    assert not (workdir / "results/figures/mnist/original/clean/reliability_hard.png").exists()
    assert (workdir / "results/figures/mnist/original/clean/reliability_net.png").is_file()
    readme = (workdir / "results/README.md").read_text()
    assert "- model hard on mnist: hard predictions only on ['clean'] (no scores)" in readme
    assert "- subset tests on mnist: skipped" not in readme  # disabled by the config, not skipped


def test_a_failed_gate_fails_the_run_after_everything_else_is_written(run) -> None:
    workdir, result, _ = run
    assert result.returncode != 0
    assert "classwise: gates failed: 2 of 5 gates failed" in result.stderr
    assert (workdir / "results/README.md").is_file() and (workdir / TABLES / "gamma_sweep.md").is_file()
    report = (workdir / "results/gates.md").read_text()
    assert "| mnist | original | net | clean | CFPS_max <= 0.1 | 0.1609 | FAIL |" in report
    assert "| mnist | original | net | clean | W2CA >= 0.99 | 0.9935 | pass |" in report
    assert "| mnist | original | hard | clean | WCA >= 0.9 | 0.9851 | pass |" in report
    assert not (workdir / "results/gates.passed").exists()


def test_the_explorer_of_a_run_of_predictions_shows_every_name_as_written_as_text(run) -> None:
    workdir, _, _ = run
    results = workdir / "results"
    with browser("explorer test") as launched:
        visit = open_offline(launched, results / "explorer.html")
        page = visit.page
        assert page.locator("#view-select option").all_text_contents() == ["mnist \u00b7 original labels"]
        # one shift, two models (one of hard predictions only); the worst class named as written
        rows = page.locator("#summary-table tbody tr")
        assert rows.locator("td[data-column=shift]").all_text_contents() == ["clean", "clean"]
        assert rows.locator("td[data-column=worst_class]").all_text_contents() == [NAMES[9], NAMES[9]]
        # typed in any case and script, part of a name finds it
        for query, c in (("onerror", 9), ('"; alert', 7), ("ДВА", 2), ("三", 3), ("ארבע", 4)):
            search = page.locator("#class-search")
            search.fill("")
            search.press_sequentially(query)
            page.locator(f"#class-panel[data-class='{c}']").wait_for(timeout=0)
            assert page.locator("#class-name").text_content() == NAMES[c]
            assert page.locator("#class-matches button").first.text_content() == NAMES[c]
        assert check_class_panel(page, results / "metrics" / "mnist", "original", ["clean"], ["net", "hard"], 4) == 14
        # the heatmap's first row is the worst class; its tooltip and the worst-class list name it as text
        page.locator("#heatmap").hover(position={"x": 180, "y": 120})
        assert page.locator("#heatmap-tooltip:not([hidden]) div").first.text_content() == NAMES[9]
        assert page.locator("#worst-table tbody tr td.name").first.text_content() == NAMES[9]
        # no name became markup, and none of their scripts ran
        assert page.locator("img, iframe, script[src]").count() == 0
        assert visit.dialogs == [] and visit.errors == [] and visit.requests == []


def test_the_html_report_shows_the_hostile_names_as_text(run) -> None:
    workdir, _, _ = run
    result = snakemake(workdir, workdir / "config.yaml", "--report", "report.html", "--report-stylesheet", str(STYLESHEET))
    assert result.returncode == 0, result.stderr[-4000:]
    document = (workdir / "report.html").read_text(encoding="utf-8")
    assert NAMES[9] not in document  # in the page only escaped
    worst = pd.read_csv(workdir / TABLES / "worst_class.csv", index_col=0, keep_default_na=False)
    assert worst.loc["WCA", "net"].endswith(f"({NAMES[9]})") and worst.loc["WCP", "net"].endswith(f"({NAMES[7]})")
    with browser("HTML report test") as launched:
        page = new_page(launched)
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto((workdir / "report.html").as_uri(), timeout=0)
        page.get_by_text("classwise report").first.wait_for(timeout=0)
        # the landing page's worst-class table: each cell as the CSV writes it, names as text
        cells = page.locator("td").all_text_contents()
        for row in ("WCA", "WCP"):
            assert worst.loc[row, "net"] in [" ".join(cell.split()) for cell in cells], row
        assert page.locator("img[src='x']").count() == 0
        assert dialogs == []


def test_gates_that_pass_rerun_only_the_gates_and_a_changed_file_reruns_its_import(run) -> None:
    workdir, _, _ = run
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(_config({**FAILING_GATES, "CFPS_max": {"max": 0.2}}), sort_keys=False))
    result = snakemake(workdir, configfile)
    assert result.returncode == 0, result.stderr[-4000:]
    assert set(job_counts(result.stderr)) == {"check_gates", "enforce_gates", "all"}  # a run logs to stderr
    assert (workdir / "results/gates.passed").read_text() == "all 5 gates passed\n"
    hard = pd.read_csv(workdir / "hard_clean.csv")
    hard.loc[0, "prediction"] = (hard.loc[0, "prediction"] + 1) % 10  # the user's file changes
    hard.to_csv(workdir / "hard_clean.csv", index=False)
    planned = scheduled_jobs(workdir, configfile)
    assert planned["import_predictions"] == 1 and planned["compute_worst_class_metrics"] == 1


def test_a_labels_only_dataset_refuses_a_shift_that_perturbs_images_before_any_job(run) -> None:
    workdir, _, _ = run
    config = _config({})
    config["shifts"]["corruptions"] = ["gaussian_noise"]
    configfile = workdir / "corrupted.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    result = snakemake(workdir, configfile, "--dry-run")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "corrupted.yaml: field 'datasets.mnist.shifts': shift 'gaussian_noise_s3' (corruption) perturbs images" in output
