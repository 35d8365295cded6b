"""``source: imagenet_val``: the ImageNet validation set in a directory the user provides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from classwise.data.sources.base import Split, UserDirectorySource


class ImagenetValSource(UserDirectorySource):
    name = "imagenet_val"

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        return 1000 if dataset.get("label_space") == "imagenet1k" else None

    def class_ids(self, dataset: Mapping[str, Any]) -> tuple[str, ...] | None:
        from classwise.data.imagefolder import imagenet_val_class_ids

        return imagenet_val_class_ids(
            dataset["root"], layout=dataset.get("layout", "auto"), label_space=dataset.get("label_space", "found")
        )

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data.imagefolder import imagenet_val

        return imagenet_val(
            dataset["root"],
            layout=dataset.get("layout", "auto"),
            devkit=dataset.get("devkit"),
            label_space=dataset.get("label_space", "found"),
            on_bad_image=dataset.get("on_bad_image", "error"),
        )


SOURCE = ImagenetValSource()
