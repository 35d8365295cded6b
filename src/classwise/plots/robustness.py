"""Class-wise robustness figures of Medi et al., 2024, across models and shifts.

* :func:`plot_classwise_robustness` -- Figures 2-3: per-class accuracy (top row of each
  block) and CFPS (bottom row) for every model (bars) and every shift (one panel each; past
  :data:`MAX_SHIFT_PANELS` shifts, clean and the shifts of lowest worst-class accuracy);
* :func:`plot_mean_confusion` -- Figure 4: the confusion matrix under an attack, averaged
  over models, as a heatmap (rows: true class, columns: predicted class);
* :func:`plot_targeted_success` -- Figure 5: targeted-attack success rate per target class;
* :func:`plot_prediction_similarity` -- Figure 7: cosine similarity of the models' class-wise
  predictions (errors), model by model;
* :func:`plot_clean_vs_robust` -- robust fairness (no paper figure): per model, each class's
  clean accuracy against its accuracy under an attack, the worst classes named.

Every function draws on a :class:`matplotlib.figure.Figure` (Agg, no pyplot), writes the PNG
atomically with :func:`classwise.plots.save_png` and returns the figure, so callers and tests
can inspect what was drawn. The numbers are those of :mod:`classwise.robustness.classwise`.
Past :data:`classwise.plots.MAX_LABELLED_CLASSES` classes, bars become each model's sorted
values and the mean confusion heatmap becomes the ranked most-confused pairs
(:mod:`classwise.plots.many_classes`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from classwise.errors import InputError, check_count, field_path
from classwise.metrics.cfps import prediction_cosine_similarity
from classwise.metrics.robust_fairness import RobustFairness
from classwise.plots import MAX_LABELLED_CLASSES, model_colors, save_png
from classwise.plots.classwise import similarity_figure
from classwise.plots.many_classes import confusion_overview_figure, draw_sorted
from classwise.robustness.across_shifts import REFERENCE_SHIFT, models_of, worst_shifts
from classwise.robustness.classwise import Confusions, classwise_values, mean_confusion

_ANNOTATE_MAX = 12
_MAX_COLUMNS = 4


def _class_values(ax: Axes, values: Mapping[str, np.ndarray], class_names: Sequence[str], colors: Sequence[str]) -> None:
    """Grouped bars (one bar per model and class) or, for many classes, each model's values
    sorted (:func:`classwise.plots.many_classes.draw_sorted`).

    NaN values are left out. Bars of model ``i`` form ``ax.containers[i]``.
    """
    c = len(class_names)
    x = np.arange(c)
    models = list(values)
    if c > MAX_LABELLED_CLASSES:
        draw_sorted(ax, values, colors)
        return
    width = 0.8 / max(1, len(models))
    for i, (model, color) in enumerate(zip(models, colors)):
        v = np.asarray(values[model], dtype=np.float64)
        ok = np.isfinite(v)
        ax.bar(x[ok] - 0.4 + (i + 0.5) * width, v[ok], width=width, color=color, label=model)
    ax.set_xticks(x)
    rotate = max(len(n) for n in class_names) > 3 or c > 12
    ax.set_xticklabels(class_names, rotation=60 if rotate else 0, ha="right" if rotate else "center", fontsize=7)
    ax.set_xlim(-0.6, c - 0.4)


def _names(class_names: Sequence[str]) -> list[str]:
    names = [str(n) for n in class_names]
    if not names:
        raise InputError("no classes to plot", field="class_names")
    return names


#: Up to this many shifts, Figures 2-3 draw a panel pair for every shift (three blocks of four).
MAX_SHIFT_PANELS = 12


def plot_classwise_robustness(
    confusions: Confusions,
    class_names: Sequence[str],
    *,
    path: str | Path,
    title: str = "Class-wise accuracy and CFPS",
    max_shifts: int = MAX_SHIFT_PANELS,
    notes: Mapping[str, str] | None = None,
) -> Figure:
    """Figures 2-3: for every shift a panel of class-wise accuracy and one of CFPS.

    ``confusions`` is ``{shift: {model: (C, C) confusion [true, predicted]}}``. Panels are
    laid out in blocks of up to four shifts: an accuracy row (y in [0, 1]) above a CFPS row
    (shared y scale), one colour per model (bars, or lines past
    ``MAX_LABELLED_CLASSES`` classes). Returns the figure; the axes are in
    ``fig.axes`` as ``[acc(shift0), cfps(shift0), acc(shift1), ...]``.

    Past ``max_shifts`` shifts (100 shifts would make a figure 115 inches tall) only
    :func:`classwise.robustness.across_shifts.worst_shifts` are drawn: ``clean`` and the shifts
    of lowest worst-class accuracy (mean over models), worst first, as the title says; every
    shift is in the worst-classes-by-shift heatmap, the accuracy spread and the shift summary.

    ``notes`` (shift -> text) go in brackets after a panel's shift name: the samples of a shift
    over a subset of the clean ones (``n = 20 of 899``, :func:`classwise.robustness.pairing.shift_samples`).
    """
    max_shifts = check_count(max_shifts, "max_shifts")
    names = _names(class_names)
    accuracy, cfps = classwise_values(confusions, len(names))
    shifts = list(confusions)
    if len(shifts) > max_shifts:
        shifts = worst_shifts(accuracy, max_shifts)
        shown = "clean and the " if shifts[0] == REFERENCE_SHIFT else "the "
        shown += f"{len(shifts) - (shifts[0] == REFERENCE_SHIFT)} of {len(confusions)} shifts of lowest worst-class accuracy"
        title = f"{title}\n{shown} (mean over models), worst first"
    models = models_of(confusions)
    colors = dict(zip(models, model_colors(len(models))))
    n_cols = min(len(shifts), _MAX_COLUMNS)
    n_blocks = math.ceil(len(shifts) / n_cols)
    c = len(names)
    panel_w = 6.0 if c > MAX_LABELLED_CLASSES else min(8.0, max(3.2, 0.09 * c * max(1, len(models)) + 1.4))
    fig = Figure(figsize=(panel_w * n_cols, 2.3 * 2 * n_blocks + 0.6), layout="constrained")
    grid = fig.add_gridspec(2 * n_blocks, n_cols)
    finite_cfps = [v[np.isfinite(v)] for shift in shifts for v in cfps[shift].values()]
    top = max([float(v.max()) for v in finite_cfps if v.size] + [0.0])
    cfps_top = 1.05 * top if top > 0 else 1.0
    for k, shift in enumerate(shifts):
        row, col = divmod(k, n_cols)
        for offset, (values, label, ylim) in enumerate(
            ((accuracy[shift], "accuracy", (0.0, 1.05)), (cfps[shift], "CFPS", (0.0, cfps_top)))
        ):
            ax = fig.add_subplot(grid[2 * row + offset, col])
            _class_values(ax, values, names, [colors[m] for m in values])
            ax.set_ylim(*ylim)
            ax.grid(axis="y", alpha=0.3)
            if col == 0:
                ax.set_ylabel(label)
            if offset == 0:
                note = (notes or {}).get(shift, "")
                ax.set_title(f"{shift} ({note})" if note else shift, fontsize=9)
    legend: dict[str, Artist] = {}  # one entry per model, even if some shift lacks a model
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="outside upper right", ncols=min(len(models), 6), fontsize=7.5)
    fig.suptitle(title)
    save_png(fig, path)
    return fig


def plot_mean_confusion(
    confusions: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    path: str | Path,
    title: str = "Confusion matrix averaged over models",
) -> Figure:
    """Figure 4: the models' mean confusion matrix, each row as fractions of its true class.

    ``confusions`` is ``{model: (C, C) confusion [true, predicted]}`` under one shift (e.g.
    PGD). The heatmap (``fig.axes[0].images[0]``) shows :func:`mean_confusion` divided by its
    row sums (blank for a class without samples), blue (low) to red (high) as in the paper;
    cells are annotated up to 12 classes. Past ``MAX_LABELLED_CLASSES`` classes the figure is
    :func:`classwise.plots.many_classes.confusion_overview_figure` of the mean matrix.
    """
    names = _names(class_names)
    m = mean_confusion(confusions)
    c = len(names)
    if m.shape != (c, c):
        raise InputError(f"expected ({c}, {c}) matrices to match class_names, got {m.shape}", field="confusions")
    if c > MAX_LABELLED_CLASSES:
        fig = confusion_overview_figure(m, names, title=f"{title} (mean of {len(confusions)} models)")
        save_png(fig, path)
        return fig
    support = m.sum(axis=1, keepdims=True)
    shown = np.divide(m, support, out=np.full_like(m, np.nan), where=support > 0)
    side = 5.5 if c <= _ANNOTATE_MAX else 7.5
    fig = Figure(figsize=(side + 1.2, side), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(
        np.ma.masked_invalid(shown),
        cmap="coolwarm",
        vmin=0.0,
        vmax=1.0,
        interpolation="nearest",
        aspect="equal",
    )
    fig.colorbar(image, ax=ax, label=f"fraction of true class (mean of {len(confusions)} models)", shrink=0.85)
    ticks = np.arange(c)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    rotate = max(len(n) for n in names) > 3
    ax.set_xticklabels(names, rotation=45 if rotate else 0, ha="right" if rotate else "center", fontsize=8)
    ax.set_yticklabels(names, fontsize=8)
    if c <= _ANNOTATE_MAX:
        for i in range(c):
            for j in range(c):
                if np.isfinite(shown[i, j]):
                    ax.text(j, i, f"{shown[i, j]:.2f}", ha="center", va="center", fontsize=7)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    ax.set_title(title)
    save_png(fig, path)
    return fig


def plot_targeted_success(
    rates: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    path: str | Path,
    title: str = "Targeted PGD: success rate per target class",
) -> Figure:
    """Figure 5: success rate of the targeted attack towards each class, per model.

    ``rates`` is ``{model: (C,) success rate per target class}`` (e.g.
    :func:`classwise.robustness.targeted.targeted_success_rates`; NaN for classes without a
    run are left out). Bars of model ``i`` are ``fig.axes[0].containers[i]``.
    """
    names = _names(class_names)
    models = list(rates)
    if not models:
        raise InputError("no models to plot", field="rates")
    values = {}
    for model in models:
        v = np.asarray(rates[model], dtype=np.float64)
        if v.shape != (len(names),):
            raise InputError(
                f"expected shape ({len(names)},) to match class_names, got {v.shape}",
                field=field_path("rates", model),
            )
        values[model] = v
    c = len(names)
    width = 10.0 if c > MAX_LABELLED_CLASSES else min(16.0, max(5.0, 0.3 * c * len(models) + 2.0))
    fig = Figure(figsize=(width, 4.2), layout="constrained")
    ax = fig.add_subplot()
    _class_values(ax, values, names, model_colors(len(models)))
    ax.set_ylim(0.0, 1.05)
    ax.set_xlabel("target class")
    ax.set_ylabel("success rate")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7.5, loc="best")
    ax.set_title(title)
    save_png(fig, path)
    return fig


def plot_prediction_similarity(
    confusions: Mapping[str, np.ndarray],
    *,
    path: str | Path,
    title: str = "Cosine similarity of class-wise predictions",
) -> Figure:
    """Figure 7: model-by-model cosine similarity of class-wise errors (heatmap).

    ``confusions`` is ``{model: (C, C) confusion}``; the matrix shown
    (``fig.axes[0].images[0]``) is
    :func:`classwise.metrics.cfps.prediction_cosine_similarity` (NaN cells blank). Drawn by
    :func:`classwise.plots.classwise.similarity_figure` (cells annotated with 3 decimals up to 20 models; the
    colour scale covers [0, 1]; one model: a sentence saying there is nothing to compare).
    """
    names, s = prediction_cosine_similarity(confusions)
    fig = similarity_figure(names, s, title=title, decimals=3)
    save_png(fig, path)
    return fig


def plot_clean_vs_robust(
    results: Mapping[str, RobustFairness],
    class_names: Sequence[str],
    *,
    path: str | Path,
    title: str = "Class-wise clean vs robust accuracy",
    named: int = 3,
) -> Figure:
    """Robust fairness, one panel per model: a point per class with samples at (clean
    accuracy, robust accuracy), the diagonal (robust = clean: the attack changes nothing),
    dotted lines at the model's overall A and robust A, and the ``named`` classes of lowest
    robust accuracy (ties to the lowest class index) in red with their names. Points, not bars, so 1,000 classes stay
    readable: the mass of classes is a cloud, the classes the attack breaks fall far below the
    diagonal. Panel ``i`` is ``fig.axes[i]``, its points ``fig.axes[i].collections[0]``."""
    names = _names(class_names)
    models = list(results)
    if not models:
        raise InputError("no models to plot", field="results")
    for model in models:
        if results[model].n_classes != len(names):
            raise InputError(
                f"has {results[model].n_classes} classes, expected {len(names)} to match class_names",
                field=field_path("results", model),
            )
    many = len(names) > MAX_LABELLED_CLASSES
    n_cols = min(len(models), _MAX_COLUMNS)
    n_rows = math.ceil(len(models) / n_cols)
    fig = Figure(figsize=(3.9 * n_cols, 3.9 * n_rows + 0.5), layout="constrained")
    for k, model in enumerate(models):
        result = results[model]
        ax = fig.add_subplot(n_rows, n_cols, k + 1)
        present = np.flatnonzero(result.support > 0)
        clean = 1.0 - result.clean_error[present]
        robust = 1.0 - result.robust_error[present]
        ax.scatter(clean, robust, s=6 if many else 18, alpha=0.45 if many else 0.8, color="C0", linewidths=0)
        ax.plot([0.0, 1.0], [0.0, 1.0], linestyle="--", color="0.5", linewidth=0.8)
        ax.axvline(result.accuracy, linestyle=":", color="0.6", linewidth=0.8)
        ax.axhline(result.robust_accuracy, linestyle=":", color="0.6", linewidth=0.8)
        # ties to the lowest class index, as the table's worst class; classes at one point share a label
        worst = np.argsort(robust, kind="stable")[: max(0, named)]
        ax.scatter(clean[worst], robust[worst], s=24, color="C3", linewidths=0)
        labels: dict[tuple[float, float], list[str]] = {}
        for i in worst:
            labels.setdefault((float(clean[i]), float(robust[i])), []).append(names[int(present[i])])
        for j, (point, at_point) in enumerate(labels.items()):  # stacked: the worst points lie close together
            ax.annotate(", ".join(at_point), point, xytext=(3, 3 + 9 * j), textcoords="offset points", fontsize=7, color="C3")
        ax.set_xlim(-0.02, 1.05)
        ax.set_ylim(-0.02, 1.05)
        ax.set_aspect("equal")
        ax.grid(alpha=0.3)
        ax.set_title(f"{model}: A {100 * result.accuracy:.1f} %, robust A {100 * result.robust_accuracy:.1f} %", fontsize=8.5)
        ax.set_xlabel("clean accuracy of the class")
        if k % n_cols == 0:
            ax.set_ylabel("robust accuracy of the class")
    fig.suptitle(title)
    save_png(fig, path)
    return fig
