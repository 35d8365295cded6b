"""CIFAR-10, CIFAR-100 and GTSRB through torchvision's dataset classes, and CIFAR-10-C.

Two steps, so that compute nodes without internet never download:

1. ``prepare_*`` (a Snakemake ``localrule``, or run by hand before the workflow) downloads each
   archive with :func:`classwise.data.downloads.download` (sha256-verified, retried, atomic) into
   the place torchvision looks for it, then lets torchvision unpack it (``download=True`` finds
   the verified archive, checks its own md5 and only extracts). It writes a small JSON manifest
   (atomically) last, which a rule can declare as its output.
2. ``load_*`` never downloads (``download=False``); a missing data set is an
   :class:`~classwise.errors.InputError` naming the directory and the prepare step.

Conventions: CIFAR splits are in memory (:class:`ImageSet`, ``(N, 3, 32, 32)`` float32 in
``[0, 1]``, sample ids ``<name>-<split>-%05d`` by position in torchvision's order). GTSRB images
vary in size, so GTSRB is a lazy :class:`ImageFileDataset` (sample ids: paths under
``<root>/gtsrb``; class names ``00000`` .. ``00042``, the training folder names) with
:func:`load_gtsrb_split` resizing to a square for an in-memory set. CIFAR-10-C rows reuse the
CIFAR-10 test ids (``cifar10-test-%05d``), so a corrupted image has its clean image's id.

The default URLs and sha256 digests below are the published ones (sources in each comment); they
were not re-verified by downloading here. A config may override any of them.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from classwise.atomic import write_json
from classwise.data.downloads import DEFAULT_NETWORK, NetworkOptions, check_sha256, download, unpack
from classwise.data.imagefolder import BadImagePolicy, ImageFileDataset, to_array
from classwise.data.imageset import ImageSet
from classwise.data.shift_sets.cifar import CIFAR10C, CIFAR10C_MD5, load_cifar_c
from classwise.errors import InputError, check_count

__all__ = [
    "ARCHIVES",
    "CIFAR10C_CORRUPTIONS",
    "CIFAR10C_MD5",
    "Archive",
    "ResizeTo",
    "gtsrb_dataset",
    "load_cifar10c",
    "load_cifar_split",
    "load_gtsrb_split",
    "prepare_cifar10c",
    "prepare_torchvision_dataset",
]

log = logging.getLogger(__name__)

Split = Literal["train", "test"]
TorchvisionName = Literal["cifar10", "cifar100", "gtsrb"]


@dataclass(frozen=True)
class Archive:
    """One file to download: where from, its sha256, and its path relative to the data root."""

    url: str
    sha256: str
    relpath: str


_GTSRB_URL = "https://sid.erda.dk/public/archives/daaeac0d7ce1152aea9b61d9f1e19370/"

ARCHIVES: dict[str, tuple[Archive, ...]] = {
    # sha256 as published with Keras' cifar10/cifar100 loaders (torchvision checks md5
    # c58f30108f718f92721af3b95e74349a / eb9058c3a382ffc7106e4002c42a8d85 on top).
    "cifar10": (
        Archive(
            "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
            "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
            "cifar-10-python.tar.gz",
        ),
    ),
    "cifar100": (
        Archive(
            "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
            "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7",
            "cifar-100-python.tar.gz",
        ),
    ),
    # sha256 as published in torchvision's (prototype) GTSRB dataset; the files and places are
    # those of torchvision.datasets.GTSRB (root/gtsrb/<archive>).
    "gtsrb_train": (
        Archive(
            _GTSRB_URL + "GTSRB-Training_fixed.zip",
            "df4144942083645bd60b594de348aa6930126c3e0e5de09e39611630abf8455a",
            "gtsrb/GTSRB-Training_fixed.zip",
        ),
    ),
    "gtsrb_test": (
        Archive(
            _GTSRB_URL + "GTSRB_Final_Test_Images.zip",
            "48ba6fab7e877eb64eaf8de99035b0aaecfbc279bee23e35deca4ac1d0a837fa",
            "gtsrb/GTSRB_Final_Test_Images.zip",
        ),
        Archive(
            _GTSRB_URL + "GTSRB_Final_Test_GT.zip",
            "f94e5a7614d75845c74c04ddb26b8796b9e483f43541dd95dd5b726504e16d6d",
            "gtsrb/GTSRB_Final_Test_GT.zip",
        ),
    ),
}

# CIFAR-10-C as a dataset of one corruption and severity (``source: cifar10c``): its archive, its
# 19 corruptions, ids and classes are those of the cifar10c shift family, defined once there.
CIFAR10C_DIR = CIFAR10C.folder
CIFAR10C_CORRUPTIONS = CIFAR10C.corruptions
"""The 19 ``<corruption>.npy`` files of CIFAR-10-C (15 benchmark + 4 extra corruptions)."""

GTSRB_CLASSES = tuple(f"{k:05d}" for k in range(43))


def _dataset_class(name: str) -> Any:
    from torchvision import datasets

    classes = {"cifar10": datasets.CIFAR10, "cifar100": datasets.CIFAR100, "gtsrb": datasets.GTSRB}
    if name not in classes:
        raise InputError(f"unknown torchvision data set {name!r}; expected one of {sorted(classes)}", field="name")
    return classes[name]


def _check_split(split: str) -> None:
    if split not in ("train", "test"):
        raise InputError(f"expected 'train' or 'test', got {split!r}", field="split")


def _archives_for(name: str, split: str) -> tuple[Archive, ...]:
    return ARCHIVES[f"gtsrb_{split}"] if name == "gtsrb" else ARCHIVES[name]


def _construct(name: str, root: Path, split: str, *, download_: bool) -> Any:
    cls = _dataset_class(name)
    kwargs: dict[str, Any] = {"split": split} if name == "gtsrb" else {"train": split == "train"}
    try:
        return cls(str(root), download=download_, **kwargs)
    except RuntimeError as error:
        raise InputError(
            f"{name} ({split}) is not prepared here ({error}); run the download step first "
            "(classwise.data.torchvision_sets.prepare_torchvision_dataset, a localrule)",
            path=root,
            field="root",
        ) from None


def prepare_torchvision_dataset(
    name: TorchvisionName,
    root: str | Path,
    *,
    splits: tuple[Split, ...] = ("train", "test"),
    overrides: dict[str, dict[str, str]] | None = None,
    network: NetworkOptions = DEFAULT_NETWORK,
) -> Path:
    """Download (verified) and unpack ``name`` under ``root``; return the manifest path.

    ``overrides`` maps an archive file name (e.g. ``"cifar-10-python.tar.gz"``) to
    ``{"url": ..., "sha256": ...}`` to use a mirror. The manifest
    ``<root>/<name>.prepared.json`` records each archive's url and sha256 and is written last.
    ``network`` sets the downloads' retries, backoff and socket timeout.
    """
    root = Path(root)
    _dataset_class(name)
    records = []
    for split in splits:
        _check_split(split)
        for archive in _archives_for(name, split):
            chosen = {**{"url": archive.url, "sha256": archive.sha256}, **(overrides or {}).get(Path(archive.relpath).name, {})}
            sha = check_sha256(chosen["sha256"], field=f"{Path(archive.relpath).name}.sha256")
            download(chosen["url"], root / archive.relpath, sha256=sha, network=network)
            records.append({"file": archive.relpath, "url": chosen["url"], "sha256": sha})
        _construct(name, root, split, download_=True)  # finds the verified archive, only extracts
    manifest = root / f"{name}.prepared.json"
    write_json(manifest, {"dataset": name, "splits": list(splits), "archives": records})
    return manifest


def load_cifar_split(name: Literal["cifar10", "cifar100"], root: str | Path, split: Split) -> ImageSet:
    """A prepared CIFAR-10/100 split in memory; never downloads. CIFAR-100 uses the 100 fine labels."""
    if name not in ("cifar10", "cifar100"):
        raise InputError(f"expected 'cifar10' or 'cifar100', got {name!r}", field="name")
    _check_split(split)
    dataset = _construct(name, Path(root), split, download_=False)
    data = np.asarray(dataset.data)
    if data.ndim != 4 or data.shape[1:] != (32, 32, 3):
        raise InputError(f"expected images of shape (N, 32, 32, 3), got {data.shape}", path=root, field="data")
    images = data.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255.0)
    labels = np.asarray(dataset.targets, dtype=np.int64)
    ids = np.char.add(f"{name}-{split}-", np.char.zfill(np.arange(len(labels)).astype(str), 5))
    return ImageSet(images=images, labels=labels, sample_ids=ids, class_names=tuple(dataset.classes))


def gtsrb_dataset(root: str | Path, split: Split, *, on_bad_image: BadImagePolicy = "error") -> ImageFileDataset:
    """A prepared GTSRB split as a lazy dataset (torchvision's file list and labels); never downloads."""
    _check_split(split)
    root = Path(root)
    dataset = _construct("gtsrb", root, split, download_=False)
    base = root / "gtsrb"
    samples = list(dataset._samples)  # torchvision's (path, label) list: the split's definition
    files = [Path(path).resolve().relative_to(base.resolve()).as_posix() for path, _ in samples]
    labels = np.array([label for _, label in samples], dtype=np.int64)
    return ImageFileDataset(
        root=base,
        files=np.array(files, dtype=str),
        labels=labels,
        sample_ids=np.array(files, dtype=str),
        class_names=GTSRB_CLASSES,
        class_ids=GTSRB_CLASSES,
        on_bad_image=on_bad_image,
    )


@dataclass(frozen=True)
class ResizeTo:
    """Resize a PIL image to ``size x size`` (aspect ratio not kept), then to ``[0, 1]`` (C, H, W)."""

    size: int
    interpolation: str = "bilinear"

    def __call__(self, image: Any) -> np.ndarray:
        from PIL import Image

        modes = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC, "nearest": Image.Resampling.NEAREST}
        if self.interpolation not in modes:
            raise InputError(f"expected one of {sorted(modes)}, got {self.interpolation!r}", field="interpolation")
        return to_array(image.resize((self.size, self.size), modes[self.interpolation]))


