"""Lazy image-file datasets: ImageNet validation (two layouts) and any ImageFolder directory.

Nothing here holds all images in memory: a dataset is an index (file paths, labels, sample ids,
class names), and images are decoded with PIL only when a batch is asked for.

Conventions:

- **Order.** Samples are in torchvision ``ImageFolder`` order: class folders sorted by name
  (Python string order), then ``sorted(os.walk(class_folder))`` and sorted file names. For
  ImageNet this is the order of cleanlab/label-errors' ``imagenet_val_set_index_to_filepath.json``
  and so of every per-image label file (one line per validation image).
- **Classes.** ImageNet classes are the WordNet ids (wnids) in sorted order, i.e. the standard
  1,000-class index of torchvision and timm models. A generic ImageFolder takes its classes from
  the config (label ``i`` = ``classes[i]``), or sorted folder names when none are given.
- **Sample ids.** Relative POSIX paths. For ImageNet they are ``<wnid>/<file name>`` in *both*
  layouts (the flat layout's files are ids by the wnid of their ground-truth class), so caches and
  label files do not depend on how the user unpacked the images.
- **Images.** Decoded with PIL, converted to RGB (ImageNet has greyscale and CMYK JPEGs), then
  passed through a ``transform`` (PIL image -> ``(C, H, W)`` float32 array in ``[0, 1]``), e.g.
  :class:`ResizeCenterCrop`. Models normalise inside themselves.
- **Bad images.** An unreadable or truncated file raises :class:`InputError` naming the file
  (``on_bad_image="error"``, the default) or, with ``on_bad_image="skip"``, is left out of the
  batches and recorded in :attr:`ImageFileDataset.skipped`. PIL's global
  ``ImageFile.LOAD_TRUNCATED_IMAGES`` must stay ``False`` (its default) for truncation to be
  detected.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageFile

from classwise._extras import install_command
from classwise.data.imageset import ImageSet
from classwise.errors import InputError, check_count

__all__ = [
    "IMG_EXTENSIONS",
    "BadImagePolicy",
    "ImageFileDataset",
    "ResizeCenterCrop",
    "SkippedImage",
    "image_folder",
    "folder_files",
    "imagenet1k_wnids",
    "imagenet_class_names",
    "imagenet_val",
    "imagenet_val_class_ids",
    "read_imagenet_devkit",
    "to_array",
]

log = logging.getLogger(__name__)

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
"""File name endings (case-insensitive) that count as images, as in torchvision's ImageFolder."""

BadImagePolicy = Literal["error", "skip"]
Transform = Callable[[Image.Image], np.ndarray]

WNID_RE = re.compile(r"^n\d{8}$")
FLAT_VAL_RE = re.compile(r"^ILSVRC2012_val_(\d{8})\.JPEG$")
GROUND_TRUTH_NAME = "ILSVRC2012_validation_ground_truth.txt"
META_NAME = "meta.mat"
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)


# --------------------------------------------------------------------------- transforms


def to_array(image: Image.Image) -> np.ndarray:
    """A PIL image as a ``(C, H, W)`` float32 array in ``[0, 1]`` (pixel values / 255)."""
    array = np.asarray(image, dtype=np.float32) / 255.0
    if array.ndim == 2:
        array = array[:, :, None]
    return np.ascontiguousarray(array.transpose(2, 0, 1))


_INTERPOLATIONS = {
    "nearest": Image.Resampling.NEAREST,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "lanczos": Image.Resampling.LANCZOS,
    "box": Image.Resampling.BOX,
    "hamming": Image.Resampling.HAMMING,
}


