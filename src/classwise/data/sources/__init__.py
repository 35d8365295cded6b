"""Dataset sources: a ``datasets:`` config entry -> the images of one split, one module per
``source:`` and one dictionary of them (:data:`DATASET_SOURCES`).

Small sets (the digits demo, CIFAR, CIFAR-10-C) load into memory as an :class:`ImageSet`;
image-file sets (ImageNet, GTSRB, any ImageFolder) open as a lazy :class:`ImageFileDataset`
that inference decodes batch by batch with the model's own preprocessing; a set given by its
labels alone (``source: labels``, for models whose outputs come from a file) opens as its
sample ids, labels and class names. Loading never
downloads: downloads happen in the workflow's local rules (see :func:`prepare_dataset`).

Every source answers :class:`~classwise.data.sources.base.DatasetSource`; nothing outside this
package branches on a dataset's source. Adding a source is one module here, one line in
:data:`DATASET_SOURCES` and its tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from classwise.data.imageset import ImageSet
from classwise.data.sources import cifar10c, image_folder, imagenet_val, labels, sklearn_digits, torchvision
from classwise.data.sources.base import BaseDatasetSource, DatasetSource, Split
from classwise.errors import InputError

__all__ = [
    "DATASET_SOURCES",
    "DOWNLOADED_SOURCES",
    "SOURCES",
    "TRAIN_SPLIT_SOURCES",
    "DatasetSource",
    "Split",
    "check_dataset_paths",
    "dataset_class_ids",
    "dataset_classes",
    "dataset_classes_with_images",
    "dataset_image_shape",
    "dataset_notes",
    "dataset_sample_ids",
    "dataset_source",
    "shift_sample_ids",
    "dataset_class_names",
    "has_images",
    "input_files",
    "job_parameters",
    "load_split",
    "open_split",
    "prepare_dataset",
]

DATASET_SOURCES: dict[str, DatasetSource] = {
    "sklearn_digits": sklearn_digits.SOURCE,
    "imagenet_val": imagenet_val.SOURCE,
    "image_folder": image_folder.SOURCE,
    "torchvision": torchvision.SOURCE,
    "cifar10c": cifar10c.SOURCE,
    "labels": labels.SOURCE,
}
_UNKNOWN = BaseDatasetSource()
"""What an entry of no known source answers (the schema check reports the source itself)."""
#: Sources and the config keys each needs (beyond ``source``).
SOURCES: dict[str, tuple[str, ...]] = {name: source.required for name, source in DATASET_SOURCES.items()}
#: Sources whose files a local rule downloads before any job needs them.
DOWNLOADED_SOURCES = tuple(name for name, source in DATASET_SOURCES.items() if source.downloaded)
#: Dataset sources with a train split (the others are evaluation sets).
TRAIN_SPLIT_SOURCES = tuple(name for name, source in DATASET_SOURCES.items() if source.has_train_split)


def dataset_source(dataset: Mapping[str, Any], name: str = "dataset") -> DatasetSource:
    """The source of a configured dataset (named ``name``), its required keys checked."""
    source = dataset.get("source")
    if source not in DATASET_SOURCES:
        raise InputError(f"unknown source {source!r}; expected one of {list(DATASET_SOURCES)}", field=f"datasets.{name}.source")
    found = DATASET_SOURCES[source]
    for key in found.required:
        if key not in dataset:
            raise InputError(f"is required for source '{source}'", field=f"datasets.{name}.{key}")
    return found


def dataset_classes(name: str, dataset: Mapping[str, Any]) -> int | None:
    """The class count C of a configured dataset, or None where only loading it would tell."""
    source = DATASET_SOURCES.get(str(dataset.get("source")))
    return None if source is None else source.classes(dataset)


def dataset_classes_with_images(name: str, dataset: Mapping[str, Any]) -> int | None:
    """How many classes of a configured dataset hold images, or None where unknown."""
    source = DATASET_SOURCES.get(str(dataset.get("source")))
    return None if source is None else source.classes_with_images(dataset)


def dataset_image_shape(dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The (channels, height, width) of a dataset held in memory at its own size, else None."""
    source = DATASET_SOURCES.get(str(dataset.get("source")))
    return None if source is None else source.image_shape(dataset)


def dataset_sample_ids(name: str, dataset: Mapping[str, Any]) -> np.ndarray | None:
    """The test split's sample ids of a configured dataset (named ``name``), from its label file
    or one listing of its directory; None where only loading the data would tell."""
    return DATASET_SOURCES.get(str(dataset.get("source")), _UNKNOWN).sample_ids(dataset, name)


