"""The digits demo data: shapes, ids, a reproducible stratified split, ImageSet validation."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from classwise.data import ImageSet, load_digits_imageset, load_digits_split
from classwise.data import digits as digits_module
from classwise.data.digits import stratified_split
from classwise.errors import InputError


@pytest.fixture(scope="module")
def split() -> tuple[ImageSet, ImageSet]:
    return load_digits_split(test_fraction=0.3, seed=0)


def test_full_set_shape_range_and_ids() -> None:
    full = load_digits_imageset()
    assert len(full) == 1797
    assert full.images.shape == (1797, 1, 8, 8)
    assert full.images.dtype == np.float32
    assert full.labels.dtype == np.int64
    assert full.images.min() == 0.0 and full.images.max() == 1.0
    # 17 grey levels 0..16, divided by 16
    assert np.array_equal(np.unique(full.images * 16), np.arange(17, dtype=np.float32))
    assert full.class_names == tuple(str(d) for d in range(10))
    assert full.sample_ids[0] == "digits-0000" and full.sample_ids[1796] == "digits-1796"


def test_full_set_equals_scikit_learns_load_digits() -> None:
    from sklearn.datasets import load_digits

    reference = load_digits()
    full = load_digits_imageset()
    np.testing.assert_array_equal(full.images[:, 0] * 16, reference.images.astype(np.float32))
    np.testing.assert_array_equal(full.labels, reference.target)
    assert full.class_names == tuple(str(name) for name in reference.target_names)


def test_falls_back_to_scikit_learn_when_the_bundled_file_moves(monkeypatch: pytest.MonkeyPatch) -> None:
    direct = load_digits_imageset()
    monkeypatch.setattr(digits_module, "_bundled_digits_csv", lambda: None)
    fallback = load_digits_imageset()
    np.testing.assert_array_equal(fallback.images, direct.images)
    np.testing.assert_array_equal(fallback.labels, direct.labels)


def _reference_split(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The documented convention in exact arithmetic (the fraction as the decimal it is
    written as), one class at a time; ties of fractional parts go to the smaller label."""
    exact = Fraction(str(fraction))
    keys = np.random.default_rng(seed).random(labels.size)
    classes = np.unique(labels)
    quota = {c: exact * int(np.sum(labels == c)) for c in classes}
    take = {c: math.floor(q) for c, q in quota.items()}
    owed = math.ceil(exact * labels.size) - sum(take.values())
    for c in sorted(classes, key=lambda c: (-(quota[c] - take[c]), c))[:owed]:
        take[c] += 1
    test = []
    for c in classes:
        members = np.flatnonzero(labels == c)
        test.extend(members[np.argsort(keys[members], kind="stable")][: take[c]])
    test = np.sort(np.array(test, dtype=np.int64))
    return np.setdiff1d(np.arange(labels.size), test), test


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.3, 0.5, 0.7, 0.77, 0.95])
@pytest.mark.parametrize("seed", [0, 7])
def test_stratified_split_follows_its_convention(fraction: float, seed: int) -> None:
    labels = np.random.default_rng(100 + seed).integers(0, 7, size=403)
    labels[:30] = 9  # a smaller class, and a gap in the labels
    train, test = stratified_split(labels, test_fraction=fraction, seed=seed)
    expected_train, expected_test = _reference_split(labels, fraction, seed)
    np.testing.assert_array_equal(test, expected_test)
    np.testing.assert_array_equal(train, expected_train)


def test_stratified_split_breaks_ties_by_the_smaller_label() -> None:
    # 0.3 * 17 = 5.1 and 0.3 * 7 = 2.1: floors 5 + 2, ceil(0.3 * 24) = 8 owes one sample; the
    # fractional parts tie at 0.1 (in floating point 0.0999... against 0.1000...), so class 0
    # gets it: 6 and 2.
    labels = np.array([0] * 17 + [1] * 7)
    _, test = stratified_split(labels, test_fraction=0.3, seed=0)
    assert np.bincount(labels[test]).tolist() == [6, 2]
    # ceil(0.07 * 100) = 7, although 0.07 * 100 = 7.000000000000001 in floating point
    _, test = stratified_split(np.arange(100) % 2, test_fraction=0.07, seed=0)
    assert test.size == 7


def test_the_demo_split_per_class() -> None:
    # The digits' classes hold 178, 182, 177, 183, 181, 182, 181, 179, 174 and 180 images; half
    # of each floors to 89, 91, 88, 91, 90, 91, 90, 89, 87, 90 (896), ceil(1797 / 2) = 899 owes
    # three, and classes 2, 3, 4, 6 and 7 tie at a half: the three smallest labels get them.
    _, test = load_digits_split(test_fraction=0.5, seed=0)
    assert np.bincount(test.labels).tolist() == [89, 91, 89, 92, 91, 91, 90, 89, 87, 90]


