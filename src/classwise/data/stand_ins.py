"""Small images in the on-disk layouts of the sources whose directories a user provides.

Each such source writes its own stand-in (``write_stand_in``) from these, so a dry run or a
benchmark can build a directory the source's reader accepts without knowing the layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

__all__ = ["IMAGENET_WNIDS", "image_folder_fixture", "imagenet_c_fixture", "imagenet_val_fixture"]

IMAGENET_WNIDS: tuple[str, ...] = ("n01440764", "n01443537", "n01484850")
"""The first three ImageNet-1k wnids (class indices 0, 1, 2)."""


def imagenet_val_fixture(root: str | Path, *, wnids: Sequence[str] = IMAGENET_WNIDS, per_class: int = 2, seed: int = 0) -> Path:
    """An ImageNet validation directory in the ImageFolder layout, ``root/val/<wnid>/*.JPEG``.

    Files are named ``ILSVRC2012_val_<k>.JPEG`` with ``k`` = 1, 2, ... in class order; class
    ``c`` holds ``per_class`` random RGB images of ``(40 + 8c) x 52`` pixels (height x width), so
    classes differ in size. Returns ``root``.
    """
    root = Path(root)
    rng = np.random.default_rng(seed)
    for c, wnid in enumerate(wnids):
        folder = root / "val" / wnid
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, size=(40 + 8 * c, 52, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"ILSVRC2012_val_{c * per_class + i + 1:08d}.JPEG")
    return root


def image_folder_fixture(
    root: str | Path,
    classes: Sequence[str],
    *,
    per_class: int = 2,
    size: tuple[int, int] = (32, 32),
    seed: int = 0,
    suffix: str = ".png",
) -> Path:
    """``root/<class>/<i>.<suffix>``: ``per_class`` random RGB images of ``size`` (height, width)
    per class, in the order of ``classes``. Returns ``root``."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    for name in classes:
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, size=(*size, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(folder / f"{i:05d}{suffix}")
    return root


def imagenet_c_fixture(
    root: str | Path,
    corruptions: Sequence[str],
    severities: Sequence[int],
    *,
    wnids: Sequence[str] = IMAGENET_WNIDS,
    per_class: int = 1,
    seed: int = 0,
) -> Path:
    """ImageNet-C's layout, ``root/<corruption>/<severity>/<wnid>/ILSVRC2012_val_<k>.JPEG``, with
    the file names :func:`imagenet_val_fixture` gives (so the ids pair with it). Returns ``root``."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    for corruption in corruptions:
        for severity in severities:
            for c, wnid in enumerate(wnids):
                folder = root / corruption / str(severity) / wnid
                folder.mkdir(parents=True, exist_ok=True)
                for i in range(per_class):
                    pixels = rng.integers(0, 256, size=(40, 52, 3), dtype=np.uint8)
                    Image.fromarray(pixels).save(folder / f"ILSVRC2012_val_{c * per_class + i + 1:08d}.JPEG")
    return root
