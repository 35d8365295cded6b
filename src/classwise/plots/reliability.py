"""Reported vs measured accuracy: Figure 1 of George et al., 2020."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from classwise.errors import InputError
from classwise.metrics.decisiveness import MeasuredCalibration, NelsonMetrics, calibration_slope
from classwise.plots import save_png


def plot_reliability(
    measured: MeasuredCalibration,
    reported: NelsonMetrics,
    *,
    title: str,
    path: str | Path,
) -> Path:
    """Draw the paper's Figure 1 and save it as PNG at ``path`` (atomically).

    * blue variable-width bars: the measured fraction correct ``f`` of each bin, spanning
      the bin's reported-probability range (singularity bins are hatched);
    * green line ``y = x``: perfect agreement between reported and measured accuracy;
    * red dots at (reported, measured) for robustness, geometric accuracy and
      decisiveness (left to right);
    * magenta line through the robustness and decisiveness dots; its slope is
      :func:`classwise.metrics.decisiveness.calibration_slope` (shown in the legend; the
      line is omitted when the slope is undefined).
    """
    if not isinstance(measured, MeasuredCalibration):
        raise InputError(f"expected a MeasuredCalibration, got {type(measured).__name__}", field="measured")
    if not isinstance(reported, NelsonMetrics):
        raise InputError(f"expected NelsonMetrics, got {type(reported).__name__}", field="reported")
    edges = np.asarray(measured.edges, dtype=np.float64)
    heights = np.nan_to_num(np.asarray(measured.fraction_correct, dtype=np.float64), nan=0.0)
    singular = np.asarray(measured.singular, dtype=bool)

    fig = Figure(figsize=(6.0, 5.6), layout="constrained")
    ax = fig.add_subplot()
    lefts, widths = edges[:-1], np.diff(edges)
    regular = ~singular
    ax.bar(
        lefts[regular],
        heights[regular],
        width=widths[regular],
        align="edge",
        color="tab:blue",
        alpha=0.55,
        edgecolor="navy",
        linewidth=0.6,
        label="measured fraction correct per bin",
    )
    if singular.any():
        ax.bar(
            lefts[singular],
            heights[singular],
            width=widths[singular],
            align="edge",
            color="tab:blue",
            alpha=0.85,
            edgecolor="navy",
            linewidth=0.6,
            hatch="///",
            label=f"singularity bin (width {measured.gamma:g})",
        )
    ax.plot([0, 1], [0, 1], color="green", linewidth=1.5, label="perfect calibration (y = x)")

    m = measured.metrics
    xs = np.array([reported.robustness, reported.geometric_accuracy, reported.decisiveness], dtype=np.float64)
    ys = np.array([m.robustness, m.geometric_accuracy, m.decisiveness], dtype=np.float64)
    slope = calibration_slope(reported, m)
    if np.isfinite(slope):
        line_x = np.array([0.0, 1.0])
        line_y = ys[0] + slope * (line_x - xs[0])
        ax.plot(line_x, line_y, color="magenta", linewidth=1.3, label=f"calibration slope {slope:.3f}")
    ax.scatter(xs, ys, color="red", s=36, zorder=5, label="robustness, geometric, decisiveness")
    for x, y, tag in zip(xs, ys, ("r", "g", "d")):
        ax.annotate(tag, (x, y), textcoords="offset points", xytext=(5, -11), color="red", fontsize=9)

    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_aspect("equal")
    ax.set_xlabel("reported probability (correct class)")
    ax.set_ylabel("measured probability (fraction correct)")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=7.5, framealpha=0.9)
    ax.grid(alpha=0.25)
    return save_png(fig, path)
