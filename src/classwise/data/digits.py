"""The embedded demo data set: scikit-learn's 8x8 handwritten digits (1,797 images, 10 classes).

Every job of the demo opens it, so it is read without importing scikit-learn (about 1.5 s
a job, more than the job's inference): straight from the ``digits.csv.gz`` that scikit-learn
ships (the file ``sklearn.datasets.load_digits`` reads), falling back to ``load_digits``
itself if a scikit-learn release moves that file.  The split is our own, numpy only
(:func:`stratified_split`).
"""

from __future__ import annotations

import gzip
import importlib.util
from pathlib import Path

import numpy as np

from classwise.data.imageset import ImageSet
from classwise.errors import InputError, check_count

DIGITS_MAX_VALUE = 16.0
"""The digits have 17 grey levels, 0..16; images are divided by this to land in [0, 1]."""
DIGITS_COUNT = 1797
"""Rows of scikit-learn's digits file; a file of another shape is not trusted (the fallback reads it)."""
SPLIT_CONVENTION = "classwise-stratified-v1"
"""Version of :func:`stratified_split`'s convention.  The workflow passes it to every job that
splits the digits, so a new convention reruns them instead of mixing two splits."""


def _bundled_digits_csv() -> Path | None:
    """scikit-learn's ``datasets/data/digits.csv.gz``, located without importing scikit-learn."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    return None


def _read_digits() -> tuple[np.ndarray, np.ndarray]:
    """``(images (N, 8, 8) in grey levels 0..16, labels (N,))`` in scikit-learn's order."""
    path = _bundled_digits_csv()
    if path is not None:
        with gzip.open(path, "rt", encoding="ascii") as handle:
            table = np.loadtxt(handle, delimiter=",", dtype=np.float64)
        if table.shape == (DIGITS_COUNT, 65):
            return table[:, :64].reshape(-1, 8, 8), table[:, 64].astype(np.int64)
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return np.asarray(bunch.images, dtype=np.float64), np.asarray(bunch.target, dtype=np.int64)


def load_digits_imageset() -> ImageSet:
    """All 1,797 digits as one :class:`ImageSet` of shape (N, 1, 8, 8), ids ``digits-0000`` ..."""
    grey_levels, labels = _read_digits()
    images = (grey_levels.astype(np.float32) / DIGITS_MAX_VALUE)[:, None, :, :]
    sample_ids = np.array([f"digits-{i:04d}" for i in range(len(labels))])
    class_names = tuple(str(digit) for digit in range(10))
    return ImageSet(images=images, labels=labels, sample_ids=sample_ids, class_names=class_names)


def stratified_split(labels: np.ndarray, *, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``(train, test)`` indices: a seeded split that keeps every class' share.

    Convention: the test side holds ``ceil(test_fraction * N)`` samples.  Class ``c`` with
    ``n_c`` samples gets ``floor(test_fraction * n_c)`` of them, and the samples still owed
    go one each to the classes with the largest fractional parts of ``test_fraction * n_c``
    (ties to the smaller label), so every class' test count is within one of
    ``test_fraction * n_c``.  Products are rounded to 9 decimals first, so that a decimal
    fraction's rounding error (``0.3 * 17 = 5.0999...``) decides neither a tie nor a ceiling.
    Which samples of a class go to test: those with the smallest keys of
    ``numpy.random.default_rng(seed).random(N)``.  Every class must land on both sides.
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise InputError(f"expected one label per sample (1-D), got shape {labels.shape}", field="labels")
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float, np.floating)):
        raise InputError(f"expected a number in (0, 1), got {test_fraction!r}", field="test_fraction")
    if not 0.0 < float(test_fraction) < 1.0:  # NaN fails this too
        raise InputError(f"expected a number in (0, 1), got {test_fraction!r}", field="test_fraction")
    seed = check_count(seed, "seed", minimum=0)
    n = labels.size
    classes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    n_test = int(np.ceil(round(float(test_fraction) * n, 9)))
    quota = np.round(float(test_fraction) * counts, 9)
    per_class = np.floor(quota).astype(np.int64)
    owed = n_test - int(per_class.sum())
    remainder = np.round(quota - per_class, 9)
    per_class[np.argsort(-remainder, kind="stable")[:owed]] += 1
    one_sided = np.flatnonzero((per_class < 1) | (per_class > counts - 1))
    if one_sided.size:
        c = one_sided[0]
        side = "test" if per_class[c] < 1 else "train"
        raise InputError(
            f"test_fraction {test_fraction!r} leaves class {classes[c].item()!r} ({counts[c]} samples) with no "
            f"sample on the {side} side; expected a fraction that puts every class on both sides",
            field="test_fraction",
        )
    keys = np.random.default_rng(int(seed)).random(n)
    order = np.lexsort((keys, inverse))  # by class, then by key
    first_of_class = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank_in_class = np.empty(n, dtype=np.int64)
    rank_in_class[order] = np.arange(n) - first_of_class[inverse[order]]
    is_test = rank_in_class < per_class[inverse]
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def load_digits_split(*, test_fraction: float, seed: int) -> tuple[ImageSet, ImageSet]:
    """A stratified, seeded (train, test) split of the digits (:func:`stratified_split`).

    The same ``(test_fraction, seed)`` always gives the same sample ids on each side; each
    side keeps the original index order.
    """
    full = load_digits_imageset()
    train, test = stratified_split(full.labels, test_fraction=test_fraction, seed=seed)
    return full.subset(train), full.subset(test)
