"""Per-class figures of Medi et al., 2024.

* :func:`plot_class_bars` -- grouped bars of a per-class value for several models
  (class-wise accuracy and CFPS, the papers' Figures 1-3);
* :func:`plot_confusion` -- a confusion-matrix heatmap (Figure 4);
* :func:`plot_similarity` -- a model-by-model similarity matrix (Figure 7);
* :func:`plot_worst_probabilities` -- how often each class is the worst across bootstrap
  replicates (the uncertainty of a worst-class metric's class, not a paper figure).

All are readable for 10 classes and for 1,000: past
:data:`classwise.plots.MAX_LABELLED_CLASSES` classes, per-class bars become each model's
sorted values beside the worst classes named, and a confusion heatmap becomes the ranked
most-confused pairs beside the worst classes' confusions (:mod:`classwise.plots.many_classes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from classwise.errors import InputError, field_path
from classwise.plots import INTERVAL_LABEL, MAX_LABELLED_CLASSES, REFERENCE_LABEL, FigureLabels, model_colors, save_png
from classwise.plots.many_classes import confusion_overview_figure, sorted_values_figure

__all__ = [
    "INTERVAL_LABEL",
    "REFERENCE_LABEL",
    "FigureLabels",
    "class_bars_figure",
    "plot_class_bars",
    "plot_confusion",
    "plot_similarity",
    "plot_worst_probabilities",
    "similarity_figure",
    "worst_probability_figure",
]

_ANNOTATE_MAX = 12  # annotate heatmap cells up to this many rows/columns


def plot_class_bars(
    values: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    labels: FigureLabels,
    path: str | Path,
    reference_lines: Mapping[str, float] | None = None,
    intervals: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
    lowest_is_worst: bool = True,
) -> Path:
    """:func:`class_bars_figure`, saved to ``path``."""
    figure = class_bars_figure(
        values,
        class_names,
        labels=labels,
        reference_lines=reference_lines,
        intervals=intervals,
        lowest_is_worst=lowest_is_worst,
    )
    return save_png(figure, path)


def class_bars_figure(
    values: Mapping[str, np.ndarray],
    class_names: Sequence[str],
    *,
    labels: FigureLabels,
    reference_lines: Mapping[str, float] | None = None,
    intervals: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
    lowest_is_worst: bool = True,
) -> Figure:
    """Grouped bars: for each class one bar per model (``values``: model -> (C,) array).

    NaN values (e.g. the recall of a class without samples) are left out.  Optional
    ``reference_lines`` (model -> value) draw a dashed horizontal line per model in the
    model's colour, as the paper's Figure 1 does with overall accuracy.  Optional
    ``intervals`` (model -> (low, high), each (C,)) draw error bars from low to high (e.g.
    the Clopper-Pearson interval of each class's recall).  ``labels``
    (:class:`~classwise.plots.FigureLabels`) holds the title, the values' axis label and the
    legend's text: the legend, outside the axes so that it covers no bar, names the models'
    colours, then the dashed lines (``labels.reference_label``) and the error bars
    (``labels.interval_label``) where drawn.  Past ``MAX_LABELLED_CLASSES``
    classes the figure is :func:`classwise.plots.many_classes.sorted_values_figure` instead:
    each model's values sorted, beside the 20 worst classes named (lowest values when
    ``lowest_is_worst``, e.g. accuracy; highest otherwise, e.g. CFPS); intervals are left out
    there (a band over sorted values would mix classes).
    """
    models = list(values)
    if not models:
        raise InputError("no models to plot", field="values")
    names = [str(n) for n in class_names]
    c = len(names)
    if c == 0:
        raise InputError("no classes to plot", field="class_names")
    series = []
    for model in models:
        v = np.asarray(values[model], dtype=np.float64)
        if v.shape != (c,):
            raise InputError(f"expected shape ({c},) to match class_names, got {v.shape}", field=field_path("values", model))
        series.append(v)
    bands: list[tuple[np.ndarray, np.ndarray] | None] = []
    for model in models:
        if intervals is None or model not in intervals:
            bands.append(None)
            continue
        low, high = (np.asarray(bound, dtype=np.float64) for bound in intervals[model])
        if low.shape != (c,) or high.shape != (c,):
            raise InputError(
                f"expected two arrays of shape ({c},), got {low.shape} and {high.shape}", field=field_path("intervals", model)
            )
        bands.append((low, high))
    colors = model_colors(len(models))

    if c > MAX_LABELLED_CLASSES:
        return sorted_values_figure(
            dict(zip(models, series)),
            names,
            labels=labels,
            lowest=lowest_is_worst,
            reference_lines=reference_lines,
        )
    width_in = min(18.0, max(6.0, 0.28 * c * max(1, len(models)) + 2.0))
    fig = Figure(figsize=(width_in, 4.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(c)
    group = 0.8
    bar = group / len(models)
    for i, (model, v, band, color) in enumerate(zip(models, series, bands, colors)):
        ok = np.isfinite(v)
        offset = -group / 2 + (i + 0.5) * bar
        errors = None
        if band is not None:
            ok &= np.isfinite(band[0]) & np.isfinite(band[1])
            errors = np.stack([v[ok] - band[0][ok], band[1][ok] - v[ok]])
        ax.bar(x[ok] + offset, v[ok], width=bar, color=color, label=model)
        if errors is not None:
            first = all(b is None for b in bands[:i])  # one legend entry for every model's error bars
            ax.errorbar(
                x[ok] + offset, v[ok], yerr=errors, fmt="none", ecolor="0.2", elinewidth=0.8, capsize=1.5,
                label=labels.interval_label if first else "_nolegend_",
            )  # fmt: skip
    ax.set_xticks(x)
    rotate = max(len(n) for n in names) > 4 or c > 12
    ax.set_xticklabels(names, rotation=45 if rotate else 0, ha="right" if rotate else "center", fontsize=8)
    ax.set_xlim(-0.6, c - 0.4)
    ax.set_xlabel("class")
    drawn, drawn_labels = ax.get_legend_handles_labels()
    order = sorted(range(len(drawn)), key=lambda i: drawn_labels[i] not in models)  # stable: the models, then the error bars
    handles, entries = [drawn[i] for i in order], [drawn_labels[i] for i in order]
    lines = {model: float(value) for model, value in (reference_lines or {}).items() if np.isfinite(value)}
    for model, color in zip(models, colors):
        if model in lines:
            ax.axhline(lines[model], color=color, linestyle="--", linewidth=1.0)
    if lines.keys() & set(models):  # one entry: a grey dashed line stands for every model's, drawn in its colour
        handles.append(Line2D([], [], color="0.35", linestyle="--", linewidth=1.0))
        entries.append(labels.reference_label)
    ax.set_ylabel(labels.ylabel)
    ax.set_title(labels.title)
    ax.grid(axis="y", alpha=0.3)
    fig.legend(handles, entries, loc="outside right upper", fontsize=7.5)
    return fig


def plot_worst_probabilities(
    shares: Mapping[str, Mapping[str, Sequence[tuple[str, float]]]],
    *,
    title: str,
    path: str | Path,
) -> Path:
    """:func:`worst_probability_figure`, saved to ``path``."""
    return save_png(worst_probability_figure(shares, title=title), path)


def worst_probability_figure(
    shares: Mapping[str, Mapping[str, Sequence[tuple[str, float]]]],
    *,
    title: str,
) -> Figure:
    """How often each class is the worst: one panel per metric (``shares``: metric ->
    model -> ``(class label, share of bootstrap replicates)`` of its most frequent worst
    classes), horizontal bars per model in the colours of :func:`class_bars_figure`.

    Only the listed classes are drawn (a few per model and metric), so the figure reads the
    same for 10 classes as for 1,000; labels are sorted by their largest share.
    """
    metrics = [metric for metric, per_model in shares.items() if any(per_model.values())]
    if not metrics:
        raise InputError("no metric lists worst-class shares", field="shares")
    models = list(dict.fromkeys(model for metric in metrics for model in shares[metric]))
    colors = dict(zip(models, model_colors(len(models))))
    ncols = min(3, len(metrics))
    nrows = -(-len(metrics) // ncols)
    labels_per_panel = [len({label for ranked in shares[m].values() for label, _ in ranked}) for m in metrics]
    height = max(2.2, 0.22 * len(models) * max(labels_per_panel) + 1.0)
    fig = Figure(figsize=(4.2 * ncols, height * nrows + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, metric in zip(axes.ravel(), metrics):
        per_model = shares[metric]
        best: dict[str, float] = {}
        for ranked in per_model.values():
            for label, share in ranked:
                best[label] = max(best.get(label, 0.0), float(share))
        labels = sorted(best, key=lambda label: (-best[label], label))
        y = np.arange(len(labels))
        bar = 0.8 / max(1, len(per_model))
        for i, (model, ranked) in enumerate(per_model.items()):
            found = dict(ranked)
            widths = np.array([float(found.get(label, 0.0)) for label in labels])
            ax.barh(y - 0.4 + (i + 0.5) * bar, widths, height=bar, color=colors[model], label=model)
        ax.set_yticks(y)
        ax.set_yticklabels(labels, fontsize=7.5)
        ax.invert_yaxis()
        ax.set_xlim(0.0, 1.0)
        ax.set_title(metric, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7.5)
    for ax in axes.ravel()[len(metrics) :]:
        ax.set_axis_off()
    for ax in axes[-1]:
        ax.set_xlabel("share of bootstrap replicates\nin which it is the worst", fontsize=8)
    handles, names = axes.ravel()[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper right", fontsize=7.5, ncols=min(len(models), 4))
    fig.suptitle(title, fontsize=10)
    return fig


def plot_confusion(
    confusion: np.ndarray,
    class_names: Sequence[str],
    *,
    title: str,
    path: str | Path,
    normalize: bool = True,
) -> Path:
    """Heatmap of a confusion matrix indexed ``[true, predicted]`` (true classes down the
    vertical axis, predictions along the horizontal one, as in the paper's Figure 4).

    ``normalize=True`` shows each row as fractions of the true class (a class without
    samples stays blank); otherwise raw counts.  Cells are annotated up to 12 classes.
    Past ``MAX_LABELLED_CLASSES`` classes a C x C heatmap shows only its diagonal, so the
    figure is :func:`classwise.plots.many_classes.confusion_overview_figure` instead: the
    ranked most-confused pairs and the worst classes' own confusions (always normalised).
    """
    m = np.asarray(confusion, dtype=np.float64)
    c = len(class_names)
    if m.ndim != 2 or m.shape != (c, c):
        raise InputError(f"expected a ({c}, {c}) confusion matrix to match class_names, got {m.shape}", field="confusion")
    if not np.isfinite(m).all() or (m < 0).any():
        raise InputError("confusion counts must be finite and non-negative", field="confusion")
    if c > MAX_LABELLED_CLASSES:
        return save_png(confusion_overview_figure(m, class_names, title=title), path)
    if normalize:
        support = m.sum(axis=1, keepdims=True)
        shown = np.divide(m, support, out=np.full_like(m, np.nan), where=support > 0)
        label = "fraction of true class"
    else:
        shown = m
        label = "samples"
    side = 5.5 if c <= _ANNOTATE_MAX else 7.5
    fig = Figure(figsize=(side + 1.2, side), layout="constrained")
    ax = fig.add_subplot()
    finite = shown[np.isfinite(shown)]
    top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    image = ax.imshow(
        np.ma.masked_invalid(shown),
        cmap="viridis",
        interpolation="nearest",
        vmin=0.0,
        vmax=1.0 if normalize else top,
        aspect="equal",
    )
    fig.colorbar(image, ax=ax, label=label, shrink=0.85)
    _class_ticks(ax, [str(n) for n in class_names])
    if c <= _ANNOTATE_MAX:
        for i in range(c):
            for j in range(c):
                if np.isfinite(shown[i, j]):
                    text = f"{shown[i, j]:.2f}" if normalize else f"{shown[i, j]:.0f}"
                    color = "black" if shown[i, j] > 0.6 * top else "white"
                    ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    ax.set_title(title)
    return save_png(fig, path)


def plot_similarity(
    names: Sequence[str],
    matrix: np.ndarray,
    *,
    title: str,
    path: str | Path,
) -> Path:
    """Heatmap of a symmetric model-by-model similarity matrix (the paper's Figure 7),
    e.g. from :func:`classwise.metrics.cfps.prediction_cosine_similarity`; see
    :func:`similarity_figure`."""
    return save_png(similarity_figure(names, matrix, title=title), path)


def similarity_figure(names: Sequence[str], matrix: np.ndarray, *, title: str, decimals: int | None = None) -> Figure:
    """The heatmap of :func:`plot_similarity`, not yet saved.

    The colour scale covers [0, 1] (down to the lowest value if one is negative), so that the
    diagonal's 1 and an off-diagonal 0.54 look as different as they are. Cells are annotated
    (up to 20 models) with ``decimals`` decimals, by default 2 to 4, enough to tell the
    off-diagonal values apart; NaN cells stay blank. One model has nothing to be compared with:
    the figure says so (a 1 x 1 square of 1 would say nothing).
    """
    labels = [str(n) for n in names]
    s = np.asarray(matrix, dtype=np.float64)
    n = len(labels)
    if n == 0 or s.shape != (n, n):
        raise InputError(f"expected a ({n}, {n}) matrix to match names, got {s.shape}", field="matrix")
    if n == 1:
        return _one_model_figure(labels[0], title=title)
    off = s[~np.eye(n, dtype=bool)]
    finite = off[np.isfinite(off)]
    vmin = min(0.0, float(s[np.isfinite(s)].min())) if np.isfinite(s).any() else 0.0
    vmax = 1.0
    side = min(12.0, max(4.5, 0.6 * n + 2.5))
    fig = Figure(figsize=(side + 1.2, side), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(s), cmap="viridis", vmin=vmin, vmax=vmax, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="cosine similarity", shrink=0.85)
    ax.set_xticks(np.arange(n))
    ax.set_yticks(np.arange(n))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticklabels(labels, fontsize=8)
    if n <= 20:
        mid = (vmin + vmax) / 2
        spread = float(finite.max() - finite.min()) if finite.size else 0.0
        if decimals is None:
            decimals = int(np.clip(np.ceil(-np.log10(spread)) + 1, 2, 4)) if spread > 0 else 2
        for i in range(n):
            for j in range(n):
                if np.isfinite(s[i, j]):
                    ax.text(
                        j,
                        i,
                        f"{s[i, j]:.{decimals}f}",
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="black" if s[i, j] > mid else "white",
                    )
    ax.set_title(title)
    return fig


def _one_model_figure(model: str, *, title: str) -> Figure:
    """What :func:`similarity_figure` draws for one model: a sentence, not a 1 x 1 square."""
    fig = Figure(figsize=(6.0, 1.8), layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(
        0.5,
        0.5,
        f"One model ({model}): a similarity of predictions compares two models or more.",
        ha="center",
        va="center",
        fontsize=10,
    )
    ax.set_title(title)
    return fig


def _class_ticks(ax, names: list[str]) -> None:
    ticks = np.arange(len(names))
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    rotate = max(len(n) for n in names) > 3
    ax.set_xticklabels(names, rotation=45 if rotate else 0, ha="right" if rotate else "center", fontsize=8)
    ax.set_yticklabels(names, fontsize=8)
