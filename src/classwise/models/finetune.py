"""Fine-tuning a torchvision classifier on a dataset's train split (``source: finetune``).

Config shape (one entry of ``models:``)::

    {source: finetune, architecture: alexnet, weights: IMAGENET1K_V1, train_on: gtsrb,
     optimizer: sgd, epochs: 5, lr: 0.001, momentum: 0.9, batch_size: 64, weight_decay: 0.0001,
     seed: 0, data_config: {input_size: [3, 224, 224]}}

Conventions:

- **Start**: torchvision's ``architecture`` built with one output per class of the training set
  (randomly initialised under ``seed``); every parameter and buffer except the classifier head is
  then copied from the ``weights`` (a torchvision weights enum, fetched and sha256-checked by the
  workflow's download rule; ``null``: train from the random initialisation). The head is the set
  of state-dict entries whose shape depends on the number of classes (``fc`` of a ResNet,
  ``classifier`` of a DenseNet, ``classifier.6`` of AlexNet), so it is always fresh, even for a
  1000-class training set.
- **Preprocessing**: the evaluation transforms of ``weights`` (for ``null``, of the
  architecture's ``DEFAULT`` weights) -- resize, centre crop, normalisation -- with the entry's
  ``data_config`` overrides; training uses exactly the preprocessing inference uses (no
  augmentation). Normalisation is inside the model (:class:`PixelSpaceModel`): it takes
  ``[0, 1]`` images. Image-file sets (GTSRB) are decoded batch by batch in each epoch's order;
  in-memory sets (CIFAR) are used at their stored size, as inference uses them.
- **Training**: :func:`classwise.models.training.fit` (cross-entropy, shuffled mini-batches,
  seeded; bitwise deterministic on CPU for a given seed and thread count) with SGD (with
  ``momentum``) or Adam, constant learning rate, ``weight_decay`` on every parameter.
- **Checkpoint**: a ``torch.save`` dict (readable with ``weights_only=True``), written atomically:
  ``format`` ``"classwise-finetuned"``, ``version``, ``architecture``, ``library``
  (``"torchvision"``), ``num_classes``, ``class_names``, ``data_config`` (:meth:`DataConfig.to_dict`),
  ``base`` (the starting weights), ``training`` (the summary), ``config`` (the entry) and
  ``state_dict`` (the torchvision model's own keys, without the normalisation wrapper). It is
  therefore also a plain ``checkpoint`` source file (``library: torchvision``), and
  :func:`load_finetuned` loads it through the checkpoint source that way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from torch import nn

from classwise.data.imagefolder import ImageFileDataset
from classwise.data.imageset import ImageSet
from classwise.errors import InputError, check_count
from classwise.models.checkpoint import plain_metadata, save_payload
from classwise.models.data_config import DataConfig, preprocess_image
from classwise.models.finetune_spec import (
    DATA_CONFIG_KEYS,
    FINETUNE_DEFAULTS,
    FinetuneSpec,
    base_model_config,
    parse_finetune_entry,
)
from classwise.models.state_dicts import read_marked_payload
from classwise.models.wrapper import PixelSpaceModel, wrap_pixel_space

__all__ = [
    "CHECKPOINT_FORMAT",
    "FINETUNE_DEFAULTS",
    "FinetuneSpec",
    "base_model_config",
    "build_finetune_model",
    "finetune",
    "head_keys",
    "load_base_state",
    "load_finetuned",
    "parse_finetune_spec",
    "read_finetuned",
    "resolve_data_config",
    "save_finetuned",
]

CHECKPOINT_FORMAT = "classwise-finetuned"
CHECKPOINT_VERSION = 1


def parse_finetune_spec(entry: Mapping[str, Any], *, key: str = "model", config_path: str | Path | None = None) -> FinetuneSpec:
    """Validate one ``finetune`` entry (named ``key``) and return its :class:`FinetuneSpec`:
    :func:`~classwise.models.finetune_spec.parse_finetune_entry`, then the ``data_config``
    overrides against the starting weights' preprocessing (which needs torchvision).
    Errors are :class:`InputError` naming ``config_path`` and ``models.<key>.<field>``.
    """
    spec = parse_finetune_entry(entry, key=key, config_path=config_path)
    try:
        resolve_data_config(spec)
    except InputError as exc:
        field = f"data_config.{exc.field}" if exc.field else "data_config"
        raise InputError(str(exc).split(": ", 1)[-1], path=config_path, field=f"models.{key}.{field}") from None
    return spec


def resolve_data_config(spec: FinetuneSpec) -> DataConfig:
    """The preprocessing of the fine-tuned model: the evaluation transforms of its starting
    weights (for ``weights: null``, of the architecture's ``DEFAULT`` weights) with the entry's
    ``data_config`` overrides."""
    from classwise.models import torchvision_models

    weights = torchvision_models.resolve_weights(spec.architecture, spec.weights)
    config = torchvision_models.data_config(spec.architecture, weights)
    if spec.data_config:
        config = config.replace(**dict(spec.data_config), origin=f"{config.origin} + config overrides")
    return config


def load_base_state(
    entry: Mapping[str, Any], manifest: str | Path | None, *, key: str = "model"
) -> dict[str, torch.Tensor] | None:
    """The starting weights' state dict, read offline from the download ``manifest`` (its
    sha256 checked) through the zoo's torchvision loader; ``None`` for ``weights: null``."""
    if entry.get("weights") is None:
        return None
    from classwise.models.loading import load_with_source
    from classwise.models.sources.base import parse_entry
    from classwise.models.sources.torchvision import SOURCE as TORCHVISION

    if manifest is None:
        raise InputError("needs the downloaded starting weights (run the download rule first)", field=f"models.{key}.weights")
    spec = parse_entry(TORCHVISION, base_model_config(entry), key=key, check_names=False)
    wrapped, _ = load_with_source(TORCHVISION, spec, manifest, device="cpu")
    return {name: value.detach().clone() for name, value in wrapped.model.state_dict().items()}


