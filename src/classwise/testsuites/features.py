"""Per-sample image features for the subset performance tests, and user metadata.

:func:`image_features` computes, for a batch ``(N, C_in, H, W)`` of float images in
``[0, 1]`` (``C_in`` = 1 grey or 3 RGB), vectorised over the batch (in float64):

==================  ==========================================================================
column              definition
==================  ==========================================================================
``brightness``      mean luminance ``mean_{h,w} L``
``contrast``        population standard deviation of the luminance (``ddof = 0``)
``saturation``      mean HSV saturation ``(max_k x_k - min_k x_k) / max_k x_k`` over pixels
                    (0 where ``max_k x_k = 0``); **only for 3-channel images** (absent else)
``sharpness``       variance (``ddof = 0``) of the Laplacian of ``L``: the 5-point stencil
                    ``L[h-1,w] + L[h+1,w] + L[h,w-1] + L[h,w+1] - 4 L[h,w]`` with
                    half-sample symmetric borders, i.e. ``scipy.ndimage.laplace`` with its
                    default ``mode="reflect"``
``height``          original image height in pixels (default: ``H`` of the array)
``width``           original image width in pixels (default: ``W``)
``aspect_ratio``    ``width / height``
==================  ==========================================================================

Luminance ``L`` is the ITU-R BT.601 luma ``0.299 R + 0.587 G + 0.114 B`` (what PIL's
``convert("L")`` uses) for RGB, the single channel for grey images.

:func:`load_metadata` joins a user CSV keyed by a ``sample_id`` column onto the samples;
:func:`read_features` and :func:`align_features` read a features CSV back and match it to the
samples of a logits file; :func:`dataset_image_features` computes the features of a dataset of
image files, image by image.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.sample_ids import sample_id_positions

__all__ = [
    "LUMA_WEIGHTS",
    "align_features",
    "dataset_image_features",
    "image_features",
    "laplacian_variance",
    "load_metadata",
    "luminance",
    "read_features",
]

log = logging.getLogger(__name__)

#: ITU-R BT.601 luma weights of R, G, B.
LUMA_WEIGHTS: tuple[float, float, float] = (0.299, 0.587, 0.114)
#: Tolerance on the ``[0, 1]`` value range.
_RANGE_TOL = 1e-6
_MAX_LISTED = 10


def _check_images(images: np.ndarray) -> np.ndarray:
    x = np.asarray(images)
    if x.ndim != 4:
        raise InputError(f"expected an (N, C, H, W) array, got shape {x.shape}", field="images")
    n, c, h, w = x.shape
    if n == 0 or h == 0 or w == 0:
        raise InputError(f"expected at least one non-empty image, got shape {x.shape}", field="images")
    if c not in (1, 3):
        raise InputError(f"expected 1 (grey) or 3 (RGB) channels, got {c}", field="images")
    if not np.issubdtype(x.dtype, np.floating):
        raise InputError(f"expected floating-point images in [0, 1], got dtype {x.dtype}", field="images")
    return x


def luminance(images: np.ndarray) -> np.ndarray:
    """``(N, H, W)`` float64 luminance of ``(N, C, H, W)`` images (BT.601 luma for RGB)."""
    x = _check_images(images).astype(np.float64, copy=False)
    if x.shape[1] == 1:
        return x[:, 0].copy()
    r, g, b = LUMA_WEIGHTS
    return r * x[:, 0] + g * x[:, 1] + b * x[:, 2]


def laplacian_variance(lum: np.ndarray) -> np.ndarray:
    """``(N,)`` variance of the 5-point Laplacian of each ``(H, W)`` luminance image.

    Borders are half-sample symmetric (``np.pad(mode="symmetric")``, which is
    ``scipy.ndimage``'s ``mode="reflect"``), so the result equals
    ``scipy.ndimage.laplace(L_i).var()`` per image, computed for the whole batch at once.
    """
    lum = np.asarray(lum, dtype=np.float64)
    if lum.ndim != 3:
        raise InputError(f"expected an (N, H, W) array, got shape {lum.shape}", field="luminance")
    p = np.pad(lum, ((0, 0), (1, 1), (1, 1)), mode="symmetric")
    lap = p[:, :-2, 1:-1] + p[:, 2:, 1:-1] + p[:, 1:-1, :-2] + p[:, 1:-1, 2:] - 4.0 * lum
    return lap.reshape(lap.shape[0], -1).var(axis=1)


def _saturation(x: np.ndarray) -> np.ndarray:
    mx = x.max(axis=1)
    mn = x.min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(mx > 0, (mx - mn) / mx, 0.0)
    return s.reshape(s.shape[0], -1).mean(axis=1)


def image_features(
    images: np.ndarray,
    *,
    original_sizes: np.ndarray | None = None,
    sample_ids: Sequence[str] | np.ndarray | None = None,
    chunk_size: int = 256,
) -> pd.DataFrame:
    """Image statistics of each sample (module docstring), one row per image.

    Parameters
    ----------
    images:
        ``(N, C_in, H, W)`` floating images with values in ``[0, 1]``; ``C_in`` in {1, 3}.
    original_sizes:
        Optional ``(N, 2)`` positive ``(height, width)`` of each image before resizing;
        default: every image is ``(H, W)``.
    sample_ids:
        Optional ``(N,)`` ids, put in a leading ``sample_id`` column.
    chunk_size:
        Images processed at once (bounds the float64 scratch memory).

    Returns
    -------
    DataFrame with columns ``[sample_id,] brightness, contrast, [saturation,] sharpness,
    height, width, aspect_ratio`` in sample order.
    """
    x = _check_images(images)
    n, c, h, w = x.shape
    if int(chunk_size) < 1:
        raise InputError(f"chunk_size must be >= 1, got {chunk_size}", field="chunk_size")
    if original_sizes is None:
        sizes = np.tile(np.array([h, w], dtype=np.int64), (n, 1))
    else:
        sizes = np.asarray(original_sizes)
        if sizes.shape != (n, 2):
            raise InputError(f"expected shape ({n}, 2) (height, width), got {sizes.shape}", field="original_sizes")
        if not np.issubdtype(sizes.dtype, np.number) or not np.isfinite(sizes).all() or (sizes <= 0).any():
            raise InputError("sizes must be positive finite numbers", field="original_sizes")
    cols: dict[str, np.ndarray] = {k: np.empty(n) for k in ("brightness", "contrast", "sharpness")}
    if c == 3:
        cols["saturation"] = np.empty(n)
    for start in range(0, n, int(chunk_size)):
        block = x[start : start + int(chunk_size)].astype(np.float64)
        if not np.isfinite(block).all() or block.min() < -_RANGE_TOL or block.max() > 1 + _RANGE_TOL:
            raise InputError(
                f"image values must be finite and lie in [0, 1] (images {start}..{start + len(block) - 1})",
                field="images",
            )
        sl = slice(start, start + len(block))
        lum = luminance(block)
        flat = lum.reshape(len(block), -1)
        cols["brightness"][sl] = flat.mean(axis=1)
        cols["contrast"][sl] = flat.std(axis=1)
        cols["sharpness"][sl] = laplacian_variance(lum)
        if c == 3:
            cols["saturation"][sl] = _saturation(block)
    data: dict[str, object] = {}
    if sample_ids is not None:
        ids = np.asarray(sample_ids)
        if ids.shape != (n,):
            raise InputError(f"expected shape ({n},), got {ids.shape}", field="sample_ids")
        data["sample_id"] = ids.astype(str)
    data["brightness"] = cols["brightness"]
    data["contrast"] = cols["contrast"]
    if c == 3:
        data["saturation"] = cols["saturation"]
    data["sharpness"] = cols["sharpness"]
    data["height"] = sizes[:, 0]
    data["width"] = sizes[:, 1]
    data["aspect_ratio"] = sizes[:, 1].astype(np.float64) / sizes[:, 0].astype(np.float64)
    return pd.DataFrame(data)


def read_features(path: str | Path) -> pd.DataFrame:
    """A CSV keyed by a ``sample_id`` column (ids read as strings): the features a
    ``compute_image_features`` job wrote, or a user's metadata."""
    try:
        table = pd.read_csv(path, dtype={"sample_id": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot parse CSV: {exc}", path=path) from None
    if "sample_id" not in table.columns:
        raise InputError(f"missing key column; the columns are {list(map(str, table.columns))}", path=path, field="sample_id")
    return table


def _rows_for(table: pd.DataFrame, positions: np.ndarray, sample_ids: Sequence[str] | np.ndarray) -> pd.DataFrame:
    """The rows of ``table`` at ``positions``, keyed by ``sample_ids`` (first column)."""
    out = table.drop(columns="sample_id").iloc[positions].reset_index(drop=True)
    out.insert(0, "sample_id", np.asarray(sample_ids).astype(str))
    return out


def align_features(features: pd.DataFrame, sample_ids: np.ndarray, *, source: str | Path = "features") -> pd.DataFrame:
    """The rows of ``features`` for ``sample_ids``, in that order (matched by id)."""
    positions = sample_id_positions(
        sample_ids,
        features["sample_id"].to_numpy(),
        path=source,
        available_name="the features",
        missing="{count} of {total} evaluated samples have no features",
    )
    return _rows_for(features, positions, sample_ids)


def load_metadata(csv_path: str | Path, sample_ids: Sequence[str] | np.ndarray) -> pd.DataFrame:
    """Rows of a user CSV for ``sample_ids``, in that order, keyed by column ``sample_id``.

    Ids are compared as strings.  The CSV must have a ``sample_id`` column without
    duplicates and hold every requested id (extra rows are ignored).  Returns a DataFrame
    with ``sample_id`` first and the CSV's other columns (dtypes inferred by pandas),
    positionally aligned with ``sample_ids``; raises :class:`InputError` otherwise.
    """
    path = Path(csv_path)
    if not path.is_file():
        raise InputError("metadata CSV not found", path=path)
    table = read_features(path)
    key = table["sample_id"]
    if key.isna().any():
        rows = np.flatnonzero(key.isna().to_numpy())[:_MAX_LISTED] + 2  # 1-based, after the header
        raise InputError(f"empty sample_id on lines {rows.tolist()}", path=path, field="sample_id")
    positions = sample_id_positions(sample_ids, key.to_numpy(), path=path, available_name="the metadata CSV")
    return _rows_for(table, positions, sample_ids)


def dataset_image_features(dataset: Any, batch_size: int, workers: int) -> pd.DataFrame:
    """:func:`image_features` of a dataset of image files, each image at its own decoded size
    (one at a time: sizes differ), so ``height``/``width`` are the original size; unreadable
    images are skipped or raise according to the dataset's ``on_bad_image``. ``workers``
    threads decode the images of a batch of ``batch_size``."""
    from concurrent.futures import ThreadPoolExecutor

    from classwise.data.imagefolder import to_array

    def one(index: int) -> pd.DataFrame | None:
        image = dataset.load_image(index)
        if image is None:
            return None
        array = to_array(image)[None]
        sizes = np.array([[array.shape[2], array.shape[3]]])
        return image_features(array, original_sizes=sizes, sample_ids=[dataset.sample_ids[index]])

    frames: list[pd.DataFrame] = []
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        for start in range(0, len(dataset), batch_size):
            indices = range(start, min(start + batch_size, len(dataset)))
            results = pool.map(one, indices) if pool is not None else map(one, indices)
            frames.extend(frame for frame in results if frame is not None)
            log.info("features of %d / %d images", min(start + batch_size, len(dataset)), len(dataset))
    finally:
        if pool is not None:
            pool.shutdown()
    if not frames:
        raise InputError("no readable images", path=getattr(dataset, "root", None), field="images")
    return pd.concat(frames, ignore_index=True)
