"""Logits of a model on an image set under a shift, batched; the shift's kind makes each batch
(:mod:`classwise.shifts.kinds`: clean, a corruption, PGD, AutoAttack, a transfer attack, a
published set's images as they are).

Randomness is per sample: corruption ``i`` is seeded with
``sample_seed(base_seed, shift.name, sample_ids[i])`` and so is PGD's random start, so results
depend neither on the batch size nor on the order of the samples.

Targeted PGD: a ``pgd`` shift whose params hold ``"target": t`` (an integer class index)
attacks every sample towards class ``t`` (minimising the cross-entropy of ``t``). Samples whose
label already is ``t`` are kept and attacked like the others, which only pushes them further
into their own class; the success rate
(:func:`classwise.robustness.targeted.targeted_success_rates`) leaves them out.

AutoAttack (``kind="autoattack"``) is seeded with ``sample_seed(base_seed, shift.name)`` for
every batch; its random draws are per batch (:mod:`classwise.shifts.autoattack`), so its logits
depend on the batch size as well as on the seed.

A transfer attack (``kind="transfer"``) crafts its attack on the source model exactly as the
source's own attack shift does (same seeds: they derive from the attack's name), then feeds the
images to the evaluated model: the images are regenerated in every job, never stored.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import IO

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from classwise.data.imageset import ImageSet
from classwise.errors import InputError
from classwise.shifts.kinds import Batch, Run, ShiftSpec


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; anything else is parsed by ``torch.device``.

    Asking for CUDA on a machine without it raises :class:`InputError`.
    """
    if isinstance(device, torch.device):
        resolved = device
    elif device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            resolved = torch.device(device)
        except (RuntimeError, TypeError):
            raise InputError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'", field="device") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r} requested but CUDA is not available", field="device")
    return resolved


def _on_device(model: nn.Module, device: torch.device) -> bool:
    """Whether every parameter and buffer of ``model`` is on ``device`` (``cuda`` without an index
    means the current CUDA device)."""
    index = device.index
    if device.type == "cuda" and index is None:
        index = torch.cuda.current_device()
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        if tensor.device.type != device.type or (index is not None and tensor.device.index != index):
            return False
    return True


def pgd_target(shift: ShiftSpec, n_classes: int) -> int | None:
    """The class a targeted shift attacks every sample towards (:attr:`ShiftSpec.target`), else ``None``.

    Raises :class:`InputError` unless the target is an integer in ``[0, n_classes)``.
    """
    target = shift.target
    if target is None:
        return None
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < n_classes:
        raise InputError(
            f"shift {shift.name!r}: expected an integer class index in [0, {n_classes}), got {target!r}",
            field="target",
        )
    return int(target)


@contextlib.contextmanager
def _ready(model: nn.Module | None, device: torch.device) -> Iterator[None]:
    """``model`` on ``device`` in eval mode, its device and modes restored afterwards. infer calls
    this once per batch of an image-file set: moving a model that is already on the device and
    switching modules that are already in eval mode would cost milliseconds per call."""
    if model is None:
        yield
        return
    original = next((p.device for p in model.parameters()), None)
    moved = not _on_device(model, device)
    training = [module for module in model.modules() if module.training]
    if moved:
        model.to(device)
    if training:
        model.eval()
    try:
        yield
    finally:
        for module in training:
            module.training = True
        if moved and original is not None:
            model.to(original)


def _iterate(
    model: nn.Module,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int,
    device: str | torch.device,
    progress: IO[str] | None,
    want_logits: bool,
    attack_log: IO[str] | None = None,
    source_model: nn.Module | None = None,
) -> np.ndarray:
    """``model``'s logits (or the images it sees) on ``images`` under ``shift``, batch by batch:
    each batch made by the shift's kind (:meth:`classwise.shifts.kinds.ShiftKind.shifted_batch`)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"expected an integer >= 1, got {batch_size!r}", field="batch_size")
    target_device = resolve_device(device)
    pgd_target(shift, images.n_classes)
    if shift.source_model is not None and source_model is None:
        raise InputError(f"shift {shift.name!r} transfers an attack from model {shift.source_model!r}: pass it", field="source")
    run = Run(model, base_seed, target_device, attack_log, source_model)
    outputs: list[np.ndarray] = []
    bar = tqdm(total=len(images), desc=shift.name, unit="img", file=progress, disable=progress is None)
    try:
        with _ready(model, target_device), _ready(source_model, target_device):
            for start in range(0, len(images), batch_size):
                stop = min(start + batch_size, len(images))
                batch = Batch(images.images[start:stop], images.labels[start:stop], images.sample_ids[start:stop])
                shifted = shift.shift_kind.shifted_batch(shift, batch, run)
                if want_logits:
                    with torch.inference_mode():
                        outputs.append(model(shifted).float().cpu().numpy())
                else:
                    outputs.append(shifted.float().cpu().numpy())
                bar.update(stop - start)
            if not outputs and want_logits:
                with torch.inference_mode():
                    n_out = model(torch.zeros((1, *images.input_shape), device=next(model.parameters()).device)).shape[1]
                return np.zeros((0, n_out), dtype=np.float32)
    finally:
        bar.close()
    if not outputs:
        return np.zeros((0, *images.input_shape), dtype=np.float32)
    return np.concatenate(outputs, axis=0).astype(np.float32, copy=False)


def predict_logits(
    model: nn.Module,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int = 256,
    device: str = "auto",
    progress: IO[str] | None = None,
    attack_log: IO[str] | None = None,
    source_model: nn.Module | None = None,
) -> np.ndarray:
    """``(N, C)`` float32 logits of ``model`` on ``images`` under ``shift``.

    The model runs in eval mode on ``device`` (``"auto"``: CUDA when available) under
    :func:`torch.inference_mode` for clean and corrupted batches; PGD and AutoAttack batches are
    attacked first (gradients w.r.t. the input only). The model's device and train/eval mode are
    restored. ``progress``: a progress bar; ``attack_log``: AutoAttack's line per attack.
    A ``transfer`` shift needs ``source_model``, the model its attack is crafted on
    (:func:`transferred_images`).
    """
    return _iterate(
        model,
        images,
        shift,
        base_seed=base_seed,
        batch_size=batch_size,
        device=device,
        progress=progress,
        want_logits=True,
        attack_log=attack_log,
        source_model=source_model,
    )


def shifted_images(
    model: nn.Module,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int = 256,
    device: str = "auto",
    progress: IO[str] | None = None,
    attack_log: IO[str] | None = None,
) -> np.ndarray:
    """The ``(N, C_in, H, W)`` images exactly as :func:`predict_logits` feeds them to the model
    (e.g. for example figures). ``model`` is only used by the attacks."""
    return _iterate(
        model,
        images,
        shift,
        base_seed=base_seed,
        batch_size=batch_size,
        device=device,
        progress=progress,
        want_logits=False,
        attack_log=attack_log,
    )


def transferred_images(
    source_model: nn.Module | None,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int = 256,
    device: str = "auto",
    attack_log: IO[str] | None = None,
) -> np.ndarray:
    """The images of a ``transfer`` shift: its attack (:attr:`ShiftSpec.attack`) crafted on
    ``source_model`` with the seeds of the source's own attack shift, so they equal the images
    that shift feeds the source (same ``base_seed`` and, for AutoAttack, ``batch_size``)."""
    if source_model is None:
        raise InputError(f"shift {shift.name!r} transfers an attack from model {shift.source_model!r}: pass it", field="source")
    return shifted_images(
        source_model, images, shift.attack, base_seed=base_seed, batch_size=batch_size, device=device, attack_log=attack_log
    )