@dataclass(frozen=True)
class ResizeCenterCrop:
    """Evaluation preprocessing: resize the shorter side, centre-crop, scale to ``[0, 1]``.

    Equal to torchvision's ``Resize(resize_size, interpolation) -> CenterCrop(crop_size) ->
    ToTensor()`` on PIL images (the shorter side becomes ``resize_size``, the longer
    ``int(resize_size * long / short)``; the crop's top-left corner is
    ``round((size - crop) / 2)``). timm's evaluation transform with ``crop_pct`` is the same with
    ``resize_size = floor(crop_size / crop_pct)``: see :meth:`from_crop_pct`.
    """

    crop_size: int
    resize_size: int
    interpolation: str = "bilinear"

    def __post_init__(self) -> None:
        for name in ("crop_size", "resize_size"):  # normalised as well as checked (a numpy integer)
            object.__setattr__(self, name, check_count(getattr(self, name), name))
        if self.resize_size < self.crop_size:
            raise InputError(f"resize_size {self.resize_size} must be >= crop_size {self.crop_size}", field="resize_size")
        if self.interpolation not in _INTERPOLATIONS:
            raise InputError(f"expected one of {sorted(_INTERPOLATIONS)}, got {self.interpolation!r}", field="interpolation")

    @classmethod
    def from_crop_pct(cls, crop_size: int, crop_pct: float, interpolation: str = "bilinear") -> ResizeCenterCrop:
        """timm's convention: resize to ``floor(crop_size / crop_pct)``, then crop ``crop_size``."""
        if not 0.0 < float(crop_pct) <= 1.0:
            raise InputError(f"expected a number in (0, 1], got {crop_pct!r}", field="crop_pct")
        return cls(crop_size, int(np.floor(crop_size / float(crop_pct))), interpolation)

    def __call__(self, image: Image.Image) -> np.ndarray:
        w, h = image.size
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = self.resize_size, int(self.resize_size * long / short)
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        if (new_w, new_h) != (w, h):
            image = image.resize((new_w, new_h), _INTERPOLATIONS[self.interpolation])
        top = int(round((new_h - self.crop_size) / 2.0))
        left = int(round((new_w - self.crop_size) / 2.0))
        image = image.crop((left, top, left + self.crop_size, top + self.crop_size))
        return to_array(image)


# --------------------------------------------------------------------------- the dataset


@lru_cache(maxsize=1)
def _warn_truncation_hidden() -> None:
    log.warning("PIL's ImageFile.LOAD_TRUNCATED_IMAGES is True (set by another library): truncated images are not detected")


@dataclass(frozen=True)
class SkippedImage:
    """An image left out under ``on_bad_image="skip"``: its sample id, file and the decoder's error."""

    sample_id: str
    path: str
    reason: str


