"""CIFAR-10-C, CIFAR-100-C and CIFAR-10.1 as shifts of CIFAR-10 / CIFAR-100.

Official layouts (read by :func:`load_cifar_c` and :func:`load_cifar10_1`):

* **CIFAR-10-C / CIFAR-100-C** (Hendrycks & Dietterich 2019; Zenodo records 2535967 and 3555552):
  ``CIFAR-10-C/<corruption>.npy`` for each of the 19 corruptions, uint8 ``(50000, 32, 32, 3)``
  (HWC): rows ``(s - 1) * 10000 .. s * 10000`` are severity ``s`` of the 10,000 test images in
  the test set's order; ``labels.npy`` holds the 50,000 labels (the test labels, five times).
  Each image keeps its clean test image's sample id, ``cifar10-test-%05d`` (``cifar100-...``),
  the ids the ``torchvision`` source gives CIFAR's test split, so flip rates and label views
  apply. A tiny copy with ``5 n`` rows reads as ``n`` images per severity.
* **CIFAR-10.1** (Recht et al. 2019, github.com/modestyachts/CIFAR-10.1, ``datasets/``):
  ``cifar10.1_v6_data.npy`` uint8 ``(2000, 32, 32, 3)`` and ``cifar10.1_v6_labels.npy``
  (CIFAR-10's label indices); ``v4`` has 2,021 images. New images: sample ids
  ``cifar10.1-v6-%04d`` by row.

The sha256 digests are those TensorFlow Datasets publishes for the same URLs
(``url_checksums/cifar10_corrupted.txt``, ``cifar100_corrupted.txt``, ``cifar10_1.txt``); Zenodo
itself publishes md5 only (CIFAR-10-C: ``56bf5dcef84df0e2308c6dcbcbbd8499``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from classwise.data.imageset import ImageSet
from classwise.data.shift_sets.base import (
    COMMON_CORRUPTIONS,
    Archive,
    ShiftFamily,
    ShiftImages,
    choices,
    severities,
)
from classwise.errors import InputError
from classwise.shifts.spec import ShiftSpec

CIFAR10_CLASSES: tuple[str, ...] = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR100_CLASSES: tuple[str, ...] = tuple(
    """apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus butterfly camel can
    castle caterpillar cattle chair chimpanzee clock cloud cockroach couch crab crocodile cup dinosaur dolphin elephant
    flatfish forest fox girl hamster house kangaroo keyboard lamp lawn_mower leopard lion lizard lobster man maple_tree
    motorcycle mountain mouse mushroom oak_tree orange orchid otter palm_tree pear pickup_truck pine_tree plain plate
    poppy porcupine possum rabbit raccoon ray road rocket rose sea seal shark shrew skunk skyscraper snail snake spider
    squirrel streetcar sunflower sweet_pepper table tank telephone television tiger tractor train trout tulip turtle
    wardrobe whale willow_tree wolf woman worm""".split()
)
"""CIFAR-100's fine label names in label order (the ``fine_label_names`` of its ``meta`` file)."""

SEVERITY_COUNT = 5


def _directory(root: Path, folder: str, marker: str) -> Path:
    """``root`` itself when it holds ``marker``, else ``root/folder`` (the unpacked archive)."""
    return root if (root / marker).is_file() else root / folder


