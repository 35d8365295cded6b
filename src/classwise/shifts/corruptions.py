"""Common corruptions (ImageNet-C style, severities 1-5) built on albumentations.

These are classwise's own definitions, not the published ImageNet-C or CIFAR-10-C images (those
are shifts of kind ``dataset``, :mod:`classwise.data.shift_sets`): numbers under them are not
comparable with published -C results, and every caption of their tables says so
(:data:`OWN_DEFINITIONS_NOTE`).

Every corruption is one entry of :data:`CORRUPTIONS`. To add one, write a builder that maps
``(severity, (height, width))`` to an albumentations transform and register it::

    @register_corruption("my_blur", description="box blur")
    def _my_blur(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
        k = (3, 3, 5, 5, 7)[severity - 1]
        return A.Blur(blur_limit=(k, k), p=1.0)

The builder receives the image size so that one table of parameters works for 8x8 digits and
for larger images alike. Set ``rgb_only=True`` for transforms that only accept 3-channel input
(grayscale images are then repeated to RGB, transformed and averaged back to one channel).

Determinism: each call builds a fresh transform and seeds it explicitly with
``transform.set_random_seed(seed)`` (albumentations 2.x keeps a private ``numpy.random.Generator``
and ``random.Random`` per transform, independent of global random state), so the same image,
corruption, severity and seed always give the same pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from classwise._extras import import_module
from classwise.errors import InputError
from classwise.shifts.severity import SEVERITIES, check_severity

if TYPE_CHECKING:
    import albumentations as A
    import numpy as np
else:

    class _ImportedOnUse(ModuleType):
        """albumentations, imported when a builder first uses it: the workflow reads the
        registry's names at DAG-build time, and albumentations imports torch (seconds)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(import_module(self.__name__), name)  # names the extra when it is missing

    A = _ImportedOnUse("albumentations")

Builder = Callable[[int, tuple[int, int]], "A.BasicTransform"]


