"""Demo classifiers: architectures, deterministic training and checkpoints."""

from classwise.models.architectures import ARCHITECTURES, architecture_options, build_model
from classwise.models.checkpoint import load_checkpoint, save_checkpoint
from classwise.models.training import train_model

__all__ = [
    "ARCHITECTURES",
    "architecture_options",
    "build_model",
    "load_checkpoint",
    "save_checkpoint",
    "train_model",
]
