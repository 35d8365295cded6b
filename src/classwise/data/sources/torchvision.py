"""``source: torchvision``: CIFAR-10, CIFAR-100 or GTSRB (``name``), downloaded into ``root`` by
the workflow's local rule, with their train and test splits."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.data.imageset import ImageSet
from classwise.data.sources.base import BaseDatasetSource, Split

_CLASSES = {"cifar10": 10, "cifar100": 100, "gtsrb": 43}


class TorchvisionSource(BaseDatasetSource):
    name = "torchvision"
    required: tuple[str, ...] = ("name", "root")
    downloaded = True
    has_train_split = True

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        return _CLASSES.get(str(dataset.get("name")))

    def image_shape(self, dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
        return (3, 32, 32) if dataset.get("name") in ("cifar10", "cifar100") else None

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data import torchvision_sets

        if dataset["name"] == "gtsrb":
            return torchvision_sets.gtsrb_dataset(dataset["root"], split, on_bad_image=dataset.get("on_bad_image", "error"))
        return torchvision_sets.load_cifar_split(dataset["name"], dataset["root"], split)

    def load_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> ImageSet:
        """GTSRB in memory is resized to ``image_size`` (default 32)."""
        if dataset["name"] == "gtsrb":
            from classwise.data.torchvision_sets import load_gtsrb_split

            return load_gtsrb_split(dataset["root"], split, image_size=int(dataset.get("image_size", 32)))
        return super().load_split(dataset, split, name)

    def prepare(self, dataset: Mapping[str, Any], name: str) -> Path:
        from classwise.data import torchvision_sets

        return torchvision_sets.prepare_torchvision_dataset(dataset["name"], dataset["root"], overrides=dataset.get("downloads"))


SOURCE = TorchvisionSource()
