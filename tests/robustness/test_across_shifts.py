"""The class-wise view across shifts, against naive loops over the confusion matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise.errors import InputError
from classwise.robustness.across_shifts import (
    accuracy_quantiles,
    class_shift_matrix,
    corruption_summary,
    models_of,
    ranked_confusions,
    shift_summary,
    shift_summary_display,
    shifts_by_accuracy,
    worst_classes,
    worst_shifts,
)

C = 6
NAMES = [f"k{i}" for i in range(C)]


def _confusion(rng: np.random.Generator, empty_class: int | None = None) -> np.ndarray:
    m = rng.integers(0, 6, (C, C)) + np.diag(rng.integers(3, 20, C))
    if empty_class is not None:
        m[empty_class] = 0
    return m


@pytest.fixture
def confusions() -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(3)
    return {
        "clean": {"a": _confusion(rng), "b": _confusion(rng)},
        "blur_3": {"a": _confusion(rng), "b": _confusion(rng, empty_class=2)},
        "pgd": {"a": _confusion(rng)},  # b was not attacked
    }


def _recall_loop(m: np.ndarray) -> list[float]:
    out = []
    for i in range(len(m)):
        total = sum(m[i])
        out.append(m[i][i] / total if total else float("nan"))
    return out


def test_shift_summary_matches_a_loop(confusions) -> None:  # type: ignore[no-untyped-def]
    summary = shift_summary(confusions, NAMES)
    assert list(summary.index) == [("clean", "a"), ("clean", "b"), ("blur_3", "a"), ("blur_3", "b"), ("pgd", "a")]
    for (shift, model), row in summary.iterrows():
        m = confusions[shift][model]
        recall = _recall_loop(m)
        with_samples = [(r, i) for i, r in enumerate(recall) if r == r]
        wca, worst = min(with_samples)  # ties: lowest index, as (value, index) tuples sort
        assert row["accuracy"] == pytest.approx(np.trace(m) / m.sum())
        assert row["worst_class_accuracy"] == pytest.approx(wca)
        assert row["worst_class"] == worst and row["worst_class_name"] == NAMES[worst]
        clean = confusions["clean"][model]
        assert row["accuracy_change"] == pytest.approx(np.trace(m) / m.sum() - np.trace(clean) / clean.sum())
        clean_wca = min(r for r in _recall_loop(clean) if r == r)
        assert row["worst_class_accuracy_change"] == pytest.approx(wca - clean_wca)


def test_shift_summary_display_is_one_row_per_shift(confusions) -> None:  # type: ignore[no-untyped-def]
    summary = shift_summary(confusions, NAMES)
    display = shift_summary_display(summary)
    assert list(display.index) == ["clean", "blur_3", "pgd"]
    assert list(display.columns) == ["a A", "a WCA", "b A", "b WCA"]
    assert display.loc["pgd", "b A"] == ""  # b has no pgd run
    row = summary.loc[("blur_3", "a")]
    assert display.loc["blur_3", "a A"] == f"{row['accuracy']:.3f} {row['accuracy_change']:+.3f}"
    assert display.loc["blur_3", "a WCA"] == (
        f"{row['worst_class_accuracy']:.3f} ({row['worst_class_name']}) {row['worst_class_accuracy_change']:+.3f}"
    )
    clean = summary.loc[("clean", "a")]  # the reference row: values alone
    assert display.loc["clean", "a WCA"] == f"{clean['worst_class_accuracy']:.3f} ({clean['worst_class_name']})"


def test_class_shift_matrices(confusions) -> None:  # type: ignore[no-untyped-def]
    accuracy = class_shift_matrix(confusions, NAMES)
    cfps = class_shift_matrix(confusions, NAMES, value="cfps")
    assert list(accuracy.columns) == ["clean", "blur_3", "pgd"]
    for shift, by_model in confusions.items():
        for model, m in by_model.items():
            np.testing.assert_allclose(accuracy.loc[model][shift].to_numpy(), _recall_loop(m), equal_nan=True)
            errors = m.sum() - np.trace(m)
            naive = [(m[:, j].sum() - m[j, j]) / errors for j in range(C)]
            np.testing.assert_allclose(cfps.loc[model][shift].to_numpy(), naive)
    assert accuracy.loc["b"]["pgd"].isna().all()
    with pytest.raises(InputError):
        class_shift_matrix(confusions, NAMES, value="precision")


def test_corruption_summary_by_hand() -> None:
    # one model, two classes of 10 samples: clean recall 0.8 / 0.5; two corruptions
    clean = np.array([[8, 2], [5, 5]])
    blur = np.array([[6, 4], [5, 5]])  # recall 0.6 / 0.5
    noise = np.array([[4, 6], [9, 1]])  # recall 0.4 / 0.1
    confusions = {"clean": {"m": clean}, "blur": {"m": blur}, "noise": {"m": noise}, "pgd": {"m": noise}}
    summary = corruption_summary(confusions, ["x", "y"], ["blur", "noise"])
    np.testing.assert_allclose(summary["clean_error"], [0.2, 0.5])
    np.testing.assert_allclose(summary["mean_corruption_error"], [0.5, 0.7])  # 1 - (0.6+0.4)/2, 1 - (0.5+0.1)/2
    np.testing.assert_allclose(summary["relative_drop"], [(0.8 - 0.5) / 0.8, (0.5 - 0.3) / 0.5])
    assert corruption_summary(confusions, ["x", "y"], []).empty
    assert corruption_summary({"blur": {"m": blur}}, ["x", "y"], ["blur"]).empty


def test_worst_classes_ranks_by_mean_and_puts_empty_last() -> None:
    a = np.array([[0.5, 0.1, np.nan, 0.9], [0.3, 0.1, np.nan, 0.9]])
    assert worst_classes(a, 3).tolist() == [1, 0, 3]
    assert worst_classes(a, 10).tolist() == [1, 0, 3, 2]
    assert worst_classes(np.array([0.2, 0.2, 0.1]), 2).tolist() == [2, 0]  # ties: lowest index


def test_ranked_confusions_match_a_loop() -> None:
    rng = np.random.default_rng(5)
    m = rng.integers(0, 4, (8, 8)) * rng.integers(0, 2, (8, 8)) + np.diag(rng.integers(1, 9, 8))
    names = [f"n{i}" for i in range(8)]
    cells = []
    for i in range(8):
        for j in range(8):
            if i != j and m[i, j] > 0:
                cells.append((-m[i, j] / m[i].sum(), -m[i, j], i * 8 + j, i, j))
    cells.sort()
    ranked = ranked_confusions(m, names, top=10)
    assert list(zip(ranked["true"], ranked["predicted"])) == [(i, j) for *_, i, j in cells[:10]]
    np.testing.assert_allclose(ranked["share"], [-s for s, *_ in cells[:10]])
    assert ranked["true_name"].tolist() == [names[i] for *_, i, _ in cells[:10]]
    with pytest.raises(InputError):
        ranked_confusions(m, names[:3])


def test_figures_render_at_many_classes(tmp_path: Path) -> None:
    from classwise.plots import save_png
    from classwise.plots.many_classes import accuracy_spread_figure, worst_classes_by_shift_figure

    rng = np.random.default_rng(0)
    c = 300
    names = [f"class {i}" for i in range(c)]
    accuracy = {s: {m: rng.random(c) for m in ("a", "b")} for s in ("clean", "blur_1", "noise_5")}
    fig = worst_classes_by_shift_figure(accuracy, names, title="t")
    mean = np.mean([v for by in accuracy.values() for v in by.values()], axis=0)
    expected = [names[i] for i in np.argsort(mean, kind="stable")[:20]]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == expected
    np.testing.assert_allclose(fig.axes[0].images[0].get_array()[:, 1], accuracy["blur_1"]["a"][np.argsort(mean)[:20]])
    save_png(fig, tmp_path / "worst.png")
    # a shift over a subset of the clean samples says its n in its column (issue 39)
    fig = worst_classes_by_shift_figure(accuracy, names, title="t", notes={"noise_5": "n = 20 of 899", "blur_1": ""})
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["clean", "blur_1", "noise_5 (n = 20 of 899)"]
    fig = accuracy_spread_figure(accuracy, title="t")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list(accuracy)
    assert (tmp_path / "worst.png").stat().st_size > 0


def _class_accuracy(shifts: int, models: int, c: int, seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """Random class-wise accuracy, ``clean`` first, some classes without samples (NaN) and the
    last model missing from every third shift."""
    rng = np.random.default_rng(seed)
    names = ["clean"] + [f"shift{j}" for j in range(1, shifts)]
    accuracy: dict[str, dict[str, np.ndarray]] = {}
    for j, shift in enumerate(names):
        accuracy[shift] = {}
        for i in range(models):
            if i == models - 1 and j % 3 == 2:
                continue
            v = np.round(rng.random(c) ** (1 + j % 4), 2)  # rounded: ties between shifts happen
            v[rng.random(c) < 0.05] = np.nan
            accuracy[shift][f"m{i}"] = v
    return accuracy


def _finite(v: np.ndarray) -> np.ndarray:
    return v[np.isfinite(v)]


def _order_loop(accuracy: dict[str, dict[str, np.ndarray]]) -> list[str]:
    """Easiest first: mean over models of the mean class accuracy, ties in input order."""
    score = {s: float(np.mean([np.mean(_finite(v)) for v in by.values()])) for s, by in accuracy.items()}
    return sorted(accuracy, key=lambda s: -score[s])  # sorted is stable


def test_accuracy_quantiles_and_order_match_a_loop() -> None:
    accuracy = _class_accuracy(shifts=9, models=3, c=40)
    quantiles = accuracy_quantiles(accuracy, (0.0, 0.1, 0.5, 0.9, 1.0))
    for model, q in quantiles.items():
        assert q.shape == (5, 9)
        for j, by_model in enumerate(accuracy.values()):
            if model not in by_model:
                assert np.isnan(q[:, j]).all()
                continue
            v = _finite(by_model[model])
            np.testing.assert_allclose(q[:, j], [v.min(), *np.quantile(v, [0.1, 0.5, 0.9]), v.max()])
    assert shifts_by_accuracy(accuracy) == _order_loop(accuracy)
    with pytest.raises(InputError, match="quantiles"):
        accuracy_quantiles(accuracy, (0.5, 1.5))


def test_worst_shifts_are_clean_then_lowest_worst_class_accuracy() -> None:
    accuracy = _class_accuracy(shifts=30, models=2, c=12, seed=1)
    shifts = list(accuracy)
    wca = {s: np.mean([_finite(v).min() for v in by.values()]) for s, by in accuracy.items()}
    mean = {s: np.mean([_finite(v).mean() for v in by.values()]) for s, by in accuracy.items()}
    ranked = sorted(shifts[1:], key=lambda s: (wca[s], mean[s], shifts.index(s)))
    assert worst_shifts(accuracy, 8) == ["clean", *ranked[:7]]
    assert len(set(wca[s] for s in shifts)) < len(shifts)  # the tie-break was needed
    without_clean = {s: by for s, by in accuracy.items() if s != "clean"}
    assert worst_shifts(without_clean, 3) == ranked[:3]
    assert worst_shifts(accuracy, 100) == ["clean", *ranked]


def test_accuracy_spread_past_20_shifts_is_quantile_bands_of_bounded_size() -> None:
    """100 shifts x 4 models x 1,000 classes: the bands drawn are the class-wise quantiles of
    each shift, shifts easiest first, and the figure stays one page (box plots: 30 x 4.8 in of
    400 boxes)."""
    from matplotlib.collections import PolyCollection

    from classwise.plots.many_classes import accuracy_spread_figure

    accuracy = _class_accuracy(shifts=100, models=4, c=1000, seed=2)
    for by_model in accuracy.values():  # every model on every shift: each band is one polygon
        by_model.setdefault("m3", by_model["m0"][::-1].copy())
    fig = accuracy_spread_figure(accuracy, title="t")
    width, height = fig.get_size_inches()
    assert width <= 20 and height <= 13
    order = _order_loop(accuracy)
    assert [t.get_text() for t in fig.axes[-1].get_xticklabels()] == order
    x = np.arange(len(order))
    for ax, model in zip(fig.axes[1:], ["m0", "m1", "m2", "m3"]):
        values = [_finite(accuracy[s][model]) for s in order]
        expected = {
            "worst class": [v.min() for v in values],
            "median": [np.quantile(v, 0.5) for v in values],
            "10-90 %": [np.quantile(v, [0.1, 0.9]) for v in values],
            "min-max": [(v.min(), v.max()) for v in values],
        }
        lines = {line.get_gid(): line for line in ax.lines}
        for gid in ("worst class", "median"):
            np.testing.assert_allclose(lines[gid].get_xdata(), x)
            np.testing.assert_allclose(lines[gid].get_ydata(), expected[gid])
        bands = {c.get_gid(): c for c in ax.collections if isinstance(c, PolyCollection)}
        for gid in ("10-90 %", "min-max"):
            (path,) = bands[gid].get_paths()
            vertices = path.vertices
            for j in x:
                at = vertices[np.isclose(vertices[:, 0], j), 1]
                np.testing.assert_allclose([at.min(), at.max()], expected[gid][j])
    overview = {line.get_label(): line for line in fig.axes[0].lines if line.get_gid() == "worst class"}
    np.testing.assert_allclose(overview["m2"].get_ydata(), [_finite(accuracy[s]["m2"]).min() for s in order])


def test_accuracy_spread_keeps_box_plots_up_to_20_shifts() -> None:
    from classwise.plots.many_classes import accuracy_spread_figure

    accuracy = _class_accuracy(shifts=20, models=2, c=30)
    fig = accuracy_spread_figure(accuracy, title="t")
    assert len(fig.axes) == 1 and [t.get_text() for t in fig.axes[0].get_xticklabels()] == list(accuracy)


def test_summary_frame_types(confusions) -> None:  # type: ignore[no-untyped-def]
    summary = shift_summary(confusions, NAMES)
    assert isinstance(summary, pd.DataFrame)
    assert summary["worst_class"].dtype.kind == "i"


def test_the_step_writes_every_output(tmp_path: Path, confusions) -> None:  # type: ignore[no-untyped-def]
    from metric_files import confusion_samples, write_metric_files

    from classwise.steps.robustness import AcrossShiftsPaths, classwise_robustness_step

    files = {}
    for shift, by_model in confusions.items():
        for model, m in by_model.items():
            labels, predicted = confusion_samples(m)
            ids = np.array([f"{shift}/{i}" for i in range(labels.size)])  # random supports: other images
            files.setdefault(shift, {})[model] = write_metric_files(tmp_path, f"{shift}_{model}", ids, labels, predicted, NAMES)

    def table(stem: str) -> dict[str, Path]:
        return {"markdown": tmp_path / f"{stem}.md", "csv": tmp_path / f"{stem}.csv", "latex": tmp_path / f"{stem}.tex"}

    across = AcrossShiftsPaths(
        shift_summary=table("summary"),
        corruption_errors=table("errors"),
        class_shift_accuracy=tmp_path / "accuracy.csv",
        class_shift_cfps=tmp_path / "cfps.csv",
        worst_classes_figure=tmp_path / "worst.png",
        spread_figure=tmp_path / "spread.png",
    )
    classwise_robustness_step(
        files=files,
        attack_shifts=["pgd"],
        unpaired_shifts=["blur_3", "pgd"],
        corrupted_shifts=["blur_3"],
        title="t",
        figure_path=tmp_path / "fig.png",
        similarity_path=tmp_path / "sim.png",
        mean_confusion_dir=tmp_path / "mean",
        table_paths=table("classwise"),
        across_shifts=across,
    )
    summary = pd.read_csv(tmp_path / "summary.csv", index_col=[0, 1])
    assert summary.loc[("pgd", "a"), "accuracy"] == pytest.approx(np.trace(confusions["pgd"]["a"]) / confusions["pgd"]["a"].sum())
    assert "| shift | n | vs clean | a A | a WCA | b A | b WCA |" in (tmp_path / "summary.md").read_text()
    errors = pd.read_csv(tmp_path / "errors.csv", index_col=[0, 1, 2])
    recall = np.array(_recall_loop(confusions["blur_3"]["b"]))
    np.testing.assert_allclose(errors.loc["b"]["mean_corruption_error"].to_numpy(), 1 - recall, equal_nan=True)
    assert "| model | class | class_name |" in (tmp_path / "errors.md").read_text()  # no tuple index
    for name in ("worst.png", "spread.png", "accuracy.csv", "cfps.csv", "errors.md", "summary.tex"):
        assert (tmp_path / name).stat().st_size > 0, name


def _medians_and_faces(ax) -> list[tuple[float, tuple, tuple]]:  # type: ignore[no-untyped-def]
    """(median value, median colour, box face colour) of every box, in drawing order."""
    from matplotlib.colors import to_rgb
    from matplotlib.patches import PathPatch

    medians = [line for line in ax.lines if line.get_gid() == "median"]
    boxes = [patch for patch in ax.patches if isinstance(patch, PathPatch)]
    assert len(medians) == len(boxes) > 0
    return [(float(m.get_ydata()[0]), to_rgb(m.get_color()), to_rgb(b.get_facecolor())) for m, b in zip(medians, boxes)]


def test_accuracy_spread_draws_each_median_in_a_colour_unlike_its_box() -> None:
    from classwise.plots.many_classes import accuracy_spread_figure

    accuracy = _class_accuracy(shifts=3, models=3, c=12, seed=4)
    fig = accuracy_spread_figure(accuracy, title="t")
    drawn = _medians_and_faces(fig.axes[0])
    expected = [
        np.nanmedian(accuracy[shift][model]) for model in models_of(accuracy) for shift in accuracy if model in accuracy[shift]
    ]
    assert [value for value, _, _ in drawn] == pytest.approx(expected)
    for _, median, face in drawn:
        assert np.abs(np.subtract(median, face)).sum() > 0.5, (median, face)  # C1's orange median vanished in C1 boxes


def test_severity_curves_read_each_family_along_its_severities_from_clean() -> None:
    """A hand-made summary: family ``blur`` at severities 3 and 1 (given out of order), a shift of
    no family, and clean as severity 0; the rows are the summary's own, reordered."""
    from classwise.robustness.across_shifts import SEVERITY_COLUMNS, severity_curves

    summary = pd.DataFrame(
        {
            "shift": ["clean", "clean", "blur_3", "blur_3", "blur_1", "blur_1", "pgd", "pgd"],
            "model": ["a", "b"] * 4,
            "n": [10, 10, 10, 10, 8, 8, 5, 5],
            "accuracy": [0.9, 0.8, 0.5, 0.4, 0.7, 0.6, 0.1, 0.2],
            "worst_class_accuracy": [0.8, 0.7, 0.2, 0.1, 0.5, 0.4, 0.0, 0.0],
            "worst_class_name": ["x", "y", "x", "x", "y", "y", "x", "y"],
            "accuracy_change": [0.0, 0.0, -0.4, -0.4, -0.2, -0.2, -0.8, -0.6],
            "worst_class_accuracy_change": [0.0, 0.0, -0.6, -0.6, -0.3, -0.3, -0.8, -0.7],
        }
    )
    curves = severity_curves(summary, {"blur_3": ("blur", 3), "blur_1": ("blur", 1)})
    assert list(curves.columns) == list(SEVERITY_COLUMNS)
    assert list(curves.index) == [
        ("a", "blur", 0),
        ("a", "blur", 1),
        ("a", "blur", 3),
        ("b", "blur", 0),
        ("b", "blur", 1),
        ("b", "blur", 3),
    ]
    assert curves["shift"].tolist() == ["clean", "blur_1", "blur_3"] * 2
    assert curves.loc[("b", "blur", 1), "accuracy"] == 0.6 and curves.loc[("a", "blur", 3), "worst_class_accuracy"] == 0.2
    assert curves.loc[("a", "blur", 1), "n"] == 8
    assert severity_curves(summary, {}).empty


