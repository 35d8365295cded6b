"""A marginal classifier on frozen features (``source: prototype``): each class is scored by the
cosine similarity between an image's features and the class prototype, the mean feature of
the class's train images.

Why this classifier: accuracy extrapolation (Slavutsky and Benjamini, 2021) assumes a
*marginal* classifier, one whose score for a class does not depend on which other classes are
present. A softmax head trained on all classes is not; a prototype classifier is, since class
``j``'s score involves only prototype ``j``.

Conventions:

- **Features**: the backbone without its classifier head (:func:`strip_head`): timm models through
  their own ``reset_classifier(0)`` (the pooled pre-logits features), any other model with its
  last ``nn.Linear`` (in module order, the head of every torchvision classifier) replaced by
  ``nn.Identity``; flattened per image. With ``resize`` the ``[0, 1]`` images are first resized
  (bilinear, antialiased) to ``resize x resize`` pixels; normalisation stays in the pixel-space
  wrapper (:class:`~classwise.models.wrapper.PixelSpaceModel`), so attacks and corruptions work
  as for any other model.
- **Prototypes**: the mean feature per class over the train split, summed in float64 batch by
  batch (:func:`add_class_sums`); a class without train images is an error.
- **Scores**: ``cos(f(x), p_j) = <f / |f|, p_j / |p_j|>``, in ``[-1, 1]``; a zero feature vector
  scores 0 against every class.
- **File**: a ``torch.save`` dict (readable with ``weights_only=True``), written atomically and
  deterministically: ``format`` ``"classwise-prototypes"``, ``version``, ``library`` and
  ``architecture`` (what rebuilds the backbone), ``state_dict`` (the headless backbone's),
  ``prototypes`` (``(C, D)`` float32, as computed, not normalised), ``counts`` (train images per
  class), ``class_names``, ``resize``, ``data_config``, ``backbone`` (the entry and the weights it
  was read from) and ``config`` (the model entry). It holds a copy of the backbone's weights, so
  inference reads this one file, as it reads a fine-tuned checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from classwise.errors import InputError
from classwise.models.checkpoint import plain_metadata, save_payload
from classwise.models.data_config import DataConfig
from classwise.models.state_dicts import read_marked_payload
from classwise.models.wrapper import PixelSpaceModel, wrap_pixel_space

__all__ = [
    "PROTOTYPES_FORMAT",
    "BackboneArchitecture",
    "FeatureExtractor",
    "PrototypeClassifier",
    "add_class_sums",
    "build_architecture",
    "class_prototypes",
    "load_prototype_classifier",
    "load_prototype_model",
    "read_prototypes",
    "save_prototypes",
    "strip_head",
]

PROTOTYPES_FORMAT = "classwise-prototypes"
PROTOTYPES_VERSION = 1
_METADATA = ("library", "architecture", "counts", "class_names", "resize", "data_config", "backbone", "config")


def strip_head(model: nn.Module) -> nn.Module:
    """``model`` without its classifier head (changed in place and returned): timm's
    ``reset_classifier(0)`` where the model has it, else its last ``nn.Linear`` replaced by
    ``nn.Identity``. A model without a linear layer raises :class:`InputError`."""
    reset = getattr(model, "reset_classifier", None)
    if callable(reset) and callable(getattr(model, "get_classifier", None)):
        reset(0)
        return model
    linear = [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    if not linear:
        raise InputError(
            f"{type(model).__name__} has no linear classifier head to remove; pick a backbone whose head is a linear layer",
            field="backbone",
        )
    if linear[-1] == "":
        return nn.Identity()
    parent_name, _, child = linear[-1].rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, nn.Identity())
    return model


class FeatureExtractor(nn.Module):
    """``backbone(resize(x)).flatten(1)``: the headless backbone's features of (normalised) images."""

    def __init__(self, backbone: nn.Module, resize: int | None = None):
        super().__init__()
        self.backbone = backbone
        self.resize = None if resize is None else int(resize)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.resize is not None and tuple(x.shape[-2:]) != (self.resize, self.resize):
            x = F.interpolate(x, size=(self.resize, self.resize), mode="bilinear", align_corners=False, antialias=True)
        return self.backbone(x).flatten(1)


class PrototypeClassifier(nn.Module):
    """Cosine similarity of each image's features to each class prototype: ``(N, C)`` scores."""

    def __init__(self, features: nn.Module, prototypes: torch.Tensor):
        super().__init__()
        if prototypes.ndim != 2 or prototypes.shape[0] < 1:
            raise InputError(
                f"expected prototypes of shape (classes, features), got {tuple(prototypes.shape)}", field="prototypes"
            )
        self.features = features
        self.register_buffer("prototypes", F.normalize(prototypes.detach().float(), dim=1))

    prototypes: torch.Tensor  # a buffer (moves with the module), unit rows

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.features(x), dim=1) @ self.prototypes.T


