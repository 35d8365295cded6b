"""``source: cifar10c``: one corruption and severity of CIFAR-10-C, downloaded into ``root`` by
the workflow's local rule (an evaluation set)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.data.sources.base import BaseDatasetSource, Split


class Cifar10cSource(BaseDatasetSource):
    name = "cifar10c"
    required: tuple[str, ...] = ("root", "corruption", "severity")
    downloaded = True

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        return 10

    def image_shape(self, dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
        return (3, 32, 32)

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data import torchvision_sets

        return torchvision_sets.load_cifar10c(dataset["root"], dataset["corruption"], int(dataset["severity"]))

    def prepare(self, dataset: Mapping[str, Any], name: str) -> Path:
        from classwise.data import torchvision_sets

        return torchvision_sets.prepare_cifar10c(dataset["root"], url=dataset.get("url"), sha256=dataset.get("sha256"))


SOURCE = Cifar10cSource()