def load_gtsrb_split(root: str | Path, split: Split, *, image_size: int = 32, workers: int = 1) -> ImageSet:
    """A prepared GTSRB split in memory, every image resized to ``image_size`` square."""
    image_size = check_count(image_size, "image_size")
    return gtsrb_dataset(root, split).to_imageset(ResizeTo(image_size), workers=workers)


# --------------------------------------------------------------------------- CIFAR-10-C


def _cifar10c_complete(directory: Path) -> bool:
    return (directory / "labels.npy").is_file() and all((directory / f"{c}.npy").is_file() for c in CIFAR10C_CORRUPTIONS)


def prepare_cifar10c(
    root: str | Path,
    *,
    url: str | None = None,
    sha256: str | None = None,
    keep_archive: bool = False,
    network: NetworkOptions = DEFAULT_NETWORK,
) -> Path:
    """Download CIFAR-10-C.tar (sha256-verified; the cifar10c shift family's archive unless
    ``url`` / ``sha256`` override it) and unpack it to ``<root>/CIFAR-10-C``; return that.

    Unpacking goes to a temporary folder beside it that is renamed into place when complete, so
    ``CIFAR-10-C`` is either absent or whole. An existing complete folder is kept as it is. The
    archive is deleted afterwards unless ``keep_archive``. ``network`` sets the download's
    retries, backoff and socket timeout.
    """
    root = Path(root)
    target = root / CIFAR10C_DIR
    if _cifar10c_complete(target):
        log.info("%s: already unpacked", target)
        return target
    default = CIFAR10C.archive
    archive = download(
        url or default.url,
        root / default.filename,
        sha256=sha256 or default.sha256,
        network=network,
    )

    def complete(unpacked: Path) -> None:
        if not _cifar10c_complete(unpacked):
            raise InputError(
                f"expected labels.npy and the {len(CIFAR10C_CORRUPTIONS)} corruption files in {CIFAR10C_DIR}/",
                path=archive,
                field="members",
            )

    if target.exists():
        shutil.rmtree(target)  # an incomplete earlier attempt (a complete one returned above)
    unpack(archive, root, CIFAR10C_DIR, check=complete)
    if not keep_archive:
        archive.unlink(missing_ok=True)
    return target


