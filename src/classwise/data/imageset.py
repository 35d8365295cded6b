"""An in-memory labelled image set: the unit every model, shift and inference call works on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from classwise.errors import InputError


@dataclass(frozen=True, eq=False)
class ImageSet:
    """Images with labels, stable sample ids and class names.

    Compared and hashed by identity (``eq=False``): its fields are arrays.

    ``images`` is ``(N, C_in, H, W)`` float32 in ``[0, 1]``; ``labels`` is ``(N,)`` int64 in
    ``[0, len(class_names))``; ``sample_ids`` is ``(N,)`` unicode and unique. The arrays are
    validated (and copied into the canonical dtypes) on construction.
    """

    images: np.ndarray
    labels: np.ndarray
    sample_ids: np.ndarray
    class_names: tuple[str, ...]

    def __post_init__(self) -> None:
        images = np.ascontiguousarray(self.images, dtype=np.float32)
        labels = np.asarray(self.labels)
        sample_ids = np.asarray(self.sample_ids).astype(str)
        class_names = tuple(str(name) for name in self.class_names)
        if images.ndim != 4:
            raise InputError(f"expected images of shape (N, C, H, W), got shape {images.shape}", field="images")
        n = images.shape[0]
        if labels.shape != (n,) or sample_ids.shape != (n,):
            raise InputError(
                f"images ({n} rows), labels {labels.shape} and sample_ids {sample_ids.shape} must have one entry per image",
                field="labels",
            )
        if labels.size and not np.issubdtype(labels.dtype, np.integer):
            raise InputError(f"labels must be integers, got dtype {labels.dtype}", field="labels")
        labels = labels.astype(np.int64)
        if not class_names:
            raise InputError("class_names must not be empty", field="class_names")
        if labels.size and (labels.min() < 0 or labels.max() >= len(class_names)):
            raise InputError(
                f"labels must lie in [0, {len(class_names)}), got [{labels.min()}, {labels.max()}]",
                field="labels",
            )
        if n and (not np.isfinite(images).all() or images.min() < 0.0 or images.max() > 1.0):
            raise InputError("images must be finite and lie in [0, 1]", field="images")
        if len(np.unique(sample_ids)) != n:
            raise InputError("sample_ids must be unique", field="sample_ids")
        object.__setattr__(self, "images", images)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "sample_ids", sample_ids)
        object.__setattr__(self, "class_names", class_names)

    def __len__(self) -> int:
        return int(self.images.shape[0])

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """``(C_in, H, W)`` of one image."""
        _, c, h, w = self.images.shape
        return (int(c), int(h), int(w))

    def subset(self, indices: Sequence[int] | np.ndarray) -> ImageSet:
        """The images at ``indices`` (integer positions or a boolean mask), in that order."""
        idx = np.asarray(indices)
        if idx.dtype == bool:
            if idx.shape != (len(self),):
                raise InputError(
                    f"boolean mask of shape {idx.shape} does not match {len(self)} images",
                    field="indices",
                )
            idx = np.flatnonzero(idx)
        idx = idx.astype(np.int64).reshape(-1)
        return ImageSet(
            images=self.images[idx],
            labels=self.labels[idx],
            sample_ids=self.sample_ids[idx],
            class_names=self.class_names,
        )
