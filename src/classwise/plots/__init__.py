"""Figures of the papers, drawn with matplotlib and saved as PNG atomically.

Figures are built with :class:`matplotlib.figure.Figure` directly (never ``pyplot``), so
no GUI backend, global figure registry or ``matplotlib.use`` call is involved: rendering
always goes through Agg and is safe in worker processes.  Every plotting function writes
through :func:`classwise.atomic.atomic_path`, so a failed save leaves no file behind.

* :mod:`classwise.plots.reliability` -- reported vs measured accuracy (decisiveness
  paper, Figure 1).
* :mod:`classwise.plots.classwise` -- per-class bars, confusion heatmaps and model
  similarity matrices (CFPS paper, Figures 1-4 and 7).

Class names in any script: :func:`save_png` gives text the default font cannot draw (``日本``)
an installed font that can, or warns once which font to install
(:mod:`classwise.plots.fonts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise._extras import require
from classwise.atomic import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

require("matplotlib", extra="pipeline", feature="classwise.plots")

#: Tick labels are drawn for at most this many classes.
MAX_LABELLED_CLASSES = 50
DPI = 120

#: A box plot's median line: black, over boxes filled in a model's or a method's colour (the
#: default orange median vanishes in an orange box); ``gid`` "median" finds it in a figure.
MEDIAN_PROPS: dict[str, Any] = {"color": "black", "linewidth": 1.5, "gid": "median"}


#: The legend entries of :func:`classwise.plots.classwise.class_bars_figure`'s dashed lines and
#: error bars, by default.
REFERENCE_LABEL = "dashed: the model's overall value, in its colour"
INTERVAL_LABEL = "error bars: interval"


@dataclass(frozen=True, kw_only=True)
class FigureLabels:
    """The text of a per-class figure: its ``title``, the ``ylabel`` of its values, and the
    legend entries of its dashed reference lines (``reference_label``) and of its error bars
    (``interval_label``) where a figure draws them with a legend entry."""

    title: str
    ylabel: str
    reference_label: str = REFERENCE_LABEL
    interval_label: str = INTERVAL_LABEL


def model_colors(n: int) -> list[str]:
    """One colour per model, matplotlib's default cycle (``C0``..``C9``, repeating), so that a
    model keeps its colour from figure to figure."""
    return [f"C{i % 10}" for i in range(n)]


def save_png(fig: Figure, path: str | Path, *, dpi: int = DPI) -> Path:
    """Render ``fig`` to ``path`` as PNG, atomically (nothing is left if rendering fails), text
    in any script through :func:`classwise.plots.fonts.readable_text`."""
    from classwise.plots.fonts import readable_text

    target = Path(path)
    with atomic_path(target) as tmp, readable_text(fig):
        fig.savefig(tmp, format="png", dpi=dpi)
    return target
