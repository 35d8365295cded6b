"""Models: the demo architectures, deterministic training and checkpoints, and the model zoo.

The names below are imported on first use, so that the workflow's DAG build (which reads
checkpoint files with :mod:`classwise.models.pickled`) does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from classwise._extras import import_module

if TYPE_CHECKING:
    from classwise.models.architectures import ARCHITECTURES, architecture_options, build_model
    from classwise.models.checkpoint import load_checkpoint, save_checkpoint
    from classwise.models.hyperparameters import Hyperparameters
    from classwise.models.training import train_model

_LAZY = {
    "ARCHITECTURES": "classwise.models.architectures",
    "architecture_options": "classwise.models.architectures",
    "build_model": "classwise.models.architectures",
    "load_checkpoint": "classwise.models.checkpoint",
    "save_checkpoint": "classwise.models.checkpoint",
    "Hyperparameters": "classwise.models.hyperparameters",
    "train_model": "classwise.models.training",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)  # names the extra when torch & co. are missing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