def test_the_severity_curves_figure_draws_a_panel_per_family_and_two_lines_per_model() -> None:
    from classwise.plots.many_classes import severity_curves_figure

    index = pd.MultiIndex.from_tuples(
        [(m, f, s) for m in ("a", "b", "c") for f in ("blur", "noise") for s in (0, 1, 2)], names=["model", "family", "severity"]
    )
    curves = pd.DataFrame({"accuracy": np.linspace(0.9, 0.1, 18), "worst_class_accuracy": np.linspace(0.8, 0.0, 18)}, index=index)
    fig = severity_curves_figure(curves, title="t")
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.lines]
    assert [ax.get_title() for ax in panels] == ["blur", "noise"]
    assert all(len(ax.lines) == 6 for ax in panels)
    np.testing.assert_allclose(panels[1].lines[0].get_ydata(), curves.loc[("a", "noise"), "accuracy"])
    assert len(fig.legends) == 1  # no empty cell: beside the panels
    # five families: three a row, the legend in the grid's empty sixth cell, not far below it
    families = pd.MultiIndex.from_tuples(
        [(m, f, s) for m in ("a", "b") for f in "vwxyz" for s in (0, 3)], names=["model", "family", "severity"]
    )
    fig = severity_curves_figure(pd.DataFrame({"accuracy": 0.5, "worst_class_accuracy": 0.4}, index=families), title="t")
    legends = [ax for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1 and not legends[0].lines and not fig.legends
    assert fig.axes.index(legends[0]) == 5 and fig.get_size_inches()[0] < 12
