"""Put a model's input normalisation inside the model, so that it takes ``[0, 1]`` images."""

from __future__ import annotations

import torch
from torch import nn

from classwise.models.architectures import Normalize
from classwise.models.data_config import DataConfig

__all__ = ["PixelSpaceModel", "wrap_pixel_space"]


class PixelSpaceModel(nn.Module):
    """``model((x - mean) / std)`` for ``[0, 1]`` images ``x`` of shape ``(N, C, H, W)``.

    Attacks (PGD's eps-ball and clipping) and corruptions then work in pixel space, as for the
    demo models. The constants are buffers, so ``.to(device)`` moves them with the model.
    ``data_config`` is kept as an attribute for reference.
    """

    def __init__(self, model: nn.Module, data_config: DataConfig):
        super().__init__()
        channels = data_config.input_size[0]
        self.normalize = Normalize(data_config.mean, data_config.std, channels)
        self.model = model
        self.data_config = data_config

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(self.normalize(x))


def wrap_pixel_space(model: nn.Module, data_config: DataConfig) -> PixelSpaceModel:
    """``model`` wrapped by :class:`PixelSpaceModel`, in eval mode."""
    wrapped = PixelSpaceModel(model, data_config)
    wrapped.eval()
    return wrapped
