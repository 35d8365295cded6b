"""The class-drop tests of a dataset and label view in one figure: each class's change of
accuracy under a shift against -log10 of its adjusted p-value (a volcano plot), one panel per
shift family, every model in its colour.

A panel of 1,000 classes x 5 severities x 4 models holds 20,000 tests, most of them unchanged
classes: past :data:`DENSITY_POINTS` points a panel draws the non-significant ones as a density
(grey hexagons, log counts) and only the significant ones as points, translucent where they are
many, so the findings stay visible at ImageNet's scale. The rows are those of
:func:`classwise.metrics.class_drops.class_drops`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from classwise.plots import model_colors

__all__ = ["DENSITY_POINTS", "MAX_PANELS", "class_drops_figure"]

#: Past this many tests in a panel, the non-significant ones are drawn as a density.
DENSITY_POINTS = 4000
#: At most this many panels: past it, the families with the fewest significant changes share
#: the last panel (its title says how many).
MAX_PANELS = 24
#: The smallest adjusted p-value drawn (a p-value that underflows to 0 is drawn there).
_FLOOR = 1e-300
_COLUMNS = 4


def _panels(table: pd.DataFrame, families: Mapping[str, str]) -> list[tuple[str, np.ndarray]]:
    """(title, rows of ``table``) per panel: one per family in the order of the shifts, those past
    :data:`MAX_PANELS` merged into the last."""
    shifts = table["shift"].astype(str).to_numpy()
    family = np.array([families.get(shift, shift) for shift in shifts], dtype=object)
    order = list(dict.fromkeys(family))
    panels = [(name, np.flatnonzero(family == name)) for name in order]
    if len(panels) <= MAX_PANELS:
        return panels
    significant = table["significant"].to_numpy(dtype=bool)
    ranked = sorted(range(len(panels)), key=lambda i: (-int(significant[panels[i][1]].sum()), i))
    kept = sorted(ranked[: MAX_PANELS - 1])
    rest = [i for i in range(len(panels)) if i not in set(kept)]
    merged = np.sort(np.concatenate([panels[i][1] for i in rest]))
    return [panels[i] for i in kept] + [(f"{len(rest)} other families", merged)]


def class_drops_figure(table: pd.DataFrame, *, families: Mapping[str, str], q: float, title: str) -> Figure:
    """The figure of a class-drop table (rows of :func:`~classwise.metrics.class_drops.class_drops`):
    per panel (``families``: shift -> its family; a shift not named is a family of its own) the
    tested rows' change in percentage points against ``-log10(p_adjusted)``, significant rows
    (``p_adjusted <= q``, the dashed line) in their model's colour, the others grey. A panel's
    title says its shifts and how many of its tests are significant."""
    tested = table[table["p_adjusted"].notna()]
    models = list(dict.fromkeys(table["model"].astype(str)))
    colours = dict(zip(models, model_colors(len(models))))
    panels = _panels(tested, families) if len(tested) else []
    columns = max(1, min(len(panels), _COLUMNS))
    rows = max(1, -(-len(panels) // columns))
    legend_height = 0.5
    height = 3.0 * rows + legend_height + 0.5
    fig = Figure(figsize=(3.8 * columns, height))
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False).ravel())
    if not panels:
        axes[0].axis("off")
        axes[0].text(0.5, 0.5, "no class could be tested (no samples on a side)", ha="center", va="center")
    threshold = -np.log10(q)
    change = 100.0 * tested["change"].to_numpy(dtype=np.float64)
    height_of = -np.log10(np.maximum(tested["p_adjusted"].to_numpy(dtype=np.float64), _FLOOR))
    significant = tested["significant"].to_numpy(dtype=bool)
    model_of = tested["model"].astype(str).to_numpy()
    shift_of = tested["shift"].astype(str).to_numpy()
    for ax, (name, rows_of) in zip(axes, panels):
        x, y, hit = change[rows_of], height_of[rows_of], significant[rows_of]
        grey = ~hit
        if rows_of.size > DENSITY_POINTS and grey.sum() > 1:
            ax.hexbin(x[grey], y[grey], gridsize=40, cmap="Greys", bins="log", mincnt=1, linewidths=0, gid="not significant")
        else:
            ax.scatter(x[grey], y[grey], s=6, color="0.6", alpha=0.5, linewidths=0, gid="not significant")
        count = int(hit.sum())
        if count:
            # one layer in a shuffled (seeded) order: no model hides another by being drawn last
            order = np.random.default_rng(0).permutation(np.flatnonzero(hit))
            alpha = float(np.clip(400.0 / count, 0.25, 0.9))
            colour = [colours[model] for model in model_of[rows_of][order]]
            ax.scatter(x[order], y[order], s=12, c=colour, alpha=alpha, linewidths=0, gid="significant")
        ax.axhline(threshold, color="black", linestyle="--", linewidth=0.8)
        ax.axvline(0.0, color="0.3", linewidth=0.6)
        n_shifts = len(set(shift_of[rows_of]))
        ax.set_title(f"{name}: {n_shifts} shift{'s' if n_shifts != 1 else ''}, {count} of {rows_of.size} significant", fontsize=9)
        ax.set_xlabel("change from clean (pp)")
        ax.set_ylabel("-log10 adjusted p")
    for ax in axes[len(panels) if panels else 1 :]:
        ax.axis("off")
    handles = [Line2D([], [], marker="o", linestyle="", color=colours[m], label=m) for m in models]
    handles.append(Line2D([], [], marker="h", linestyle="", color="0.6", label="not significant (a density past many points)"))
    handles.append(Line2D([], [], linestyle="--", color="black", label=f"q = {q:g}"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), fontsize="small", frameon=False)
    fig.suptitle(title)
    # margins in inches (tight_layout measures every tick label of every panel: seconds at 24 panels)
    width = 3.8 * columns
    fig.subplots_adjust(
        left=0.6 / width,
        right=1 - 0.15 / width,
        bottom=(legend_height + 0.45) / height,
        top=1 - 0.75 / height,
        wspace=0.35,
        hspace=0.6,
    )
    return fig
