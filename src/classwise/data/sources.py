"""Dataset dispatch: a ``datasets:`` config entry -> the images of one split.

Small sets (the digits demo, CIFAR, CIFAR-10-C) load into memory as an :class:`ImageSet`;
image-file sets (ImageNet, GTSRB, any ImageFolder) open as a lazy :class:`ImageFileDataset`
that inference decodes batch by batch with the model's own preprocessing. Loading never
downloads: downloads happen in the workflow's local rules (see :func:`prepare_dataset`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from classwise.data.imageset import ImageSet
from classwise.errors import InputError

Split = Literal["train", "test"]

#: Sources and the config keys each needs (beyond ``source``).
SOURCES: dict[str, tuple[str, ...]] = {
    "sklearn_digits": (),
    "imagenet_val": ("root",),
    "image_folder": ("root",),
    "torchvision": ("name", "root"),
    "cifar10c": ("root", "corruption", "severity"),
}
#: Sources whose files a local rule downloads before any job needs them.
DOWNLOADED_SOURCES = ("torchvision", "cifar10c")
#: Dataset sources with a train split (the others are evaluation sets).
TRAIN_SPLIT_SOURCES = ("sklearn_digits", "torchvision")
_TORCHVISION_CLASSES = {"cifar10": 10, "cifar100": 100, "gtsrb": 43}


def _require(dataset: Mapping[str, Any], name: str) -> str:
    source = dataset.get("source")
    if source not in SOURCES:
        raise InputError(f"unknown source {source!r}; expected one of {list(SOURCES)}", field=f"datasets.{name}.source")
    for key in SOURCES[source]:
        if key not in dataset:
            raise InputError(f"is required for source '{source}'", field=f"datasets.{name}.{key}")
    return str(source)


def dataset_classes(name: str, dataset: Mapping[str, Any]) -> int | None:
    """The class count C of a configured dataset, or None where only loading it would tell."""
    source = dataset.get("source")
    if source == "sklearn_digits" or source == "cifar10c":
        return 10
    if source == "torchvision":
        return _TORCHVISION_CLASSES.get(str(dataset.get("name")))
    if source == "imagenet_val" and dataset.get("label_space") == "imagenet1k":
        return 1000
    if source == "image_folder":
        if dataset.get("classes"):
            return len(dataset["classes"])
        root = Path(str(dataset.get("root", "")))
        if root.is_dir():
            return sum(1 for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith("."))
    return None


def dataset_image_shape(dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The (channels, height, width) of a dataset held in memory at its own size, else None."""
    source = dataset.get("source")
    if source == "sklearn_digits":
        return (1, 8, 8)
    if source == "cifar10c" or (source == "torchvision" and dataset.get("name") in ("cifar10", "cifar100")):
        return (3, 32, 32)
    return None


def job_parameters(dataset: Mapping[str, Any]) -> dict[str, Any]:
    """A dataset's config as a job's parameters: keys sorted (reordering a config is no change
    that reruns jobs), plus, for the digits, the version of the split's convention, so that
    Snakemake reruns every job that saw a split made under another convention."""
    params = dict(dataset)
    if params.get("source") == "sklearn_digits":
        from classwise.data.digits import SPLIT_CONVENTION

        params["split_convention"] = SPLIT_CONVENTION
    return json.loads(json.dumps(params, sort_keys=True))


def check_dataset_paths(dataset: Mapping[str, Any], name: str) -> None:
    """A directory the user provides (ImageNet, an ImageFolder) must exist before any job runs."""
    source = _require(dataset, name)
    if source in ("imagenet_val", "image_folder") and not Path(dataset["root"]).is_dir():
        raise InputError(
            f"dataset directory {dataset['root']!r} does not exist (relative paths are relative to the "
            "working directory)",
            field=f"datasets.{name}.root",
        )


def open_split(dataset: Mapping[str, Any], split: Split, *, name: str = "dataset") -> Any:
    """One split of a configured dataset: an :class:`ImageSet` or a lazy ``ImageFileDataset``.

    Evaluation sets without a train split (ImageNet validation, CIFAR-10-C, an ImageFolder)
    serve only ``"test"``.
    """
    source = _require(dataset, name)
    field = f"datasets.{name}"
    if source == "sklearn_digits":
        from classwise.data.digits import load_digits_split

        train, test = load_digits_split(
            test_fraction=float(dataset.get("test_fraction", 0.5)),
            seed=int(dataset.get("split_seed", 0)),
        )
        return train if split == "train" else test
    if split == "train" and source in ("imagenet_val", "image_folder", "cifar10c"):
        raise InputError(f"source '{source}' is an evaluation set without a train split", field=f"{field}.source")
    if source == "imagenet_val":
        from classwise.data.imagefolder import imagenet_val

        return imagenet_val(
            dataset["root"],
            layout=dataset.get("layout", "auto"),
            devkit=dataset.get("devkit"),
            label_space=dataset.get("label_space", "found"),
            on_bad_image=dataset.get("on_bad_image", "error"),
        )
    if source == "image_folder":
        from classwise.data.imagefolder import image_folder

        return image_folder(
            dataset["root"],
            classes=dataset.get("classes"),
            class_names=dataset.get("class_names"),
            on_bad_image=dataset.get("on_bad_image", "error"),
        )
    if source == "torchvision":
        from classwise.data import torchvision_sets

        if dataset["name"] == "gtsrb":
            return torchvision_sets.gtsrb_dataset(
                dataset["root"], split, on_bad_image=dataset.get("on_bad_image", "error")
            )
        return torchvision_sets.load_cifar_split(dataset["name"], dataset["root"], split)
    from classwise.data import torchvision_sets

    return torchvision_sets.load_cifar10c(dataset["root"], dataset["corruption"], int(dataset["severity"]))


def load_split(dataset: Mapping[str, Any], split: Split, *, name: str = "dataset") -> ImageSet:
    """One split in memory (small sets; GTSRB is resized to ``image_size``, default 32)."""
    source = _require(dataset, name)
    if source == "torchvision" and dataset["name"] == "gtsrb":
        from classwise.data.torchvision_sets import load_gtsrb_split

        return load_gtsrb_split(dataset["root"], split, image_size=int(dataset.get("image_size", 32)))
    opened = open_split(dataset, split, name=name)
    return opened if isinstance(opened, ImageSet) else opened.to_imageset()


def prepare_dataset(dataset: Mapping[str, Any], *, name: str = "dataset") -> Path:
    """Download and verify a dataset's archives (a local rule's job); return its manifest path."""
    source = _require(dataset, name)
    from classwise.data import torchvision_sets

    if source == "torchvision":
        return torchvision_sets.prepare_torchvision_dataset(
            dataset["name"], dataset["root"], overrides=dataset.get("downloads")
        )
    if source == "cifar10c":
        return torchvision_sets.prepare_cifar10c(dataset["root"], url=dataset.get("url"), sha256=dataset.get("sha256"))
    raise InputError(f"source '{source}' has nothing to download", field=f"datasets.{name}.source")
