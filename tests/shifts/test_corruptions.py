"""Corruptions, shift specifications and seeding."""

from __future__ import annotations

import albumentations as A
import numpy as np
import pytest

from classwise.data import load_digits_imageset
from classwise.errors import InputError
from classwise.shifts import (
    CORRUPTIONS,
    ShiftSpec,
    corrupt_batch,
    corrupt_image,
    expand_shifts,
    register_corruption,
    sample_seed,
)

REQUIRED = ("gaussian_blur", "gaussian_noise", "rain")
# corruptions whose output depends on the seed (the others are deterministic functions of the image)
STOCHASTIC = ("gaussian_noise", "rain", "snow", "color_jitter", "randomize_pixels")


@pytest.fixture(scope="module")
def digits() -> np.ndarray:
    full = load_digits_imageset()
    return full.images[:24]  # (24, 1, 8, 8)


@pytest.fixture(scope="module")
def rgb() -> np.ndarray:
    rng = np.random.default_rng(0)
    # smooth-ish RGB images: a gradient plus noise, so blur and contrast changes are visible
    base = np.linspace(0.1, 0.9, 32, dtype=np.float32)[None, None, None, :]
    return np.clip(base + 0.2 * rng.standard_normal((6, 3, 32, 32)), 0, 1).astype(np.float32)


def test_required_corruptions_are_registered() -> None:
    assert set(REQUIRED) <= set(CORRUPTIONS)
    assert set(STOCHASTIC) <= set(CORRUPTIONS)


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
@pytest.mark.parametrize("which", ["digits", "rgb"])
def test_corruption_changes_images_and_keeps_format(name: str, which: str, request: pytest.FixtureRequest) -> None:
    images = request.getfixturevalue(which)
    seeds = list(range(len(images)))
    out = corrupt_batch(images, name, 3, seeds)
    assert out.shape == images.shape
    assert out.dtype == np.float32
    assert np.isfinite(out).all() and out.min() >= 0.0 and out.max() <= 1.0
    changed = np.abs(out - images).reshape(len(images), -1).max(axis=1) > 1e-3
    assert changed.mean() >= 0.5, f"{name} changed only {changed.sum()} of {len(images)} images"


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corruption_is_deterministic_per_seed(name: str, digits: np.ndarray, rgb: np.ndarray) -> None:
    for images in (digits, rgb):
        seeds = [sample_seed(0, name, i) for i in range(len(images))]
        a = corrupt_batch(images, name, 3, seeds)
        b = corrupt_batch(images, name, 3, seeds)
        assert np.array_equal(a, b)
        # one image on its own gives the same pixels as inside the batch
        single = corrupt_image(np.ascontiguousarray(images[2].transpose(1, 2, 0)), name, 3, seeds[2])
        assert np.array_equal(single.transpose(2, 0, 1), a[2])
    if name in STOCHASTIC:
        c = corrupt_batch(digits, name, 3, [s + 1 for s in range(len(digits))])
        d = corrupt_batch(digits, name, 3, list(range(len(digits))))
        assert not np.array_equal(c, d)


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_severity_increases_the_change(name: str, digits: np.ndarray) -> None:
    seeds = list(range(len(digits)))
    change = [np.abs(corrupt_batch(digits, name, s, seeds) - digits).mean() for s in (1, 5)]
    assert change[1] > change[0], (name, change)


def test_grayscale_stays_grayscale_for_rgb_only_corruptions(digits: np.ndarray) -> None:
    image = np.ascontiguousarray(digits[0].transpose(1, 2, 0))
    for name in ("rain", "snow"):
        out = corrupt_image(image, name, 3, seed=1)
        assert out.shape == (8, 8, 1)


def test_bad_arguments() -> None:
    image = np.zeros((8, 8, 1), np.float32)
    with pytest.raises(InputError, match="severity"):
        corrupt_image(image, "gaussian_noise", 6, seed=0)
    with pytest.raises(InputError, match="fog"):
        corrupt_image(image, "fog", 3, seed=0)
    with pytest.raises(InputError, match="shape"):
        corrupt_image(np.zeros((8, 8, 2), np.float32), "gaussian_noise", 3, seed=0)
    with pytest.raises(InputError, match="float32"):
        corrupt_image(np.zeros((8, 8, 1), np.float64), "gaussian_noise", 3, seed=0)
    with pytest.raises(InputError, match="seeds"):
        corrupt_batch(np.zeros((2, 1, 8, 8), np.float32), "gaussian_noise", 3, [0])


