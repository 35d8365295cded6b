"""``source: image_folder``: any ImageFolder layout (one directory per class) the user provides."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.data.sources.base import Split, UserDirectorySource


class ImageFolderSource(UserDirectorySource):
    name = "image_folder"

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        """The classes the entry names, else the class directories (one listing)."""
        if dataset.get("classes"):
            return len(dataset["classes"])
        root = Path(str(dataset.get("root", "")))
        if root.is_dir():
            return sum(1 for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith("."))
        return None

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data.imagefolder import image_folder

        return image_folder(
            dataset["root"],
            classes=dataset.get("classes"),
            class_names=dataset.get("class_names"),
            on_bad_image=dataset.get("on_bad_image", "error"),
        )

    def write_stand_in(self, dataset: Mapping[str, Any], root: Path) -> None:
        """A few random images per class the entry names (two made-up classes otherwise)."""
        from classwise.data.stand_ins import image_folder_fixture

        image_folder_fixture(root, dataset.get("classes") or ["class_a", "class_b"])


SOURCE = ImageFolderSource()
