"""The embedded demo data set: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from classwise.data.imageset import ImageSet
from classwise.errors import InputError

DIGITS_MAX_VALUE = 16.0
"""The digits have 17 grey levels, 0..16; images are divided by this to land in [0, 1]."""


def load_digits_imageset() -> ImageSet:
    """All 1,797 digits as one :class:`ImageSet` of shape (N, 1, 8, 8), ids ``digits-0000`` ..."""
    bunch = load_digits()
    images = (np.asarray(bunch.images, dtype=np.float32) / DIGITS_MAX_VALUE)[:, None, :, :]
    labels = np.asarray(bunch.target, dtype=np.int64)
    sample_ids = np.array([f"digits-{i:04d}" for i in range(len(labels))])
    class_names = tuple(str(name) for name in bunch.target_names)
    return ImageSet(images=images, labels=labels, sample_ids=sample_ids, class_names=class_names)


def load_digits_split(*, test_fraction: float, seed: int) -> tuple[ImageSet, ImageSet]:
    """A stratified, seeded (train, test) split of the digits.

    The split is ``sklearn.model_selection.train_test_split(..., stratify=labels,
    random_state=seed)``, so the same ``(test_fraction, seed)`` always gives the same sample ids
    on each side; each side keeps the original index order.
    """
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)):
        raise InputError(f"expected a number in (0, 1), got {test_fraction!r}", field="test_fraction")
    if not 0.0 < float(test_fraction) < 1.0:
        raise InputError(f"expected a number in (0, 1), got {test_fraction!r}", field="test_fraction")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"expected an integer, got {seed!r}", field="seed")
    full = load_digits_imageset()
    indices = np.arange(len(full))
    train_idx, test_idx = train_test_split(
        indices,
        test_size=float(test_fraction),
        random_state=int(seed),
        shuffle=True,
        stratify=full.labels,
    )
    return full.subset(np.sort(train_idx)), full.subset(np.sort(test_idx))
