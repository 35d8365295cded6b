"""Figures: written as valid, non-blank PNGs, atomically."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from matplotlib.figure import Figure

from classwise.errors import InputError
from classwise.metrics.decisiveness import measured_metrics, reported_metrics
from classwise.metrics.probabilities import Probabilities
from classwise.plots import MAX_LABELLED_CLASSES, FigureLabels
from classwise.plots import classwise as cw
from classwise.plots.classwise import plot_class_bars, plot_confusion, plot_similarity
from classwise.plots.reliability import plot_reliability

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAMES10 = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def _png_size(path: Path) -> tuple[int, int]:
    height, width = matplotlib.image.imread(path).shape[:2]
    return width, height


def _assert_png(path: Path) -> None:
    assert path.is_file()
    assert path.read_bytes()[:8] == PNG_MAGIC
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert float(np.var(pixels[..., :3])) > 0.0  # not a blank canvas
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.fixture(scope="module")
def calibration():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 10)) * 3
    y = rng.integers(0, 10, 3000)
    x[np.arange(3000), y] += 12.0  # an accurate model: a singular top bin
    pr = Probabilities.from_scores(x, "logits")
    return measured_metrics(pr, y), reported_metrics(pr.correct_class_log_prob(y))


@pytest.fixture(scope="module")
def confusion10():
    rng = np.random.default_rng(1)
    m = rng.integers(0, 30, (10, 10))
    np.fill_diagonal(m, rng.integers(300, 500, 10))
    return m


def test_reliability(tmp_path, calibration):
    measured, reported = calibration
    assert measured.singular.any()  # the hatched singularity bin is drawn
    out = plot_reliability(measured, reported, title="model / data", path=tmp_path / "sub" / "rel.png")
    assert out == tmp_path / "sub" / "rel.png"
    _assert_png(out)


def test_reliability_without_a_slope(tmp_path):
    # every correct-class probability equal: decisiveness == robustness, slope undefined
    pr = Probabilities.from_scores(np.zeros((20, 4)), "logits")
    y = np.zeros(20, dtype=np.int64)
    _assert_png(
        plot_reliability(
            measured_metrics(pr, y), reported_metrics(pr.correct_class_log_prob(y)), title="flat", path=tmp_path / "flat.png"
        )
    )


def test_class_bars(tmp_path, confusion10):
    values = {"m1": np.diag(confusion10) / confusion10.sum(1), "m2": np.linspace(0.2, 0.9, 10)}
    values["m2"][3] = np.nan  # a class without samples
    path = plot_class_bars(
        values,
        NAMES10,
        labels=FigureLabels(title="class-wise accuracy", ylabel="recall"),
        path=tmp_path / "bars.png",
        reference_lines={"m1": 0.8, "m2": 0.6},
    )
    _assert_png(path)


def test_confusion_and_similarity(tmp_path, confusion10):
    _assert_png(plot_confusion(confusion10, NAMES10, title="confusion", path=tmp_path / "c.png"))
    _assert_png(plot_confusion(confusion10, NAMES10, title="counts", path=tmp_path / "n.png", normalize=False))
    s = np.array([[1.0, 0.8, 0.76], [0.8, 1.0, np.nan], [0.76, np.nan, 1.0]])
    _assert_png(plot_similarity(["a", "b", "c"], s, title="similarity", path=tmp_path / "s.png"))


def test_thousand_classes(tmp_path):
    rng = np.random.default_rng(2)
    c = 1000
    names = [f"class {i}" for i in range(c)]
    values = {"a": rng.random(c), "b": rng.random(c)}
    _assert_png(plot_class_bars(values, names, labels=FigureLabels(title="1000 classes", ylabel="CFPS"), path=tmp_path / "b.png"))
    bands = {model: (v * 0.8, np.minimum(1.0, v * 1.2)) for model, v in values.items()}
    fig = cw.class_bars_figure(values, names, labels=FigureLabels(title="1000 classes", ylabel="recall"), intervals=bands)
    sorted_axes, named_axes = fig.axes[:2]
    for line, v in zip(sorted_axes.lines, values.values()):  # each model's values, sorted
        np.testing.assert_allclose(line.get_ydata(), np.sort(v))
    mean = (values["a"] + values["b"]) / 2
    worst20 = [names[i] for i in np.argsort(mean, kind="stable")[:20]]
    assert [t.get_text() for t in named_axes.get_yticklabels()] == worst20
    m = rng.integers(0, 3, (c, c))
    np.fill_diagonal(m, 50)
    m[7, 3] = 40  # the one pair that must lead the ranking
    path = plot_confusion(m, names, title="1000 classes", path=tmp_path / "c.png")
    _assert_png(path)


def test_thousand_class_confusion_names_the_worst_pairs():
    c = 200
    names = [f"class {i}" for i in range(c)]
    m = np.zeros((c, c), dtype=np.int64)
    np.fill_diagonal(m, 50)
    m[7, 7], m[7, 3] = 10, 40  # class 7 mostly predicted as class 3
    m[11, 11], m[11, 5] = 30, 20
    fig = cw.confusion_overview_figure(m, names, title="t")
    pairs = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert pairs[:2] == ["class 7 → class 3", "class 11 → class 5"]
    rows = [t.get_text() for t in fig.axes[1].get_yticklabels()]
    assert rows[:2] == ["class 7", "class 11"]  # lowest recall first


def test_confusion_heatmap_up_to_the_limit_overview_past_it(tmp_path):
    for c, heatmap in ((10, True), (MAX_LABELLED_CLASSES, True), (MAX_LABELLED_CLASSES + 1, False)):
        m = np.eye(c, dtype=np.int64) * 5 + 1
        names = [f"n{i}" for i in range(c)]
        fig = Figure().add_subplot()
        cw._class_ticks(fig, names)
        assert [t.get_text() for t in fig.get_xticklabels()] == names
        path = plot_confusion(m, names, title="t", path=tmp_path / f"{c}.png")
        width, height = _png_size(path)
        assert (width < 1.3 * height) == heatmap  # a square heatmap, or the wide two-panel overview


def test_failed_save_leaves_nothing(tmp_path, monkeypatch, calibration, confusion10):
    def broken_savefig(self, fname, *args, **kwargs):
        Path(fname).write_bytes(PNG_MAGIC + b"half a picture")
        raise OSError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    measured, reported = calibration
    kept = tmp_path / "kept.png"
    kept.write_bytes(b"previous figure")
    calls = [
        lambda p: plot_reliability(measured, reported, title="t", path=p),
        lambda p: plot_class_bars({"m": np.ones(10)}, NAMES10, labels=FigureLabels(title="t", ylabel="y"), path=p),
        lambda p: plot_confusion(confusion10, NAMES10, title="t", path=p),
        lambda p: plot_similarity(["a", "b"], np.eye(2), title="t", path=p),
        lambda p: cw.plot_worst_probabilities({"WCA": {"m": [("x", 1.0)]}}, title="t", path=p),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(OSError, match="disk full"):
            call(tmp_path / f"new{i}.png")
        with pytest.raises(OSError, match="disk full"):
            call(kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.png"]
    assert kept.read_bytes() == b"previous figure"


@pytest.mark.parametrize(
    "call",
    [
        lambda p: plot_class_bars({"m": np.ones(3)}, NAMES10, labels=FigureLabels(title="t", ylabel="y"), path=p),
        lambda p: plot_class_bars({}, NAMES10, labels=FigureLabels(title="t", ylabel="y"), path=p),
        lambda p: plot_confusion(np.ones((3, 3)), NAMES10, title="t", path=p),
        lambda p: plot_confusion(-np.ones((2, 2)), ["a", "b"], title="t", path=p),
        lambda p: plot_similarity(["a", "b"], np.eye(3), title="t", path=p),
        lambda p: plot_reliability("not a calibration", None, title="t", path=p),
    ],
)
def test_bad_input_raises_and_writes_nothing(tmp_path, call):
    with pytest.raises(InputError):
        call(tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_class_bars_draw_each_interval_as_an_error_bar():
    values = {"m1": np.array([0.5, np.nan, 0.9]), "m2": np.array([0.2, 0.4, 1.0])}
    intervals = {
        "m1": (np.array([0.3, np.nan, 0.7]), np.array([0.6, np.nan, 1.0])),
        "m2": (np.array([0.1, 0.2, 0.8]), np.array([0.35, 0.65, 1.0])),
    }
    fig = cw.class_bars_figure(values, ["a", "b", "c"], labels=FigureLabels(title="t", ylabel="recall"), intervals=intervals)
    segments = [seg for coll in fig.axes[0].collections for seg in coll.get_segments()]
    drawn = sorted((round(float(seg[0][1]), 6), round(float(seg[1][1]), 6)) for seg in segments)
    expected = sorted(
        (low, high)
        for model in values
        for low, high in zip(*intervals[model])
        if np.isfinite(low)  # the class without samples has neither bar nor interval
    )
    assert drawn == [(round(low, 6), round(high, 6)) for low, high in expected]
    with pytest.raises(InputError, match="field 'intervals.m1'"):
        cw.class_bars_figure(
            values, ["a", "b", "c"], labels=FigureLabels(title="t", ylabel="y"), intervals={"m1": (np.zeros(2), np.ones(2))}
        )


def test_worst_probability_figure_shows_only_the_listed_classes_even_for_a_thousand(tmp_path):
    shares = {
        "WCA": {"a": [(f"class {i}", 0.5 / (i + 1)) for i in range(5)], "b": [("class 7", 1.0)]},
        "W2CA": {"a": [("class 1, class 2", 0.9)], "b": [("class 1, class 2", 0.6), ("class 3, class 9", 0.4)]},
        "WCP": {"a": [], "b": []},  # nothing to show: no panel
    }
    fig = cw.worst_probability_figure(shares, title="1000 classes")
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert [ax.get_title() for ax in panels] == ["WCA", "W2CA"]
    labels = [t.get_text() for t in panels[0].get_yticklabels()]
    assert labels == ["class 7", "class 0", "class 1", "class 2", "class 3", "class 4"]  # by largest share
    widths = sorted(round(patch.get_width(), 6) for patch in panels[0].patches if patch.get_width() > 0)
    assert widths == sorted(round(v, 6) for v in [0.5, 0.25, 0.5 / 3, 0.125, 0.1, 1.0])
    _assert_png(cw.plot_worst_probabilities(shares, title="t", path=tmp_path / "w.png"))
    with pytest.raises(InputError, match="no metric"):
        cw.worst_probability_figure({"WCP": {"a": []}}, title="t")


# ---------------------------------------------------------------------------------------- class names in any script

#: In STIXGeneral (shipped with matplotlib), not in the default DejaVu Sans.
STIX_ONLY = "\u1d81"  # LATIN SMALL LETTER D WITH PALATAL HOOK


@pytest.fixture
def bundled_fonts_only(monkeypatch):
    """The fonts shipped with matplotlib, whatever else the machine has: none has CJK glyphs."""
    import matplotlib

    from classwise.plots import fonts

    bundled = [(name, path) for name, path in fonts.installed_fonts() if path.startswith(matplotlib.get_data_path())]
    monkeypatch.setattr(fonts, "installed_fonts", lambda: bundled)
    return bundled


def _bars_with_names(names, path):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = cw.class_bars_figure(
            {"m": np.linspace(0.5, 0.9, len(names))}, names, labels=FigureLabels(title=names[0], ylabel="recall")
        )
        from classwise.plots import save_png

        save_png(fig, path)
    return fig, caught


def test_a_class_name_the_default_font_lacks_is_drawn_with_an_installed_font_that_has_it(tmp_path, bundled_fonts_only):
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    fig, caught = _bars_with_names(["cat", STIX_ONLY], tmp_path / "stix.png")
    assert [str(w.message) for w in caught] == []  # no 'Glyph ... missing', no warning of ours
    labelled = [t for t in fig.findobj(lambda a: hasattr(a, "get_text") and a.get_text() == STIX_ONLY)]
    assert labelled
    for text in labelled:
        families = text.get_fontfamily()
        assert families[0] == "sans-serif" and len(families) > 1  # its own font first, then the fallback
        fallback = font_manager.findfont(font_manager.FontProperties(family=families[-1]))
        assert ord(STIX_ONLY) in FT2Font(fallback).get_charmap()
    _assert_png(tmp_path / "stix.png")


def test_characters_no_font_has_give_one_warning_naming_the_font_to_install(tmp_path, bundled_fonts_only):
    import warnings

    from classwise.plots.fonts import MissingGlyphsWarning

    _, caught = _bars_with_names(["日本", "cat", STIX_ONLY], tmp_path / "cjk.png")
    ours = [w for w in caught if issubclass(w.category, MissingGlyphsWarning)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    message = str(ours[0].message)
    assert "'日本'" in message and "Noto Sans CJK" in message and "fonts-noto-cjk" in message
    assert STIX_ONLY not in message  # that one has a fallback
    assert not [w for w in caught if "Glyph" in str(w.message)]  # matplotlib's warning per glyph, replaced
    _assert_png(tmp_path / "cjk.png")
    # which matplotlib alone gives, twice per character here
    fig = Figure()
    fig.add_subplot().set_title("日本")
    with warnings.catch_warnings(record=True) as raw:
        warnings.simplefilter("always")
        fig.savefig(tmp_path / "raw.png")
    assert any("Glyph 26085" in str(w.message) for w in raw)


def test_class_bars_legend_sits_outside_the_axes_and_explains_the_lines_and_error_bars():
    values = {"m1": np.array([0.95, 0.9, 0.97]), "m2": np.array([0.92, 0.99, 0.96])}  # bars up to the top
    intervals = {model: (v - 0.05, np.minimum(v + 0.02, 1.0)) for model, v in values.items()}
    labels = FigureLabels(
        title="t", ylabel="recall", reference_label="dashed: accuracy A", interval_label="error bars: 95 % interval"
    )
    fig = cw.class_bars_figure(
        values, ["a", "b", "c"], labels=labels, reference_lines={"m1": 0.94, "m2": 0.96}, intervals=intervals
    )
    ax = fig.axes[0]
    assert ax.get_legend() is None and len(fig.legends) == 1
    legend = fig.legends[0]
    assert [text.get_text() for text in legend.get_texts()] == ["m1", "m2", "error bars: 95 % interval", "dashed: accuracy A"]
    dashed = legend.legend_handles[-1]
    assert dashed.get_linestyle() == "--"
    fig.draw_without_rendering()
    box, axes = legend.get_window_extent(), ax.get_window_extent()
    assert not box.overlaps(axes), (box, axes)  # the legend covers no bar
    # without lines or intervals (the CFPS figure), the models alone
    plain = cw.class_bars_figure(values, ["a", "b", "c"], labels=FigureLabels(title="t", ylabel="CFPS"))
    assert [text.get_text() for text in plain.legends[0].get_texts()] == ["m1", "m2"]