@dataclass(frozen=True, eq=False)
class ImageFileDataset:
    """A labelled list of image files under ``root``, decoded lazily.

    ``files`` are paths relative to ``root`` as they lie on disk; ``sample_ids`` are the stable ids
    (equal to ``files`` except for the flat ImageNet layout); ``labels`` are int64 indices into
    ``class_names``; ``class_ids`` are the folder names / wnids behind those names. ``skipped``
    collects the images left out under ``on_bad_image="skip"``, in the order they were met.
    """

    root: Path
    files: np.ndarray
    labels: np.ndarray
    sample_ids: np.ndarray
    class_names: tuple[str, ...]
    class_ids: tuple[str, ...]
    on_bad_image: BadImagePolicy = "error"
    skipped: list[SkippedImage] = field(default_factory=list)

    def __post_init__(self) -> None:
        files = np.asarray(self.files).astype(str)
        labels = np.asarray(self.labels, dtype=np.int64)
        sample_ids = np.asarray(self.sample_ids).astype(str)
        n = files.shape[0]
        if files.ndim != 1 or labels.shape != (n,) or sample_ids.shape != (n,):
            raise InputError(
                f"files {files.shape}, labels {labels.shape} and sample_ids {sample_ids.shape} must have one entry per image",
                path=self.root,
                field="labels",
            )
        if len(self.class_names) != len(self.class_ids) or not self.class_ids:
            raise InputError(
                f"{len(self.class_names)} class names for {len(self.class_ids)} classes",
                path=self.root,
                field="class_names",
            )
        if n and (labels.min() < 0 or labels.max() >= len(self.class_ids)):
            raise InputError(f"labels must lie in [0, {len(self.class_ids)})", path=self.root, field="labels")
        if len(np.unique(sample_ids)) != n:
            raise InputError("sample ids must be unique", path=self.root, field="sample_ids")
        if self.on_bad_image not in ("error", "skip"):
            raise InputError(f"expected 'error' or 'skip', got {self.on_bad_image!r}", path=self.root, field="on_bad_image")
        object.__setattr__(self, "root", Path(self.root))
        object.__setattr__(self, "files", files)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "sample_ids", sample_ids)
        object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        object.__setattr__(self, "class_ids", tuple(str(c) for c in self.class_ids))

    def __len__(self) -> int:
        return int(self.files.shape[0])

    @property
    def n_classes(self) -> int:
        return len(self.class_ids)

    def path(self, index: int) -> Path:
        """The file of sample ``index``."""
        return self.root / self.files[index]

    def subset(self, indices: Sequence[int] | np.ndarray) -> ImageFileDataset:
        """The samples at ``indices`` (positions or a boolean mask), in that order; fresh ``skipped``."""
        idx = np.asarray(indices)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64).reshape(-1)
        return ImageFileDataset(
            root=self.root,
            files=self.files[idx],
            labels=self.labels[idx],
            sample_ids=self.sample_ids[idx],
            class_names=self.class_names,
            class_ids=self.class_ids,
            on_bad_image=self.on_bad_image,
        )

    def _decode(self, index: int) -> tuple[Image.Image | None, str | None]:
        path = self.path(index)
        if ImageFile.LOAD_TRUNCATED_IMAGES:
            _warn_truncation_hidden()
        try:
            with Image.open(path) as image:
                image.load()
                return image.convert("RGB"), None
        except _DECODE_ERRORS as error:
            return None, f"{type(error).__name__}: {error}"

    def load_image(self, index: int) -> Image.Image | None:
        """Sample ``index`` decoded as an RGB PIL image.

        A file PIL cannot decode completely raises :class:`InputError` naming it, or under
        ``on_bad_image="skip"`` is recorded in :attr:`skipped` and ``None`` is returned.
        """
        image, reason = self._decode(index)
        if image is None:
            self._bad(index, reason or "unreadable")
        return image

    def _bad(self, index: int, reason: str) -> None:
        path = self.path(index)
        if self.on_bad_image == "error":
            raise InputError(
                f"cannot decode image ({reason}); fix or remove the file, or set on_bad_image: skip",
                path=path,
                field="image",
            )
        log.warning("%s: skipping unreadable image (%s)", path, reason)
        self.skipped.append(SkippedImage(str(self.sample_ids[index]), str(path), reason))

    def iter_batches(self, batch_size: int, transform: Transform = to_array, *, workers: int = 1) -> Iterator[ImageSet]:
        """Consecutive :class:`ImageSet` batches of up to ``batch_size`` images, in dataset order.

        Batch ``b`` covers positions ``[b * batch_size, (b + 1) * batch_size)`` less any skipped
        images (a batch left empty is not yielded). ``transform`` must map every image to the same
        ``(C, H, W)`` shape. ``workers`` threads decode in parallel (PIL releases the GIL while
        decoding); the order and the results do not depend on it.
        """
        batch_size = check_count(batch_size, "batch_size")
        workers = check_count(workers, "workers")

        def decode(index: int) -> tuple[int, np.ndarray | None, str | None]:
            image, reason = self._decode(index)
            return index, (None if image is None else transform(image)), reason

        pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        try:
            for start in range(0, len(self), batch_size):
                indices = range(start, min(start + batch_size, len(self)))
                results = pool.map(decode, indices) if pool is not None else map(decode, indices)
                keep: list[int] = []
                arrays: list[np.ndarray] = []
                for index, array, reason in results:
                    if array is None:
                        self._bad(index, reason or "unreadable")
                        continue
                    keep.append(index)
                    arrays.append(array)
                if not keep:
                    continue
                yield ImageSet(
                    images=np.stack(arrays),
                    labels=self.labels[keep],
                    sample_ids=self.sample_ids[keep],
                    class_names=self.class_names,
                )
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def to_imageset(self, transform: Transform = to_array, *, workers: int = 1) -> ImageSet:
        """All images in memory as one :class:`ImageSet` (small data sets and fixtures only)."""
        batches = list(self.iter_batches(max(len(self), 1), transform, workers=workers))
        if not batches:
            raise InputError("no readable images", path=self.root, field="images")
        return batches[0]


