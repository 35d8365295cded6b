"""Figures of Slavutsky and Benjamini, 2021, from the evaluations of
:mod:`classwise.extrapolation.simulation`.

* :func:`extrapolation_figure` / :func:`plot_extrapolation` -- Figure 3: the methods' predicted
  curves beside the observed and the true ones, the RMSE boxes (D) and the RMSE ratios to
  CleaneX (E), one block of panels per ``k1``;
* :func:`simulation_figure` / :func:`plot_simulation` -- Figure 2: the simulation's RMSE boxes per ``k1``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from classwise.extrapolation.simulation import RATIO_CAP, Evaluation, SimulationBenchmark, rmse_ratios
from classwise.plots import MEDIAN_PROPS, save_png

__all__ = ["METHOD_COLOURS", "extrapolation_figure", "plot_extrapolation", "plot_simulation", "simulation_figure"]

#: Colours of the extrapolation methods in the figures (the paper's: CleaneX orange,
#: regression blue, KDE purple).
METHOD_COLOURS: dict[str, str] = {"cleanex": "tab:orange", "regression": "tab:blue", "kde": "tab:purple", "naive": "tab:green"}


def _plot_block(axes: Sequence[Axes], evaluation: Evaluation, prefix: str) -> None:
    """The panels of one evaluation: one per method (A, B, ...), the RMSE boxes (D of the paper)
    and, with CleaneX, the RMSE ratios to CleaneX capped at 4 (E of the paper)."""
    methods = list(evaluation.predicted)
    rmse = evaluation.rmse
    per_method = {m: rmse.loc[rmse["method"] == m, "rmse"].to_numpy() for m in methods}
    observed_ks = np.arange(2, evaluation.k1 + 1)
    letters = "ABCDEFGH"
    for i, method in enumerate(methods):
        ax = axes[i]
        for curve in evaluation.observed:
            ax.plot(observed_ks, curve, color="0.6", linewidth=1.0)
        for curve in evaluation.predicted[method]:
            ax.plot(evaluation.ks, curve, color=METHOD_COLOURS.get(method, "tab:red"), linewidth=1.0, alpha=0.8)
        ax.plot(evaluation.ks, evaluation.true_curve, color="black", linewidth=1.6)
        ax.axvline(evaluation.k1, color="0.3", linestyle=":", linewidth=1.0)
        ax.set_title(f"{prefix}{letters[i]}: {method} (mean RMSE {per_method[method].mean():.4f})", fontsize=9)
        ax.set_xlabel("number of classes k")
        ax.set_ylabel("expected accuracy")
        ax.grid(alpha=0.25)
    ax = axes[len(methods)]
    ax.boxplot([per_method[m] for m in methods], showfliers=False, medianprops=MEDIAN_PROPS)
    ax.set_xticks(range(1, len(methods) + 1), methods, fontsize=8)
    ax.set_title(f"{prefix}{letters[len(methods)]}: RMSE over {len(rmse['repetition'].unique())} repetitions", fontsize=9)
    ax.set_ylabel("RMSE")
    ax.grid(alpha=0.25)
    if "cleanex" in methods and len(methods) > 1:
        ax = axes[len(methods) + 1]
        ratios = rmse_ratios(rmse, "cleanex", cap=RATIO_CAP)
        ax.boxplot(list(ratios.values()), showfliers=False, medianprops=MEDIAN_PROPS)
        ax.axhline(1.0, color="tab:orange", linestyle=":", linewidth=1.2)
        ax.set_xticks(range(1, len(ratios) + 1), [f"{m} / cleanex" for m in ratios], fontsize=8)
        ax.set_title(f"{prefix}{letters[len(methods) + 1]}: RMSE ratio to CleaneX (capped at {RATIO_CAP:g})", fontsize=9)
        ax.grid(alpha=0.25)


def _panels(evaluation: Evaluation) -> int:
    methods = list(evaluation.predicted)
    return len(methods) + 1 + (1 if "cleanex" in methods and len(methods) > 1 else 0)


def extrapolation_figure(evaluations: Evaluation | Sequence[Evaluation], *, title: str) -> Figure:
    """Figure 3 of Slavutsky and Benjamini, 2021 for one evaluation per ``k1`` (one block of
    rows each): one panel per method with its predicted curves (one per repetition, coloured),
    the observed curves on the sampled classes (grey), the true curve (black) and ``k1``
    (dotted); then the RMSE distribution per method (D) and, with CleaneX, the RMSE ratio of each
    other method to CleaneX's (E; above 1 means CleaneX is better; capped at 4)."""
    evaluations = [evaluations] if not isinstance(evaluations, Sequence) else list(evaluations)
    n_cols = min(3, max(_panels(e) for e in evaluations))
    rows = [math.ceil(_panels(e) / n_cols) for e in evaluations]
    fig = Figure(figsize=(4.2 * n_cols, 3.5 * sum(rows)), layout="constrained")
    first_row = 0
    for evaluation, n_rows in zip(evaluations, rows):
        start = first_row * n_cols
        axes = [fig.add_subplot(sum(rows), n_cols, start + i + 1) for i in range(_panels(evaluation))]
        _plot_block(axes, evaluation, f"k1 = {evaluation.k1}, " if len(evaluations) > 1 else "")
        first_row += n_rows
    fig.suptitle(title, fontsize=10)
    return fig


def plot_extrapolation(evaluations: Evaluation | Sequence[Evaluation], *, title: str, path: str | Path) -> Path:
    """:func:`extrapolation_figure` written as a PNG."""
    return save_png(extrapolation_figure(evaluations, title=title), path)


def plot_simulation(benchmark: SimulationBenchmark, *, title: str, path: str | Path) -> Path:
    """:func:`simulation_figure` written as a PNG."""
    return save_png(simulation_figure(benchmark, title=title), path)


def simulation_figure(benchmark: SimulationBenchmark, *, title: str) -> Figure:
    """Figure 2 of Slavutsky and Benjamini, 2021: per ``k1``, the RMSE over the repetitions
    of each method as boxes in the method's colour, the median in black (outliers not shown)."""
    evaluations = benchmark.evaluations
    fig = Figure(figsize=(4.2 * len(evaluations), 3.6), layout="constrained")
    for i, (k1, evaluation) in enumerate(evaluations.items()):
        ax = fig.add_subplot(1, len(evaluations), i + 1)
        methods = list(evaluation.predicted)
        rmse = evaluation.rmse
        boxes = ax.boxplot(
            [rmse.loc[rmse["method"] == m, "rmse"].to_numpy() for m in methods],
            showfliers=False,
            patch_artist=True,
            medianprops=MEDIAN_PROPS,
        )
        for patch, method in zip(boxes["boxes"], methods):
            patch.set_facecolor(METHOD_COLOURS.get(method, "tab:red"))
            patch.set_alpha(0.6)
        ax.set_xticks(range(1, len(methods) + 1), methods, fontsize=8)
        ax.set_title(f"k1 = {k1}, k2 = {int(evaluation.ks[-1])}", fontsize=9)
        ax.set_ylabel("RMSE")
        ax.grid(alpha=0.25)
    fig.suptitle(title, fontsize=10)
    return fig