def test_the_digits_load_without_scikit_learn() -> None:
    script = (
        "import sys\n"
        "from classwise.data.digits import _bundled_digits_csv, load_digits_split\n"
        "assert _bundled_digits_csv() is not None\n"
        "load_digits_split(test_fraction=0.5, seed=0)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("labels", "fraction", "field", "message"),
    [
        ([0, 1, 0], 0.99, "test_fraction", "class 0 .* no sample on the train side"),
        ([0] * 10 + [1], 0.3, "test_fraction", "class 1 .* no sample on the"),
        ([0] * 100 + [1] * 100, 0.004, "test_fraction", "class 1 .* no sample on the test side"),
        ([0, 1] * 5, float("nan"), "test_fraction", "expected a number in"),
        ([0, 1] * 5, 1.0, "test_fraction", "expected a number in"),
        ([[0], [1]], 0.5, "labels", "1-D"),
    ],
)
def test_stratified_split_rejects_one_sided_classes_and_bad_input(
    labels: list, fraction: float, field: str, message: str
) -> None:
    with pytest.raises(InputError, match=message) as error:
        stratified_split(np.array(labels), test_fraction=fraction, seed=0)
    assert error.value.field == field


@pytest.mark.parametrize("seed", [-1, 0.5, True])
def test_stratified_split_rejects_a_bad_seed(seed: object) -> None:
    with pytest.raises(InputError, match="expected an integer >= 0") as error:
        stratified_split(np.array([0, 1] * 5), test_fraction=0.5, seed=seed)  # type: ignore[arg-type]
    assert error.value.field == "seed"


def test_split_is_a_partition(split: tuple[ImageSet, ImageSet]) -> None:
    train, test = split
    assert len(train) + len(test) == 1797
    assert len(test) == 540  # ceil(0.3 * 1797)
    assert not set(train.sample_ids) & set(test.sample_ids)
    full = load_digits_imageset()
    assert set(train.sample_ids) | set(test.sample_ids) == set(full.sample_ids)
    # images and labels travel with their ids
    index = {sid: i for i, sid in enumerate(full.sample_ids)}
    rows = [index[sid] for sid in test.sample_ids]
    assert np.array_equal(test.images, full.images[rows])
    assert np.array_equal(test.labels, full.labels[rows])


def test_split_is_stratified(split: tuple[ImageSet, ImageSet]) -> None:
    _, test = split
    full = load_digits_imageset()
    totals = np.bincount(full.labels, minlength=10)
    counts = np.bincount(test.labels, minlength=10)
    assert np.all(np.abs(counts - 0.3 * totals) <= 1.0), (counts, 0.3 * totals)


def test_split_is_reproducible_and_seeded(split: tuple[ImageSet, ImageSet]) -> None:
    train, test = split
    train2, test2 = load_digits_split(test_fraction=0.3, seed=0)
    assert np.array_equal(test.sample_ids, test2.sample_ids)
    assert np.array_equal(train.images, train2.images)
    _, other = load_digits_split(test_fraction=0.3, seed=1)
    assert not np.array_equal(test.sample_ids, other.sample_ids)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, "0.3", True])
def test_bad_test_fraction(fraction: object) -> None:
    with pytest.raises(InputError, match="test_fraction"):
        load_digits_split(test_fraction=fraction, seed=0)  # type: ignore[arg-type]


def test_imageset_subset_and_validation(split: tuple[ImageSet, ImageSet]) -> None:
    _, test = split
    sub = test.subset([5, 2, 7])
    assert len(sub) == 3
    assert list(sub.sample_ids) == [test.sample_ids[5], test.sample_ids[2], test.sample_ids[7]]
    mask = test.labels == 3
    assert np.all(test.subset(mask).labels == 3)
    assert test.input_shape == (1, 8, 8)
    ok = dict(images=np.zeros((2, 1, 2, 2), np.float32), labels=np.array([0, 1]), sample_ids=np.array(["a", "b"]))
    with pytest.raises(InputError, match="labels"):
        ImageSet(**{**ok, "labels": np.array([0, 2])}, class_names=("x", "y"))
    with pytest.raises(InputError, match="sample_ids"):
        ImageSet(**{**ok, "sample_ids": np.array(["a", "a"])}, class_names=("x", "y"))
    with pytest.raises(InputError, match="images"):
        ImageSet(**{**ok, "images": np.full((2, 1, 2, 2), 2.0, np.float32)}, class_names=("x", "y"))


def test_job_parameters_carry_the_split_convention() -> None:
    from classwise.data.sources import job_parameters

    digits = job_parameters({"split_seed": 0, "source": "sklearn_digits", "test_fraction": 0.5})
    assert list(digits) == ["source", "split_convention", "split_seed", "test_fraction"]
    assert digits["split_convention"] == digits_module.SPLIT_CONVENTION
    folder = job_parameters({"source": "image_folder", "root": "data/x"})
    assert folder == {"root": "data/x", "source": "image_folder"} and list(folder) == ["root", "source"]
