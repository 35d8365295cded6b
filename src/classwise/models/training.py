"""Deterministic mini-batch training: the loop shared by the demo classifiers and fine-tuning.

:func:`fit` is the loop (seeding, shuffling, optimiser steps, per-epoch summary, progress); the
caller supplies the batches of each epoch and the optimiser. :func:`train_model` trains a demo
classifier on an in-memory :class:`ImageSet` with Adam;
:mod:`classwise.models.finetune` streams image files through it with SGD or Adam.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import torch
from torch import nn
from tqdm import tqdm

from classwise.data.imageset import ImageSet
from classwise.errors import InputError, check_count
from classwise.models.hyperparameters import Hyperparameters

__all__ = ["EpochBatches", "Hyperparameters", "OptimizerFactory", "fit", "steps_per_epoch", "tensor_batches", "train_model"]

EpochBatches = Callable[[torch.Tensor], Iterable[tuple[torch.Tensor, torch.Tensor]]]
"""``batches(order)``: the ``(images, labels)`` batches of one epoch, visiting the samples in
``order`` (a CPU ``int64`` permutation of ``range(n)``). Tensors may live on any device."""
OptimizerFactory = Callable[[Iterator[nn.Parameter]], torch.optim.Optimizer]
"""``make(model.parameters())``: the optimiser, created after the RNG is seeded."""


def fit(
    model: nn.Module,
    *,
    n: int,
    batches: EpochBatches,
    optimizer: OptimizerFactory,
    hyperparameters: Hyperparameters,
    progress: IO[str] | None = None,
    device: str | torch.device = "auto",
    steps_per_epoch: int | None = None,
    desc: str = "train",
) -> list[dict[str, float]]:
    """Train ``model`` in place with cross-entropy for ``hyperparameters.epochs`` epochs over ``n``
    samples; return the per-epoch history (``epoch``, ``loss``, ``accuracy``, ``n_seen``).
    ``hyperparameters`` gives the epochs and the seed; its learning rate, weight decay and batch
    size are the caller's to put into ``optimizer`` and ``batches``.

    Deterministic for a given seed on the same machine and device type: the global torch RNG is
    seeded inside a :func:`torch.random.fork_rng` block (dropout is reproducible and the caller's
    random state is left untouched); each epoch's order is ``torch.randperm(n)`` drawn from a
    CPU ``torch.Generator`` seeded with ``seed``. (On CUDA, cuDNN's nondeterministic kernels may
    still make runs differ in the last bits.) Training runs on ``device`` (``"auto"``: CUDA when
    available); the model is moved back to its original device afterwards and left in eval mode.

    ``loss`` and ``accuracy`` are the means over the samples seen in the epoch (``n_seen``, which
    is ``n`` unless ``batches`` leaves unreadable images out), measured on the mini-batches while
    training; each batch's loss is its mean. ``progress`` receives a tqdm bar: one update per
    epoch, or per batch when ``steps_per_epoch`` is given (then each finished epoch is also
    written as a line).
    """
    from classwise.inference.stream import resolve_device

    epochs, seed = hyperparameters.epochs, hyperparameters.seed  # checked when the record was made
    check_count(n, "n")
    target = resolve_device(device)
    original = _module_device(model)
    model.to(target)
    history: list[dict[str, float]] = []
    fork_devices = [target.index or 0] if target.type == "cuda" else []
    per_batch = steps_per_epoch is not None
    total = epochs * int(steps_per_epoch) if steps_per_epoch is not None else epochs
    try:
        with torch.random.fork_rng(devices=fork_devices):
            torch.manual_seed(int(seed))
            shuffle = torch.Generator(device="cpu").manual_seed(int(seed))
            opt = optimizer(model.parameters())
            loss_fn = nn.CrossEntropyLoss(reduction="sum")
            model.train()
            unit = "batch" if per_batch else "epoch"
            bar = tqdm(total=total, desc=desc, unit=unit, file=progress, disable=progress is None)
            for epoch in range(epochs):
                order = torch.randperm(n, generator=shuffle)
                total_loss = torch.zeros((), device=target, dtype=torch.float64)
                correct = torch.zeros((), device=target, dtype=torch.int64)
                seen = 0
                for x, y in batches(order):
                    x, y = x.to(target, non_blocking=True), y.to(target, non_blocking=True)
                    opt.zero_grad(set_to_none=True)
                    logits = model(x)
                    if not isinstance(logits, torch.Tensor):
                        raise InputError(
                            f"the model returned {type(logits).__name__} in training mode, expected a logits "
                            "tensor (architectures with auxiliary outputs are not supported)",
                            field="architecture",
                        )
                    loss = loss_fn(logits, y)
                    (loss / len(y)).backward()
                    opt.step()
                    total_loss += loss.detach().double()
                    correct += (logits.detach().argmax(dim=1) == y).sum()
                    seen += len(y)
                    if per_batch:
                        bar.update(1)
                if seen == 0:
                    raise InputError("no training images could be read", field="train")
                record = {
                    "epoch": epoch + 1,
                    "loss": float(total_loss.item()) / seen,
                    "accuracy": float(correct.item()) / seen,
                    "n_seen": seen,
                }
                history.append(record)
                bar.set_postfix(loss=f"{record['loss']:.4f}", acc=f"{record['accuracy']:.3f}")
                if per_batch:
                    bar.write(
                        f"epoch {epoch + 1}/{epochs}: loss {record['loss']:.4f}, accuracy {record['accuracy']:.4f} "
                        f"over {seen} images",
                        file=progress,
                    )
                else:
                    bar.update(1)
            bar.close()
            opt.zero_grad(set_to_none=True)
    finally:
        model.eval()
        model.to(original)
    return history


def train_model(
    model: nn.Module,
    train: ImageSet,
    *,
    hyperparameters: Hyperparameters,
    progress: IO[str] | None = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Train ``model`` in place with Adam and cross-entropy (:func:`fit`), as ``hyperparameters``
    say; return a JSON-ready summary.

    The whole set is moved to the device once and each batch is taken from it in the epoch's
    order. The summary holds the settings, per-epoch mean training loss and accuracy (measured on
    the mini-batches while training) and the final values.
    """
    from classwise.inference.stream import resolve_device

    epochs, lr, batch_size = hyperparameters.epochs, hyperparameters.lr, hyperparameters.batch_size
    weight_decay, seed = hyperparameters.weight_decay, hyperparameters.seed
    if len(train) == 0:
        raise InputError("the training set is empty", field="train")

    target = resolve_device(device)
    images = torch.from_numpy(train.images).to(target)
    labels = torch.from_numpy(train.labels).to(target)
    n = len(train)

    history = fit(
        model,
        n=n,
        batches=tensor_batches(images, labels, batch_size),
        optimizer=lambda params: torch.optim.Adam(params, lr=float(lr), weight_decay=float(weight_decay)),
        hyperparameters=hyperparameters,
        progress=progress,
        device=target,
    )
    return {
        "epochs": int(epochs),
        "lr": float(lr),
        "batch_size": int(batch_size),
        "weight_decay": float(weight_decay),
        "seed": int(seed),
        "n_train": n,
        "history": [{key: r[key] for key in ("epoch", "loss", "accuracy")} for r in history],
        "final_loss": history[-1]["loss"] if history else None,
        "final_accuracy": history[-1]["accuracy"] if history else None,
    }


def tensor_batches(images: torch.Tensor, labels: torch.Tensor, batch_size: int) -> EpochBatches:
    """The epoch batches of an in-memory set: consecutive ``batch_size`` slices of the epoch's
    order, indexed on the tensors' own device (the last batch may be smaller)."""

    def batches(order: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        order = order.to(images.device)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            yield images[idx], labels[idx]

    return batches


def steps_per_epoch(n: int, batch_size: int) -> int:
    """Mini-batches in one epoch of ``n`` samples (the last one may be smaller)."""
    return math.ceil(n / batch_size)


def _module_device(model: nn.Module) -> torch.device:
    for parameter in model.parameters():
        return parameter.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")
