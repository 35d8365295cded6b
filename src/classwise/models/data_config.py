"""A model's evaluation preprocessing (:class:`DataConfig`) and the function that applies it.

The configuration is always *resolved from the model's own metadata* (timm's ``pretrained_cfg``
through ``timm.data.resolve_data_config``, torchvision's ``weights.transforms()``, RobustBench's
preprocessing name), never hard-coded, and is stored next to the outputs (:meth:`DataConfig.to_dict`).

:func:`preprocess_image` does the geometric part only -- resize and crop, as timm's
``transforms_imagenet_eval`` does -- and returns a float tensor in ``[0, 1]``. Normalisation by
``mean``/``std`` happens inside the model (:class:`classwise.models.wrapper.PixelSpaceModel`), so
that attacks and corruptions work in pixel space.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as F

from classwise.errors import InputError

__all__ = ["CROP_MODES", "DataConfig", "preprocess_batch", "preprocess_image"]

CROP_MODES = ("center", "squash", "border", "none")
"""``center``: resize the shorter edge, centre-crop (timm's default); ``squash``: resize both edges
(aspect ratio not kept), centre-crop; ``border``: fit the longer edge, pad with the mean colour;
``none``: no resize, centre-crop (or pad) to the input size."""


@dataclass(frozen=True)
class DataConfig:
    """Evaluation preprocessing of a model.

    ``input_size`` is ``(C, H, W)`` as the model sees it; ``resize_size`` the ``(H, W)`` the
    image is scaled to before the crop (``None``: no resize); ``crop_pct`` the input/resize
    ratio as timm reports it; ``interpolation`` a torchvision ``InterpolationMode`` value
    (``bilinear``, ``bicubic``, ...); ``mean``/``std`` the per-channel normalisation the model's
    weights expect (applied inside the wrapped model); ``origin`` says where it was resolved from.
    """

    input_size: tuple[int, int, int]
    interpolation: str
    crop_pct: float
    crop_mode: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    resize_size: tuple[int, int] | None
    origin: str = ""

    def __post_init__(self) -> None:
        size = tuple(int(v) for v in self.input_size)
        if len(size) != 3 or min(size) < 1:
            raise InputError(f"expected (channels, height, width), got {self.input_size!r}", field="input_size")
        if self.crop_mode not in CROP_MODES:
            raise InputError(f"expected one of {list(CROP_MODES)}, got {self.crop_mode!r}", field="crop_mode")
        try:
            InterpolationMode(self.interpolation)
        except ValueError:
            known = [mode.value for mode in InterpolationMode]
            raise InputError(f"expected one of {known}, got {self.interpolation!r}", field="interpolation") from None
        for name in ("mean", "std"):
            values = tuple(float(v) for v in getattr(self, name))
            if len(values) != size[0]:
                raise InputError(f"expected {size[0]} values (one per channel), got {values}", field=name)
            object.__setattr__(self, name, values)
        if min(self.std) <= 0:
            raise InputError(f"expected positive values, got {self.std}", field="std")
        if not (isinstance(self.crop_pct, (int, float)) and 0 < self.crop_pct <= 4):
            raise InputError(f"expected a number in (0, 4], got {self.crop_pct!r}", field="crop_pct")
        object.__setattr__(self, "input_size", size)
        object.__setattr__(self, "crop_pct", float(self.crop_pct))
        if self.resize_size is not None:
            resize = tuple(int(v) for v in self.resize_size)
            if len(resize) != 2 or min(resize) < 1:
                raise InputError(f"expected (height, width) or null, got {self.resize_size!r}", field="resize_size")
            object.__setattr__(self, "resize_size", resize)
        if (self.crop_mode == "none") != (self.resize_size is None):
            raise InputError(
                f"crop_mode 'none' goes with resize_size null and every other mode with a size; got crop_mode "
                f"{self.crop_mode!r} and resize_size {self.resize_size!r}",
                field="resize_size",
            )

    @property
    def decoding(self) -> tuple[Any, ...]:
        """What :func:`preprocess_image` reads of it: configs with the same decoding make the same
        image tensors from an image (the normalisation is inside the model, ``origin`` a note), so
        one decode feeds every model of such configs."""
        fill = self.mean if self.crop_mode == "border" else None
        return (self.input_size, self.interpolation, self.crop_mode, self.resize_size, fill)

    @classmethod
    def from_timm(cls, config: Mapping[str, Any], *, origin: str = "") -> DataConfig:
        """From the dict that ``timm.data.resolve_data_config`` returns; ``resize_size`` follows
        timm's ``transforms_imagenet_eval`` (``floor(size / crop_pct)`` per edge)."""
        size = tuple(int(v) for v in config["input_size"])
        if len(size) != 3:  # the message __post_init__ gives
            raise InputError(f"expected (channels, height, width), got {size!r}", field="input_size")
        channels, height, width = size
        crop_pct = float(config.get("crop_pct") or 0.875)
        crop_mode = str(config.get("crop_mode") or "center")
        resize = (math.floor(height / crop_pct), math.floor(width / crop_pct))
        return cls(
            input_size=(channels, height, width),
            interpolation=str(config.get("interpolation") or "bilinear"),
            crop_pct=crop_pct,
            crop_mode=crop_mode,
            mean=tuple(config["mean"]),
            std=tuple(config["std"]),
            resize_size=resize,
            origin=origin,
        )

    @classmethod
    def from_torchvision(cls, transform: Any, *, channels: int = 3, origin: str = "") -> DataConfig:
        """From torchvision's ``weights.transforms()`` (an ``ImageClassification`` preset:
        resize the shorter edge to ``resize_size``, centre-crop ``crop_size``)."""
        crop = [int(v) for v in transform.crop_size]
        crop_h, crop_w = (crop[0], crop[0]) if len(crop) == 1 else (crop[0], crop[1])
        resize = [int(v) for v in transform.resize_size]
        if len(resize) == 1:
            resize_size, crop_mode = (resize[0], resize[0]), "center"
        else:
            resize_size, crop_mode = (resize[0], resize[1]), "squash"
        interpolation = transform.interpolation
        return cls(
            input_size=(channels, crop_h, crop_w),
            interpolation=getattr(interpolation, "value", str(interpolation)),
            crop_pct=min(crop_h, crop_w) / min(resize_size),
            crop_mode=crop_mode,
            mean=tuple(transform.mean),
            std=tuple(transform.std),
            resize_size=resize_size,
            origin=origin,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DataConfig:
        """Inverse of :meth:`to_dict`; unknown or missing keys raise :class:`InputError`."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"unknown key(s) {unknown}; known: {sorted(known)}", field=f"data_config.{unknown[0]}")
        missing = sorted(known - set(data) - {"origin"})
        if missing:
            raise InputError("missing key", field=f"data_config.{missing[0]}")
        values = dict(data)
        values["input_size"] = tuple(values["input_size"])
        if values["resize_size"] is not None:
            values["resize_size"] = tuple(values["resize_size"])
        return cls(**values)

    def replace(self, **overrides: Any) -> DataConfig:
        """A copy with some fields replaced. Unless ``resize_size`` is given, it is recomputed
        (timm's rule, ``floor(edge / crop_pct)``) when ``input_size``, ``crop_pct`` or
        ``crop_mode`` change, and is null for ``crop_mode: none``."""
        values = asdict(self)
        values.update(overrides)
        values["input_size"] = tuple(values["input_size"])
        if "resize_size" not in overrides:
            if values["crop_mode"] == "none":
                values["resize_size"] = None
            elif {"input_size", "crop_pct", "crop_mode"} & set(overrides):
                values["resize_size"] = tuple(
                    math.floor(int(edge) / float(values["crop_pct"])) for edge in values["input_size"][1:]
                )
        return DataConfig(**values)


ImageLike = Image.Image | np.ndarray | torch.Tensor


def _as_image(image: ImageLike, channels: int) -> Image.Image | torch.Tensor:
    """PIL images and ``uint8`` ``(H, W[, C])`` arrays -> PIL (timm's reference path); tensors
    ``(C, H, W)`` (``uint8`` or float in ``[0, 1]``) stay tensors."""
    if isinstance(image, Image.Image):
        mode = "RGB" if channels == 3 else "L" if channels == 1 else image.mode
        return image if image.mode == mode else image.convert(mode)
    if isinstance(image, np.ndarray):
        if image.dtype != np.uint8 or image.ndim not in (2, 3):
            raise InputError(
                f"expected a uint8 array of shape (H, W) or (H, W, C), got {image.dtype} {image.shape}", field="image"
            )
        array = image[..., 0] if image.ndim == 3 and image.shape[2] == 1 else image
        return _as_image(Image.fromarray(array), channels)
    if isinstance(image, torch.Tensor):
        if image.ndim != 3 or image.shape[0] not in (1, channels):
            raise InputError(f"expected a (C, H, W) tensor with C = {channels}, got {tuple(image.shape)}", field="image")
        if image.shape[0] == 1 and channels > 1:
            image = image.expand(channels, -1, -1)
        return image
    raise InputError(f"expected a PIL image, a uint8 array or a tensor, got {type(image).__name__}", field="image")


def _size(image: Image.Image | torch.Tensor) -> tuple[int, int]:
    width, height = F.get_image_size(image)
    return height, width


def _resize_keep_ratio(image: Image.Image | torch.Tensor, target: tuple[int, int], longest: float, mode: InterpolationMode):
    """timm's ``ResizeKeepRatio`` (eval): scale so that the shorter (``longest=0``) or longer
    (``longest=1``) edge matches ``target``."""
    height, width = _size(image)
    ratio_h, ratio_w = height / target[0], width / target[1]
    ratio = max(ratio_h, ratio_w) * longest + min(ratio_h, ratio_w) * (1.0 - longest)
    size = [round(height / ratio), round(width / ratio)]
    return F.resize(image, size, interpolation=mode, antialias=True)


def _center_crop_or_pad(image: Image.Image | torch.Tensor, size: tuple[int, int], fill: Sequence[float] | int):
    height, width = _size(image)
    crop_h, crop_w = size
    if crop_h > height or crop_w > width:
        padding = [
            (crop_w - width) // 2 if crop_w > width else 0,
            (crop_h - height) // 2 if crop_h > height else 0,
            (crop_w - width + 1) // 2 if crop_w > width else 0,
            (crop_h - height + 1) // 2 if crop_h > height else 0,
        ]
        image = F.pad(image, padding, fill=fill)
    return F.center_crop(image, [crop_h, crop_w])


def preprocess_image(image: ImageLike, config: DataConfig) -> torch.Tensor:
    """Resize and crop one image as ``config`` says; a float32 ``(C, H, W)`` tensor in ``[0, 1]``.

    Matches timm's ``transforms_imagenet_eval`` (and torchvision's ``ImageClassification``, up to
    PIL-vs-tensor resampling) without its final normalisation. Accepts a PIL image, a ``uint8``
    ``(H, W[, C])`` array or a ``(C, H, W)`` tensor (``uint8``, or float in ``[0, 1]``).
    """
    channels, crop_h, crop_w = config.input_size
    img = _as_image(image, channels)
    mode = InterpolationMode(config.interpolation)
    resize = config.resize_size
    if config.crop_mode == "squash" and resize is not None:
        img = F.resize(img, list(resize), interpolation=mode, antialias=True)
    elif config.crop_mode == "border" and resize is not None:
        img = _resize_keep_ratio(img, resize, 1.0, mode)
    elif config.crop_mode == "center" and resize is not None:
        if resize[0] == resize[1]:
            img = F.resize(img, resize[0], interpolation=mode, antialias=True)
        else:
            img = _resize_keep_ratio(img, resize, 0.0, mode)
    fill: Sequence[float] | int = 0
    if config.crop_mode == "border":
        fill = [round(255 * v) for v in config.mean]
        if isinstance(img, torch.Tensor) and img.is_floating_point():
            fill = [float(v) for v in config.mean]
    img = _center_crop_or_pad(img, (crop_h, crop_w), fill)
    if isinstance(img, Image.Image):
        array = np.asarray(img, dtype=np.uint8)
        if array.ndim == 2:
            array = array[:, :, None]
        return torch.from_numpy(array.copy()).permute(2, 0, 1).float().div_(255.0)
    if img.dtype == torch.uint8:
        return img.float().div_(255.0)
    return img.float().clamp_(0.0, 1.0)


def preprocess_batch(images: Sequence[ImageLike], config: DataConfig) -> torch.Tensor:
    """:func:`preprocess_image` on each image, stacked into ``(N, C, H, W)``."""
    if len(images) == 0:
        return torch.zeros((0, *config.input_size), dtype=torch.float32)
    return torch.stack([preprocess_image(image, config) for image in images])