def test_registering_a_corruption_in_one_place(digits: np.ndarray) -> None:
    @register_corruption("test_box_blur", description="box blur")
    def _box(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
        k = (3, 3, 5, 5, 7)[severity - 1]
        return A.Blur(blur_limit=(k, k), p=1.0)

    try:
        out = corrupt_batch(digits, "test_box_blur", 3, list(range(len(digits))))
        assert not np.array_equal(out, digits)
        assert "test_box_blur_s2" in expand_shifts({"corruptions": ["test_box_blur"], "severities": [2]})
    finally:
        del CORRUPTIONS["test_box_blur"]


# ----------------------------------------------------------------------------- seeding


def test_sample_seed_is_pinned_and_distinguishes_parts() -> None:
    # pinned: the value must never change across processes, platforms or releases
    assert sample_seed(0, "gaussian_noise_s3", "digits-0042") == sample_seed(0, "gaussian_noise_s3", "digits-0042")
    assert sample_seed(0, "clean") == 1484034075206016236
    seeds = {
        sample_seed(0, "ab", "c"),
        sample_seed(0, "a", "bc"),
        sample_seed(0, 1),
        sample_seed(0, "1"),
        sample_seed(1, 1),
        sample_seed(0),
    }
    assert len(seeds) == 6
    assert all(0 <= s < 2**63 for s in seeds)
    with pytest.raises(TypeError):
        sample_seed(0, 1.5)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- specs


def test_expand_shifts_names_and_order() -> None:
    cfg = {
        "shifts": {
            "clean": True,
            "corruptions": ["gaussian_blur", "gaussian_noise", "rain"],
            "severities": [3, 1],
            "pgd": [
                {"norm": "linf", "eps": 0.1, "steps": 10, "step_size": 0.025, "random_start": True},
                {"norm": "l2", "eps": 0.5},
            ],
        }
    }
    specs = expand_shifts(cfg)
    assert list(specs) == [
        "clean",
        "gaussian_blur_s3",
        "gaussian_blur_s1",
        "gaussian_noise_s3",
        "gaussian_noise_s1",
        "rain_s3",
        "rain_s1",
        "pgd_linf_eps0.1",
        "pgd_l2_eps0.5",
    ]
    assert specs["rain_s1"].params == {"corruption": "rain", "severity": 1}
    assert specs["pgd_linf_eps0.1"].params == {
        "norm": "linf",
        "eps": 0.1,
        "steps": 10,
        "step_size": 0.025,
        "random_start": True,
    }
    assert specs["pgd_l2_eps0.5"].params["step_size"] == pytest.approx(2.5 * 0.5 / 10)
    assert expand_shifts(cfg["shifts"]) == specs  # the section itself works too
    spec = specs["gaussian_noise_s3"]
    assert spec.to_json() == {
        "name": "gaussian_noise_s3",
        "kind": "corruption",
        "params": {"corruption": "gaussian_noise", "severity": 3},
    }
    assert ShiftSpec.from_json(spec.to_json()) == spec
    assert ShiftSpec.from_json(spec.canonical_json()) == spec
    assert list(expand_shifts({"clean": False, "corruptions": ["rain"]})) == ["rain_s3"]


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"corruptions": ["gaussian_blur", "fog"]}, "shifts.corruptions[1]"),
        ({"corruptions": ["rain"], "severities": [3, 6]}, "shifts.severities[1]"),
        ({"corruptions": ["rain"], "severities": [0]}, "shifts.severities[0]"),
        ({"pgd": [{"norm": "linf", "eps": 0.1}, {"norm": "l1", "eps": 0.1}]}, "shifts.pgd[1].norm"),
        ({"pgd": [{"norm": "linf", "eps": -0.1}]}, "shifts.pgd[0].eps"),
        ({"pgd": [{"norm": "linf"}]}, "shifts.pgd[0].eps"),
        ({"pgd": [{"norm": "linf", "eps": 0.1, "steps": 2.5}]}, "shifts.pgd[0].steps"),
        ({"pgd": [{"norm": "linf", "eps": 0.1}, {"norm": "linf", "eps": 0.1}]}, "shifts"),
        ({"clean": "yes"}, "shifts.clean"),
        ({"corruption": ["rain"]}, "shifts.corruption"),
    ],
)
def test_expand_shifts_errors_name_the_field(section: dict, field: str) -> None:
    with pytest.raises(InputError) as info:
        expand_shifts({"shifts": section})
    assert info.value.field == field


