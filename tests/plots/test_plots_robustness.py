"""Robustness figures and the corruption grid: PNGs of the right size that draw their input."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from matplotlib.figure import Figure

from classwise.data import load_digits_imageset
from classwise.errors import InputError
from classwise.metrics.cfps import (
    class_false_positive_score,
    class_wise_accuracy,
    prediction_cosine_similarity,
)
from classwise.plots import DPI
from classwise.plots.corruption_grid import corruption_grid_images, plot_corruption_grid
from classwise.plots.robustness import (
    plot_classwise_robustness,
    plot_mean_confusion,
    plot_prediction_similarity,
    plot_targeted_success,
)
from classwise.shifts import CORRUPTIONS, corrupt_batch, sample_seed

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAMES = [f"class{i}" for i in range(5)]


def _check_png(path: Path, fig: Figure) -> None:
    """A non-blank PNG whose pixel size is the figure's size at the plots' DPI."""
    assert path.is_file() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == PNG_MAGIC
    pixels = matplotlib.image.imread(path)
    width, height = np.round(fig.get_size_inches() * DPI).astype(int)
    assert pixels.shape[:2] == (height, width)
    assert float(np.var(pixels[..., :3])) > 0.0
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def _confusion(rng: np.random.Generator, c: int = 5) -> np.ndarray:
    m = rng.integers(0, 10, (c, c))
    np.fill_diagonal(m, rng.integers(20, 40, c))
    return m


@pytest.fixture(scope="module")
def confusions() -> dict[str, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    return {shift: {model: _confusion(rng) for model in ("a", "b")} for shift in ("clean", "noise_s3", "pgd")}


def test_classwise_robustness_draws_accuracy_and_cfps(tmp_path: Path, confusions) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "fig3.png"
    fig = plot_classwise_robustness(confusions, NAMES, path=path)
    _check_png(path, fig)
    assert len(fig.axes) == 2 * len(confusions)
    for k, (shift, by_model) in enumerate(confusions.items()):
        acc_ax, cfps_ax = fig.axes[2 * k], fig.axes[2 * k + 1]
        assert acc_ax.get_title() == shift
        for i, m in enumerate(by_model.values()):
            heights = [bar.get_height() for bar in acc_ax.containers[i]]
            np.testing.assert_allclose(heights, class_wise_accuracy(m))
            heights = [bar.get_height() for bar in cfps_ax.containers[i]]
            np.testing.assert_allclose(heights, class_false_positive_score(m))


def test_many_classes_become_sorted_curves(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    names = [f"c{i}" for i in range(60)]
    confusions = {"clean": {"a": _confusion(rng, 60)}}
    fig = plot_classwise_robustness(confusions, names, path=tmp_path / "many.png")
    _check_png(tmp_path / "many.png", fig)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), np.sort(class_wise_accuracy(confusions["clean"]["a"])))


def test_past_12_shifts_figures_2_3_show_clean_and_the_worst_shifts(tmp_path: Path) -> None:
    """40 shifts would be 10 blocks (47 inches tall); the figure draws clean and the 11 shifts of
    lowest mean worst-class accuracy, named in the title, three blocks of four."""
    rng = np.random.default_rng(4)
    shifts = ["clean"] + [f"s{j}" for j in range(1, 40)]
    confusions = {s: {m: _confusion(rng) for m in ("a", "b")} for s in shifts}
    for j, shift in enumerate(shifts[1:], start=1):  # harder shifts: the diagonal shrinks
        for m in confusions[shift].values():
            np.fill_diagonal(m, rng.integers(0, 40 - j // 2, 5))
    fig = plot_classwise_robustness(confusions, NAMES, path=tmp_path / "many_shifts.png")
    _check_png(tmp_path / "many_shifts.png", fig)
    wca = {s: np.mean([class_wise_accuracy(m).min() for m in by.values()]) for s, by in confusions.items()}
    mean = {s: np.mean([class_wise_accuracy(m).mean() for m in by.values()]) for s, by in confusions.items()}
    worst = sorted(shifts[1:], key=lambda s: (wca[s], mean[s], shifts.index(s)))[:11]
    assert [ax.get_title() for ax in fig.axes[0:24:2]] == ["clean", *worst]
    assert "clean and the 11 of 40 shifts of lowest worst-class accuracy" in fig.get_suptitle()
    assert fig.get_size_inches()[1] < 15


def test_mean_confusion_heatmap(tmp_path: Path, confusions) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "fig4.png"
    by_model = confusions["pgd"]
    fig = plot_mean_confusion(by_model, NAMES, path=path)
    _check_png(path, fig)
    mean = (by_model["a"] + by_model["b"]) / 2
    expected = mean / mean.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(fig.axes[0].images[0].get_array()), expected)
    with pytest.raises(InputError):
        plot_mean_confusion(by_model, NAMES[:3], path=tmp_path / "bad.png")
    assert not (tmp_path / "bad.png").exists()


def test_targeted_success_bars(tmp_path: Path) -> None:
    path = tmp_path / "fig5.png"
    rates = {"resnet": np.array([0.2, 0.9, np.nan, 0.5, 0.1]), "mlp": np.linspace(0, 1, 5)}
    fig = plot_targeted_success(rates, NAMES, path=path)
    _check_png(path, fig)
    ax = fig.axes[0]
    assert [bar.get_height() for bar in ax.containers[0]] == [0.2, 0.9, 0.5, 0.1]  # NaN left out
    np.testing.assert_allclose([bar.get_height() for bar in ax.containers[1]], rates["mlp"])
    with pytest.raises(InputError, match="rates"):
        plot_targeted_success({"x": np.ones(3)}, NAMES, path=tmp_path / "bad.png")


def test_prediction_similarity_heatmap(tmp_path: Path, confusions) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "fig7.png"
    by_model = {**confusions["clean"], "c": confusions["pgd"]["a"]}
    fig = plot_prediction_similarity(by_model, path=path)
    _check_png(path, fig)
    _, expected = prediction_cosine_similarity(by_model)
    np.testing.assert_allclose(np.asarray(fig.axes[0].images[0].get_array()), expected)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b", "c"]
    # the colour bar covers [0, 1]: the diagonal's 1 is as far from 0.5 as it is, not the same colour
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)
    colorbar = fig.axes[0].images[0].colorbar
    assert colorbar is not None and tuple(colorbar.ax.get_ylim()) == (0.0, 1.0)
    off_diagonal = expected[~np.eye(3, dtype=bool)]
    assert off_diagonal.max() < 0.99  # so a scale over the off-diagonal values alone would paint them like the 1s


def test_prediction_similarity_of_one_model_says_there_is_nothing_to_compare(tmp_path: Path, confusions) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "one.png"
    fig = plot_prediction_similarity({"a": confusions["clean"]["a"]}, path=path)
    _check_png(path, fig)
    assert not fig.axes[0].images  # no 1 x 1 square
    assert any("One model (a)" in text.get_text() for text in fig.axes[0].texts)


def test_corruption_grid_shows_the_inference_pixels(tmp_path: Path) -> None:
    digits = load_digits_imageset()
    image, sample_id = digits.images[5], str(digits.sample_ids[5])
    path = tmp_path / "grid.png"
    fig = plot_corruption_grid(image, sample_id=sample_id, base_seed=3, path=path)
    _check_png(path, fig)
    n_rows, n_cols = len(CORRUPTIONS), 6
    assert len(fig.axes) == n_rows * n_cols
    grid = corruption_grid_images(image, sample_id=sample_id, base_seed=3)
    assert grid.shape == (n_rows, n_cols, 1, 8, 8)
    for k, name in enumerate(CORRUPTIONS):
        np.testing.assert_array_equal(grid[k, 0], image)
        # severity 3 is exactly what inference feeds the model for this sample
        seed = sample_seed(3, f"{name}_s3", sample_id)
        np.testing.assert_array_equal(grid[k, 3], corrupt_batch(image[None], name, 3, [seed])[0])
        drawn = np.asarray(fig.axes[k * n_cols + 3].images[0].get_array())
        np.testing.assert_array_equal(drawn, grid[k, 3, 0])


def test_corruption_grid_rgb_subset(tmp_path: Path) -> None:
    rgb = np.random.default_rng(0).random((3, 16, 16), dtype=np.float32)
    fig = plot_corruption_grid(
        rgb,
        sample_id="x",
        base_seed=0,
        path=tmp_path / "rgb.png",
        corruptions=["rain", "snow"],
        severities=[1, 5],
    )
    _check_png(tmp_path / "rgb.png", fig)
    assert len(fig.axes) == 2 * 3
    assert np.asarray(fig.axes[1].images[0].get_array()).shape == (16, 16, 3)
    with pytest.raises(InputError, match="fog"):
        corruption_grid_images(rgb, sample_id="x", base_seed=0, corruptions=["fog"])
    with pytest.raises(InputError, match="image"):
        corruption_grid_images(rgb[:2], sample_id="x", base_seed=0)


@pytest.mark.parametrize("max_shifts", [0, -1, 2.5, True])
def test_figures_2_3_refuse_a_shift_budget_below_one(tmp_path: Path, max_shifts: object) -> None:
    rng = np.random.default_rng(5)
    confusions = {s: {"a": _confusion(rng)} for s in ("clean", "s1")}
    with pytest.raises(InputError, match="expected an integer >= 1") as raised:
        plot_classwise_robustness(confusions, NAMES, path=tmp_path / "x.png", max_shifts=max_shifts)  # type: ignore[arg-type]
    assert raised.value.field == "max_shifts" and not (tmp_path / "x.png").exists()
