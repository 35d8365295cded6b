"""What every published shift family answers (:class:`ShiftFamily`), and the few types they share.

A *family* is one published test set in its official on-disk layout (CIFAR-10-C, ImageNet-R, ...).
A ``datasets.<base>.shift_sets.<key>`` entry names a family (``family:``, default the key) and
its options; it expands into one or more shifts of the base dataset (:mod:`classwise.shifts.spec`
kind ``"dataset"``), each its own inference job and logits file. What the workflow asks at
DAG-build time (the shifts, the base check, the layout check) decodes no image and imports no
torch; the jobs open the images (``open``) and download the archives (``prepare``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from classwise.errors import InputError, field_path
from classwise.shifts.spec import ShiftSpec

#: The keys every entry takes besides its family's own options.
COMMON_KEYS: tuple[str, ...] = ("family", "root", "downloads")
#: Where downloaded families are unpacked when the entry gives no ``root``.
DEFAULT_DOWNLOAD_ROOT = "resources/data"

#: The 19 corruptions of CIFAR-10-C, CIFAR-100-C and ImageNet-C (Hendrycks & Dietterich 2019):
#: the 15 of the benchmark, then the 4 extra ones (speckle_noise, gaussian_blur, spatter, saturate).
COMMON_CORRUPTIONS: tuple[str, ...] = (
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "defocus_blur",
    "glass_blur",
    "motion_blur",
    "zoom_blur",
    "snow",
    "frost",
    "fog",
    "brightness",
    "contrast",
    "elastic_transform",
    "pixelate",
    "jpeg_compression",
    "speckle_noise",
    "gaussian_blur",
    "spatter",
    "saturate",
)
SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)


@dataclass(frozen=True, eq=False)
class ShiftImages:
    """The images of one shift: an ``ImageSet`` or a lazy ``ImageFileDataset`` whose labels and
    class names are the base dataset's, and, for a set restricted to a class subset, the base
    class indices of that subset (sorted); None when the model's outputs are used whole."""

    images: Any
    classes: np.ndarray | None = None


class ShiftFamily:
    """One family. Subclasses set the attributes and override what differs."""

    #: The ``family:`` value.
    name = ""
    #: One line for the README and error messages.
    description = ""
    #: Config keys of this family besides :data:`COMMON_KEYS`.
    options: tuple[str, ...] = ()
    #: Whether a local rule downloads the archives (else ``root`` is a directory the user provides).
    downloaded = False
    #: Whether the images are copies of the base dataset's test images (same sample ids), so
    #: flip rates and label views apply; natural-shift sets have samples of their own.
    paired = False
    #: Whether the model's outputs are restricted to the set's classes (ImageNet-R, ImageNet-A).
    restricted = False
    #: Whether class folders are matched to the base's class identifiers (ImageNet wnids).
    uses_class_ids = False
    #: Whether an entry reads a directory (``root``, and ``downloads`` for a downloaded family);
    #: False for a family given by files named in its own options (``labels``).
    takes_root = True

    # ---------------------------------------------------------------- DAG-build time

    def shifts(self, key: str, entry: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        """The shifts of an entry, its options checked (``where``: the entry's dotted field)."""
        return [self.spec(key, key, entry)]

    def spec(self, key: str, name: str, entry: Mapping[str, Any], **params: Any) -> ShiftSpec:
        """A ``kind="dataset"`` spec: what inference needs (never download settings, so that a
        mirror changes nothing downstream)."""
        payload: dict[str, Any] = {
            "family": self.name,
            "set": key,
            "root": str(entry.get("root", DEFAULT_DOWNLOAD_ROOT if self.downloaded else "")),
            **params,
            "paired": self.paired,
            "restricted": self.restricted or bool(params.get("classes")),
        }
        return ShiftSpec(name=name, kind="dataset", params=payload)

    def check_base(
        self, base_name: str, base: Mapping[str, Any], classes: int | None, shape: tuple[int, ...] | None, where: str
    ) -> None:
        """:class:`InputError` unless the base dataset shares this family's label space (``classes``:
        its class count, ``shape``: its in-memory image shape; None where unknown)."""

    def check_samples(self, specs: list[ShiftSpec], base_name: str, base: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        """An entry's shifts checked against the base dataset's samples before any job, and
        completed with what only the base tells (by default as they are)."""
        return specs

    def check_layout(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> None:
        """:class:`InputError` naming the directory and what is missing when the files are not in
        the official layout. User directories must exist; downloaded sets are checked when present.
        ``class_ids`` are the base dataset's classes (ImageNet wnids) where the families need them."""

    # ---------------------------------------------------------------- jobs

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        """The shift's images with the base dataset's labels and class names."""
        raise NotImplementedError

    def write_stand_in(self, entry: Mapping[str, Any], root: Path) -> None:
        """A few small images at ``root`` in the layout of a directory the user provides, for dry
        runs and benchmarks (:mod:`classwise.data.stand_ins`; downloaded families need none)."""
        raise NotImplementedError(f"family '{self.name}' is downloaded; it needs no stand-in")

    def archives(self, entry: Mapping[str, Any]) -> list[Archive]:
        """The files the local rule downloads (none for user directories)."""
        return []

    def archives_for(self, entry: Mapping[str, Any], params: Mapping[str, Any]) -> list[Archive]:
        """The downloaded files one shift reads (its inference job waits for these only)."""
        return self.archives(entry)


@dataclass(frozen=True)
class Archive:
    """One published file: where from, its sha256, the name it is saved under and the folder
    it unpacks to below ``root`` (None: the file is used as it is)."""

    url: str
    sha256: str
    filename: str
    unpacks_to: str | None = None


# ------------------------------------------------------------------------ option checks


def choices(entry: Mapping[str, Any], key: str, allowed: Sequence[Any], default: Sequence[Any], where: str) -> list[Any]:
    """``entry[key]``: ``"all"``, or a list of distinct values from ``allowed``; default ``default``."""
    value = entry.get(key, list(default))
    if value == "all":
        return list(allowed)
    if not isinstance(value, (list, tuple)) or not value:
        raise InputError(f"expected 'all' or a non-empty list, got {value!r}", field=f"{where}.{key}")
    for i, item in enumerate(value):
        if isinstance(item, bool) or item not in allowed:
            raise InputError(f"expected one of {list(allowed)}, got {item!r}", field=field_path(where, key, i))
    if len(set(value)) != len(value):
        raise InputError(f"lists a value twice: {list(value)}", field=f"{where}.{key}")
    return list(value)


def severities(entry: Mapping[str, Any], where: str) -> list[int]:
    """``entry["severities"]``: integers 1-5 (default all five)."""
    value = entry.get("severities", list(SEVERITIES))
    if value == "all":
        return list(SEVERITIES)
    if not isinstance(value, (list, tuple)) or not value:
        raise InputError(f"expected 'all' or a non-empty list of severities 1-5, got {value!r}", field=f"{where}.severities")
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= 5:
            raise InputError(f"expected a severity 1-5, got {item!r}", field=field_path(where, "severities", i))
    if len(set(value)) != len(value):
        raise InputError(f"lists a severity twice: {list(value)}", field=f"{where}.severities")
    return list(value)


def require_directory(path: Path, what: str, where: str) -> None:
    """:class:`InputError` naming ``path`` unless it is a directory."""
    if not path.is_dir():
        raise InputError(
            f"directory does not exist; expected {what} (relative paths are relative to the working directory)",
            path=path,
            field=where,
        )
