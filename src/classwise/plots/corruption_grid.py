"""One image under every corruption and severity, as a grid (issue 5: one figure per dataset).

Rows are corruptions (registry order unless given), columns are the clean image followed by
the severities. Every cell is seeded exactly as inference seeds that sample
(``sample_seed(base_seed, "<corruption>_s<severity>", sample_id)``), so the grid shows the
very pixels the models were evaluated on.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from classwise.errors import InputError
from classwise.plots import save_png
from classwise.shifts.corruptions import CORRUPTIONS, corrupt_image
from classwise.shifts.seeding import sample_seed
from classwise.shifts.severity import SEVERITIES
from classwise.shifts.spec import corruption_spec

CELL_INCHES = 1.0
"""Side of one grid cell in inches (at :data:`classwise.plots.DPI`)."""
_LEFT, _RIGHT, _TOP, _BOTTOM = 1.3, 0.1, 0.6, 0.1  # margins in inches: row labels, title, headers


def corruption_grid_images(
    image: np.ndarray,
    *,
    sample_id: str,
    base_seed: int,
    corruptions: Sequence[str] | None = None,
    severities: Sequence[int] = SEVERITIES,
) -> np.ndarray:
    """``(K, 1 + S, C, H, W)`` float32: for each corruption the clean image, then each severity.

    ``image`` is one ``(C, H, W)`` float32 image in ``[0, 1]`` (C = 1 or 3), channels first as
    in :class:`classwise.data.ImageSet`.
    """
    array = np.asarray(image)
    if array.ndim != 3 or array.shape[0] not in (1, 3) or array.dtype != np.float32:
        raise InputError(
            f"expected one (C, H, W) float32 image with C = 1 or 3, got {array.dtype} {array.shape}",
            field="image",
        )
    names = list(CORRUPTIONS) if corruptions is None else [str(n) for n in corruptions]
    if not names or not list(severities):
        raise InputError("need at least one corruption and one severity", field="corruptions")
    hwc = np.ascontiguousarray(array.transpose(1, 2, 0))
    out = np.empty((len(names), 1 + len(severities), *array.shape), dtype=np.float32)
    for k, name in enumerate(names):
        out[k, 0] = array
        for j, severity in enumerate(severities):
            spec = corruption_spec(name, severity)  # validates both; its name is the seed part
            seed = sample_seed(base_seed, spec.name, str(sample_id))
            out[k, 1 + j] = corrupt_image(hwc, name, int(severity), seed).transpose(2, 0, 1)
    return out


def plot_corruption_grid(
    image: np.ndarray,
    *,
    sample_id: str,
    base_seed: int,
    path: str | Path,
    corruptions: Sequence[str] | None = None,
    severities: Sequence[int] = SEVERITIES,
    title: str | None = None,
) -> Figure:
    """Draw :func:`corruption_grid_images` (rows: corruptions; columns: clean, severities).

    Grayscale images are drawn with a fixed ``[0, 1]`` gray scale so brightness changes stay
    visible. The axes are ``fig.axes`` in row-major order; each holds one image. Returns the
    figure after writing the PNG atomically to ``path``.
    """
    grid = corruption_grid_images(image, sample_id=sample_id, base_seed=base_seed, corruptions=corruptions, severities=severities)
    names = list(CORRUPTIONS) if corruptions is None else [str(n) for n in corruptions]
    n_rows, n_cols = grid.shape[:2]
    headers = ["clean"] + [f"severity {s}" for s in severities]
    # fixed margins instead of a layout engine: constrained layout over dozens of axes is slow
    width, height = CELL_INCHES * n_cols + _LEFT + _RIGHT, CELL_INCHES * n_rows + _TOP + _BOTTOM
    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(
        left=_LEFT / width,
        right=1 - _RIGHT / width,
        bottom=_BOTTOM / height,
        top=1 - _TOP / height,
        wspace=0.08,
        hspace=0.08,
    )
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for k in range(n_rows):
        for j in range(n_cols):
            ax = axes[k, j]
            cell = grid[k, j]
            if cell.shape[0] == 1:
                ax.imshow(cell[0], cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
            else:
                ax.imshow(cell.transpose(1, 2, 0), interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if k == 0:
                ax.set_title(headers[j], fontsize=8)
            if j == 0:
                ax.set_ylabel(names[k], fontsize=8, rotation=0, ha="right", va="center")
    fig.suptitle(title or f"Corruptions of sample {sample_id}", fontsize=10, y=1 - 0.12 / height)
    save_png(fig, path)
    return fig
