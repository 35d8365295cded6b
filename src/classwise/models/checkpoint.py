"""Model checkpoints: the weights plus everything needed to rebuild the model."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from classwise.atomic import atomic_path
from classwise.errors import InputError
from classwise.models.architectures import build_model
from classwise.models.state_dicts import check_fits, read_marked_payload

CHECKPOINT_FORMAT = "classwise-checkpoint"
CHECKPOINT_VERSION = 1
_METADATA_KEYS = ("architecture", "n_classes", "input_shape", "options", "class_names", "extra")


def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    *,
    architecture: str,
    n_classes: int,
    input_shape: Sequence[int],
    options: dict[str, Any],
    class_names: Sequence[str],
    extra: dict[str, Any],
) -> None:
    """Write ``model``'s weights (moved to CPU) and its metadata to ``path``, atomically and
    deterministically (the same model and metadata give the same bytes).

    ``options`` are the keyword options passed to :func:`build_model`; ``extra`` is free-form,
    JSON-like metadata (numbers, strings, lists, dicts) such as a training summary.
    """
    payload = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "architecture": str(architecture),
        "n_classes": int(n_classes),
        "input_shape": [int(v) for v in input_shape],
        "options": plain_metadata(dict(options), field="options"),
        "class_names": [str(name) for name in class_names],
        "extra": plain_metadata(dict(extra), field="extra"),
        "state_dict": {key: value.detach().cpu().clone() for key, value in model.state_dict().items()},
    }
    save_payload(path, payload)


def save_payload(path: str | Path, payload: dict[str, Any]) -> None:
    """``torch.save`` a checkpoint dict to ``path``, atomically and deterministically (the same
    payload gives the same bytes)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        # Through a handle, not the path: torch.save names the zip's root folder after a path
        # (here the random temporary name), which would make two runs' checkpoints differ.
        torch.save(payload, handle)


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> tuple[nn.Module, dict[str, Any]]:
    """Rebuild the model saved at ``path`` (in eval mode) and return it with its metadata.

    The metadata holds ``architecture``, ``n_classes``, ``input_shape`` (a tuple), ``options``,
    ``class_names`` (a tuple) and ``extra``. A missing or unreadable file, or weights that do not
    fit the architecture, raise :class:`InputError` naming the file.
    """
    source = Path(path)
    payload = read_marked_payload(
        source,
        format_marker=CHECKPOINT_FORMAT,
        version=CHECKPOINT_VERSION,
        required=(*_METADATA_KEYS, "state_dict"),
        name="classwise checkpoint",
        short="checkpoint",
        rule=None,  # the train rule writes it, and so may the user (source: checkpoint)
        instead="save it with classwise.models.checkpoint.save_checkpoint (model.state_dict() plus the architecture)",
    )
    metadata = {key: payload[key] for key in _METADATA_KEYS}
    metadata["input_shape"] = tuple(int(v) for v in metadata["input_shape"])
    metadata["class_names"] = tuple(metadata["class_names"])
    try:
        model = build_model(
            metadata["architecture"],
            n_classes=int(metadata["n_classes"]),
            input_shape=metadata["input_shape"],
            **metadata["options"],
        )
    except InputError as exc:
        raise InputError(f"cannot rebuild the model: {exc}", path=source, field=exc.field) from None
    check_fits(model, payload["state_dict"], source, what=f"architecture {type(model).__name__}")
    model.load_state_dict(payload["state_dict"])
    model.to(map_location)
    model.eval()
    return model, metadata


def plain_metadata(value: Any, *, field: str) -> Any:
    """Checkpoint metadata as JSON-like values (tuples become lists, numpy and torch scalars
    Python numbers, keys strings), so the payload loads with ``weights_only=True``; anything
    else raises :class:`InputError` naming ``field``."""
    if isinstance(value, dict):
        return {str(k): plain_metadata(v, field=field) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_metadata(v, field=field) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return value.item()
    raise InputError(f"checkpoint metadata must be JSON-like; got {type(value).__name__}", field=field)