# --------------------------------------------------------------------------- class names


@lru_cache(maxsize=1)
def _torchvision_categories() -> tuple[str, ...]:
    from torchvision.models import ResNet50_Weights

    return tuple(ResNet50_Weights.IMAGENET1K_V1.meta["categories"])


@lru_cache(maxsize=1)
def imagenet1k_wnids() -> tuple[str, ...] | None:
    """The 1,000 ImageNet-1k wnids in sorted (class-index) order, from timm's bundled list.

    ``None`` when timm is not installed. Used only to name or place a *subset* of the classes;
    a full validation set carries its own 1,000 wnids.
    """
    # Found without importing timm (which imports torch): the workflow reads it at DAG-build time.
    from importlib.util import find_spec

    spec = find_spec("timm")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    try:
        text = (Path(locations[0]) / "data" / "_info" / "imagenet_synsets.txt").read_text()
    except (IndexError, FileNotFoundError, OSError):
        return None
    wnids = tuple(line.strip() for line in text.splitlines() if line.strip())
    if len(wnids) != 1000 or list(wnids) != sorted(wnids):  # pragma: no cover - a changed timm
        log.warning("timm's imagenet_synsets.txt is not 1,000 sorted wnids; ignoring it")
        return None
    return wnids


def imagenet_class_names(wnids: Sequence[str] | None = None) -> tuple[str, ...]:
    """Human-readable ImageNet class names, offline (torchvision's weights metadata).

    With ``wnids=None`` or 1,000 wnids: the 1,000 torchvision categories in class-index order.
    With a subset of wnids: the category of each wnid's place in the sorted 1,000-wnid list
    (needs timm's bundled list); without timm, the wnids themselves.
    """
    categories = _torchvision_categories()
    if wnids is None:
        return categories
    wnids = list(wnids)
    if len(wnids) == len(categories):
        reference = imagenet1k_wnids()
        if reference is not None and tuple(wnids) != reference:
            raise InputError("the 1,000 class folders are not the ImageNet-1k wnids", field="classes")
        return categories
    reference = imagenet1k_wnids()
    if reference is None:
        log.warning("timm is not installed: naming the %d ImageNet classes by their wnids", len(wnids))
        return tuple(wnids)
    position = {wnid: i for i, wnid in enumerate(reference)}
    unknown = [w for w in wnids if w not in position]
    if unknown:
        raise InputError(f"not ImageNet-1k wnids: {unknown[:5]}", field="classes")
    return tuple(categories[position[w]] for w in wnids)


# --------------------------------------------------------------------------- scanning


def _is_image(name: str, extensions: tuple[str, ...]) -> bool:
    return not name.startswith(".") and name.lower().endswith(extensions)


def _scan_class(folder: Path, extensions: tuple[str, ...]) -> list[str]:
    """Image files under ``folder`` relative to its parent, in ImageFolder order."""
    out: list[str] = []
    for dirpath, _, names in sorted(os.walk(folder, followlinks=True)):
        rel = Path(dirpath).relative_to(folder.parent)
        out.extend((rel / name).as_posix() for name in sorted(names) if _is_image(name, extensions))
    return out


def _class_folders(root: Path) -> list[str]:
    if not root.is_dir():
        raise InputError("expected a directory of class folders", path=root, field="root")
    return sorted(entry.name for entry in os.scandir(root) if entry.is_dir() and not entry.name.startswith("."))


def folder_files(
    root: str | Path, folders: Sequence[str], extensions: Sequence[str] = IMG_EXTENSIONS
) -> tuple[list[str], list[int]]:
    """The image files of ``root/<folder>/**`` for the given class ``folders`` (other folders
    are left alone), relative to ``root``, in ImageFolder order, and each file's position in
    ``folders``. A folder without images is an :class:`InputError` naming it."""
    root = Path(root)
    exts = tuple(e.lower() for e in extensions)
    return _scan(root, folders, {f: i for i, f in enumerate(folders)}, exts)