def dataset_class_names(name: str, dataset: Mapping[str, Any]) -> tuple[str, ...] | None:
    """A dataset's class names where known before any job without loading images: a labels
    file's (its ``class_names``, its ``class_name`` column or the indices), the config's
    ``class_names``; None otherwise (the job knows them)."""
    if dataset.get("source") == "labels":
        return labels.read_label_file(dataset["path"], dataset.get("class_names"), field=f"datasets.{name}.path").class_names
    names = dataset.get("class_names")
    return None if names is None else tuple(str(n) for n in names)


def shift_sample_ids(name: str, dataset: Mapping[str, Any], spec: Any) -> np.ndarray | None:
    """The sample ids of a dataset's samples under shift ``spec`` (a
    :class:`~classwise.shifts.kinds.ShiftSpec`), where known before any job: a shift's own labels
    file's, the dataset's for a shift of every one of its own samples, None otherwise (a
    published set's files, an attack on a subset of the samples)."""
    if spec.labels_file is not None:
        return labels.shift_samples(dataset, name, spec.labels_file).sample_ids
    if spec.shift_set is not None or spec.per_class is not None:
        return None
    return dataset_sample_ids(name, dataset)


def job_parameters(dataset: Mapping[str, Any]) -> dict[str, Any]:
    """A dataset's config as a job's parameters: keys sorted (reordering a config is no change
    that reruns jobs), plus what the source adds (for the digits, the version of the split's
    convention, so that Snakemake reruns every job that saw a split made under another one).
    ``shift_sets`` are left out: each is a shift of its own, and adding one must not rerun the
    dataset's other inference jobs."""
    source = DATASET_SOURCES.get(str(dataset.get("source")), _UNKNOWN)
    return source.job_parameters({key: value for key, value in dataset.items() if key != "shift_sets"})


def dataset_class_ids(dataset: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The class identifiers (ImageNet wnids) of a configured dataset, from at most a listing."""
    source = DATASET_SOURCES.get(str(dataset.get("source")))
    return None if source is None else source.class_ids(dataset)


def input_files(dataset: Mapping[str, Any]) -> list[str]:
    """The files the user provides for a configured dataset that jobs reading it depend on."""
    source = DATASET_SOURCES.get(str(dataset.get("source")), _UNKNOWN)
    return source.input_files(dataset)


def dataset_notes(name: str, dataset: Mapping[str, Any]) -> list[str]:
    """What ``results/README.md`` says about a configured dataset (named ``name``), one line each."""
    return DATASET_SOURCES.get(str(dataset.get("source")), _UNKNOWN).notes(dataset, name)


def has_images(dataset: Mapping[str, Any]) -> bool:
    """Whether a configured dataset holds images (False: labels only, ``source: labels``)."""
    return DATASET_SOURCES.get(str(dataset.get("source")), _UNKNOWN).has_images


def check_dataset_paths(dataset: Mapping[str, Any], name: str) -> None:
    """A directory the user provides (ImageNet, an ImageFolder) must exist before any job runs."""
    dataset_source(dataset, name).check_paths(dataset, name)


def open_split(dataset: Mapping[str, Any], split: Split, *, name: str = "dataset") -> Any:
    """One split of a configured dataset: an :class:`ImageSet` or a lazy ``ImageFileDataset``.

    Evaluation sets without a train split (ImageNet validation, CIFAR-10-C, an ImageFolder)
    serve only ``"test"``.
    """
    source = dataset_source(dataset, name)
    if split == "train" and not source.has_train_split:
        raise InputError(f"source '{source.name}' is an evaluation set without a train split", field=f"datasets.{name}.source")
    return source.open_split(dataset, split, name)


def load_split(dataset: Mapping[str, Any], split: Split, *, name: str = "dataset") -> ImageSet:
    """One split in memory (small sets; GTSRB is resized to ``image_size``, default 32)."""
    source = dataset_source(dataset, name)
    if split == "train" and not source.has_train_split:
        return open_split(dataset, split, name=name)  # the error naming the field
    return source.load_split(dataset, split, name)


def prepare_dataset(dataset: Mapping[str, Any], *, name: str = "dataset") -> Path:
    """Download and verify a dataset's archives (a local rule's job); return its manifest path."""
    return dataset_source(dataset, name).prepare(dataset, name)