def load_cifar10c(root: str | Path, corruption: str, severity: int, *, per_severity: int | None = None) -> ImageSet:
    """The 10,000 CIFAR-10 test images under ``corruption`` at ``severity`` (1-5); never downloads.

    ``root`` holds ``CIFAR-10-C/`` (or is it). Read by the cifar10c shift family's reader
    (:func:`classwise.data.shift_sets.cifar.load_cifar_c`): rows ``(severity - 1) * per_severity``
    up to ``severity * per_severity`` of ``<corruption>.npy`` (uint8 NHWC) and ``labels.npy``;
    sample ids ``cifar10-test-%05d`` (the test index). ``per_severity`` defaults to a fifth of
    the rows (10,000 in the real archive).
    """
    root = Path(root)
    directory = root if (root / "labels.npy").is_file() else root / CIFAR10C_DIR
    if corruption not in CIFAR10C_CORRUPTIONS:
        raise InputError(f"expected one of {list(CIFAR10C_CORRUPTIONS)}, got {corruption!r}", field="corruption")
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or not 1 <= severity <= 5:
        raise InputError(f"expected an integer in 1..5, got {severity!r}", field="severity")
    for path in (directory / f"{corruption}.npy", directory / "labels.npy"):
        if not path.is_file():
            raise InputError(
                "CIFAR-10-C is not prepared here; run the download step first (prepare_cifar10c, a localrule)",
                path=path,
                field="root",
            )
    return load_cifar_c(
        directory,
        corruption,
        int(severity),
        id_prefix=CIFAR10C.id_prefix,
        class_names=CIFAR10C.classes,
        per_severity=per_severity,
    )