@dataclass(frozen=True)
class Corruption:
    """A named corruption: a builder ``(severity, (H, W)) -> albumentations transform``."""

    name: str
    build: Builder
    rgb_only: bool = False
    description: str = ""

    def transform(self, severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
        """The (unseeded) transform for ``severity`` on images of size ``image_hw``."""
        check_severity(severity)
        return self.build(int(severity), (int(image_hw[0]), int(image_hw[1])))


CORRUPTIONS: dict[str, Corruption] = {}
"""Every known corruption, by name. Add entries with :func:`register_corruption`."""


def register_corruption(name: str, *, rgb_only: bool = False, description: str = "") -> Callable[[Builder], Builder]:
    """Decorator: register ``builder`` under ``name`` in :data:`CORRUPTIONS`."""

    def decorate(builder: Builder) -> Builder:
        CORRUPTIONS[name] = Corruption(name=name, build=builder, rgb_only=rgb_only, description=description)
        return builder

    return decorate


#: What every caption of a table or figure with corruptions made on the fly says: the transforms
#: are albumentations' with classwise's own parameters per severity (a few taken from ImageNet-C),
#: not the published corrupted images.
OWN_DEFINITIONS_NOTE = (
    "The corruptions made on the fly (shifts named after a corruption and its severity, such as gaussian_noise_s3) "
    "are classwise's own albumentations definitions, not the published ImageNet-C or CIFAR-10-C images: their "
    "numbers are not comparable with published -C results."
)


def made_on_the_fly(shift: str) -> bool:
    """Whether ``shift`` names a corruption of this registry made on the fly
    (``gaussian_noise_s3``, as :func:`classwise.shifts.spec.corruption_spec` names it). A
    published corrupted copy is named ``<set>_<corruption>_s<severity>`` after its config entry
    (``cifar10_c_gaussian_noise_s3``): no registry name is an entry key joined to a corruption of
    CIFAR-10-C or ImageNet-C, so none matches. Only a published set whose own config key reads
    like one (an ImageNet-R entry named ``snow_s3``) would be taken for one."""
    corruption, separator, severity = shift.rpartition("_s")
    return bool(separator) and corruption in CORRUPTIONS and severity.isdigit() and int(severity) in SEVERITIES


def own_definitions_note(shifts: Iterable[str]) -> str:
    """:data:`OWN_DEFINITIONS_NOTE` when one of ``shifts`` is :func:`made_on_the_fly`, else ``""``."""
    return OWN_DEFINITIONS_NOTE if any(made_on_the_fly(shift) for shift in shifts) else ""


def _pick(table: Sequence[Any], severity: int) -> Any:
    return table[severity - 1]


def _size_factor(image_hw: tuple[int, int], reference: int = 32) -> float:
    """1 for images up to ``reference`` pixels, growing as sqrt(size / reference) above."""
    return max(1.0, math.sqrt(min(image_hw) / reference))


def _odd(value: float) -> int:
    k = max(1, int(round(value)))
    return k if k % 2 == 1 else k + 1


# --------------------------------------------------------------------------- the registry


@register_corruption("gaussian_noise", description="additive Gaussian noise, std 0.08-0.38 of the range")
def _gaussian_noise(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    std = _pick((0.08, 0.12, 0.18, 0.26, 0.38), severity)  # ImageNet-C
    return A.GaussNoise(std_range=(std, std), mean_range=(0.0, 0.0), per_channel=True, p=1.0)


@register_corruption("gaussian_blur", description="Gaussian blur, sigma 0.4-1.0 px (x sqrt(size/32) above 32 px)")
def _gaussian_blur(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    sigma = _pick((0.4, 0.55, 0.7, 0.85, 1.0), severity) * _size_factor(image_hw)
    kernel = _odd(2 * math.ceil(2 * sigma) + 1)  # covers +-2 sigma: 3 px at sigma 0.4, 5 px at 1.0
    return A.GaussianBlur(blur_limit=(kernel, kernel), sigma_limit=(sigma, sigma), p=1.0)


@register_corruption("rain", rgb_only=True, description="rain streaks (drizzle to torrential), darkened")
def _rain(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    height = image_hw[0]
    rain_type = _pick(("drizzle", "drizzle", "default", "heavy", "torrential"), severity)
    length_fraction = _pick((0.1, 0.2, 0.35, 0.2, 0.25), severity)
    drop_length = int(min(max(1, round(length_fraction * height)), max(1, height - 1)))
    blur = 1 if height < 32 else _odd(height / 32)
    return A.RandomRain(
        slant_range=(-10.0, 10.0),
        drop_length=drop_length,
        drop_width=max(1, round(height / 128)),
        drop_color=(200, 200, 200),
        blur_value=blur,
        brightness_coefficient=_pick((0.95, 0.9, 0.85, 0.8, 0.75), severity),
        rain_type=rain_type,
        p=1.0,
    )


@register_corruption("snow", rgb_only=True, description="snow texture overlay and brightening")
def _snow(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    point = _pick((0.2, 0.3, 0.35, 0.4, 0.45), severity)
    from classwise.shifts.custom_transforms import ClippedRandomSnow

    return ClippedRandomSnow(snow_point_range=(point, point), brightness_coeff=2.0, p=1.0)


@register_corruption("color_jitter", description="random brightness/contrast/saturation (+-0.1-0.5) and hue")
def _color_jitter(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    amount = _pick((0.1, 0.2, 0.3, 0.4, 0.5), severity)
    hue = _pick((0.02, 0.05, 0.1, 0.15, 0.2), severity)
    return A.ColorJitter(brightness=amount, contrast=amount, saturation=amount, hue=hue, p=1.0)


@register_corruption("contrast_decrease", description="contrast towards the mean, factor 0.5-0.1")
def _contrast_decrease(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    factor = _pick((0.5, 0.4, 0.3, 0.2, 0.1), severity)
    return A.ColorJitter(brightness=(1.0, 1.0), contrast=(factor, factor), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0)


@register_corruption("contrast_increase", description="contrast away from the mean, factor 1.5-4, clipped")
def _contrast_increase(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    factor = _pick((1.5, 2.0, 2.5, 3.0, 4.0), severity)
    return A.ColorJitter(brightness=(1.0, 1.0), contrast=(factor, factor), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0)


@register_corruption("vertical_flip", description="upside-down flip of 20%-100% of the images")
def _vertical_flip(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    return A.VerticalFlip(p=_pick((0.2, 0.4, 0.6, 0.8, 1.0), severity))


@register_corruption("horizontal_flip", description="mirror flip of 20%-100% of the images")
def _horizontal_flip(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    return A.HorizontalFlip(p=_pick((0.2, 0.4, 0.6, 0.8, 1.0), severity))


@register_corruption("randomize_pixels", description="each pixel replaced by uniform noise with p 0.05-0.5")
def _randomize_pixels(severity: int, image_hw: tuple[int, int]) -> A.BasicTransform:
    from classwise.shifts.custom_transforms import RandomizePixels

    return RandomizePixels(probability=_pick((0.05, 0.1, 0.2, 0.3, 0.5), severity), p=1.0)


# --------------------------------------------------------------------------- applying them


def get_corruption(name: str) -> Corruption:
    try:
        return CORRUPTIONS[name]
    except KeyError:
        raise InputError(f"unknown corruption {name!r}; known: {sorted(CORRUPTIONS)}", field="corruption") from None


def corrupt_image(image: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    """Corrupt one ``(H, W, C)`` float32 image in ``[0, 1]`` (C = 1 or 3).

    Returns a new array of the same shape and dtype, clipped to ``[0, 1]``. Deterministic in
    ``(image, name, severity, seed)``.
    """
    # numpy here, not above: every caption imports this module for its note (own_definitions_note)
    import numpy as np

    corruption = get_corruption(name)
    check_severity(severity)
    array = np.asarray(image)
    if array.ndim != 3 or array.shape[2] not in (1, 3):
        raise InputError(f"expected an (H, W, C) image with C = 1 or 3, got shape {array.shape}", field="image")
    if array.dtype != np.float32:
        raise InputError(f"expected a float32 image, got dtype {array.dtype}", field="image")
    channels = array.shape[2]
    work = np.ascontiguousarray(array)
    if corruption.rgb_only and channels == 1:
        work = np.ascontiguousarray(np.repeat(work, 3, axis=2))
    transform = corruption.transform(severity, array.shape[:2])
    transform.set_random_seed(int(seed))
    out = np.asarray(transform(image=work)["image"], dtype=np.float32)
    if out.ndim == 2:
        out = out[..., None]
    if corruption.rgb_only and channels == 1:
        out = out.mean(axis=2, keepdims=True, dtype=np.float32)
    if out.shape != array.shape:  # pragma: no cover - a builder changed the geometry
        raise InputError(
            f"corruption {name!r} changed the image shape from {array.shape} to {out.shape}",
            field="corruption",
        )
    return np.clip(out, 0.0, 1.0).astype(np.float32, copy=False)


def corrupt_batch(images: np.ndarray, name: str, severity: int, seeds: Sequence[int]) -> np.ndarray:
    """Corrupt ``(N, C, H, W)`` float32 images, image ``i`` seeded with ``seeds[i]``."""
    import numpy as np

    array = np.asarray(images)
    if array.ndim != 4:
        raise InputError(f"expected (N, C, H, W) images, got shape {array.shape}", field="images")
    if len(seeds) != array.shape[0]:
        raise InputError(f"got {len(seeds)} seeds for {array.shape[0]} images", field="seeds")
    array = array.astype(np.float32, copy=False)
    out = np.empty_like(array)
    for i, seed in enumerate(seeds):
        hwc = np.ascontiguousarray(array[i].transpose(1, 2, 0))
        out[i] = corrupt_image(hwc, name, severity, int(seed)).transpose(2, 0, 1)
    return out
