"""The figure of the class-drop tests (classwise.plots.class_drops) at ImageNet's size: 1,000
classes x 100 shifts in 20 families, one panel per family, the non-significant tests a density
past a few thousand points and every significant one a point of its model's colour."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.collections import PathCollection, PolyCollection

from classwise.plots import save_png
from classwise.plots.class_drops import DENSITY_POINTS, MAX_PANELS, class_drops_figure


def _table(classes: int, families: int, severities: int, models: tuple[str, ...], seed: int = 0) -> pd.DataFrame:
    """Most classes unchanged (uniform p-values), 3 % dropping by about 30 points (small ones)."""
    rng = np.random.default_rng(seed)
    shifts = [f"f{f:02d}_s{s}" for f in range(families) for s in range(1, severities + 1)]
    rows = len(models) * len(shifts) * classes
    dropped = rng.random(rows) < 0.03
    change = np.where(dropped, rng.normal(-0.3, 0.08, rows), rng.normal(0.0, 0.05, rows))
    p_adjusted = np.where(dropped, 10 ** -rng.uniform(0.5, 8, rows), rng.uniform(0.05, 1, rows) ** 0.3)
    p_adjusted[::997] = np.nan  # a class without samples on a side: no test
    return pd.DataFrame(
        {
            "model": np.repeat(models, len(shifts) * classes),
            "shift": np.tile(np.repeat(shifts, classes), len(models)),
            "class": np.tile(np.arange(classes), len(models) * len(shifts)),
            "change": change,
            "p_adjusted": p_adjusted,
            "significant": p_adjusted <= 0.05,
        }
    )


def _family(shift: str) -> str:
    return shift.split("_")[0]


def test_at_1000_classes_x_100_shifts_each_family_is_a_panel_of_a_density_and_the_findings(tmp_path: Path) -> None:
    table = _table(1000, 20, 5, ("resnet",))  # 100,000 tests: 5,000 a panel
    families = {shift: _family(shift) for shift in table["shift"].unique()}
    fig = class_drops_figure(table, families=families, q=0.05, title="imagenet: class drops")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 20 and panels[0].get_title().startswith("f00: 5 shifts, ")
    tested = table[table["p_adjusted"].notna()]
    for ax, (family, rows) in zip(panels, tested.groupby(tested["shift"].map(_family), sort=False)):
        assert len(rows) > DENSITY_POINTS
        density = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_gid() == "not significant"]
        assert len(density) == 1  # hexagons, not 10,000 grey points
        drawn = sum(
            len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection) and c.get_gid() == "significant"
        )
        assert drawn == int(rows["significant"].sum()) > 0
        assert ax.get_title() == f"{family}: 5 shifts, {drawn} of {len(rows)} significant"
    path = save_png(fig, tmp_path / "class_drops.png")
    assert path.stat().st_size > 50_000


def test_few_points_are_drawn_one_by_one_and_many_families_share_the_last_panel() -> None:
    small = _table(200, 2, 1, ("m1", "m2"))
    fig = class_drops_figure(small, families={}, q=0.05, title="t")
    grey = [c for ax in fig.axes for c in ax.collections if c.get_gid() == "not significant"]
    assert grey and all(isinstance(c, PathCollection) for c in grey)
    # each significant point in its model's colour, the models mixed in one layer
    found = [c for ax in fig.axes for c in ax.collections if c.get_gid() == "significant"]
    colours = {tuple(np.round(colour[:3], 3)) for c in found for colour in c.get_facecolors()}
    assert len(colours) == 2
    many = _table(5, MAX_PANELS + 6, 1, ("m",))
    fig = class_drops_figure(many, families={}, q=0.05, title="t")
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == MAX_PANELS and titles[-1].startswith("7 other families: 7 shifts, ")
