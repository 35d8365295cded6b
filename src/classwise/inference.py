"""Logits of a model on an image set under a shift (clean, corruption, PGD or AutoAttack), batched.

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

import dataclasses
import itertools
from typing import IO

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from classwise.data.imageset import ImageSet
from classwise.errors import InputError
from classwise.shifts.pgd import pgd_attack, random_start_delta
from classwise.shifts.seeding import sample_seed
from classwise.shifts.spec import ShiftSpec, clean_spec


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


def _pgd_start(sample_ids: np.ndarray, shape: tuple[int, ...], shift: ShiftSpec, base_seed: int) -> torch.Tensor:
    """Each sample's random start, drawn on the CPU from its own seeded generator."""
    deltas = []
    for sid in sample_ids:
        generator = torch.Generator(device="cpu").manual_seed(sample_seed(base_seed, shift.name, str(sid)))
        deltas.append(
            random_start_delta((1, *shape), norm=shift.params["norm"], eps=float(shift.params["eps"]), generator=generator)
        )
    return torch.cat(deltas, dim=0)


def pgd_target(shift: ShiftSpec, n_classes: int) -> int | None:
    """The target class of a targeted ``pgd`` shift (params key ``"target"``), else ``None``.

    Raises :class:`InputError` unless the target is an integer in ``[0, n_classes)``.
    """
    if shift.kind != "pgd" or shift.params.get("target") is None:
        return None
    target = shift.params["target"]
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < n_classes:
        raise InputError(
            f"shift {shift.name!r}: expected an integer class index in [0, {n_classes}), got {target!r}",
            field="target",
        )
    return int(target)


def _shift_batch(
    model: nn.Module,
    images: np.ndarray,
    labels: np.ndarray,
    sample_ids: np.ndarray,
    shift: ShiftSpec,
    base_seed: int,
    device: torch.device,
    target: int | None = None,
    attack_log: IO[str] | None = None,
) -> torch.Tensor:
    """The shifted batch, as a float32 tensor on ``device``; ``target``: see :func:`pgd_target`;
    ``attack_log`` receives AutoAttack's line per attack."""
    if shift.kind in ("clean", "dataset"):  # a published shift set's images come shifted
        return torch.from_numpy(np.ascontiguousarray(images)).to(device)
    if shift.kind == "corruption":
        seeds = [sample_seed(base_seed, shift.name, str(sid)) for sid in sample_ids]
        # Imported here: albumentations (about 1 s) is needed by corruption shifts only.
        from classwise.shifts.corruptions import corrupt_batch

        corrupted = corrupt_batch(images, shift.corruption, shift.severity, seeds)
        return torch.from_numpy(corrupted).to(device)
    if shift.kind == "pgd":
        params = shift.params
        x = torch.from_numpy(np.ascontiguousarray(images)).to(device)
        y = torch.from_numpy(np.ascontiguousarray(labels)).to(device)
        init = None
        if params.get("random_start", True) and float(params["eps"]) > 0:
            init = _pgd_start(sample_ids, tuple(images.shape[1:]), shift, base_seed).to(device)
        targets = None if target is None else torch.full_like(y, target)
        return pgd_attack(
            model,
            x,
            y,
            norm=params["norm"],
            eps=float(params["eps"]),
            alpha=float(params["step_size"]),
            steps=int(params["steps"]),
            random_start=False,
            targets=targets,
            init_delta=init,
        )
    if shift.kind == "autoattack":
        # Imported here: torchattacks is needed by AutoAttack shifts only.
        from classwise.shifts.autoattack import autoattack

        params = shift.params
        return autoattack(
            model,
            torch.from_numpy(np.ascontiguousarray(images)).to(device),
            torch.from_numpy(np.ascontiguousarray(labels)).to(device),
            norm=params["norm"],
            eps=float(params["eps"]),
            version=params.get("version", "standard"),
            seed=sample_seed(base_seed, shift.name),
            progress=attack_log,
        )
    raise InputError(f"unknown shift kind {shift.kind!r}", field="kind")  # pragma: no cover


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
) -> np.ndarray:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"expected an integer >= 1, got {batch_size!r}", field="batch_size")
    target_device = resolve_device(device)
    target_class = pgd_target(shift, images.n_classes)
    original = next((p.device for p in model.parameters()), None)
    # infer calls this once per batch of an image-file set: moving a model that is already on the
    # device and switching modules that are already in eval mode cost milliseconds per call
    moved = not _on_device(model, target_device)
    training = [module for module in model.modules() if module.training]
    if moved:
        model.to(target_device)
    if training:
        model.eval()
    outputs: list[np.ndarray] = []
    bar = tqdm(total=len(images), desc=shift.name, unit="img", file=progress, disable=progress is None)
    try:
        for start in range(0, len(images), batch_size):
            stop = min(start + batch_size, len(images))
            batch = _shift_batch(
                model,
                images.images[start:stop],
                images.labels[start:stop],
                images.sample_ids[start:stop],
                shift,
                base_seed,
                target_device,
                target_class,
                attack_log,
            )
            if want_logits:
                with torch.inference_mode():
                    outputs.append(model(batch).float().cpu().numpy())
            else:
                outputs.append(batch.float().cpu().numpy())
            bar.update(stop - start)
    finally:
        bar.close()
        for module in training:
            module.training = True
        if moved and original is not None:
            model.to(original)
    if not outputs:
        if want_logits:
            with torch.inference_mode():
                n_out = model(torch.zeros((1, *images.input_shape), device=next(model.parameters()).device)).shape[1]
            return np.zeros((0, n_out), dtype=np.float32)
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
    if shift.kind == "transfer":
        crafted = transferred_images(
            source_model, images, shift, base_seed=base_seed, batch_size=batch_size, device=device, attack_log=attack_log
        )
        images, shift = dataclasses.replace(images, images=crafted), clean_spec()
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
        raise InputError(
            f"shift {shift.name!r} transfers an attack from model {shift.params['source']!r}: pass it", field="source"
        )
    return shifted_images(
        source_model, images, shift.attack, base_seed=base_seed, batch_size=batch_size, device=device, attack_log=attack_log
    )
