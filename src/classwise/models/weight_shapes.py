"""The shapes of the tensors a weights file holds, read without torch (the workflow asks at
DAG-build time), and which of them is the classifier head.

A ``.safetensors`` file states its shapes in its JSON header; a ``torch.save`` file's pickle is
rebuilt with inert stand-ins (:func:`classwise.models.pickled.saved_object`), its tensors as
their shapes. The weights are found where :func:`classwise.models.state_dicts.read_state_dict`
finds them (nested under a training script's key, prefixed by DataParallel or torch.compile):
both use :func:`unwrap_state_dict` and :func:`strip_prefixes`.
"""

from __future__ import annotations

import functools
import json
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from classwise.models.pickled import SavedTensor, saved_object

__all__ = [
    "PREFIXES",
    "WRAPPER_KEYS",
    "ClassifierHead",
    "classifier_head",
    "strip_prefixes",
    "tensor_shapes",
    "unwrap_state_dict",
]

WRAPPER_KEYS = ("state_dict_ema", "model_ema", "state_dict", "model", "net")
"""Common keys under which training scripts nest the weights (tried in this order)."""
PREFIXES = ("module.", "_orig_mod.")
"""Prefixes added by DataParallel/DistributedDataParallel and torch.compile."""

#: The root-level modules that timm and torchvision name their classifier heads (ResNet's fc,
#: DenseNet's classifier, ViT's heads.head, Swin's head, timm's head.fc, head.l, head.linear, ...).
_NAMED_HEADS = (
    "fc",
    "head",
    "classifier",
    "last_linear",
    "heads.head",
    "head.fc",
    "head.l",
    "head.linear",
    "head.head.l",
    "head.fc2",
    "head.fc.fc2",
    "head.classifier.linear",
)
#: A root-level sequence whose last layer is the head: classifier.6 of AlexNet and VGG,
#: classifier.1 of EfficientNet, a classwise demo model's 10.
_SEQUENCE_HEAD = re.compile(r"^(?:(classifier|head|head\.classifier|heads)\.)?(\d+)\.weight$")
#: The safetensors header: its length as a little-endian unsigned 64-bit integer, then JSON.
_SAFETENSORS_LENGTH = struct.Struct("<Q")
_SAFETENSORS_MAX_HEADER = 100 * 1024 * 1024


def unwrap_state_dict(payload: Any, is_tensor: Callable[[Any], bool]) -> Any:
    """The state dict inside ``payload``: under the first of :data:`WRAPPER_KEYS` that holds a
    non-empty mapping of tensors (``is_tensor`` tells one), else ``payload`` itself."""
    if isinstance(payload, Mapping):
        for key in WRAPPER_KEYS:
            inner = payload.get(key)
            if isinstance(inner, Mapping) and inner and all(is_tensor(v) for v in inner.values()):
                return inner
    return payload


def strip_prefixes(state: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` without a prefix of :data:`PREFIXES` that every key carries."""
    stripped = dict(state)
    for prefix in PREFIXES:
        if stripped and all(key.startswith(prefix) for key in stripped):
            stripped = {key[len(prefix) :]: value for key, value in stripped.items()}
    return stripped


def tensor_shapes(path: str | Path) -> dict[str, tuple[int, ...]] | None:
    """Parameter name -> shape of the weights in ``path`` (a ``.safetensors`` file, or a
    ``torch.save`` of a state dict, nested and prefixed as :func:`read_state_dict` accepts);
    None when the file holds no such thing or cannot be read without torch."""
    source = Path(path)
    try:
        stat = source.stat()
    except OSError:
        return None
    return _shapes(str(source), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _shapes(path: str, mtime: int, size: int) -> dict[str, tuple[int, ...]] | None:
    """Read once per version of the file (the plan asks once per model and once per dataset)."""
    if path.endswith(".safetensors"):
        return _safetensors_shapes(Path(path))
    state = unwrap_state_dict(saved_object(path), lambda value: isinstance(value, SavedTensor))
    if not isinstance(state, Mapping) or not state or not all(isinstance(v, SavedTensor) for v in state.values()):
        return None
    return {str(key): tensor.shape for key, tensor in strip_prefixes(state).items()}


def _safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]] | None:
    try:
        with open(path, "rb") as handle:
            (length,) = _SAFETENSORS_LENGTH.unpack(handle.read(_SAFETENSORS_LENGTH.size))
            if length > _SAFETENSORS_MAX_HEADER:
                return None
            header = json.loads(handle.read(length))
        shapes = {str(key): tuple(int(d) for d in entry["shape"]) for key, entry in header.items() if key != "__metadata__"}
    except (OSError, struct.error, ValueError, TypeError, KeyError, AttributeError):
        return None  # not a safetensors file: the job that loads it says so
    return strip_prefixes(shapes) or None


@dataclass(frozen=True)
class ClassifierHead:
    """The weight of a model's classifier head in a weights file: one row per class scored."""

    key: str
    shape: tuple[int, ...]

    @property
    def classes(self) -> int:
        return self.shape[0]

    def shape_for(self, classes: int) -> tuple[int, ...]:
        """The shape this weight has in the same model built for ``classes`` classes."""
        return (int(classes), *self.shape[1:])


def classifier_head(shapes: Mapping[str, tuple[int, ...]] | None) -> ClassifierHead | None:
    """The classifier head's weight among ``shapes`` (:func:`tensor_shapes`): a root-level module
    named as timm and torchvision name their heads (:data:`_NAMED_HEADS`), or the last layer of a
    root-level sequence (``classifier.6``, ``10``). None when there is none, or when candidates
    disagree on the class count: then no head can be told apart and nothing is checked before
    the job (which compares every tensor with the built model)."""
    if not shapes:
        return None
    found = {f"{name}.weight": shapes[f"{name}.weight"] for name in _NAMED_HEADS if shapes.get(f"{name}.weight")}
    last: dict[str, tuple[int, str]] = {}  # sequence -> (its highest index, that layer's key)
    for key, shape in shapes.items():
        match = _SEQUENCE_HEAD.match(key)
        if match and shape:
            sequence, index = match.group(1) or "", int(match.group(2))
            if sequence not in last or index > last[sequence][0]:
                last[sequence] = (index, key)
    found.update({key: shapes[key] for _, key in last.values()})
    if len({shape[0] for shape in found.values()}) != 1:
        return None
    key = next(iter(found))
    return ClassifierHead(key, tuple(found[key]))