def head_keys(architecture: str) -> frozenset[str]:
    """The state-dict entries of ``architecture`` whose shape depends on the number of classes
    (the classifier head): those that differ between builds with 2 and 3 classes."""
    from classwise.models import torchvision_models

    def shapes(num_classes: int) -> dict[str, tuple[int, ...]]:
        try:
            with torch.device("meta"):
                model = torchvision_models.build_architecture(architecture, num_classes)
        except (RuntimeError, NotImplementedError):  # an initialiser that meta tensors do not support
            model = torchvision_models.build_architecture(architecture, num_classes)
        return {name: tuple(value.shape) for name, value in model.state_dict().items()}

    two, three = shapes(2), shapes(3)
    keys = frozenset(name for name in two if two[name] != three.get(name))
    if not keys:
        raise InputError(f"cannot find the classifier head of {architecture!r}", field="architecture")
    return keys


def build_finetune_model(
    architecture: str, n_classes: int, pretrained: Mapping[str, torch.Tensor] | None, *, seed: int
) -> tuple[nn.Module, dict[str, Any]]:
    """``architecture`` with ``n_classes`` outputs: initialised under ``seed``, then every entry
    but the head copied from ``pretrained`` (when given). Returns the model (train-ready, on CPU)
    and a JSON-ready record of what was copied and what is fresh.

    ``pretrained`` must hold every non-head entry with the same shape (:class:`InputError` names
    the first that does not fit)."""
    from classwise.models import torchvision_models

    n_classes = check_count(n_classes, "n_classes")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = torchvision_models.build_architecture(architecture, n_classes)
    head = head_keys(architecture)
    state = model.state_dict()
    if pretrained is not None:
        for name, value in state.items():
            if name in head:
                continue
            source = pretrained.get(name)
            if source is None or tuple(source.shape) != tuple(value.shape):
                got = "missing" if source is None else f"shape {tuple(source.shape)}"
                raise InputError(
                    f"the starting weights do not fit {architecture}: {got}, expected shape {tuple(value.shape)}",
                    field=f"state_dict.{name}",
                )
            state[name] = source.to(value.dtype)
        model.load_state_dict(state)
    return model, {"head": sorted(head), "copied": 0 if pretrained is None else len(state) - len(head)}


def _optimizer(spec: FinetuneSpec) -> Any:
    def make(params: Iterator[nn.Parameter]) -> torch.optim.Optimizer:
        if spec.optimizer == "sgd":
            return torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum, weight_decay=spec.weight_decay)
        return torch.optim.Adam(params, lr=spec.lr, weight_decay=spec.weight_decay)

    return make