def _scan(
    root: Path, folders: Sequence[str], label_of: dict[str, int], extensions: tuple[str, ...]
) -> tuple[list[str], list[int]]:
    files: list[str] = []
    labels: list[int] = []
    empty: list[str] = []
    for folder in sorted(folders):
        found = _scan_class(root / folder, extensions)
        if not found:
            empty.append(folder)
        files.extend(found)
        labels.extend([label_of[folder]] * len(found))
    if empty:
        raise InputError(f"class folders without images ({', '.join(extensions)}): {empty[:10]}", path=root, field="classes")
    return files, labels


def image_folder(
    root: str | Path,
    *,
    classes: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
    extensions: Sequence[str] = IMG_EXTENSIONS,
    on_bad_image: BadImagePolicy = "error",
) -> ImageFileDataset:
    """Any ``root/<class folder>/**/<image>`` directory as a lazy dataset.

    ``classes`` (folder names) fixes the label index: label ``i`` is ``classes[i]``; by default the
    sorted folder names (torchvision's rule). Every listed folder must exist and hold images, and
    no other folder may be present. ``class_names`` are display names, one per class (default:
    the folder names). Sample ids are the relative file paths.
    """
    root = Path(root)
    on_disk = _class_folders(root)
    if classes is None:
        classes = on_disk
    classes = [str(c) for c in classes]
    if len(set(classes)) != len(classes) or not classes:
        raise InputError(f"expected a non-empty list of distinct folder names, got {classes[:10]}", field="classes")
    missing = sorted(set(classes) - set(on_disk))
    extra = sorted(set(on_disk) - set(classes))
    if missing or extra:
        raise InputError(
            f"class folders do not match the configured classes: missing {missing[:10]}, unexpected {extra[:10]}",
            path=root,
            field="classes",
        )
    names = classes if class_names is None else [str(n) for n in class_names]
    if len(names) != len(classes):
        raise InputError(f"expected {len(classes)} class names, got {len(names)}", field="class_names")
    exts = tuple(e.lower() for e in extensions)
    files, labels = _scan(root, classes, {c: i for i, c in enumerate(classes)}, exts)
    return ImageFileDataset(
        root=root,
        files=np.array(files, dtype=str),
        labels=np.array(labels, dtype=np.int64),
        sample_ids=np.array(files, dtype=str),
        class_names=tuple(names),
        class_ids=tuple(classes),
        on_bad_image=on_bad_image,
    )


# --------------------------------------------------------------------------- ImageNet


def read_imagenet_devkit(meta_path: str | Path, ground_truth_path: str | Path) -> tuple[tuple[str, ...], np.ndarray]:
    """Parse the ILSVRC2012 devkit: ``(sorted leaf wnids, label per validation image)``.

    ``meta.mat`` lists the synsets with their ``ILSVRC2012_ID`` (1-based, *not* in wnid order);
    the 1,000 classes are those with ``num_children == 0``. The ground-truth file holds one
    ILSVRC2012_ID per line, line ``i`` (1-based) for ``ILSVRC2012_val_%08d.JPEG % i``. The labels
    returned are indices into the sorted wnids, the torchvision/timm class index.
    """
    from scipy.io import loadmat

    meta_path, ground_truth_path = Path(meta_path), Path(ground_truth_path)
    try:
        synsets = loadmat(meta_path, squeeze_me=True)["synsets"]
        ids = np.atleast_1d(synsets["ILSVRC2012_ID"]).astype(np.int64)
        wnids_all = np.atleast_1d(synsets["WNID"]).astype(str)
        children = np.atleast_1d(synsets["num_children"]).astype(np.int64)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise InputError(
            f"expected the devkit's meta.mat with a 'synsets' struct (ILSVRC2012_ID, WNID, num_children): {error}",
            path=meta_path,
            field="synsets",
        ) from None
    leaf = children == 0
    leaf_ids, leaf_wnids = ids[leaf], wnids_all[leaf]
    if len(np.unique(leaf_ids)) != len(leaf_ids) or len(np.unique(leaf_wnids)) != len(leaf_wnids) or not len(leaf_ids):
        raise InputError("leaf synsets must have distinct ILSVRC2012_IDs and WNIDs", path=meta_path, field="synsets")
    wnids = tuple(sorted(leaf_wnids.tolist()))
    index_of_wnid = {w: i for i, w in enumerate(wnids)}
    label_of_id = {int(i): index_of_wnid[str(w)] for i, w in zip(leaf_ids, leaf_wnids)}
    try:
        with open(ground_truth_path, encoding="utf-8") as handle:
            gt = np.array([int(line) for line in handle if line.strip()], dtype=np.int64)
    except (OSError, ValueError) as error:
        raise InputError(f"expected one ILSVRC2012_ID per line: {error}", path=ground_truth_path, field="ground_truth") from None
    unknown = sorted(set(np.unique(gt).tolist()) - set(label_of_id))
    if unknown:
        raise InputError(
            f"ILSVRC2012_IDs not among meta.mat's leaf synsets: {unknown[:10]}", path=ground_truth_path, field="ground_truth"
        )
    lookup = np.full(max(label_of_id) + 1, -1, dtype=np.int64)
    lookup[list(label_of_id)] = list(label_of_id.values())
    return wnids, lookup[gt]


