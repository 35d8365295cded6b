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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.data.shift_sets import SHIFT_FAMILIES
from classwise.data.sources import DATASET_SOURCES
from classwise.data.stand_ins import IMAGENET_WNIDS, image_folder_fixture, imagenet_c_fixture, imagenet_val_fixture
from classwise.labels.views import required_files
from classwise.models.sources import MODEL_SOURCES

__all__ = ["IMAGENET_WNIDS", "dry_run_fixtures", "image_folder_fixture", "imagenet_c_fixture", "imagenet_val_fixture"]


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
        source = DATASET_SOURCES.get(str(dataset.get("source")))
        if source is not None and "root" in dataset and hasattr(source, "write_stand_in"):
            dataset["root"] = builder.directory(dataset["root"], f"{where}.root")
            source.write_stand_in(dataset, _resolve(workdir, dataset["root"]))
            if dataset.get("devkit"):
                dataset["devkit"] = builder.directory(dataset["devkit"], f"{where}.devkit")
        for key, entry in (dataset.get("shift_sets") or {}).items():  # the shift sets a user provides
            family = SHIFT_FAMILIES.get(entry.get("family", key))
            if family is not None and not family.downloaded and "root" in entry:
                entry["root"] = builder.directory(entry["root"], f"{where}.shift_sets.{key}.root")
                family.write_stand_in(entry, _resolve(workdir, entry["root"]))
        for view, view_cfg in dataset.get("label_views", {}).items():
            directory = view_cfg.get("label_errors_dir")
            if directory:
                field = f"{where}.label_views.{view}.label_errors_dir"
                view_cfg["label_errors_dir"] = builder.directory(directory, field)
                for filename in required_files(view_cfg, field=f"{where}.label_views.{view}"):
                    (_resolve(workdir, view_cfg["label_errors_dir"]) / filename).touch()
    for name, model in derived.get("models", {}).items():
        for key in MODEL_SOURCES[model.get("source", "train")].user_files:
            if model.get(key):
                model[key] = builder.file(model[key], f"models.{name}.{key}")
    metadata = derived.get("analyses", {}).get("features", {}).get("metadata", {})
    for name, path in metadata.items():
        metadata[name] = builder.file(path, f"analyses.features.metadata.{name}")
    return derived, builder.built


def _resolve(workdir: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else workdir / path
