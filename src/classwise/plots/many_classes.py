"""Figures that stay readable at 1,000 classes.

Past :data:`classwise.plots.MAX_LABELLED_CLASSES` classes a bar per class, a line over the
class index or a C x C heatmap shows nothing a reader can use. These forms replace them:

* :func:`draw_sorted` / :func:`sorted_values_figure` -- each model's class-wise values sorted,
  so the tail is visible and models can be told apart, beside the worst classes named;
* :func:`confusion_overview_figure` -- the most-confused class pairs, ranked, beside a heatmap
  of the worst classes and the classes they are mistaken for;
* :func:`worst_classes_by_shift_figure` -- the worst classes x shifts heatmap, one panel per model;
* :func:`accuracy_spread_figure` -- the spread of class-wise accuracy per shift and model: box
  plots, or past :data:`MAX_BOXED_SHIFTS` shifts quantile bands over the shifts.

The numbers come from :mod:`classwise.robustness.across_shifts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from classwise.errors import InputError
from classwise.plots import MEDIAN_PROPS, FigureLabels, model_colors
from classwise.robustness.across_shifts import (
    SPREAD_QUANTILES,
    accuracy_quantiles,
    models_of,
    ranked_confusions,
    shifts_by_accuracy,
    worst_classes,
)

#: How many classes a many-class figure names.
NAMED_CLASSES = 20


def _short(name: str, width: int = 22) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def draw_sorted(ax: Axes, values: Mapping[str, np.ndarray], colors: Sequence[str], *, ylabel: str = "") -> None:
    """One ascending curve per model over the rank of its classes (NaN left out), so that the
    worst classes of every model sit at the left and the models' tails can be compared."""
    for (model, v), color in zip(values.items(), colors):
        finite = np.sort(np.asarray(v, dtype=np.float64)[np.isfinite(v)])
        ax.plot(np.arange(finite.size), finite, color=color, linewidth=1.2, label=model)
    ax.set_xlabel("classes, sorted per model (worst first)")
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def _named_bars(
    ax: Axes,
    values: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    colors: Sequence[str],
    *,
    lowest: bool,
    named: int,
) -> None:
    matrix = np.vstack([np.asarray(v, dtype=np.float64) for v in values.values()])
    chosen = worst_classes(matrix if lowest else -matrix, named)
    height = 0.8 / max(1, len(values))
    y = np.arange(chosen.size)
    for i, ((model, v), color) in enumerate(zip(values.items(), colors)):
        shown = np.asarray(v, dtype=np.float64)[chosen]
        ok = np.isfinite(shown)
        ax.barh(y[ok] - 0.4 + (i + 0.5) * height, shown[ok], height=height, color=color, label=model)
    ax.set_yticks(y)
    ax.set_yticklabels([_short(str(class_names[k])) for k in chosen], fontsize=7)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"the {chosen.size} {'lowest' if lowest else 'highest'} classes (mean over models)", fontsize=8)


def sorted_values_figure(
    values: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    labels: FigureLabels,
    lowest: bool = True,
    named: int = NAMED_CLASSES,
    reference_lines: Mapping[str, float] | None = None,
) -> Figure:
    """Left: :func:`draw_sorted`; right: the ``named`` worst classes (lowest values when
    ``lowest``, e.g. accuracy; highest otherwise, e.g. CFPS) by their mean over models,
    one bar per model. ``reference_lines`` (model -> value) are dashed lines on the left.
    ``labels``: the figure's title and the values' axis label (the legend names the models
    only: its reference and interval entries are not drawn)."""
    if not values:
        raise InputError("no models to plot", field="values")
    colors = model_colors(len(values))
    fig = Figure(figsize=(11.0, 5.2), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.4, 1.0])
    draw_sorted(left, values, colors, ylabel=labels.ylabel)
    if reference_lines:
        for model, color in zip(values, colors):
            if model in reference_lines and np.isfinite(reference_lines[model]):
                left.axhline(float(reference_lines[model]), color=color, linestyle="--", linewidth=1.0)
    left.legend(fontsize=7.5, loc="lower right" if lowest else "upper right")
    _named_bars(right, values, class_names, colors, lowest=lowest, named=named)
    right.set_xlabel(labels.ylabel)
    fig.suptitle(labels.title)
    return fig