def load_cifar_c(
    directory: str | Path,
    corruption: str,
    severity: int,
    *,
    id_prefix: str,
    class_names: tuple[str, ...],
    per_severity: int | None = None,
) -> ImageSet:
    """Severity ``severity`` (1-5) of ``<directory>/<corruption>.npy`` with ``labels.npy`` (the
    layout above), as ``(n, 3, 32, 32)`` float32 in ``[0, 1]``; sample ids ``<id_prefix>%05d``.
    ``per_severity``: the images of each severity (default: a fifth of the rows; 10,000 in the
    published files)."""
    directory = Path(directory)
    data_path, labels_path = directory / f"{corruption}.npy", directory / "labels.npy"
    for path in (data_path, labels_path):
        if not path.is_file():
            raise InputError("file missing (expected <corruption>.npy files and labels.npy)", path=path, field="root")
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not 1 <= severity <= SEVERITY_COUNT:
        raise InputError(f"expected an integer in 1..5, got {severity!r}", field="severity")
    data = np.load(data_path, mmap_mode="r")
    labels_all = np.load(labels_path, mmap_mode="r")
    total = int(labels_all.shape[0]) if labels_all.ndim == 1 else -1
    per = total // SEVERITY_COUNT if per_severity is None else int(per_severity)
    rows_ok = total % SEVERITY_COUNT == 0 if per_severity is None else total >= SEVERITY_COUNT * per
    if total <= 0 or per <= 0 or not rows_ok or data.shape != (total, 32, 32, 3) or data.dtype != np.uint8:
        raise InputError(
            f"expected uint8 images of shape (5 n, 32, 32, 3) beside {labels_all.shape[0] if labels_all.ndim else '?'} labels "
            f"(5 severities of n images), got {data.dtype} {data.shape}",
            path=data_path,
            field="shape",
        )
    rows = slice((int(severity) - 1) * per, int(severity) * per)
    labels = np.asarray(labels_all[rows], dtype=np.int64)
    _check_labels(labels, len(class_names), labels_path)
    images = np.asarray(data[rows]).transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255.0)
    ids = np.char.add(id_prefix, np.char.zfill(np.arange(per).astype(str), 5))
    return ImageSet(images=images, labels=labels, sample_ids=ids, class_names=class_names)


def load_cifar10_1(directory: str | Path, version: str = "v6") -> ImageSet:
    """CIFAR-10.1 ``version`` (``v6`` or ``v4``) from ``cifar10.1_<version>_{data,labels}.npy``."""
    directory = Path(directory)
    data_path = directory / f"cifar10.1_{version}_data.npy"
    labels_path = directory / f"cifar10.1_{version}_labels.npy"
    for path in (data_path, labels_path):
        if not path.is_file():
            raise InputError(f"file missing (expected cifar10.1_{version}_data.npy and _labels.npy)", path=path, field="root")
    data = np.load(data_path)
    labels = np.load(labels_path)
    if data.ndim != 4 or data.shape[1:] != (32, 32, 3) or data.dtype != np.uint8 or labels.shape != (data.shape[0],):
        raise InputError(
            f"expected uint8 images (n, 32, 32, 3) and n labels, got {data.dtype} {data.shape} and {labels.shape}",
            path=data_path,
            field="shape",
        )
    labels = labels.astype(np.int64)
    _check_labels(labels, len(CIFAR10_CLASSES), labels_path)
    ids = np.char.add(f"cifar10.1-{version}-", np.char.zfill(np.arange(len(labels)).astype(str), 4))
    images = data.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255.0)
    return ImageSet(images=images, labels=labels, sample_ids=ids, class_names=CIFAR10_CLASSES)


def _check_labels(labels: np.ndarray, n_classes: int, path: Path) -> None:
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise InputError(f"expected labels in 0..{n_classes - 1}, got {labels.min()}..{labels.max()}", path=path, field="labels")


class _CifarFamily(ShiftFamily):
    downloaded = True
    classes: tuple[str, ...] = CIFAR10_CLASSES

    def check_base(
        self, base_name: str, base: Mapping[str, Any], classes: int | None, shape: tuple[int, ...] | None, where: str
    ) -> None:
        hint = f"put it under a CIFAR-{len(self.classes)} dataset"
        if classes is not None and classes != len(self.classes):
            raise InputError(
                f"{self.description} has CIFAR-{len(self.classes)}'s {len(self.classes)} classes, "
                f"dataset {base_name!r} has {classes}; {hint}",
                field=where,
            )
        if shape is not None and shape != (3, 32, 32):
            raise InputError(
                f"{self.description} holds 3 x 32 x 32 images, dataset {base_name!r} has {shape}; {hint}", field=where
            )


