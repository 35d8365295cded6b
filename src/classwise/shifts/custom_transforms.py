"""Corruptions that albumentations lacks or gets wrong, as albumentations transforms; the
registry in :mod:`classwise.shifts.corruptions` builds them."""

from __future__ import annotations

from typing import Any

import albumentations as A
import cv2
import numpy as np
from albucore import uint8_io
from albumentations.core.transforms_interface import BaseTransformInitSchema
from pydantic import Field


class RandomizePixels(A.ImageOnlyTransform):
    """Replace each pixel, with probability ``probability``, by uniform noise (per channel)."""

    class InitSchema(BaseTransformInitSchema):
        probability: float = Field(ge=0, le=1)

    def __init__(self, probability: float = 0.1, p: float = 1.0):
        super().__init__(p=p)
        self.probability = probability

    def get_params_dependent_on_data(self, params: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        image = data["image"]
        height, width = image.shape[:2]
        channels = image.shape[2] if image.ndim == 3 else 1
        mask = self.random_generator.random((height, width)) < self.probability
        noise = self.random_generator.random((height, width, channels), dtype=np.float32)
        return {"mask": mask, "noise": noise}

    def apply(self, img: np.ndarray, mask: np.ndarray, noise: np.ndarray, **params: Any) -> np.ndarray:
        out = img.copy()
        values = noise if img.ndim == 3 else noise[..., 0]
        if img.dtype == np.uint8:
            values = np.round(values * 255).astype(np.uint8)
        out[mask] = values[mask].astype(img.dtype)
        return out

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("probability",)


# OpenCV stores 8-bit hue in [0, 180): it is an angle, so it wraps rather than saturates.
_HUE_PERIOD_UINT8 = 180.0


@uint8_io
def _add_snow_texture_clipped(
    img: np.ndarray,
    snow_point: float,
    brightness_coeff: float,
    snow_texture: np.ndarray,
    sparkle_mask: np.ndarray,
) -> np.ndarray:
    """albumentations 2.0.8's ``add_snow_texture`` with its HSV sums kept in range.

    Upstream adds the snow layer to all three HSV channels in float and casts to uint8
    without clipping, so a bright pixel (V + snow > 255) wraps round to near black. Here
    saturation and value saturate at [0, 255] and hue wraps modulo 180 (what OpenCV's
    HSV2RGB does for hue codes 180-255 anyway), so the output equals upstream's wherever
    upstream did not overflow.
    """
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV).astype(np.float32)
    hsv[:, :, 2] = np.clip(hsv[:, :, 2] * (1 + brightness_coeff * snow_point), 0, 255)
    texture = cv2.GaussianBlur(snow_texture, (0, 0), sigmaX=1, sigmaY=1)
    texture = texture * np.linspace(1, 0.2, img.shape[0])[:, np.newaxis]  # more snow at the top
    snowy = hsv + (np.dstack([texture] * 3) * 255 * snow_point).astype(np.float32)
    blue_tint = np.array((0.6, 0.75, 1.0), dtype=np.float32)
    snowy = 0.85 * snowy + 0.15 * snow_point * blue_tint
    snowy[:, :, 0] = np.mod(snowy[:, :, 0], _HUE_PERIOD_UINT8)
    snowy[:, :, 1:] = np.clip(snowy[:, :, 1:], 0, 255)
    rgb = cv2.cvtColor(snowy.astype(np.uint8), cv2.COLOR_HSV2RGB)
    rgb[sparkle_mask] = 255
    return rgb


class ClippedRandomSnow(A.RandomSnow):
    """``A.RandomSnow(method="texture")`` without the uint8 wrap-around of bright pixels.

    Draws the same random parameters as upstream (same seed, same snow texture and sparkles);
    only :func:`_add_snow_texture_clipped` replaces upstream's blending.
    """

    def __init__(
        self,
        snow_point_range: tuple[float, float] = (0.1, 0.3),
        brightness_coeff: float = 2.5,
        p: float = 0.5,
    ):
        super().__init__(snow_point_range=snow_point_range, brightness_coeff=brightness_coeff, method="texture", p=p)

    def apply(
        self,
        img: np.ndarray,
        snow_point: float,
        snow_texture: np.ndarray,
        sparkle_mask: np.ndarray,
        **params: Any,
    ) -> np.ndarray:
        return _add_snow_texture_clipped(img, snow_point, self.brightness_coeff, snow_texture, sparkle_mask)

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("snow_point_range", "brightness_coeff")