def confusion_overview_figure(
    confusion: np.ndarray,
    class_names: Sequence[str],
    *,
    title: str,
    pairs: int = NAMED_CLASSES,
    rows: int = 12,
    per_row: int = 2,
) -> Figure:
    """Left: the ``pairs`` most-confused (true -> predicted) pairs, ranked by their share of
    the true class (:func:`classwise.robustness.across_shifts.ranked_confusions`). Right: the
    ``rows`` classes of lowest recall against themselves and the ``per_row`` classes each is
    most often mistaken for, each row as fractions of its true class."""
    m = np.asarray(confusion, dtype=np.float64)
    names = [str(n) for n in class_names]
    ranked = ranked_confusions(m, names, top=pairs)
    support = m.sum(axis=1)
    share = np.divide(m, support[:, None], out=np.zeros_like(m), where=support[:, None] > 0)
    recall = np.where(support > 0, np.diag(share), np.nan)
    chosen = worst_classes(recall[None, :], rows)
    off = share[chosen].copy()
    off[np.arange(chosen.size), chosen] = -1.0
    top = np.argsort(-off, axis=1, kind="stable")[:, :per_row]
    columns = np.array(list(dict.fromkeys([int(k) for k in chosen] + [int(k) for k in top.ravel()])), dtype=np.int64)

    fig = Figure(figsize=(13.0, 6.0), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.0, 1.3])
    y = np.arange(len(ranked))
    left.barh(y, ranked["share"], color="C3")
    left.set_yticks(y)
    labels = [f"{_short(t, 18)} → {_short(p, 18)}" for t, p in zip(ranked["true_name"], ranked["predicted_name"])]
    left.set_yticklabels(labels, fontsize=7)
    left.invert_yaxis()
    left.set_xlabel("share of the true class predicted as the other")
    left.set_title(f"the {len(ranked)} most-confused pairs", fontsize=9)
    left.grid(axis="x", alpha=0.3)

    block = share[np.ix_(chosen, columns)]
    image = right.imshow(block, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    right.set_yticks(np.arange(chosen.size))
    right.set_yticklabels([_short(names[k]) for k in chosen], fontsize=7)
    right.set_xticks(np.arange(len(columns)))
    right.set_xticklabels([_short(names[k]) for k in columns], rotation=60, ha="right", fontsize=7)
    right.set_ylabel("true class (lowest recall first)")
    right.set_xlabel("predicted class")
    right.set_title("the worst classes and what they are taken for", fontsize=9)
    fig.colorbar(image, ax=right, label="fraction of true class", shrink=0.85)
    fig.suptitle(title)
    return fig


def worst_classes_by_shift_figure(
    accuracy: Mapping[str, Mapping[str, np.ndarray]],
    class_names: Sequence[str],
    *,
    title: str,
    named: int = NAMED_CLASSES,
    notes: Mapping[str, str] | None = None,
) -> Figure:
    """Heatmaps of class-wise accuracy, one panel per model: rows are the ``named`` classes of
    lowest mean accuracy over every model and shift, columns the shifts (``accuracy`` is
    ``{shift: {model: (C,)}}``). Cells are annotated while the grid is small. ``notes`` (shift
    -> text) follow a column's shift name in brackets: the samples of a shift that is not the
    clean set (``n = 20 of 899``, :func:`classwise.robustness.pairing.shift_samples`)."""
    shifts = list(accuracy)
    models = models_of(accuracy)
    if not shifts or not models:
        raise InputError("no shifts or models to plot", field="accuracy")
    c = len(class_names)
    stacks = {
        model: np.column_stack([np.asarray(accuracy[s].get(model, np.full(c, np.nan)), dtype=np.float64) for s in shifts])
        for model in models
    }
    chosen = worst_classes(np.hstack(list(stacks.values())).T, named)
    # Up to 3 panels side by side while they are narrow; past 20 shifts one panel per row, so
    # that 100 shifts x 4 models stays one page wide instead of three.
    per_row = min(len(models), 3) if len(shifts) <= 20 else 1
    width = min(30.0, 2.5 + 0.3 * len(shifts)) * per_row
    rows_of_panels = -(-len(models) // per_row)
    fig = Figure(figsize=(max(7.0, width), (1.2 + 0.28 * chosen.size) * rows_of_panels + 0.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows_of_panels, per_row, squeeze=False)).ravel()
    annotate = chosen.size * len(shifts) <= 400
    image = None
    for ax, model in zip(axes, models):
        block = stacks[model][chosen]
        image = ax.imshow(np.ma.masked_invalid(block), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_yticks(np.arange(chosen.size))
        ax.set_yticklabels([_short(str(class_names[k])) for k in chosen], fontsize=7)
        ax.set_xticks(np.arange(len(shifts)))
        labels = [f"{shift} ({notes[shift]})" if notes and notes.get(shift) else shift for shift in shifts]
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7 if len(shifts) <= 40 else 5)
        ax.set_title(model, fontsize=9)
        if annotate:
            for i, j in zip(*np.nonzero(np.isfinite(block))):
                value = block[i, j]
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6, color="black" if value > 0.6 else "white")
    for ax in axes[len(models) :]:
        ax.set_axis_off()
    if image is not None:
        fig.colorbar(image, ax=list(axes[: len(models)]), label="class-wise accuracy", shrink=0.8)
    fig.suptitle(title)
    return fig


#: Up to this many shifts :func:`accuracy_spread_figure` draws box plots; past it, quantile bands.
MAX_BOXED_SHIFTS = 20


def severity_curves_figure(curves: pd.DataFrame, *, title: str) -> Figure:
    """A and WCA against severity (0: the reference shift), one panel per corruption family, one
    colour per model: accuracy solid, worst-class accuracy dashed
    (:func:`classwise.robustness.across_shifts.severity_curves`). Laid out as the other figures
    (constrained, no margin of its own): up to three panels a row, the legend in the first empty
    cell of the grid, else beside the panels."""
    if curves.empty:
        fig = Figure(figsize=(6, 1.6), layout="constrained")
        ax = fig.subplots()
        ax.axis("off")
        ax.text(0.5, 0.5, "no shift with a severity is evaluated", ha="center", va="center")
        fig.suptitle(title)
        return fig
    frame = curves.reset_index()
    families = list(dict.fromkeys(frame["family"]))
    models = list(dict.fromkeys(frame["model"]))
    colors = dict(zip(models, model_colors(len(models))))
    columns = min(len(families), 3)
    rows = -(-len(families) // columns)
    fig = Figure(figsize=(3.4 * columns + 0.6, 2.7 * rows + 0.7), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False, sharey=True)
    for ax, family in zip(axes.flat, families):
        in_family = frame[frame["family"] == family]
        for model in models:
            line = in_family[in_family["model"] == model].sort_values("severity")
            if line.empty:
                continue
            ax.plot(line["severity"], line["accuracy"], "-o", color=colors[model], label=f"{model} A", markersize=3)
            ax.plot(
                line["severity"], line["worst_class_accuracy"], "--s", color=colors[model], label=f"{model} WCA", markersize=3
            )
        ax.set_title(_short(str(family), 30), fontsize=10)
        ax.set_xlabel("severity (0: clean)")
        ax.set_xticks(sorted(set(in_family["severity"].astype(int))))
        ax.set_ylim(0, 1.02)
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    spare = list(axes.flat)[len(families) :]
    for ax in spare:
        ax.axis("off")
    if spare:
        spare[0].legend(handles, labels, loc="center", fontsize="small", ncol=1 if len(models) <= 6 else 2, frameon=False)
    else:
        fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    fig.suptitle(title)
    return fig


def accuracy_spread_figure(
    accuracy: Mapping[str, Mapping[str, np.ndarray]],
    *,
    title: str,
    max_boxed_shifts: int = MAX_BOXED_SHIFTS,
) -> Figure:
    """The spread of class-wise accuracy per shift and model: how far the worst classes sit below
    the bulk, shift by shift. Up to ``max_boxed_shifts`` shifts, box plots
    (:func:`_spread_boxes`); past it, quantile bands over the shifts ordered easiest first
    (:func:`_spread_bands`), so that 100 shifts x 4 models stay one readable page."""
    shifts = list(accuracy)
    models = models_of(accuracy)
    if not shifts or not models:
        raise InputError("no shifts or models to plot", field="accuracy")
    if len(shifts) > max_boxed_shifts:
        return _spread_bands(accuracy, models, title=title)
    return _spread_boxes(accuracy, shifts, models, title=title)


def _spread_boxes(
    accuracy: Mapping[str, Mapping[str, np.ndarray]], shifts: Sequence[str], models: Sequence[str], *, title: str
) -> Figure:
    """Box plots of class-wise accuracy per shift, one box per model side by side (whiskers
    at the 5th and 95th percentiles, the rest drawn as points)."""
    colors = model_colors(len(models))
    fig = Figure(figsize=(min(30.0, max(7.0, 0.5 * len(shifts) * len(models) + 2.0)), 4.8), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(models)
    for i, (model, color) in enumerate(zip(models, colors)):
        data, positions = [], []
        for j, shift in enumerate(shifts):
            if model not in accuracy[shift]:
                continue
            v = np.asarray(accuracy[shift][model], dtype=np.float64)
            data.append(v[np.isfinite(v)])
            positions.append(j - 0.4 + (i + 0.5) * width)
        if not data:
            continue
        boxes = ax.boxplot(
            data,
            positions=positions,
            widths=width * 0.9,
            whis=(5, 95),
            patch_artist=True,
            manage_ticks=False,
            flierprops={"markersize": 2, "markeredgecolor": color},
            medianprops=MEDIAN_PROPS,
        )
        for patch in boxes["boxes"]:
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        ax.plot([], [], color=color, linewidth=6, alpha=0.6, label=model)
    ax.set_xticks(np.arange(len(shifts)))
    ax.set_xticklabels(shifts, rotation=60, ha="right", fontsize=7 if len(shifts) <= 40 else 5)
    ax.set_ylabel("class-wise accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7.5, ncols=min(len(models), 4))
    ax.set_title(title)
    return fig


#: Past this many shifts the quantile bands label every k-th shift only (k the smallest that keeps it).
_LABELLED_SHIFTS = 150


def _spread_bands(accuracy: Mapping[str, Mapping[str, np.ndarray]], models: Sequence[str], *, title: str) -> Figure:
    """Many shifts: x is the shifts, easiest first (:func:`shifts_by_accuracy`: the mean over
    models of the mean class-wise accuracy), so that the gap between the median class and the
    worst class reads as a function of how hard the shift is (config order would make a
    sawtooth of each corruption's severities). Top panel (``fig.axes[0]``): every model's worst
    class (``gid="worst class"``) and, dotted, median class (``gid="median"``). Then one panel
    per model (``fig.axes[1 + i]``) in its colour: the min-max band (``gid="min-max"``), the
    10-90 % band (``gid="10-90 %"``), the median and the worst class, the quantiles of
    :func:`accuracy_quantiles` (:data:`SPREAD_QUANTILES`). The figure is 10 to 20 inches wide
    whatever the number of shifts, and grows with the models only."""
    order = shifts_by_accuracy(accuracy)
    ordered = {shift: accuracy[shift] for shift in order}
    quantiles = accuracy_quantiles(ordered, SPREAD_QUANTILES)
    worst, low, median, high, best = range(len(SPREAD_QUANTILES))
    colors = dict(zip(models, model_colors(len(models))))
    n = len(order)
    x = np.arange(n)
    fig = Figure(figsize=(min(20.0, max(10.0, 3.0 + 0.12 * n)), 4.4 + 1.9 * len(models)), layout="constrained")
    axes = fig.subplots(1 + len(models), 1, sharex=True, sharey=True, height_ratios=[1.3] + [1.0] * len(models))
    overview = axes[0]
    for model in models:
        q = quantiles[model]
        overview.plot(x, q[worst], color=colors[model], linewidth=1.6, marker=".", markersize=3, label=model, gid="worst class")
        overview.plot(x, q[median], color=colors[model], linewidth=0.9, linestyle=":", gid="median")
    overview.set_title("worst class of each model (solid) and its median class (dotted)", fontsize=9)
    for ax, model in zip(axes[1:], models):
        q, color = quantiles[model], colors[model]
        ax.fill_between(x, q[worst], q[best], color=color, alpha=0.15, linewidth=0, label="min-max of classes", gid="min-max")
        ax.fill_between(x, q[low], q[high], color=color, alpha=0.4, linewidth=0, label="10-90 % of classes", gid="10-90 %")
        ax.plot(x, q[median], color=color, linewidth=1.0, label="median class", gid="median")
        ax.plot(x, q[worst], color=color, linewidth=1.6, marker=".", markersize=3, label="worst class", gid="worst class")
        ax.set_title(model, fontsize=9, color=color, loc="left")
    # outside the axes: the worst classes sit at the bottom and the best at the top of every panel
    fig.legend(*overview.get_legend_handles_labels(), loc="outside upper left", ncols=min(len(models), 6), fontsize=7.5)
    fig.legend(*axes[1].get_legend_handles_labels(), loc="outside upper right", ncols=4, fontsize=7.5)
    for ax in axes:
        ax.set_ylabel("class-wise accuracy", fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    step = -(-n // _LABELLED_SHIFTS)
    axes[-1].set_xticks(x[::step])
    axes[-1].set_xticklabels([_short(order[j], 28) for j in x[::step]], rotation=90, fontsize=7 if n <= 40 else 5)
    axes[-1].set_xlim(-0.5, n - 0.5)
    axes[-1].set_xlabel(f"the {n} shifts, easiest first (mean class-wise accuracy over models)")
    fig.suptitle(title)
    return fig
