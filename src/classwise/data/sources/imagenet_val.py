"""``source: imagenet_val``: the ImageNet validation set in a directory the user provides."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
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

    def classes_with_images(self, dataset: Mapping[str, Any]) -> int | None:
        """The wnid folders found (``root/<wnid>`` or ``root/val/<wnid>``); a flat layout's
        classes need the devkit, so the label space's count stands for them."""
        from classwise.data.imagefolder import WNID_RE

        for base in (Path(str(dataset.get("root", ""))), Path(str(dataset.get("root", ""))) / "val"):
            if base.is_dir():
                found = sum(1 for entry in base.iterdir() if entry.is_dir() and WNID_RE.match(entry.name))
                if found:
                    return found
        return self.classes(dataset)

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data.imagefolder import imagenet_val

        return imagenet_val(
            dataset["root"],
            layout=dataset.get("layout", "auto"),
            devkit=dataset.get("devkit"),
            label_space=dataset.get("label_space", "found"),
            on_bad_image=dataset.get("on_bad_image", "error"),
        )

    def write_stand_in(self, dataset: Mapping[str, Any], root: Path) -> None:
        """A few random images of the first ImageNet classes in the ``val/<wnid>/`` layout."""
        from classwise.data.stand_ins import imagenet_val_fixture

        imagenet_val_fixture(root)


SOURCE = ImagenetValSource()