def _devkit_files(devkit: Path | None, meta: Path | None, ground_truth: Path | None) -> tuple[Path, Path]:
    def find(name: str) -> Path | None:
        if devkit is None:
            return None
        for candidate in (devkit / "data" / name, devkit / name):
            if candidate.is_file():
                return candidate
        return None

    meta = meta or find(META_NAME)
    ground_truth = ground_truth or find(GROUND_TRUTH_NAME)
    if meta is None or ground_truth is None:
        raise InputError(
            f"the flat ImageNet layout needs the devkit's {META_NAME} and {GROUND_TRUTH_NAME} "
            "(set 'devkit' to ILSVRC2012_devkit_t12, or 'meta' and 'ground_truth')",
            path=devkit,
            field="devkit",
        )
    return meta, ground_truth


def _detect_layout(root: Path) -> tuple[Path, str]:
    if not root.is_dir():
        raise InputError("expected the ImageNet validation directory", path=root, field="root")
    for base in (root, root / "val"):
        if not base.is_dir():
            continue
        entries = list(os.scandir(base))
        has_wnid_dirs = any(e.is_dir() and WNID_RE.match(e.name) for e in entries)
        has_flat_files = any(e.is_file() and FLAT_VAL_RE.match(e.name) for e in entries)
        if has_wnid_dirs and has_flat_files:
            raise InputError(
                "holds both wnid folders and ILSVRC2012_val_*.JPEG files; set layout to 'imagefolder' or 'flat'",
                path=base,
                field="layout",
            )
        if has_wnid_dirs:
            return base, "imagefolder"
        if has_flat_files:
            return base, "flat"
    raise InputError("found neither wnid folders (val/<wnid>/*.JPEG) nor ILSVRC2012_val_*.JPEG files", path=root, field="root")


def imagenet_val_class_ids(
    root: str | Path,
    *,
    layout: Literal["auto", "imagefolder", "flat"] = "auto",
    label_space: Literal["found", "imagenet1k"] = "found",
) -> tuple[str, ...] | None:
    """The wnids :func:`imagenet_val` gives as classes, from one directory listing (no image is
    decoded, no devkit read): the 1,000 ImageNet-1k wnids for ``label_space="imagenet1k"`` and
    the flat layout (whose devkit lists exactly those), else the sorted wnid folders found.
    None when timm's bundled list is needed and missing."""
    if label_space == "imagenet1k":
        return imagenet1k_wnids()
    base, detected = _detect_layout(Path(root))
    if detected == "flat" or layout == "flat":
        return imagenet1k_wnids()
    return tuple(f for f in _class_folders(base) if WNID_RE.match(f))


