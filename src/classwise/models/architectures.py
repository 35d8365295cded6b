"""Small image classifiers for the demo. Every model takes ``[0, 1]`` images ``(N, C, H, W)``
and normalises them itself, so attacks and corruptions work in pixel space."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from classwise.errors import InputError, check_count


class Normalize(nn.Module):
    """``(x - mean) / std`` per input channel, with the constants stored as buffers."""

    mean: torch.Tensor  # (1, C, 1, 1) buffers, registered in __init__
    std: torch.Tensor

    def __init__(self, mean: float | Sequence[float], std: float | Sequence[float], channels: int):
        super().__init__()
        mean_t = _per_channel(mean, channels, "mean")
        std_t = _per_channel(std, channels, "std")
        if (std_t <= 0).any():
            raise InputError(f"std must be positive, got {std!r}", field="std")
        self.register_buffer("mean", mean_t.view(1, channels, 1, 1))
        self.register_buffer("std", std_t.view(1, channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


def _per_channel(value: float | Sequence[float], channels: int, name: str) -> torch.Tensor:
    if isinstance(value, bool):  # an int to Python, but never a meant mean or std
        raise InputError(f"expected one number or {channels} numbers, got {value!r}", field=name)
    if isinstance(value, (int, float)):
        return torch.full((channels,), float(value))
    values = [float(v) for v in value]
    if len(values) != channels:
        raise InputError(f"expected one value or {channels} values, got {len(values)}", field=name)
    return torch.tensor(values)


def _check_int_list(values: Sequence[int], name: str, *, allow_empty: bool) -> list[int]:
    if isinstance(values, (int, str)) or not isinstance(values, Sequence):
        raise InputError(f"expected a list of positive integers, got {values!r}", field=name)
    out = list(values)
    if (not out and not allow_empty) or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in out):
        raise InputError(f"expected a list of positive integers, got {values!r}", field=name)
    return out


def _check_dropout(dropout: float) -> float:
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
        raise InputError(f"expected a number in [0, 1), got {dropout!r}", field="dropout")
    return float(dropout)


def _linear(*, n_classes: int, input_shape: tuple[int, int, int], mean: Any = 0.5, std: Any = 0.5) -> nn.Module:
    """Multinomial logistic regression on the flattened pixels."""
    c, h, w = input_shape
    return nn.Sequential(Normalize(mean, std, c), nn.Flatten(), nn.Linear(c * h * w, n_classes))


def _mlp(
    *,
    n_classes: int,
    input_shape: tuple[int, int, int],
    hidden: Sequence[int] = (64,),
    dropout: float = 0.0,
    mean: Any = 0.5,
    std: Any = 0.5,
) -> nn.Module:
    """Fully connected ReLU network with the given hidden sizes."""
    c, h, w = input_shape
    sizes = _check_int_list(hidden, "hidden", allow_empty=True)
    dropout = _check_dropout(dropout)
    layers: list[nn.Module] = [Normalize(mean, std, c), nn.Flatten()]
    width = c * h * w
    for size in sizes:
        layers += [nn.Linear(width, size), nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(dropout))
        width = size
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def _cnn(
    *,
    n_classes: int,
    input_shape: tuple[int, int, int],
    channels: Sequence[int] = (16, 32),
    hidden: int = 64,
    dropout: float = 0.0,
    mean: Any = 0.5,
    std: Any = 0.5,
) -> nn.Module:
    """3x3 conv + ReLU blocks, each followed by 2x2 max pooling while the image is >= 2 px,
    then one hidden fully connected layer."""
    c, h, w = input_shape
    widths = _check_int_list(channels, "channels", allow_empty=False)
    hidden = check_count(hidden, "hidden")
    dropout = _check_dropout(dropout)
    layers: list[nn.Module] = [Normalize(mean, std, c)]
    in_ch, cur_h, cur_w = c, h, w
    for width in widths:
        layers += [nn.Conv2d(in_ch, width, kernel_size=3, padding=1), nn.ReLU()]
        if cur_h >= 2 and cur_w >= 2:
            layers.append(nn.MaxPool2d(2))
            cur_h, cur_w = cur_h // 2, cur_w // 2
        in_ch = width
    layers += [nn.Flatten(), nn.Linear(in_ch * cur_h * cur_w, hidden), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(hidden, n_classes))
    return nn.Sequential(*layers)


ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {"linear": _linear, "mlp": _mlp, "cnn": _cnn}
"""Known architectures by name; each builder takes ``n_classes``, ``input_shape`` and options."""


def architecture_options(architecture: str) -> dict[str, Any]:
    """The options an architecture accepts, with their defaults."""
    builder = _builder(architecture)
    return {
        name: param.default
        for name, param in inspect.signature(builder).parameters.items()
        if name not in ("n_classes", "input_shape")
    }


def _builder(architecture: str) -> Callable[..., nn.Module]:
    try:
        return ARCHITECTURES[architecture]
    except (KeyError, TypeError):
        raise InputError(f"unknown architecture {architecture!r}; known: {sorted(ARCHITECTURES)}", field="architecture") from None


def build_model(
    architecture: str,
    *,
    n_classes: int,
    input_shape: tuple[int, int, int],
    seed: int | None = 0,
    **options: Any,
) -> nn.Module:
    """A fresh model for ``[0, 1]`` images of shape ``input_shape = (C, H, W)``.

    The initial weights are drawn from ``torch.manual_seed(seed)`` inside
    :func:`torch.random.fork_rng`, so they are reproducible (default seed 0) and the global torch
    random state is left untouched; ``seed=None`` draws them from the global state instead.
    Unknown architectures or options raise :class:`InputError`.
    Options: ``linear``: mean, std; ``mlp``: hidden (list of sizes, default [64]), dropout, mean,
    std; ``cnn``: channels (default [16, 32]), hidden (default 64), dropout, mean, std.
    """
    builder = _builder(architecture)
    n_classes = check_count(n_classes, "n_classes")
    shape = tuple(input_shape)
    if len(shape) != 3 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in shape):
        raise InputError(f"expected (channels, height, width), got {input_shape!r}", field="input_shape")
    allowed = architecture_options(architecture)
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(
            f"unknown option(s) {unknown} for architecture {architecture!r}; known: {sorted(allowed)}",
            field=unknown[0],
        )
    if seed is None:
        return builder(n_classes=n_classes, input_shape=shape, **options)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return builder(n_classes=n_classes, input_shape=shape, **options)