# --------------------------------------------------------------------------- no corruption invents black
#
# A corruption must not turn a pixel black unless its own arithmetic sends it there: a black
# pixel out of a non-black one was the signature of albumentations 2.0.8's snow, whose uint8
# cast wrapped bright pixels (V + snow > 255) round to near black. Test images have no black
# pixel (values on the uint8 grid, 1/255 to 1), so for the six corruptions that never clip at
# 0 the property is exact: no black pixel in the output. Four corruptions clip at 0 by design;
# for them the test checks that each new black pixel is one that clipping explains:
#   gaussian_noise: image + noise <= 0 in every channel (the noise depends only on the seed and
#     the shape, so the same seed on an all-ones image gives 1 + noise);
#   randomize_pixels: the pixel was replaced by a noise draw that is itself black (the same seed
#     blackens the same pixel of an all-ones image);
#   contrast_increase, color_jitter: only pixels below the image mean can reach 0 (contrast
#     c <= 4 zeroes a pixel p only if p <= mean * (1 - 1/c); brightness scales pixel and mean
#     alike; saturation and hue never zero a non-black pixel), so no pixel whose every channel
#     is at least the image's mean grey level becomes black.

CLIPS_AT_ZERO_WITH_NOISE = ("gaussian_noise", "randomize_pixels")
CLIPS_AT_ZERO_BELOW_MEAN = ("contrast_increase", "color_jitter")


def _no_black_image(shape: tuple[int, int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.integers(1, 256, size=shape) / 255).astype(np.float32)


def _black(image: np.ndarray) -> np.ndarray:
    return (image == 0).all(axis=2)


def _black_that_clipping_explains(name: str, severity: int, image: np.ndarray, seed: int) -> np.ndarray:
    if name in CLIPS_AT_ZERO_WITH_NOISE:
        ones = corrupt_image(np.ones_like(image), name, severity, seed)
        if name == "gaussian_noise":  # ones = clip(1 + noise): noise <= -image  <=>  ones <= 1 - image
            return (ones <= 1 - image + 1e-6).all(axis=2)
        return _black(ones)
    if name in CLIPS_AT_ZERO_BELOW_MEAN:
        grey = image.mean() if image.shape[2] == 1 else (image @ np.array([0.299, 0.587, 0.114])).mean()
        return ~(image >= grey).all(axis=2)
    return np.zeros(image.shape[:2], dtype=bool)


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
@pytest.mark.parametrize("channels", [1, 3])
def test_no_corruption_turns_a_pixel_black_unless_clipping_explains_it(name: str, channels: int) -> None:
    for severity in (1, 2, 3, 4, 5):
        for seed in (0, 1):
            image = _no_black_image((48, 48, channels), seed=10 * severity + seed)
            out = corrupt_image(image, name, severity, seed)
            assert out.dtype == np.float32 and np.isfinite(out).all()
            assert out.min() >= 0.0 and out.max() <= 1.0
            unexplained = _black(out) & ~_black_that_clipping_explains(name, severity, image, seed)
            assert not unexplained.any(), (
                f"{name} severity {severity} seed {seed}: {int(unexplained.sum())} pixels turned black, "
                f"brightest input {image[unexplained].max():.3f}"
            )


@pytest.mark.skipif(A.__version__ != "2.0.8", reason="the clipped snow replicates albumentations 2.0.8's blend")
def test_snow_matches_albumentations_where_it_does_not_overflow() -> None:
    # a dark grey image (hue and saturation 0, value <= 0.3) leaves room for the snow layer in
    # every HSV channel: upstream's blend never wraps there, so the clipped snow must give
    # upstream's pixels exactly (same draws, same arithmetic)
    image = np.repeat(0.3 * _no_black_image((40, 40, 1), seed=5), 3, axis=2)
    for severity, point in enumerate((0.2, 0.3, 0.35, 0.4, 0.45), start=1):
        upstream = A.RandomSnow(snow_point_range=(point, point), brightness_coeff=2.0, method="texture", p=1.0)
        upstream.set_random_seed(severity)
        expected = upstream(image=image)["image"]
        assert np.array_equal(corrupt_image(image, "snow", severity, seed=severity), expected)


def test_snow_keeps_bright_pixels_bright() -> None:
    # the reported case: albumentations 2.0.8's own RandomSnow (method="texture", snow point 0.45,
    # brightness 2) turns 79 pixels of this image black (the wrap-around of V + snow > 255)
    image = np.random.default_rng(0).random((64, 64, 3), dtype=np.float32)
    out = corrupt_image(image, "snow", 5, seed=0)
    assert not _black(out).any()
    assert out[:32].mean() > image[:32].mean()  # snow brightens, most at the top