def imagenet_val(
    root: str | Path,
    *,
    layout: Literal["auto", "imagefolder", "flat"] = "auto",
    devkit: str | Path | None = None,
    meta: str | Path | None = None,
    ground_truth: str | Path | None = None,
    label_space: Literal["found", "imagenet1k"] = "found",
    on_bad_image: BadImagePolicy = "error",
) -> ImageFileDataset:
    """The ImageNet-2012 validation set under ``root`` as a lazy dataset, in sorted ImageFolder order.

    ``layout="imagefolder"``: ``root`` (or ``root/val``) holds ``<wnid>/*.JPEG``.
    ``layout="flat"``: ``root`` (or ``root/val``) holds ``ILSVRC2012_val_%08d.JPEG`` and the
    labels come from the devkit (``devkit`` folder, or ``meta`` + ``ground_truth`` files); every
    ground-truth line needs its image and vice versa. ``"auto"`` tells them apart.

    Classes: ``label_space="found"`` uses the wnids found (the class folders, or meta.mat's 1,000
    leaf synsets); ``"imagenet1k"`` always uses the 1,000 ImageNet-1k wnids (timm's list), so a
    subset of the classes keeps the 1,000-class label index of pretrained models. Class names are
    torchvision's categories (:func:`imagenet_class_names`). Sample ids are ``<wnid>/<file>``.
    """
    root = Path(root)
    if layout not in ("auto", "imagefolder", "flat"):
        raise InputError(f"expected 'auto', 'imagefolder' or 'flat', got {layout!r}", field="layout")
    if label_space not in ("found", "imagenet1k"):
        raise InputError(f"expected 'found' or 'imagenet1k', got {label_space!r}", field="label_space")
    base, detected = _detect_layout(root)
    if layout != "auto" and layout != detected:
        raise InputError(f"layout is {layout!r} but the directory looks {detected!r}", path=base, field="layout")

    found: Sequence[str]  # the class folders (a list) or the devkit's wnids (a tuple)
    if detected == "imagefolder":
        found = _class_folders(base)
        not_wnid = [f for f in found if not WNID_RE.match(f)]
        if not_wnid:
            raise InputError(f"folders that are not wnids: {not_wnid[:10]}", path=base, field="classes")
        files, found_labels = _scan(base, found, {w: i for i, w in enumerate(found)}, IMG_EXTENSIONS)
        file_wnids = [found[i] for i in found_labels]
        sample_ids = files
    else:
        meta_path, gt_path = _devkit_files(
            None if devkit is None else Path(devkit),
            None if meta is None else Path(meta),
            None if ground_truth is None else Path(ground_truth),
        )
        found, gt_labels = read_imagenet_devkit(meta_path, gt_path)
        numbers = {int(m.group(1)) for e in os.scandir(base) if e.is_file() and (m := FLAT_VAL_RE.match(e.name))}
        expected = set(range(1, len(gt_labels) + 1))
        if numbers != expected:
            missing, extra = sorted(expected - numbers), sorted(numbers - expected)
            raise InputError(
                f"{len(gt_labels)} ground-truth lines need ILSVRC2012_val_00000001.JPEG .. "
                f"ILSVRC2012_val_{len(gt_labels):08d}.JPEG; missing {len(missing)} (first "
                f"{missing[:5]}), beyond the ground truth {len(extra)} (first {extra[:5]})",
                path=base,
                field="ground_truth",
            )
        names = [f"ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, len(gt_labels) + 1)]
        order = sorted(range(len(names)), key=lambda i: (int(gt_labels[i]), names[i]))
        files = [names[i] for i in order]
        file_wnids = [found[int(gt_labels[i])] for i in order]
        sample_ids = [f"{w}/{n}" for w, n in zip(file_wnids, files)]

    if label_space == "imagenet1k":
        classes = imagenet1k_wnids()
        if classes is None:
            raise InputError(
                f"label_space 'imagenet1k' needs timm's bundled wnid list: {install_command('models')}", field="label_space"
            )
        unknown = sorted(set(found) - set(classes))
        if unknown:
            raise InputError(f"not ImageNet-1k wnids: {unknown[:10]}", path=base, field="classes")
    else:
        classes = tuple(found)
    index = {w: i for i, w in enumerate(classes)}
    return ImageFileDataset(
        root=base,
        files=np.array(files, dtype=str),
        labels=np.array([index[w] for w in file_wnids], dtype=np.int64),
        sample_ids=np.array(sample_ids, dtype=str),
        class_names=imagenet_class_names(classes),
        class_ids=tuple(classes),
        on_bad_image=on_bad_image,
    )
