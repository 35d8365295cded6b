"""Deterministic mini-batch training of the demo classifiers."""

from __future__ import annotations

from typing import IO, Any

import torch
from torch import nn
from tqdm import tqdm

from classwise.data.imageset import ImageSet
from classwise.errors import InputError


def train_model(
    model: nn.Module,
    train: ImageSet,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    weight_decay: float = 0.0,
    seed: int,
    progress: IO[str] | None = None,
    device: str = "auto",
) -> dict[str, Any]:
    """Train ``model`` in place with Adam and cross-entropy; return a JSON-ready summary.

    Deterministic for a given seed on the same machine: the global torch RNG is seeded inside a
    :func:`torch.random.fork_rng` block (so dropout is reproducible and the caller's random state
    is left untouched) and batches are shuffled with a ``torch.Generator`` seeded with ``seed``.
    Training runs on ``device`` (``"auto"``: CUDA when available); the model is moved back to its
    original device afterwards and left in eval mode. ``progress`` receives a tqdm bar (one
    update per epoch). The summary holds per-epoch mean training loss and accuracy (measured on
    the mini-batches while training) and the final values.
    """
    from classwise.inference import resolve_device

    _check_positive_int(epochs, "epochs", allow_zero=True)
    _check_positive_int(batch_size, "batch_size")
    for name, value in (("lr", lr), ("weight_decay", weight_decay)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise InputError(f"expected a number >= 0, got {value!r}", field=name)
    if len(train) == 0:
        raise InputError("the training set is empty", field="train")

    target = resolve_device(device)
    original = _module_device(model)
    model.to(target)
    images = torch.from_numpy(train.images).to(target)
    labels = torch.from_numpy(train.labels).to(target)
    n = len(train)
    history: list[dict[str, float]] = []
    fork_devices = [target.index or 0] if target.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(int(seed))
        shuffle = torch.Generator(device="cpu").manual_seed(int(seed))
        optimizer = torch.optim.Adam(model.parameters(), lr=float(lr), weight_decay=float(weight_decay))
        loss_fn = nn.CrossEntropyLoss(reduction="sum")
        model.train()
        bar = tqdm(range(epochs), desc="train", unit="epoch", file=progress, disable=progress is None)
        for epoch in bar:
            order = torch.randperm(n, generator=shuffle).to(target)
            total_loss = torch.zeros((), device=target, dtype=torch.float64)
            correct = torch.zeros((), device=target, dtype=torch.int64)
            for start in range(0, n, batch_size):
                idx = order[start : start + batch_size]
                x, y = images[idx], labels[idx]
                optimizer.zero_grad(set_to_none=True)
                logits = model(x)
                loss = loss_fn(logits, y)
                (loss / len(idx)).backward()
                optimizer.step()
                total_loss += loss.detach().double()
                correct += (logits.detach().argmax(dim=1) == y).sum()
            record = {
                "epoch": epoch + 1,
                "loss": float(total_loss.item()) / n,
                "accuracy": float(correct.item()) / n,
            }
            history.append(record)
            bar.set_postfix(loss=f"{record['loss']:.4f}", acc=f"{record['accuracy']:.3f}")
        bar.close()
        optimizer.zero_grad(set_to_none=True)
    model.eval()
    model.to(original)
    return {
        "epochs": int(epochs),
        "lr": float(lr),
        "batch_size": int(batch_size),
        "weight_decay": float(weight_decay),
        "seed": int(seed),
        "n_train": n,
        "history": history,
        "final_loss": history[-1]["loss"] if history else None,
        "final_accuracy": history[-1]["accuracy"] if history else None,
    }


def _check_positive_int(value: Any, name: str, *, allow_zero: bool = False) -> None:
    minimum = 0 if allow_zero else 1
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"expected an integer >= {minimum}, got {value!r}", field=name)


def _module_device(model: nn.Module) -> torch.device:
    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return torch.device("cpu")
