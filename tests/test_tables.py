"""Paper-style tables: cell format, row order, Markdown / CSV / LaTeX rendering."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from classwise import tables
from classwise.errors import InputError
from classwise.metrics.catalogue import MetricParameters, paper_rows


def _document(values: dict[str, tuple[float, list]]) -> dict:
    return {
        "n_classes": 3,
        "class_names": ["tiger cat", "laptop", "notebook"],
        "metrics": {name: {"value": v, "classes": c} for name, (v, c) in values.items()},
    }


def test_cells_are_percentages_with_class_names() -> None:
    names = ["tiger cat", "laptop", "notebook"]
    assert tables.format_cell({"value": 0.08, "classes": [0]}, names) == "8.00 (tiger cat)"
    assert tables.format_cell({"value": 0.42, "classes": [1, 2]}, names) == "42.00 (laptop, notebook)"
    assert tables.format_cell({"value": 0.7613, "classes": []}, names) == "76.13"
    assert tables.format_cell({"value": 1.0, "classes": ["cat"]}, names) == "100.00 (cat)"
    # n worst classes are not listed: the paper shows no names for W{n}CR.
    assert tables.format_cell({"value": 0.154, "classes": [0, 1, 2]}, names) == "15.40"


def test_paper_rows_follow_table_1() -> None:
    assert paper_rows([10, 100], 5, superclasses=True) == [
        "A",
        "WCA",
        "WCP",
        "WSupCA",
        "WSupCR",
        "W10CR",
        "W100CR",
        "W2CA",
        "A@5",
        "WCA@5",
        "W10CR@5",
        "W100CR@5",
    ]
    assert "WSupCA" not in paper_rows([2], 3, superclasses=False)


def test_metric_table_columns_are_models_in_order() -> None:
    docs = {
        "vit": _document({"A": (0.8453, []), "WCA": (0.24, [0])}),
        "resnet18": _document({"A": (0.6976, []), "WCA": (0.08, [1])}),
    }
    frame = tables.metric_table(docs, ["A", "WCA"])
    assert list(frame.columns) == ["vit", "resnet18"]
    assert frame.loc["WCA", "resnet18"] == "8.00 (laptop)"
    parsed = pd.read_csv(io.StringIO(tables.to_csv(frame)), index_col=0, dtype=str)
    assert parsed.loc["A", "vit"] == "84.53"


def test_missing_metric_is_an_error_naming_model_and_metric() -> None:
    with pytest.raises(InputError, match="model 'vit' has no metric 'WCP'"):
        tables.metric_table({"vit": _document({"A": (0.5, [])})}, ["A", "WCP"])


def test_markdown_and_latex_render_every_cell() -> None:
    frame = tables.metric_table({"m_1": _document({"A": (0.5, []), "WCA": (0.25, [0])})}, ["A", "WCA"])
    markdown = tables.to_markdown(frame, caption="Table")
    assert markdown.splitlines()[2] == "| metric | m_1 |"
    assert "| WCA | 25.00 (tiger cat) |" in markdown
    latex = tables.to_latex(frame, caption="50% of it")
    assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex
    assert "m\\_1" in latex and "50\\% of it" in latex
    assert "WCA & 25.00 (tiger cat) \\\\" in latex


def test_three_decimals_has_one_style_with_the_leading_zero() -> None:
    from classwise.tables import three_decimals

    assert three_decimals(0.91349) == "0.913"
    assert three_decimals(0.7084) == "0.708"
    assert three_decimals(-0.0004) == "-0.000"
    assert three_decimals(1.0) == "1.000"
    assert three_decimals(None) == "n/a"
    assert three_decimals(float("nan")) == "n/a"


def _decisiveness_document(accuracy: float, reported: float, measured: float) -> dict:
    metrics = {}
    for name in ("decisiveness", "geometric_accuracy", "robustness"):
        metrics[name] = {"value": reported}
        metrics[f"{name}_measured"] = {"value": measured}
    metrics["calibration_slope"] = {"value": None}
    sweep = [{"gamma": g, "robustness": 0.1, "geometric_accuracy": 0.5, "decisiveness": 0.9} for g in (0.05, 0.0)]
    return {"accuracy": accuracy, "metrics": metrics, "gamma_sweep": sweep}


def test_decisiveness_table_has_the_papers_rows_and_slashed_cells() -> None:
    from classwise.tables import decisiveness_table, gamma_sweep_table

    documents = {"alexnet": _decisiveness_document(0.974, 0.9131, 0.9128), "densenet": _decisiveness_document(0.5, 0.2, 0.3)}
    frame = decisiveness_table(documents)
    assert list(frame.index) == ["Prediction Accuracy", "Geometric Accuracy", "Robustness", "Decisiveness", "Calibration slope"]
    assert frame.loc["Prediction Accuracy", "alexnet"] == "0.974"
    assert frame.loc["Geometric Accuracy", "alexnet"] == "0.913 / 0.913"
    assert frame.loc["Robustness", "densenet"] == "0.200 / 0.300"
    assert frame.loc["Calibration slope", "densenet"] == "n/a"
    sweep = gamma_sweep_table(documents)
    assert list(sweep.index) == ["0.05", "0"]
    assert sweep.loc["0.05", "densenet: robustness"] == "0.100"  # the decisiveness table's style
    assert list(sweep.columns)[:3] == ["alexnet: robustness", "alexnet: geometric accuracy", "alexnet: decisiveness"]


def test_decisiveness_table_with_intervals_follows_each_number_with_its_interval() -> None:
    from classwise.tables import decisiveness_table

    document = _decisiveness_document(0.974, 0.9131, 0.9128)
    document["accuracy_ci"] = [0.9601, 0.985]
    for entry in document["metrics"].values():
        entry["ci"] = [None, None] if entry["value"] is None else [entry["value"] - 0.01, entry["value"] + 0.02]
    frame = decisiveness_table({"alexnet": document}, intervals=True)
    assert frame.index.equals(decisiveness_table({"alexnet": document}).index)
    assert frame.loc["Prediction Accuracy", "alexnet"] == "0.974 [0.960, 0.985]"
    assert frame.loc["Geometric Accuracy", "alexnet"] == "0.913 [0.903, 0.933] / 0.913 [0.903, 0.933]"
    slope = document["metrics"]["calibration_slope"]["value"]
    expected = "n/a [n/a, n/a]" if slope is None else f"{slope:.3f} [{slope - 0.01:.3f}, {slope + 0.02:.3f}]"
    assert frame.loc["Calibration slope", "alexnet"] == expected
    del document["accuracy_ci"]
    with pytest.raises(InputError, match="model 'alexnet' has no interval for 'accuracy'"):
        decisiveness_table({"alexnet": document}, intervals=True)


# --- metrics that are trivial for the class count -----------------------------------------


def _three_class_scores() -> tuple:
    import numpy as np

    rng = np.random.default_rng(4)
    labels = np.repeat(np.arange(3), 20)
    logits = rng.normal(size=(60, 3))
    logits[np.arange(60), labels] += 1.0
    return logits, labels


def test_top_k_metrics_with_k_at_least_the_class_count_are_skipped_with_why() -> None:
    import numpy as np

    from classwise.metrics import worst_class as wc
    from classwise.metrics.stats import compute_stats
    from classwise.metrics.suite import evaluate

    logits, labels = _three_class_scores()
    # the reason they are trivial: with k >= C every label is among the top k (a naive check)
    top5 = np.argsort(-logits, axis=1)[:, :5]
    assert all(label in row for label, row in zip(labels, top5, strict=True))
    assert wc.topk_accuracy(compute_stats(logits, labels), 5).value == 1.0

    result = evaluate(logits, labels, parameters=MetricParameters(k=5, ns=[2, 10])).to_json()
    assert not [name for name in result["metrics"] if "@" in name]
    assert {"A@5", "WCA@5", "W2CR@5", "W10CR", "W10CR@5"} <= set(result["skipped"])
    assert "k = 5 >= 3 classes" in result["skipped"]["A@5"]
    assert "n = 10 >= 3 classes" in result["skipped"]["W10CR"]
    kept = evaluate(logits, labels, parameters=MetricParameters(k=2, ns=[2])).to_json()
    assert {"A@2", "WCA@2", "W2CR@2"} <= set(kept["metrics"]) and kept["skipped"] == {}


def test_worst_class_table_leaves_out_trivial_rows_and_says_so(tmp_path) -> None:
    import json

    import numpy as np

    from classwise.metrics.suite import evaluate
    from classwise.steps.reports import worst_class_table_step

    logits, labels = _three_class_scores()
    documents = {}
    for model, shift in (("a", 0.0), ("b", 0.5)):
        document = evaluate(logits + shift * (np.arange(3) == 0), labels, parameters=MetricParameters(k=5, ns=[2, 10])).to_json()
        document.update(class_names=["x", "y", "z"], parameters={"k": 5, "n": [2, 10], "superclasses": {}})
        documents[model] = tmp_path / f"{model}.json"
        documents[model].write_text(json.dumps(document))
    out = {kind: tmp_path / f"table.{kind}" for kind in ("md", "csv", "tex")}
    worst_class_table_step(
        metrics_paths=documents, caption="Demo.", markdown_path=out["md"], csv_path=out["csv"], latex_path=out["tex"]
    )
    frame = pd.read_csv(out["csv"], index_col=0)
    assert list(frame.index) == ["A", "WCA", "WCP", "W2CR", "W2CA"]
    markdown = out["md"].read_text()
    caption = markdown.split("\n\n")[0]
    assert "Not shown: W10CR, W10CR@5 (n = 10 >= 3 classes" in caption  # W10CR@5 once, under n
    assert "Not shown: A@5, WCA@5, W2CR@5 (k = 5 >= 3 classes" in caption
    assert "A@5" in out["tex"].read_text().split("\\begin{tabular}")[0]  # the LaTeX caption too


def test_paper_rows_for_a_class_count() -> None:
    assert paper_rows([2, 10], 5, superclasses=False, n_classes=3) == ["A", "WCA", "WCP", "W2CR", "W2CA"]
    assert paper_rows([2, 10], 2, superclasses=False, n_classes=3)[-3:] == ["A@2", "WCA@2", "W2CR@2"]
    assert tables.skipped_rows_note(["A", "A@5"], {"A@5": "k too big", "W2CR": "unused"}) == "Not shown: A@5 (k too big)."
    assert tables.skipped_rows_note(["A"], {"A@5": "k too big"}) == ""


def test_write_tables_writes_display_as_markdown_and_latex_and_data_as_csv(tmp_path) -> None:
    data = pd.DataFrame({"value": [0.123456, 0.5]}, index=pd.Index(["a", "b"], name="shift"))
    paths = {name: tmp_path / f"t.{name}" for name in tables.TABLE_FORMATS}
    tables.write_tables(tables.rounded_display(data, 2), "Caption", paths, data=data)
    assert "| a | 0.12 |" in paths["markdown"].read_text()
    assert r"a & 0.12 \\" in paths["latex"].read_text()
    # A named index is a column of the CSV, at full precision.
    assert paths["csv"].read_text() == "shift,value\na,0.123456\nb,0.5\n"
    # Bare row numbers are not.
    tables.write_csv(paths["csv"], data.reset_index())
    assert paths["csv"].read_text() == "shift,value\na,0.123456\nb,0.5\n"
    # A multi-level index with a named level is kept.
    tables.write_csv(paths["csv"], pd.concat({"m": data}, names=["model"]))
    assert paths["csv"].read_text().splitlines()[:2] == ["model,shift,value", "m,a,0.123456"]


# ---------------------------------------------------------------------------- intervals and comparisons


def test_interval_cells_add_the_bound_or_else_the_percentile_interval_in_percent() -> None:
    names = ["tiger cat", "laptop", "notebook"]
    wca = {"value": 0.08, "classes": [0], "ci": [0.06, 0.09], "ci_bound": [0.04, 0.14]}
    assert tables.interval_cell(wca, names) == "8.00 (tiger cat) [4.00, 14.00]"
    wcp = {"value": 0.42, "classes": [1], "ci": [0.3075, 0.5]}
    assert tables.interval_cell(wcp, names) == "42.00 (laptop) [30.75, 50.00]"
    accuracy = {"value": 1.0, "classes": [], "ci": [1.0, 1.0]}
    assert tables.interval_cell(accuracy, names) == "100.00 [100.00, 100.00]"
    undefined = {"value": 0.5, "classes": [], "ci": [None, None]}
    assert tables.interval_cell(undefined, names) == "50.00 [n/a, n/a]"
    with pytest.raises(InputError, match="no interval"):
        tables.interval_cell({"value": 0.5, "classes": []}, names)


def test_interval_table_keeps_the_paper_layout_and_names_a_missing_interval() -> None:
    document = _document({"A": (0.8453, []), "WCA": (0.24, [0])})
    document["metrics"]["A"]["ci"] = [0.8, 0.88]
    document["metrics"]["WCA"].update(ci=[0.1, 0.3], ci_bound=[0.05, 0.5])
    frame = tables.interval_table({"vit": document}, ["A", "WCA"])
    paper = tables.metric_table({"vit": document}, ["A", "WCA"])
    assert list(frame.index) == list(paper.index) and list(frame.columns) == list(paper.columns)
    assert frame.loc["A", "vit"] == "84.53 [80.00, 88.00]"
    assert frame.loc["WCA", "vit"] == "24.00 (tiger cat) [5.00, 50.00]"
    del document["metrics"]["A"]["ci"]
    with pytest.raises(InputError, match="model 'vit' has no interval for metric 'A'") as info:
        tables.interval_table({"vit": document}, ["A", "WCA"], source="m.json")
    assert info.value.path == "m.json" and info.value.field == "A.ci"


def _difference(a: float, b: float, low: float | None, high: float | None, p: float) -> dict:
    return {"a": a, "b": b, "difference": b - a, "ci": [low, high], "p_value": p}


def test_comparison_tables_flag_the_differences_whose_interval_excludes_zero() -> None:
    comparisons = {
        ("linear", "mlp"): {
            "A": _difference(0.5, 0.6, 0.02, 0.18, 0.01),  # wholly above 0
            "WCA": _difference(0.30, 0.25, -0.10, 0.03, 0.4),  # straddles 0
        },
        ("linear", "cnn"): {
            "A": _difference(0.5, 0.4, -0.2, -0.005, 0.02),  # wholly below 0
            "WCA": _difference(0.3, 0.3, None, None, 1.0),  # undefined interval: not flagged
        },
    }
    display, data = tables.comparison_tables(comparisons, ["A", "WCA"])
    assert list(display.columns) == ["mlp - linear", "cnn - linear"]
    assert display.loc["A", "mlp - linear"] == "+10.00 [+2.00, +18.00] *"
    assert display.loc["WCA", "mlp - linear"] == "-5.00 [-10.00, +3.00]"
    assert display.loc["A", "cnn - linear"] == "-10.00 [-20.00, -0.50] *"
    assert display.loc["WCA", "cnn - linear"] == "+0.00 [n/a, n/a]"
    assert list(data.columns) == [
        "metric", "model_a", "model_b", "a", "b", "difference", "ci_low", "ci_high", "p_value", "excludes_zero",
    ]  # fmt: skip
    assert data["excludes_zero"].tolist() == [True, False, True, False]
    assert data[["metric", "model_a", "model_b"]].values.tolist()[2] == ["A", "linear", "cnn"]
    assert data["difference"].tolist() == pytest.approx([0.1, -0.05, -0.1, 0.0])
    with pytest.raises(InputError, match="comparison of 'mlp' with 'linear' has no metric 'WCP'"):
        tables.comparison_tables(comparisons, ["A", "WCP"])


def test_worst_probability_labels_name_classes_pairs_and_superclasses() -> None:
    document = _document({"A": (0.9, []), "WCA": (0.2, [2]), "W2CA": (0.5, [0, 1]), "WSupCA": (0.4, ["cats"])})
    document["metrics"]["WCA"]["worst_probability"] = [{"classes": [2], "probability": 0.7}, {"classes": [0], "probability": 0.3}]
    document["metrics"]["W2CA"]["worst_probability"] = [{"classes": [0, 1], "probability": 1.0}]
    document["metrics"]["WSupCA"]["worst_probability"] = [{"classes": ["cats"], "probability": 0.9}]
    shares = tables.worst_probability_labels({"vit": document}, ["A", "W2CA", "WCA"])
    assert shares == {"W2CA": {"vit": [("tiger cat, laptop", 1.0)]}, "WCA": {"vit": [("notebook", 0.7), ("tiger cat", 0.3)]}}
    assert list(tables.worst_probability_labels({"vit": document})) == ["WCA", "W2CA", "WSupCA"]


def _logits_file(path, logits, labels) -> None:
    import numpy as np

    from classwise.logits_io import save_logits

    save_logits(
        path,
        logits=logits,
        labels=labels,
        sample_ids=np.array([f"s{i}" for i in range(labels.size)]),
        class_names=np.array(["x", "y", "z"]),
        metadata={},
    )


def test_the_bootstrap_adds_intervals_and_leaves_the_paper_table_byte_identical(tmp_path) -> None:
    import json

    import numpy as np

    from classwise.steps.metrics import WorstClassSettings, worst_class_step
    from classwise.steps.reports import worst_class_table_step

    logits, labels = _three_class_scores()
    _logits_file(tmp_path / "a.npz", logits, labels)
    _logits_file(tmp_path / "b.npz", logits + 0.7 * (np.arange(3) == 1), labels)
    outputs = {}
    for mode, bootstrap in (("off", None), ("on", {"replicates": 40, "confidence": 0.9, "seed": 1})):
        settings = WorstClassSettings(superclasses={"xy": [0, 1], "z": [2]}, k=2, n=[2], bootstrap=bootstrap)
        paths = {}
        for model in ("a", "b"):
            folder = tmp_path / mode / model
            worst_class_step(
                logits_path=tmp_path / f"{model}.npz", label_view="original", view_labels_path=None, settings=settings,
                metrics_path=folder / "worst_class.json", per_class_path=folder / "per_class.csv",
                confusion_path=folder / "confusion.csv",
            )  # fmt: skip
            paths[model] = folder / "worst_class.json"
        table = {kind: tmp_path / mode / f"worst_class.{kind}" for kind in ("md", "csv", "tex")}
        intervals = {name: tmp_path / mode / f"intervals.{name}" for name in tables.TABLE_FORMATS}
        worst_class_table_step(
            metrics_paths=paths, caption="Demo.", markdown_path=table["md"], csv_path=table["csv"],
            latex_path=table["tex"], interval_paths=intervals if bootstrap else None, interval_caption="With intervals.",
        )  # fmt: skip
        outputs[mode] = (paths, table, intervals)
    for kind in ("md", "csv", "tex"):
        assert outputs["on"][1][kind].read_bytes() == outputs["off"][1][kind].read_bytes(), kind
    assert not outputs["off"][2]["csv"].exists()
    on = json.loads(outputs["on"][0]["a"].read_text())
    off = json.loads(outputs["off"][0]["a"].read_text())
    assert on["bootstrap"]["replicates"] == 40 and "bootstrap" not in off
    for name, entry in off["metrics"].items():
        assert {key: on["metrics"][name][key] for key in entry} == entry, name  # values, classes unchanged
        assert "ci" in on["metrics"][name]
    assert "worst_probability" in on["metrics"]["WCA"] and "worst_probability" not in on["metrics"]["A"]
    shown = pd.read_csv(outputs["on"][2]["csv"], index_col=0)
    wca = on["metrics"]["WCA"]
    low, high = wca["ci_bound"]
    name = ["x", "y", "z"][wca["classes"][0]]
    assert shown.loc["WCA", "a"] == f"{100 * wca['value']:.2f} ({name}) [{100 * low:.2f}, {100 * high:.2f}]"
    assert outputs["on"][2]["markdown"].read_text().startswith("With intervals.")
    per_class_on = pd.read_csv(tmp_path / "on" / "a" / "per_class.csv")
    per_class_off = pd.read_csv(tmp_path / "off" / "a" / "per_class.csv")
    pd.testing.assert_frame_equal(per_class_on[per_class_off.columns], per_class_off)
    shares = per_class_on["worst_recall_probability"]
    assert shares.sum() == pytest.approx(1.0)  # one worst class per replicate
    top = on["metrics"]["WCA"]["worst_probability"][0]
    assert shares[top["classes"][0]] == pytest.approx(top["probability"])
    assert per_class_on["worst_precision_probability"].sum() <= 1.0 + 1e-12


def test_a_model_of_hard_predictions_gets_intervals_and_n_a_where_scores_are_needed(tmp_path) -> None:
    import json

    import numpy as np

    from classwise.metrics.suite import HARD_PREDICTIONS_REASON
    from classwise.steps.metrics import WorstClassSettings, worst_class_step
    from classwise.steps.reports import compare_models_step, worst_class_table_step

    logits, labels = _three_class_scores()
    _logits_file(tmp_path / "soft.npz", logits, labels)
    ids = np.array([f"s{i}" for i in range(labels.size)])
    order = np.random.default_rng(0).permutation(labels.size)  # matched by id
    np.savez(
        tmp_path / "hard.npz",
        predictions=logits.argmax(axis=1)[order],
        labels=labels[order],
        sample_ids=ids[order],
        class_names=np.array(["x", "y", "z"]),
    )
    settings = WorstClassSettings(superclasses={}, k=2, n=[2], bootstrap={"replicates": 30, "confidence": 0.95, "seed": 0})
    paths = {}
    for model in ("soft", "hard"):
        paths[model] = tmp_path / model / "worst_class.json"
        worst_class_step(
            logits_path=tmp_path / f"{model}.npz", label_view="original", view_labels_path=None, settings=settings,
            metrics_path=paths[model], per_class_path=tmp_path / model / "per_class.csv",
            confusion_path=tmp_path / model / "confusion.csv",
        )  # fmt: skip
    hard, soft = (json.loads(paths[m].read_text()) for m in ("hard", "soft"))
    assert "W2CA" not in hard["metrics"] and hard["skipped"]["W2CA"] == HARD_PREDICTIONS_REASON
    assert hard["metrics"]["WCA"]["ci_bound"] == soft["metrics"]["WCA"]["ci_bound"]  # the same confusion matrix
    intervals = {name: tmp_path / f"intervals.{name}" for name in tables.TABLE_FORMATS}
    worst_class_table_step(
        metrics_paths=paths, caption="T.", markdown_path=tmp_path / "t.md", csv_path=tmp_path / "t.csv",
        latex_path=tmp_path / "t.tex", interval_paths=intervals, interval_caption="I.",
    )  # fmt: skip
    shown = pd.read_csv(intervals["csv"], index_col=0, keep_default_na=False)
    assert shown.loc["W2CA", "hard"] == "n/a" and shown.loc["W2CA", "soft"].endswith("]")
    assert shown.loc["WCA", "hard"] == shown.loc["WCA", "soft"]
    compared = {name: tmp_path / f"compared.{name}" for name in tables.TABLE_FORMATS}
    ranked = {name: tmp_path / f"ranked.{name}" for name in tables.TABLE_FORMATS}
    compare_models_step(
        logits_paths={"soft": tmp_path / "soft.npz", "hard": tmp_path / "hard.npz"}, label_view="original",
        view_labels_path=None, settings=settings, caption="C.", table_paths=compared, ranking_paths=ranked,
        ranking_caption="R.",
    )  # fmt: skip
    markdown = compared["markdown"].read_text()
    assert "| W2CA | n/a |" in markdown and "| A@2 | n/a |" in markdown
    assert "| A | +0.00 [+0.00, +0.00] |" in markdown  # the same predictions, paired by id
    data = pd.read_csv(compared["csv"])
    assert set(data["metric"]) == {"A", "WCA", "WCP", "W2CR"} and (data["difference"] == 0).all()
    # the same job ranks them: equal predictions tie, share their average rank and a group, and say so
    ranking = pd.read_csv(ranked["csv"])
    assert set(ranking["metric"]) == {"A", "WCA", "W2CR"} and (ranking["rank"] == 1.5).all() and (ranking["n_tied"] == 2).all()
    assert (ranking["group"] == "a").all() and (ranking["n_samples"] == labels.size).all() and (ranking["replicates"] == 30).all()
    assert (
        "| A | soft | " in ranked["markdown"].read_text()
        and "1.5 (2 tied) [1.5, 1.5] | a | 1-2 |" in ranked["markdown"].read_text()
    )
    assert ranked["markdown"].read_text().startswith(f"R. n = {labels.size} samples, 3 classes with samples.")


def test_every_display_cell_reads_a_numpy_nan_as_undefined() -> None:
    import numpy as np

    from classwise.tables import decimals, p_value, percent, three_decimals

    for nan in (float("nan"), np.float64("nan"), np.float32("nan"), None):
        assert decimals(nan) == p_value(nan) == percent(nan) == three_decimals(nan) == "n/a"
    assert decimals(np.float32(0.25)) == "0.2500" and p_value(np.float32(0.25)) == "0.25"


def test_the_per_class_csv_holds_the_json_values_at_full_precision(tmp_path) -> None:
    import json

    import numpy as np

    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(3), [21, 23, 29])  # recalls such as 17/23, not 6-decimal numbers
    logits = rng.normal(size=(labels.size, 3))
    logits[np.arange(labels.size), labels] += 1.0
    _logits_file(tmp_path / "m.npz", logits, labels)
    worst_class_step(
        logits_path=tmp_path / "m.npz", label_view="original", view_labels_path=None,
        settings=WorstClassSettings(superclasses={}, k=2, n=[2]), metrics_path=tmp_path / "worst_class.json", per_class_path=tmp_path / "per_class.csv",
        confusion_path=tmp_path / "confusion.csv",
    )  # fmt: skip
    metrics = json.loads((tmp_path / "worst_class.json").read_text())["metrics"]
    per_class = pd.read_csv(tmp_path / "per_class.csv")
    assert per_class["recall"].min() == metrics["WCA"]["value"]  # bit for bit, not to 6 decimals
    assert per_class["precision"].min() == metrics["WCP"]["value"]
    assert per_class["cfps"].max() == metrics["CFPS_max"]["value"]
    hits = np.bincount(labels[logits.argmax(axis=1) == labels], minlength=3)
    assert per_class["recall"].tolist() == (hits / np.bincount(labels)).tolist()  # the textbook ratio, exactly


# ---------------------------------------------------------------------------------------- readability


def test_a_multi_level_index_is_one_named_column_per_level() -> None:
    index = pd.MultiIndex.from_tuples([("clean", "linear", 0), ("clean", "linear", 1)], names=["shift", "model", "class"])
    frame = tables.rounded_display(pd.DataFrame({"class_name": ["zero", "one"], "accuracy": [0.5, 0.25]}, index=index))
    lines = tables.to_markdown(frame).splitlines()
    assert lines[:3] == [
        "| shift | model | class | class_name | accuracy |",
        "|:--|:--|:--|--:|--:|",
        "| clean | linear | 0 | zero | 0.5000 |",
    ]
    latex = tables.to_latex(frame)
    assert "\\begin{tabular}{lllrr}" in latex and "shift & model & class & class\\_name & accuracy \\\\" in latex
    assert "clean & linear & 1 & one & 0.2500 \\\\" in latex
    assert "('" not in "\n".join(lines) + latex  # no tuple printed as a cell


#: A rendered number with a padding zero ("08.00", "+04.45", "-00.50") or without its leading zero (".715").
_PADDED_OR_BARE = re.compile(r"(?<![\w.])[+-]?0\d|(?<![\w.])[+-]?\.\d")


def test_the_pattern_finds_the_old_formats() -> None:
    for old in ("08.00 (1)", "+04.45 [+03.11, +06.12]", "-00.50", "| .715 |", "[.05, 1]"):
        assert _PADDED_OR_BARE.search(old), old
    for new in ("8.00 (1)", "+4.45 [+3.11, +6.12]", "-0.50", "| 0.715 |", "0.0500", "pgd_linf_eps0.05", "n/a", "100.00"):
        assert not _PADDED_OR_BARE.search(new), new


def test_no_rendered_table_pads_a_number_with_zeros_or_drops_its_leading_zero() -> None:
    from classwise.tables import decisiveness_table, gamma_sweep_table

    small = {"A": (0.0512, []), "WCA": (0.0, [0]), "WCP": (0.0801, [1]), "W2CA": (0.5, [0, 2])}
    document = _document(small)
    for name, entry in document["metrics"].items():
        entry["ci"] = [0.0, 0.0999] if name != "WCA" else None
        entry["ci_bound"] = [0.0004, 0.09] if name == "WCA" else None
    rows = list(small)
    comparison = {
        ("a", "b"): {row: {"a": 0.1, "b": 0.05, "difference": -0.0312, "ci": [-0.0905, 0.0004], "p_value": 0.04} for row in rows}
    }
    sweep = _decisiveness_document(0.0734, 0.0512, 0.0499)
    sweep["gamma_sweep"] = [
        {"gamma": g, "robustness": 0.0716, "geometric_accuracy": 0.5, "decisiveness": 0.932} for g in (0.05, 0.005, 0.0)
    ]
    frames = [
        tables.metric_table({"vit": document}, rows),
        tables.interval_table({"vit": document}, rows),
        tables.comparison_tables(comparison, rows)[0],
        decisiveness_table({"m": sweep}),
        gamma_sweep_table({"m": sweep}),
        tables.rounded_display(pd.DataFrame({"rate": [0.0, 0.0012, 0.05]}, index=pd.Index(["x", "y", "z"], name="k"))),
    ]
    for frame in frames:
        for text in (tables.to_markdown(frame), tables.to_latex(frame)):
            assert not _PADDED_OR_BARE.search(text), text
    assert "| WCA | -3.12 [-9.05, +0.04] |" in tables.to_markdown(frames[2])  # a change keeps its sign
    assert "| 0.05 | 0.072 | 0.500 | 0.932 |" in tables.to_markdown(frames[4])
