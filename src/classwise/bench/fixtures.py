"""Fixtures for dry runs and benchmarks: small stand-ins for the inputs a user provides.

A paper config names inputs that only exist on the user's machine: ImageNet's validation images,
a devkit, local checkpoints, label-errors directories, per-sample metadata CSVs. Snakemake checks
that they exist when it builds the DAG (``snakemake -n``), so a dry run elsewhere needs
stand-ins. :func:`dry_run_fixtures` builds them below a working directory and returns the config
to run with.

Conventions:

- **Relative paths** (the convention of the configs: relative to the working directory) are
  built at that path below ``workdir`` and left unchanged in the config, so a config whose paths
  are all relative runs *as shipped* with ``snakemake --directory workdir``.
- **Absolute paths** are built below ``workdir/fixtures/`` and rewritten in the returned copy.
- Downloaded inputs (torchvision sets, CIFAR-10-C and the other downloaded shift sets, default
  label files, model weights) are left alone: the workflow's local rules fetch them, and a dry
  run lists those rules as jobs. Shift sets a user provides (ImageNet-C, ImageNet-Sketch) get
  one image per class and folder in their official layout.
- Image directories hold a few small random JPEGs per class (readable by the real loaders);
  every other file is an empty placeholder, enough for the DAG and nothing more.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from classwise.labels.views import required_files

__all__ = ["IMAGENET_WNIDS", "dry_run_fixtures", "image_folder_fixture", "imagenet_c_fixture", "imagenet_val_fixture"]

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


class _Builder:
    """Places fixtures below ``workdir`` (see the module's conventions on relative paths)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.built: list[str] = []

    def place(self, value: str, field: str) -> tuple[Path, str]:
        """Where to build the fixture for config value ``value`` at ``field``, and the new value."""
        path = Path(value)
        if not path.is_absolute():
            return self.workdir / path, value
        target = self.workdir / "fixtures" / field.replace("/", "_") / path.name
        return target, str(target)

    def directory(self, value: str, field: str) -> str:
        target, new = self.place(value, field)
        target.mkdir(parents=True, exist_ok=True)
        self.built.append(field)
        return new

    def file(self, value: str, field: str) -> str:
        target, new = self.place(value, field)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
        self.built.append(field)
        return new


def dry_run_fixtures(config: Mapping[str, Any], workdir: str | Path) -> tuple[dict[str, Any], list[str]]:
    """Build stand-ins for every user-provided input of ``config`` below ``workdir``.

    Returns the config to run with (a deep copy; absolute input paths rewritten, see the module
    docstring) and the config fields that got a fixture (e.g. ``datasets.imagenet.root``).
    """
    workdir = Path(workdir)
    derived = copy.deepcopy(dict(config))
    builder = _Builder(workdir)
    for name, dataset in derived.get("datasets", {}).items():
        where = f"datasets.{name}"
        source = dataset.get("source")
        if source == "imagenet_val" and "root" in dataset:
            dataset["root"] = builder.directory(dataset["root"], f"{where}.root")
            imagenet_val_fixture(_resolve(workdir, dataset["root"]))
            if dataset.get("devkit"):
                dataset["devkit"] = builder.directory(dataset["devkit"], f"{where}.devkit")
        elif source == "image_folder" and "root" in dataset:
            dataset["root"] = builder.directory(dataset["root"], f"{where}.root")
            classes = dataset.get("classes") or ["class_a", "class_b"]
            image_folder_fixture(_resolve(workdir, dataset["root"]), classes)
        _shift_set_fixtures(builder, workdir, dataset, where)
        for view, view_cfg in dataset.get("label_views", {}).items():
            directory = view_cfg.get("label_errors_dir")
            if directory:
                field = f"{where}.label_views.{view}.label_errors_dir"
                view_cfg["label_errors_dir"] = builder.directory(directory, field)
                for filename in required_files(view_cfg, field=f"{where}.label_views.{view}"):
                    (_resolve(workdir, view_cfg["label_errors_dir"]) / filename).touch()
    for name, model in derived.get("models", {}).items():
        if model.get("source") == "checkpoint" and model.get("path"):
            model["path"] = builder.file(model["path"], f"models.{name}.path")
    metadata = derived.get("analyses", {}).get("features", {}).get("metadata", {})
    for name, path in metadata.items():
        metadata[name] = builder.file(path, f"analyses.features.metadata.{name}")
    return derived, builder.built


def _shift_set_fixtures(builder: _Builder, workdir: Path, dataset: dict[str, Any], where: str) -> None:
    """Tiny copies of the shift sets a user provides (ImageNet-C, ImageNet-Sketch, a folder of
    ImageNet classes) in their official layouts; downloaded families are left to their rule."""
    from classwise.data.shift_sets import SHIFT_FAMILIES
    from classwise.data.shift_sets.base import COMMON_CORRUPTIONS, SEVERITIES

    for key, entry in (dataset.get("shift_sets") or {}).items():
        family = SHIFT_FAMILIES.get(entry.get("family", key))
        if family is None or family.downloaded or "root" not in entry:
            continue
        entry["root"] = builder.directory(entry["root"], f"{where}.shift_sets.{key}.root")
        root = _resolve(workdir, entry["root"])
        wnids = entry.get("classes") or IMAGENET_WNIDS
        if family.name == "imagenet_c":
            corruptions = entry.get("corruptions", "all")
            severities = entry.get("severities", "all")
            imagenet_c_fixture(
                root,
                COMMON_CORRUPTIONS if corruptions == "all" else corruptions,
                SEVERITIES if severities == "all" else severities,
                wnids=wnids,
            )
        else:
            image_folder_fixture(root, wnids, per_class=1, size=(40, 52), suffix=".JPEG")


def _resolve(workdir: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else workdir / path