def _file_batches(dataset: ImageFileDataset, config: DataConfig, batch_size: int, workers: int, skipped: dict[str, str]) -> Any:
    """The epoch batches of an image-file set, decoded in the epoch's order with ``config``'s
    resize and crop; unreadable images (``on_bad_image: skip``) are recorded in ``skipped``."""

    def transform(image: Any) -> np.ndarray:
        return preprocess_image(image, config).numpy()

    def batches(order: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        epoch = dataset.subset(order.numpy())
        try:
            for batch in epoch.iter_batches(batch_size, transform, workers=workers):
                yield torch.from_numpy(batch.images), torch.from_numpy(batch.labels)
        finally:
            skipped.update({s.sample_id: s.reason for s in epoch.skipped})

    return batches


def finetune(
    spec: FinetuneSpec,
    train: ImageFileDataset | ImageSet,
    *,
    pretrained: Mapping[str, torch.Tensor] | None,
    progress: IO[str] | None = None,
    device: str = "auto",
    workers: int = 1,
) -> tuple[PixelSpaceModel, DataConfig, dict[str, Any]]:
    """Fine-tune ``spec``'s architecture on ``train``; return the trained model (wrapped, eval
    mode, on CPU), its data config and a JSON-ready training summary.

    ``pretrained`` is the starting state dict (:func:`load_base_state`; ``None``: random start).
    ``workers`` threads decode image files. See the module docstring for the conventions.
    """
    from classwise.models.training import fit, steps_per_epoch, tensor_batches

    if len(train) == 0:
        raise InputError("the training set is empty", field=f"datasets.{spec.train_on}")
    config = resolve_data_config(spec)
    if isinstance(train, ImageSet) and train.input_shape[0] != config.input_size[0]:
        raise InputError(
            f"the training images have {train.input_shape[0]} channel(s), {spec.architecture} expects {config.input_size[0]}",
            field=f"datasets.{spec.train_on}",
        )
    model, transfer = build_finetune_model(spec.architecture, len(train.class_names), pretrained, seed=spec.seed)
    wrapped = wrap_pixel_space(model, config)
    skipped: dict[str, str] = {}
    if isinstance(train, ImageFileDataset):
        batches = _file_batches(train, config, spec.batch_size, max(1, int(workers)), skipped)
    else:
        batches = tensor_batches(torch.from_numpy(train.images), torch.from_numpy(train.labels), spec.batch_size)
    history = fit(
        wrapped,
        n=len(train),
        batches=batches,
        optimizer=_optimizer(spec),
        hyperparameters=spec.hyperparameters,
        progress=progress,
        device=device,
        steps_per_epoch=steps_per_epoch(len(train), spec.batch_size),
        desc=f"finetune {spec.architecture}",
    )
    summary = {
        **spec.to_dict(),
        "n_train": len(train),
        "n_classes": len(train.class_names),
        "transfer": transfer,
        "history": history,
        "final_loss": history[-1]["loss"] if history else None,
        "final_accuracy": history[-1]["accuracy"] if history else None,
        "skipped_images": [{"sample_id": k, "reason": v} for k, v in sorted(skipped.items())],
    }
    return wrapped, config, summary


def save_finetuned(
    path: str | Path,
    model: PixelSpaceModel,
    *,
    spec: FinetuneSpec,
    class_names: list[str] | tuple[str, ...],
    data_config: DataConfig,
    base: Mapping[str, Any],
    training: Mapping[str, Any],
) -> None:
    """Write the fine-tuned checkpoint (module docstring) to ``path``, atomically."""
    inner = model.model if isinstance(model, PixelSpaceModel) else model
    state = {name: value.detach().cpu().clone() for name, value in inner.state_dict().items()}
    payload = {
        "format": CHECKPOINT_FORMAT,
        "version": CHECKPOINT_VERSION,
        "architecture": spec.architecture,
        "library": "torchvision",
        "num_classes": len(class_names),
        "class_names": [str(name) for name in class_names],
        "data_config": data_config.to_dict(),
        "base": plain_metadata(dict(base), field="base"),
        "training": plain_metadata(dict(training), field="training"),
        "config": plain_metadata(spec.to_dict(), field="config"),
        "state_dict": state,
    }
    save_payload(path, payload)


_METADATA = ("architecture", "library", "num_classes", "class_names", "data_config", "base", "training", "config")


def read_finetuned(path: str | Path) -> dict[str, Any]:
    """The metadata of a fine-tuned checkpoint (everything but the weights); a missing,
    unreadable or foreign file raises :class:`InputError` naming it."""
    payload = read_marked_payload(
        path,
        format_marker=CHECKPOINT_FORMAT,
        version=CHECKPOINT_VERSION,
        required=(*_METADATA, "state_dict"),
        name="fine-tuned checkpoint",
        short="checkpoint",
        rule="finetune_model",
        mmap=True,
    )
    return {name: payload[name] for name in _METADATA}


def load_finetuned(
    path: str | Path, *, device: str | torch.device = "cpu", key: str = "model"
) -> tuple[PixelSpaceModel, dict[str, Any], DataConfig]:
    """The fine-tuned model at ``path`` (``[0, 1]`` images in, logits out, eval mode, on
    ``device``), its metadata and its data config, loaded as a ``checkpoint`` source with
    ``library: torchvision`` through the checkpoint source."""
    from classwise.models.loading import load_with_source
    from classwise.models.sources.base import parse_entry
    from classwise.models.sources.checkpoint import SOURCE as CHECKPOINT

    meta = read_finetuned(path)
    entry = {
        "source": "checkpoint",
        "path": str(path),
        "architecture": meta["architecture"],
        "library": meta["library"],
        "num_classes": int(meta["num_classes"]),
        "data_config": {name: meta["data_config"][name] for name in DATA_CONFIG_KEYS},
    }
    spec = parse_entry(CHECKPOINT, entry, key=key, config_path=path)
    model, config = load_with_source(CHECKPOINT, spec, path, device=device)
    return model, meta, config
