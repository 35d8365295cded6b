"""The explorer (classwise.explorer): what it reads, what the page holds, how names are kept data,
and the page at ImageNet's size (1,000 classes x 100 shifts) drawn in headless Chromium.

The browser tests of a run's explorer are in tests/workflow/test_report.py (the report test's run) and
tests/workflow/test_predictions_workflow.py (a run of predictions only, with hostile and non-Latin class
names)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from browser import browser, open_offline, required_browser
from paths import REPO

from classwise.bench.explorer import synthetic_view, write_synthetic_explorer
from classwise.errors import InputError
from classwise.explorer import (
    ViewFiles,
    explorer_payload,
    read_view,
    render_page,
    script_json,
    top_confusions,
    view_payload,
    worst_class_lists,
    write_explorer,
)
from classwise.metrics.intervals import clopper_pearson
from classwise.outputs import Planned, listed_file, output
from classwise.pipeline.explorer import explorer_inputs, explorer_views
from classwise.pipeline.plan import Plan, RobustnessRuns
from classwise.robustness.across_shifts import ranked_confusions

HOSTILE = ["<img src=x onerror=alert(1)>", '"; alert(1); "', "</script><script>alert(1)</script>", "кошка", "猫", "NA", "a & b"]


# --- the reductions, against brute force ------------------------------------------------------


def test_top_confusions_are_each_row_s_largest_cells_ties_to_the_lower_index() -> None:
    rng = np.random.default_rng(0)
    for c, k in ((7, 3), (12, 5), (2, 3), (1, 3)):
        confusion = rng.integers(0, 4, size=(c, c))  # many ties
        confusion[0] = 0
        predicted, count = top_confusions(confusion, k)
        names = [str(i) for i in range(c)]
        ranked = ranked_confusions(confusion, names, top=c * c)
        for row in range(c):
            expected = ranked[ranked["true"] == row].head(min(k, c - 1))
            got = [(int(p), int(n)) for p, n in zip(predicted[row], count[row]) if p >= 0]
            assert got == list(zip(expected["predicted"].astype(int), expected["count"].astype(int))), (c, row)
            assert all(p == -1 and n == 0 for p, n in zip(predicted[row], count[row]) if p < 0)
        assert predicted.shape == (c, min(k, c - 1))


def _brute_worst(recall: np.ndarray, listed: int) -> tuple[list[int], int, int]:
    with_samples = [c for c in range(recall.size) if np.isfinite(recall[c])]
    ranked = sorted(with_samples, key=lambda c: (recall[c], c))
    shown = ranked[:listed]
    if not shown:
        return [], 0, 0
    lowest = sum(1 for c in with_samples if recall[c] == recall[ranked[0]])
    past = sum(1 for c in ranked[listed:] if recall[c] == recall[shown[-1]])
    return shown, lowest, past


def test_worst_class_lists_rank_as_the_tables_and_count_the_ties() -> None:
    rng = np.random.default_rng(1)
    recall = rng.integers(0, 5, size=(3, 4, 30)) / 4.0  # heavy ties
    recall[0, 0, :] = np.nan  # no class has samples
    recall[1, 1, ::3] = np.nan
    recall[2, 3, :] = 0.0  # every class tied
    classes, lowest, past = worst_class_lists(recall, 10)
    for index in np.ndindex(recall.shape[:2]):
        shown, expected_lowest, expected_past = _brute_worst(recall[index], 10)
        assert [int(c) for c in classes[index] if c >= 0] == shown, index
        assert (int(lowest[index]), int(past[index])) == (expected_lowest, expected_past), index
    assert lowest[2, 3] == 30 and past[2, 3] == 20


# --- reading a view's files -------------------------------------------------------------------


def _write_view(folder: Path, names: list[str], confusions: dict[tuple[str, str], np.ndarray], summary: bool = True) -> ViewFiles:
    """The files the workflow writes for each (model, shift) of ``confusions``, from the confusion
    itself (recall, CFPS and the Clopper-Pearson interval as the metrics step writes them)."""
    from classwise.metrics.cfps import class_false_positive_score

    files: dict[str, dict[str, dict[str, str]]] = {}
    rows = []
    for (model, shift), confusion in confusions.items():
        where = folder / model / shift
        where.mkdir(parents=True)
        support = confusion.sum(axis=1)
        hits = np.diag(confusion)
        low, high = clopper_pearson(hits, support)
        recall = np.divide(hits, support, out=np.full(len(names), np.nan), where=support > 0)
        pd.DataFrame(
            {
                "class": np.arange(len(names)),
                "name": names,
                "support": support,
                "predicted": confusion.sum(axis=0),
                "recall": recall,
                "cfps": class_false_positive_score(confusion),
                "recall_ci_low": low,
                "recall_ci_high": high,
            }
        ).to_csv(where / "per_class.csv", index=False)
        pd.DataFrame(confusion, index=pd.Index(names, name="true"), columns=names).to_csv(where / "confusion.csv")
        a = np.trace(confusion) / confusion.sum()
        worst = int(np.nanargmin(recall))
        (where / "worst_class.json").write_text(
            json.dumps(
                {
                    "n_samples": int(confusion.sum()),
                    "metrics": {
                        "A": {"value": a, "ci": [a - 0.1, a + 0.05]},
                        "WCA": {"value": recall[worst], "classes": [worst], "ci_bound": [0.0, recall[worst]]},
                    },
                }
            )
        )
        files.setdefault(model, {})[shift] = {
            "per_class": str(where / "per_class.csv"),
            "confusion": str(where / "confusion.csv"),
            "worst_class": str(where / "worst_class.json"),
        }
        rows.append(
            {
                "shift": shift,
                "model": model,
                "accuracy": a,
                "worst_class_accuracy": recall[worst],
                "worst_class": worst,
                "worst_class_name": names[worst],
                "worst_class_tied": int(np.sum(recall == recall[worst])),
                "n": int(confusion.sum()),
                "reference_n": int(confusion.sum()),
                "pairing": "reference" if shift == "clean" else "same samples",
                "accuracy_change": 0.0 if shift == "clean" else -0.25,
                "worst_class_accuracy_change": 0.0 if shift == "clean" else -0.5,
            }
        )
    models = tuple(dict.fromkeys(model for model, _ in confusions))
    shifts = tuple(dict.fromkeys(shift for _, shift in confusions))
    path = None
    if summary:
        path = str(folder / "shift_summary.csv")
        pd.DataFrame(rows).to_csv(path, index=False)
    return ViewFiles("d", "original", models, shifts, files, path)


def _confusions(names: list[str], models: list[str], shifts: list[str], seed: int = 0) -> dict[tuple[str, str], np.ndarray]:
    rng = np.random.default_rng(seed)
    c = len(names)
    return {(m, s): rng.integers(0, 6, size=(c, c)) + np.diag(rng.integers(0, 20, size=c)) for m in models for s in shifts}


def test_a_view_is_read_as_the_csvs_hold_it_names_as_written(tmp_path: Path) -> None:
    confusions = _confusions(HOSTILE, ["m1", "m2"], ["clean", "fog"])
    view = read_view(_write_view(tmp_path, HOSTILE, confusions))
    assert view.class_names == HOSTILE  # "NA" stays a name, markup stays text
    assert view.models == ["m1", "m2"] and view.shifts == ["clean", "fog"]
    confusion = confusions[("m2", "fog")]
    np.testing.assert_array_equal(view.support[1, 1], confusion.sum(axis=1))
    np.testing.assert_array_equal(view.hits[1, 1], np.diag(confusion))
    np.testing.assert_allclose(view.recall[1, 1], np.diag(confusion) / confusion.sum(axis=1))
    predicted, count = top_confusions(confusion)
    np.testing.assert_array_equal(view.confused_with[1, 1], predicted)
    np.testing.assert_array_equal(view.confused_count[1, 1], count)
    # the models x shifts table: the shift summary's numbers, worst_class.json's intervals
    row = view.summary.loc[("fog", "m1")]
    assert row["pairing"] == "same samples" and row["accuracy_change"] == -0.25
    a = np.trace(confusions[("m1", "fog")]) / confusions[("m1", "fog")].sum()
    assert row["accuracy_low"] == pytest.approx(a - 0.1) and row["accuracy_high"] == pytest.approx(a + 0.05)


def test_without_a_shift_summary_a_view_shows_no_change_from_clean(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    confusions = {("m", "clean"): np.array([[3, 1, 0], [0, 2, 2], [0, 0, 4]])}
    view = read_view(_write_view(tmp_path, names, confusions, summary=False))
    row = view.summary.loc[("clean", "m")]
    assert row["pairing"] == "" and np.isnan(row["accuracy_change"]) and np.isnan(row["worst_class_accuracy_change"])
    assert row["worst_class"] == 1 and row["worst_class_tied"] == 1 and row["worst_class_accuracy"] == 0.5


def test_bad_files_are_named_with_what_was_expected(tmp_path: Path) -> None:
    files = _write_view(tmp_path, ["a", "b"], _confusions(["a", "b"], ["m"], ["clean", "fog"]))
    fog = Path(files.files["m"]["fog"]["per_class"])
    good = pd.read_csv(fog, keep_default_na=False, dtype=str)

    def fog_with(column: str, value: str) -> None:
        bad = good.copy()
        bad.loc[1, column] = value
        bad.to_csv(fog, index=False)

    fog_with("name", "B")
    with pytest.raises(InputError, match=r"fog/per_class\.csv: field 'name': expected the class names of .*clean/per_class\.csv"):
        read_view(files)
    fog_with("recall", "0.123456")
    with pytest.raises(InputError, match=r"fog/per_class\.csv: field 'recall': expected each recall to be hits / support"):
        read_view(files)
    fog_with("support", "2.5")
    with pytest.raises(InputError, match=r"fog/per_class\.csv: field 'support': expected whole, non-negative sample counts"):
        read_view(files)
    good.drop(columns="cfps").to_csv(fog, index=False)
    with pytest.raises(InputError, match=r"fog/per_class\.csv: expected the columns .* missing \['cfps'\]"):
        read_view(files)
    good.to_csv(fog, index=False)
    read_view(files)  # as written again: read
    Path(files.files["m"]["clean"]["confusion"]).write_text("true,a\na,1\n")
    with pytest.raises(InputError, match=r"clean/confusion\.csv: expected a \(2, 2\) confusion matrix"):
        read_view(files)


# --- the page's data --------------------------------------------------------------------------


def test_the_payload_holds_counts_that_give_back_every_number(tmp_path: Path) -> None:
    confusions = _confusions(HOSTILE, ["m1", "m2"], ["clean", "fog", "snow"], seed=3)
    data = read_view(_write_view(tmp_path, HOSTILE, confusions))
    payload = view_payload(data)
    lookup = {
        (h, n): (low, high) for h, n, low, high in zip(*(payload["intervals"][k] for k in ("hits", "support", "low", "high")))
    }
    for m in range(2):
        for s in range(3):
            for c in range(len(HOSTILE)):
                h, n = payload["hits"][m][s][c], payload["support"][m][s][c]
                assert h / n == data.recall[m, s, c]
                assert lookup[(h, n)] == (data.recall_low[m, s, c], data.recall_high[m, s, c])
                assert payload["cfps"][m][s][c] == float(f"{data.cfps[m, s, c]:.4g}")
    # rows: lowest mean accuracy first; columns: highest mean accuracy first
    mean_class = np.nanmean(data.recall, axis=(0, 1))
    assert payload["classOrder"] == sorted(range(len(HOSTILE)), key=lambda c: (mean_class[c], c))
    mean_shift = np.nanmean(data.recall, axis=(0, 2))
    assert payload["shiftOrder"] == sorted(range(3), key=lambda s: (-mean_shift[s], s))
    assert payload["hasShiftSummary"] and payload["reference"] == "clean"


def test_json_in_the_page_cannot_close_its_block_and_reads_back_the_same() -> None:
    payload = {"names": HOSTILE, "x": [1.5, None]}
    text = script_json(payload)
    assert not re.search(r"[<>&]", text)
    assert json.loads(text) == payload


def test_the_page_runs_only_its_own_script_and_writes_names_as_text() -> None:
    data = synthetic_view(6, 2, 1)
    data.class_names = HOSTILE[:6]
    page = render_page(explorer_payload([view_payload(data)], title="t <b>", description="<i>d</i>"))
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, flags=re.S)
    assert len(scripts) == len(styles) == 1
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1).replace("&#x27;", "'")
    for text, directive in ((scripts[0], "script-src"), (styles[0], "style-src")):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in csp
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    # the only markup made from data: none (names go through textContent)
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function", scripts[0])
    assert "<title>t &lt;b&gt;</title>" in page
    for name in HOSTILE:  # markup characters only as JSON escapes
        assert not re.search("[<>&]", name) or name not in page
    assert "\\u003cimg src=x onerror=alert(1)\\u003e" in page


# --- the workflow's plan of what the explorer reads -------------------------------------------


def _runs(full_label_space: list[str]) -> RobustnessRuns:
    return RobustnessRuns(
        full_label_space=full_label_space,
        attacked=[],
        adversarial=[],
        corruptions=[],
        transformed=[],
        corrupted=[],
        own_samples=[],
        severity_steps={},
        transfers=[],
        targeted=[],
        targeted_models=[],
        has_clean="clean" in full_label_space,
    )


def test_the_explorer_reads_the_recorded_files_of_every_view_and_the_summary_where_robustness_runs() -> None:
    # "r" scores a class subset (ImageNet-R): not in the robustness step's full label space
    view_shifts = {("d", "original"): ["clean", "fog", "r"], ("d", "clean_labels"): ["clean"], ("e", "original"): ["clean"]}
    plan = Plan(models={"d": ["m1", "m2"], "e": ["m1"]}, classes={"d": 10, "e": 10}, view_shifts=view_shifts)
    runs = {"d": _runs(["clean", "fog"])}  # no robustness runs for e
    views = explorer_views(plan, runs, out="out")
    assert [(v["dataset"], v["labels"], v["shifts"]) for v in views] == [
        ("d", "original", ["clean", "fog"]),
        ("d", "clean_labels", ["clean"]),
        ("e", "original", ["clean"]),
    ]
    assert views[0]["files"]["m2"]["fog"] == {
        "per_class": "out/metrics/d/original/m2/fog/per_class.csv",
        "confusion": "out/metrics/d/original/m2/fog/confusion.csv",
        "worst_class": "out/metrics/d/original/m2/fog/worst_class.json",
    }
    assert [v["shift_summary"] for v in views] == ["out/tables/d/robustness/shift_summary.csv", None, None]
    assert [v["left_out"] for v in views] == [["r"], [], []]
    inputs = explorer_inputs(views)
    assert len(inputs) == len(set(inputs)) == 2 * 2 * 3 + 2 * 3 + 3 + 1
    assert listed_file(Planned("explorer"), "out") == "out/explorer.html" and output("explorer").rule == "build_explorer"


def test_the_explorer_rule_reads_no_logits() -> None:
    rule = (REPO / "workflow" / "rules" / "explorer.smk").read_text()
    assert "logits" not in rule.split("rule build_explorer:", 1)[1].split("params:")[0]
    assert not any("logits" in path for path in explorer_inputs(explorer_views(_one_view_plan(), {}, out="o")))


def _one_view_plan() -> Plan:
    return Plan(models={"d": ["m"]}, classes={"d": 3}, view_shifts={("d", "original"): ["clean"]})


# --- the page at 1,000 classes x 100 shifts, in headless Chromium --------------------------------


@pytest.fixture(scope="module")
def imagenet_sized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explorer-1000") / "explorer.html"
    write_synthetic_explorer(path, classes=1000, shifts=100, models=1)
    return path


def test_at_1000_classes_x_100_shifts_the_heatmap_is_drawn_and_a_class_is_found(imagenet_sized: Path, tmp_path: Path) -> None:
    from PIL import Image

    with browser("explorer test") as launched:
        visit = open_offline(launched, imagenet_sized)
        page = visit.page
        assert visit.requests == visit.errors == visit.dialogs == []
        assert page.locator("#heatmap").get_attribute("data-window") == "0.00,1000.00,0.00,100.00"
        shot = tmp_path / "heatmap.png"
        page.locator("#heatmap").screenshot(path=str(shot))
        page.locator("#class-search").press_sequentially("class 0987")
        page.locator("#class-name", has_text="class 0987").wait_for(timeout=0)
        assert page.locator("#class-table tbody tr").count() == 100
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("RGB"))
    # the plot (170 px from the left, 110 px from the top) is filled: viridis, not the white page
    plot = pixels[115:-20, 175:-20].reshape(-1, 3).astype(int)
    white = (plot > 245).all(axis=1).mean()
    assert white < 0.01, white
    assert len(np.unique(plot, axis=0)) > 1000
    # its rows hold the classes worst first: the top band darker (lower accuracy) than the bottom
    band = len(pixels[115:-20]) // 10
    top, bottom = pixels[115 : 115 + band, 175:-20].mean(), pixels[-20 - band : -20, 175:-20].mean()
    assert top < bottom


def test_the_benchmark_writes_the_size_and_the_time_to_interactive(tmp_path: Path) -> None:
    from classwise.bench import explorer

    out = tmp_path / "explorer.json"
    chromium = required_browser("explorer benchmark test")
    explorer.main(
        ["--classes", "30", "--shifts", "4", "--models", "2", "--loads", "1", "--out", str(out), "--chromium", chromium]
    )
    result = json.loads(out.read_text())
    assert result["shape"]["classes"] == 30 and result["bytes"] > 10_000
    assert 0 < result["seconds_to_interactive"] == result["seconds_to_interactive_max"]
    assert result["meets_goals"] == {"bytes": True, "seconds_to_interactive": result["seconds_to_interactive"] < 3.0}
    assert "load_average_1min_at_start" in result["machine"] and len(result["machine"]["cores_used"]) <= 2


# --- the class-drop tests and the ranks of the models -------------------------------------------


def _with_tests(
    tmp_path: Path,
    names: tuple[str, ...] = ("ant", "bee", "cat", "dog", "eel"),
    models: tuple[str, ...] = ("m1", "m2"),
    shifts: tuple[str, ...] = ("clean", "fog", "snow"),
) -> ViewFiles:
    """A view of 2 models x (clean, fog, snow) x 5 classes with its class-drop tests (m1's class
    2 drops under fog, m2's class 0 rises under snow, class 4 untested under snow) and a ranking
    of the models under each shift. Other ``names``, ``models`` and ``shifts`` (5 classes, 2
    models and 3 shifts or more) place the same cells by position: the first model's class 2
    drops under the second shift, and so on."""
    from classwise.metrics.class_drops import COLUMNS, EXTRA_COLUMNS

    files = _write_view(tmp_path, list(names), _confusions(list(names), list(models), list(shifts), seed=5))
    rows = []
    for model in models:
        for shift in shifts[1:]:
            for c, name in enumerate(names):
                drop, rise, untested = (
                    (model, shift, c) == (models[0], shifts[1], 2),
                    (model, shift, c) == (models[1], shifts[2], 0),
                    (shift, c) == (shifts[2], 4),
                )
                change = -0.42 if drop else 0.31 if rise else 0.01
                p = np.nan if untested else 0.001 if drop or rise else 0.6
                rows.append(
                    {
                        **dict.fromkeys(COLUMNS + EXTRA_COLUMNS, 0),
                        "model": model, "shift": shift, "class": c, "class_name": name, "pairing": "paired",
                        "change": change, "change_low": change - 0.1, "change_high": change + 0.1, "p_value": p,
                        "p_adjusted": p, "significant": drop or rise, "test": "none" if untested else "mcnemar_exact",
                        "adjustment": "bh", "q": 0.05, "confidence": 0.95, "family_size": 9 if model == models[1] else 10,
                    }
                )  # fmt: skip
    drops = tmp_path / "class_drops.csv"
    pd.DataFrame(rows).to_csv(drops, index=False)
    rankings = {}
    for shift in shifts:
        path = tmp_path / f"ranking_{shift}.csv"
        # model i: rank i + 1 in [i, i + 2] (within 1..models), group a, ab, bc, cd, ...
        pd.DataFrame(
            [
                {"metric": metric, "model": model, "value": 0.5, "rank": i + 1.0, "rank_low": max(1, i),
                 "rank_high": min(len(models), i + 2), "group": "abcdefghij"[max(0, i - 1) : i + 1],
                 "rank_low_pairwise": 1, "rank_high_pairwise": 2, "n_tied": 1, "n_samples": 100, "n_classes": len(names)}
                for metric in ("A", "WCA", "W2CR")
                for i, model in enumerate(models)
            ]
        ).to_csv(path, index=False)  # fmt: skip
        rankings[shift] = str(path)
    return ViewFiles(
        files.dataset, files.labels, files.models, files.shifts, files.files, files.shift_summary,
        class_drops=str(drops), rankings=rankings,
    )  # fmt: skip


def test_the_class_drop_tests_and_the_ranks_reach_the_page_s_data(tmp_path: Path) -> None:
    view = _with_tests(tmp_path)
    payload = view_payload(read_view(view))
    drops = payload["drops"]
    assert drops["codes"][0] == ["00000", "11211", "11110"]  # m1: clean untested, class 2 drops under fog
    assert drops["codes"][1] == ["00000", "11111", "31110"]  # m2: class 0 rises under snow, class 4 untested
    cells = drops["significant"]
    assert list(zip(cells["m"], cells["s"], cells["c"])) == [(0, 1, 2), (1, 2, 0)] and cells["change"] == [-0.42, 0.31]
    assert (drops["q"], drops["adjustment"], drops["tests"]) == (0.05, "bh", ["mcnemar_exact"])
    assert drops["family_size"] == {"m1": 10, "m2": 9}
    summary = payload["summary"]
    row = next(r for r in range(len(summary["shift"])) if (summary["shift"][r], summary["model"][r]) == (1, 1))  # fog, m2
    assert {metric: payload["ranks"][metric]["group"][row] for metric in ("A", "WCA")} == {"A": "ab", "WCA": "ab"}
    assert set(payload["ranks"]) == {"A", "WCA"} and payload["sources"]["class_drops"].endswith("robustness/class_drops.csv")
    bad = pd.read_csv(view.class_drops)
    bad.loc[3, "model"] = "m9"
    bad.to_csv(view.class_drops, index=False)
    with pytest.raises(InputError, match=r"class_drops\.csv: a row of model 'm9'.* is not of this view"):
        read_view(view)


def test_the_heatmap_marks_the_significant_changes_and_says_q_and_the_method(tmp_path: Path) -> None:
    data = read_view(_with_tests(tmp_path))
    payload = view_payload(data)
    path = tmp_path / "explorer.html"
    write_explorer(path, explorer_payload([payload], title="t"))
    row = payload["classOrder"].index(2)
    col = payload["shiftOrder"].index(1)  # class 2 under fog: m1's significant drop
    with browser("explorer class-drop test") as launched:
        visit = open_offline(launched, path)
        page = visit.page
        assert visit.errors == visit.requests == []
        note = page.locator("#heatmap-note").text_content()
        assert "Benjamini-Hochberg (false discovery rate) at q = 0.05 over each model's 9-10 tests" in note
        assert "McNemar's exact test" in note and page.locator("#heatmap").get_attribute("data-marked") == "1"
        assert page.locator("#summary-table td[data-column=rank_A]").first.text_content() in ("1 [1, 2] a", "2 [1, 2] ab")
        page.locator("#heatmap-value").select_option("drops")
        shot = tmp_path / "drops.png"
        page.locator("#heatmap").screenshot(path=str(shot))  # scrolled into view
        box = page.locator("#heatmap").bounding_box()
        plot_w, plot_h = box["width"] - 170 - 12, box["height"] - 110 - 14
        x, y = 170 + (col + 0.5) * plot_w / 3, 110 + (row + 0.5) * plot_h / 5
        page.mouse.move(box["x"] + x, box["y"] + y)
        tip = page.locator("#heatmap-tooltip").text_content()
        assert "significant drop: -42.00 pp [-52.00, -32.00], adjusted p = 0.001" in tip
        page.locator("#class-search").fill("cat")
        marks = page.locator("#class-table tr[data-shift=fog] td[data-model=m1] [data-field=drop]")
        assert marks.text_content() == "\u25bc" and page.locator("#class-table [data-field=drop]").count() == 1
    from PIL import Image

    with Image.open(shot) as image:
        ratio = image.width / box["width"]
        assert image.convert("RGB").getpixel((int(x * ratio), int(y * ratio))) == (192, 57, 43)  # a drop: red


# --- the layout: names wrap between words, wide tables scroll in their own box -----------------

#: A run's shift names (ImageNet-C's, with their severity) and one longer than any column should be.
LAYOUT_SHIFTS = (
    "clean", "contrast_decrease_s3", "gaussian_blur_s5", "gaussian_noise_s4", "impulse_noise_s5", "jpeg_compression_s5",
    "motion_blur_s3", "elastic_transform_s2", "pixelate_s4", "brightness_increase_s1", "defocus_blur_s5",
    "frosted_glass_blur_then_contrast_decrease_s5",
)  # fmt: skip
LAYOUT_MODELS = ("resnet50_torchvision", "vit_base_patch16_224_augreg", "convnext_tiny_in1k", "efficientnet_b0_ra")
LAYOUT_CLASSES = ("great white shark", "American black bear", "king penguin", "sulphur-crested cockatoo", "tench", "cat")

#: Every element whose text the test measures: the class panel's heading, list and cells (each
#: confusion on its own line), the tables' cells. Blocks that start a line of their own are
#: listed one by one: a new line between two of them is no break inside a word.
MEASURED = (
    "#class-name, .worst-where li, #class-table th, #class-table td:not(.confusions), #class-table [data-field=confusion], "
    "#summary-table th, #summary-table td, #worst-table th, #worst-table td"
)

#: Where a line of the elements of ``selector`` starts inside a word: each character's box (a
#: Range over it) against the last visible character's; a character lower than that one by half
#: a line starts a new line, which must follow white space, "_" (where the page puts <wbr>) or
#: "-" (where Chromium breaks by itself).
LINE_BREAKS_JS = """(selector) => {
  const found = { insideWords: [], atUnderscores: 0, atSpaces: 0, measured: 0 };
  for (const element of document.querySelectorAll(selector)) {
    if (!element.getClientRects().length) continue;  // not shown (a filtered row)
    found.measured++;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    let last = null;
    let space = false;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.data.length; i++) {
        const character = node.data[i];
        if (/\\s/.test(character)) { space = true; continue; }
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const box = range.getBoundingClientRect();
        if (!box.width && !box.height) continue;
        if (last && box.top > last.box.top + last.box.height / 2) {
          if (space) found.atSpaces++;
          else if (last.character === "_") found.atUnderscores++;
          else if (last.character !== "-") found.insideWords.push(element.textContent + " | " + last.character + "/" + character);
        }
        last = { box, character };
        space = false;
      }
    }
  }
  return found;
}"""

#: Each table shown: its width, its wrapper's (the parent's) box, scroll width and overflow.
TABLES_JS = """() => Array.from(document.querySelectorAll("table")).filter((t) => t.getClientRects().length).map((t) => {
  const wrapper = t.parentElement;
  return {
    id: t.id, width: t.getBoundingClientRect().width, clientWidth: wrapper.clientWidth, scrollWidth: wrapper.scrollWidth,
    overflowX: getComputedStyle(wrapper).overflowX, right: wrapper.getBoundingClientRect().right,
  };
})"""

#: What a reader copies who selects a cell's text (the selection as a string).
COPIED_JS = """(element) => {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  return selection.toString();
}"""


def test_at_4_models_names_wrap_between_words_and_wide_tables_scroll_in_their_own_box(tmp_path: Path) -> None:
    """Issue 42 in a 1,400 x 900 window: 4 models, 12 shifts with ImageNet-C's names and a longer one,
    class names with spaces. The screenshots (class panel, scrolled sideways, models x shifts) stay in
    tmp_path for a reader to look at."""
    view = _with_tests(tmp_path, LAYOUT_CLASSES, LAYOUT_MODELS, LAYOUT_SHIFTS)
    path = tmp_path / "explorer.html"
    write_explorer(path, explorer_payload([view_payload(read_view(view))], title="layout"))
    width, height = 1400, 900
    with browser("explorer layout test") as launched:
        visit = open_offline(launched, path, viewport=(width, height))
        page = visit.page
        page.locator("#class-search").fill("shark")
        page.locator("#class-name", has_text="great white shark").wait_for()
        page.locator("#class-table").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "class-panel.png"))
        assert visit.errors == visit.requests == []
        # (1) the page itself never scrolls sideways
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # (2) every table fits the window or scrolls inside its wrapper; the class table (4 models x 4
        # columns) is wider than the window, so its wrapper must scroll
        tables = {table["id"]: table for table in page.evaluate(TABLES_JS)}
        assert set(tables) == {"class-table", "summary-table", "worst-table"}
        for table in tables.values():
            assert table["overflowX"] in ("auto", "scroll") and table["right"] <= width, table
            assert table["width"] <= table["clientWidth"] + 1 or table["scrollWidth"] > table["clientWidth"], table
        assert tables["class-table"]["width"] > tables["class-table"]["clientWidth"], tables["class-table"]
        # scrolled to its end, the class table keeps its shift column in view and the page stays put
        wrapper = page.locator("#class-table").locator("xpath=..")
        wrapper.evaluate("(box) => { box.scrollLeft = box.scrollWidth; }")
        assert wrapper.evaluate("(box) => box.scrollLeft") > 0
        first = page.locator("#class-table tbody th[scope=row]").first.bounding_box()
        assert abs(first["x"] - wrapper.bounding_box()["x"]) <= 1.5
        assert page.evaluate("window.scrollX") == 0 and page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(tmp_path / "class-panel-scrolled.png"))
        page.locator("#summary-table").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "summary.png"))
        # (3) no name breaks inside a word; the longest shift name wraps, at its underscores
        breaks = page.evaluate(LINE_BREAKS_JS, MEASURED)
        assert breaks["insideWords"] == [], breaks["insideWords"]
        assert breaks["atUnderscores"] > 0 and breaks["measured"] > 100, breaks
        # what the page puts between a name's words is no character: a name copies as it is spelled
        for shift in LAYOUT_SHIFTS:
            cell = page.locator(f"#class-table tr[data-shift='{shift}'] th[scope=row]")
            assert cell.text_content() == shift and cell.evaluate(COPIED_JS) == shift
        for model in LAYOUT_MODELS:
            cell = page.locator(f"#summary-table tr[data-model='{model}'] td[data-column=model]").first
            assert cell.evaluate(COPIED_JS) == model