def add_class_sums(sums: np.ndarray, counts: np.ndarray, features: np.ndarray, labels: np.ndarray) -> None:
    """Add a batch's ``features`` ``(N, D)`` to the per-class ``sums`` ``(C, D)`` (float64) and its
    labels to ``counts`` ``(C,)``, in place."""
    labels = np.asarray(labels, dtype=np.int64)
    if features.ndim != 2 or features.shape[0] != labels.shape[0] or features.shape[1] != sums.shape[1]:
        raise InputError(
            f"expected features of shape ({labels.shape[0]}, {sums.shape[1]}), got {features.shape}", field="features"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= sums.shape[0]):
        raise InputError(f"expected labels in [0, {sums.shape[0]}), got {labels.min()}..{labels.max()}", field="labels")
    np.add.at(sums, labels, features.astype(np.float64))
    counts += np.bincount(labels, minlength=sums.shape[0])


def class_prototypes(sums: np.ndarray, counts: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
    """The mean feature per class (``sums / counts``), float32; a class without images is an error."""
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        names = [str(class_names[i]) for i in empty[:5]]
        raise InputError(
            f"{empty.size} class(es) have no train images, e.g. {names}; a prototype needs at least one", field="train_on"
        )
    return (sums / counts[:, None]).astype(np.float32)


def build_architecture(library: str, architecture: str) -> nn.Module:
    """A randomly initialised, headless ``architecture`` of ``library`` (timm or torchvision)."""
    if library == "timm":
        from classwise.models import timm_models

        model = timm_models.build_architecture(architecture, None)
    elif library == "torchvision":
        from classwise.models import torchvision_models

        model = torchvision_models.build_architecture(architecture, None)
    else:
        raise InputError(f"expected library 'timm' or 'torchvision', got {library!r}", field="library")
    return strip_head(model)


@dataclass(frozen=True)
class BackboneArchitecture:
    """What rebuilds a prototype classifier's backbone (the file's ``library`` and
    ``architecture``): one of the ``architecture`` names of ``library`` (timm or torchvision)."""

    library: str
    architecture: str

    def build(self) -> nn.Module:
        """The backbone, headless and randomly initialised (:func:`build_architecture`)."""
        return build_architecture(self.library, self.architecture)


def save_prototypes(
    path: str | Path,
    *,
    backbone: nn.Module,
    architecture: BackboneArchitecture,
    prototypes: np.ndarray,
    counts: np.ndarray,
    class_names: Sequence[str],
    resize: int | None,
    data_config: DataConfig,
    backbone_record: Mapping[str, Any],
    config: Mapping[str, Any],
) -> None:
    """Write a prototype classifier file (see the module docstring), atomically: ``backbone``
    (headless) is an ``architecture``, ``prototypes`` the mean feature of each class of
    ``class_names`` over its ``counts`` train images."""
    payload = {
        "format": PROTOTYPES_FORMAT,
        "version": PROTOTYPES_VERSION,
        "library": str(architecture.library),
        "architecture": str(architecture.architecture),
        "counts": [int(c) for c in counts],
        "class_names": [str(name) for name in class_names],
        "resize": None if resize is None else int(resize),
        "data_config": data_config.to_dict(),
        "backbone": plain_metadata(dict(backbone_record), field="backbone"),
        "config": plain_metadata(dict(config), field="config"),
        "prototypes": torch.from_numpy(np.ascontiguousarray(prototypes, dtype=np.float32)),
        "state_dict": {name: value.detach().cpu().clone() for name, value in backbone.state_dict().items()},
    }
    save_payload(path, payload)


def _payload(path: str | Path) -> dict[str, Any]:
    return read_marked_payload(
        path,
        format_marker=PROTOTYPES_FORMAT,
        version=PROTOTYPES_VERSION,
        required=(*_METADATA, "prototypes", "state_dict"),
        name="prototype file",
        short="prototype file",
        rule="compute_prototypes",
    )


def read_prototypes(path: str | Path) -> dict[str, Any]:
    """The metadata of a prototype file (everything but the weights and the prototypes)."""
    payload = _payload(path)
    return {name: payload[name] for name in _METADATA}


def load_prototype_classifier(path: str | Path) -> tuple[PrototypeClassifier, DataConfig, dict[str, Any]]:
    """The prototype classifier saved at ``path`` (unwrapped: it takes normalised images; eval
    mode, on CPU), its data config and its metadata."""
    payload = _payload(path)
    backbone = BackboneArchitecture(payload["library"], payload["architecture"]).build()
    try:
        backbone.load_state_dict(payload["state_dict"], strict=True)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0]
        raise InputError(
            f"the saved backbone does not fit {payload['library']} {payload['architecture']!r} ({first})",
            path=path,
            field="state_dict",
        ) from None
    classifier = PrototypeClassifier(FeatureExtractor(backbone, payload["resize"]), payload["prototypes"])
    classifier.eval()
    return classifier, DataConfig.from_dict(payload["data_config"]), {name: payload[name] for name in _METADATA}


def load_prototype_model(
    path: str | Path, *, device: str | torch.device = "cpu"
) -> tuple[PixelSpaceModel, dict[str, Any], DataConfig]:
    """The prototype classifier at ``path`` behind the pixel-space wrapper (``[0, 1]`` images
    in, cosine scores out; eval mode, on ``device``, ``"auto"`` = CUDA when available), its
    metadata and its data config."""
    classifier, config, meta = load_prototype_classifier(path)
    wrapped = wrap_pixel_space(classifier, config)
    if device == "auto":
        from classwise.inference.stream import resolve_device

        device = resolve_device("auto")
    wrapped.to(device)
    return wrapped, meta, config