class CifarCorruptions(_CifarFamily):
    """CIFAR-10-C or CIFAR-100-C: one shift ``<key>_<corruption>_s<severity>`` per corruption and
    severity (``corruptions``: ``all`` (default) or a list; ``severities``: default 1-5). The one
    definition of each set: its archive (url, sha256, folder), its 19 corruptions, its sample ids
    and classes (``source: cifar10c`` datasets read CIFAR-10-C through it too)."""

    options = ("corruptions", "severities")
    paired = True
    corruptions: tuple[str, ...] = COMMON_CORRUPTIONS

    def __init__(self, name: str, folder: str, id_prefix: str, classes: tuple[str, ...], archive: Archive, description: str):
        self.name, self.folder, self.id_prefix, self.classes = name, folder, id_prefix, classes
        self.archive, self.description = archive, description

    def shifts(self, key: str, entry: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        corruptions = choices(entry, "corruptions", self.corruptions, self.corruptions, where)
        levels = severities(entry, where)
        return [self.spec(key, f"{key}_{c}_s{s}", entry, corruption=c, severity=s) for c in corruptions for s in levels]

    def check_layout(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> None:
        directory = _directory(Path(params["root"]), self.folder, "labels.npy")
        if not directory.is_dir():
            return  # downloaded by prepare_shift_set
        for name in ("labels.npy", f"{params['corruption']}.npy"):
            if not (directory / name).is_file():
                raise InputError(
                    f"file missing from {self.folder} (its layout: <corruption>.npy and labels.npy)",
                    path=directory / name,
                    field=f"{where}.corruptions",
                )

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        directory = _directory(Path(params["root"]), self.folder, "labels.npy")
        images = load_cifar_c(
            directory, params["corruption"], int(params["severity"]), id_prefix=self.id_prefix, class_names=self.classes
        )
        return ShiftImages(images)

    def archives(self, entry: Mapping[str, Any]) -> list[Archive]:
        return [self.archive]


class Cifar10_1(_CifarFamily):
    """CIFAR-10.1 (``version``: ``v6``, the default, or ``v4``): one shift named after the key."""

    name = "cifar10_1"
    description = "CIFAR-10.1"
    options = ("version",)
    folder = "CIFAR-10.1"
    versions = ("v6", "v4")

    def shifts(self, key: str, entry: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        version = entry.get("version", "v6")
        if version not in self.versions:
            raise InputError(f"expected one of {list(self.versions)}, got {version!r}", field=f"{where}.version")
        return [self.spec(key, key, entry, version=version)]

    def _dir(self, params: Mapping[str, Any]) -> Path:
        return _directory(Path(params["root"]), self.folder, f"cifar10.1_{params['version']}_labels.npy")

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        return ShiftImages(load_cifar10_1(self._dir(params), params["version"]))

    def archives(self, entry: Mapping[str, Any]) -> list[Archive]:
        version = entry.get("version", "v6")
        return [
            Archive(f"{_CIFAR10_1_URL}/cifar10.1_{version}_{part}.npy?raw=true", _CIFAR10_1_SHA256[f"{version}_{part}"],
                    f"{self.folder}/cifar10.1_{version}_{part}.npy")
            for part in ("data", "labels")
        ]  # fmt: skip


_CIFAR10_1_URL = "https://github.com/modestyachts/CIFAR-10.1/blob/master/datasets"
_CIFAR10_1_SHA256 = {
    "v6_data": "2997188e5816f5bd545dc77771b6227828c28146049fcecf3fa10775474cacc6",
    "v6_labels": "ae40beda001693674edc94d925ee8268cfe68905f8f9aff800c8dcdfcd6c9448",
    "v4_data": "5aaedc268df8f4cffca2ac0cf9e608ae1897a8cddb630c7a850a2ea8f6558e75",
    "v4_labels": "1f9544300ded199539b6662364ce7fe6c2e1ea9f87408f06db4b1a6184cffb18",
}

CIFAR10C_MD5 = "56bf5dcef84df0e2308c6dcbcbbd8499"
"""Zenodo's published md5 of CIFAR-10-C.tar (for a manual check: ``md5sum CIFAR-10-C.tar``)."""
CIFAR10C = CifarCorruptions(
    "cifar10c",
    "CIFAR-10-C",
    "cifar10-test-",
    CIFAR10_CLASSES,
    Archive(
        "https://zenodo.org/records/2535967/files/CIFAR-10-C.tar",
        "c72763e101c723b7c507b96205f7e938912a5d587376173b825850cf3cb876a7",
        "CIFAR-10-C.tar",
        "CIFAR-10-C",
    ),
    "CIFAR-10-C",
)
CIFAR100C = CifarCorruptions(
    "cifar100c",
    "CIFAR-100-C",
    "cifar100-test-",
    CIFAR100_CLASSES,
    Archive(
        "https://zenodo.org/records/3555552/files/CIFAR-100-C.tar",
        "30ee6543a1bfd049fa33834b7c1ada301e7064b7fbe8fc38340eb8b62ced4b33",
        "CIFAR-100-C.tar",
        "CIFAR-100-C",
    ),
    "CIFAR-100-C",
)
CIFAR10_1 = Cifar10_1()
