"""``source: cifar10c``: one corruption and severity of CIFAR-10-C as a dataset of its own, kept for
old configs: downloaded into ``root`` by the workflow's local rule and read as the ``cifar10c``
shift family reads it (:data:`classwise.data.shift_sets.cifar.CIFAR10C`, the one definition of
its archive, corruptions, sample ids and classes). A note in ``results/README.md`` names the
shift of a CIFAR-10 dataset's ``cifar10c`` shift set that holds the same images."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.data.shift_sets.cifar import CIFAR10C
from classwise.data.sources.base import BaseDatasetSource, Split


class Cifar10cSource(BaseDatasetSource):
    name = "cifar10c"
    required: tuple[str, ...] = ("root", "corruption", "severity")
    downloaded = True

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        return len(CIFAR10C.classes)

    def image_shape(self, dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
        return (3, 32, 32)

    def notes(self, dataset: Mapping[str, Any], name: str) -> list[str]:
        shift = f"{CIFAR10C.name}_{dataset['corruption']}_s{dataset['severity']}"
        return [
            f"dataset {name} (source: cifar10c): CIFAR-10-C's {dataset['corruption']} at severity {dataset['severity']}, "
            f"read as the cifar10c shift set reads it; a CIFAR-10 dataset with shift_sets: {{cifar10c: {{}}}} evaluates "
            f"the same images as its shift {shift}, paired with its clean test images (docs/shifts.md)"
        ]

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data import torchvision_sets

        return torchvision_sets.load_cifar10c(dataset["root"], dataset["corruption"], int(dataset["severity"]))

    def prepare(self, dataset: Mapping[str, Any], name: str) -> Path:
        from classwise.data import torchvision_sets

        return torchvision_sets.prepare_cifar10c(dataset["root"], url=dataset.get("url"), sha256=dataset.get("sha256"))


SOURCE = Cifar10cSource()
