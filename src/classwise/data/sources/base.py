"""What every dataset source answers (:class:`DatasetSource`), with the defaults most share.

The workflow asks some questions at DAG-build time (class count, image shape, job parameters,
whether a directory the user provides exists, whether a local rule downloads the files); their
answers decode no image and import no torch. The jobs ask the rest: open or load a split, and
download (a local rule's job).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from classwise.data.imageset import ImageSet
from classwise.errors import InputError

Split = Literal["train", "test"]


class DatasetSource(Protocol):
    """One ``source:`` of a ``datasets:`` entry."""

    #: The ``source:`` value.
    name: str
    #: The config keys the source needs besides ``source``.
    required: tuple[str, ...]
    #: Whether a local rule downloads its files (``prepare_dataset``) before any job needs them.
    downloaded: bool
    #: Whether it has a train split (else it is an evaluation set: ``test`` only).
    has_train_split: bool
    #: Whether it holds images (else only labels and sample ids: models cannot run on it, only
    #: their outputs from a file can be evaluated, and no shift can perturb it).
    has_images: bool

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        """The class count, from the config and at most a directory listing (None: only loading
        the images would tell)."""
        ...

    def classes_with_images(self, dataset: Mapping[str, Any]) -> int | None:
        """How many of the classes hold images (fewer than :meth:`classes` when a directory holds
        part of a label space), from at most a directory listing; None where unknown."""
        ...

    def image_shape(self, dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
        """(channels, height, width) of a set held in memory at its own size, else None."""
        ...

    def class_ids(self, dataset: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The identifiers of the classes in label order that shift sets name their class
        folders after (ImageNet wnids), from at most a directory listing; None where unknown."""
        ...

    def sample_ids(self, dataset: Mapping[str, Any], name: str) -> np.ndarray | None:
        """The sample ids of the test split, from a file or one directory listing (no image
        decoded, nothing downloaded); None where only loading the data would tell."""
        ...

    def job_parameters(self, dataset: Mapping[str, Any]) -> dict[str, Any]:
        """The entry as a job's parameters: whatever change must rerun the jobs that read it."""
        ...

    def check_paths(self, dataset: Mapping[str, Any], name: str) -> None:
        """:class:`InputError` when a directory the user provides is missing."""
        ...

    def input_files(self, dataset: Mapping[str, Any]) -> list[str]:
        """Files the user provides that the jobs reading the split depend on (a change reruns
        them); directories of images are not listed."""
        ...

    def notes(self, dataset: Mapping[str, Any], name: str) -> list[str]:
        """What ``results/README.md`` says about the entry (one line each): how an old form of
        entry is read now."""
        ...

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        """An :class:`ImageSet` or a lazy ``ImageFileDataset`` of ``split`` (checked to exist)."""
        ...

    def load_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> ImageSet:
        """``split`` in memory."""
        ...

    def prepare(self, dataset: Mapping[str, Any], name: str) -> Path:
        """Download and verify the files; the path of their manifest."""
        ...


class BaseDatasetSource:
    """Defaults: an evaluation set the user provides, nothing to download."""

    name = ""
    required: tuple[str, ...] = ()
    downloaded = False
    has_train_split = False
    has_images = True

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        return None

    def classes_with_images(self, dataset: Mapping[str, Any]) -> int | None:
        return self.classes(dataset)

    def image_shape(self, dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
        return None

    def class_ids(self, dataset: Mapping[str, Any]) -> tuple[str, ...] | None:
        return None

    def sample_ids(self, dataset: Mapping[str, Any], name: str) -> np.ndarray | None:
        return None

    def job_parameters(self, dataset: Mapping[str, Any]) -> dict[str, Any]:
        # keys sorted: reordering a config is no change that reruns jobs
        return json.loads(json.dumps(dict(dataset), sort_keys=True))

    def check_paths(self, dataset: Mapping[str, Any], name: str) -> None:
        return None

    def input_files(self, dataset: Mapping[str, Any]) -> list[str]:
        return []

    def notes(self, dataset: Mapping[str, Any], name: str) -> list[str]:
        return []

    # a mixin: the concrete source that inherits this is the DatasetSource (with open_split)
    def load_split(self: DatasetSource, dataset: Mapping[str, Any], split: Split, name: str) -> ImageSet:
        opened = self.open_split(dataset, split, name)
        return opened if isinstance(opened, ImageSet) else opened.to_imageset()

    def prepare(self, dataset: Mapping[str, Any], name: str) -> Path:
        raise InputError(f"source '{self.name}' has nothing to download", field=f"datasets.{name}.source")


class UserDirectorySource(BaseDatasetSource):
    """An image directory the user provides (``root``)."""

    required: tuple[str, ...] = ("root",)

    # a mixin: the concrete source that inherits this is the DatasetSource (with open_split)
    def sample_ids(self: DatasetSource, dataset: Mapping[str, Any], name: str) -> np.ndarray | None:
        """One listing: opening the split lists the directory and decodes no image."""
        return np.asarray(self.open_split(dataset, "test", name).sample_ids).astype(str)

    def check_paths(self, dataset: Mapping[str, Any], name: str) -> None:
        if not Path(dataset["root"]).is_dir():
            raise InputError(
                f"dataset directory {dataset['root']!r} does not exist (relative paths are relative to the working directory)",
                field=f"datasets.{name}.root",
            )
