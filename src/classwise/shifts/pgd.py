"""Projected gradient descent (Madry et al., 2018) in pixel space, L-inf and L2.

The model must take ``[0, 1]`` images; the attack keeps adversarial images in ``[0, 1]`` and
within ``eps`` of the originals. Gradients are taken with :func:`torch.autograd.grad` with
respect to the input only, so model parameters never accumulate ``.grad``; the model is put in
eval mode for the attack and its previous mode is restored afterwards. The per-sample loss is
summed (not averaged) so each sample's step does not depend on the batch it is in.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

from classwise.errors import InputError
from classwise.shifts.attack_settings import Norm, PgdSettings

_TINY = 1e-12


def _flat_norm(x: torch.Tensor) -> torch.Tensor:
    """Per-sample L2 norm, shaped ``(N, 1, 1, ...)`` for broadcasting."""
    return x.flatten(1).norm(p=2, dim=1).view(-1, *([1] * (x.dim() - 1)))


def project(delta: torch.Tensor, *, norm: Norm, eps: float) -> torch.Tensor:
    """Project perturbations onto the ``eps`` ball of ``norm`` (per sample)."""
    if norm == "linf":
        return delta.clamp(-eps, eps)
    norms = _flat_norm(delta)
    factor = torch.clamp(eps / torch.clamp(norms, min=_TINY), max=1.0)
    return delta * factor


def random_start_delta(
    shape: torch.Size | tuple[int, ...],
    *,
    norm: Norm,
    eps: float,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """A random start inside the ``eps`` ball, drawn on the generator's device.

    ``linf``: uniform in the box ``[-eps, eps]``. ``l2``: a Gaussian direction scaled to a
    radius drawn uniformly from ``[0, eps]`` (as in torchattacks' PGDL2).
    """
    device = generator.device if generator is not None else torch.device("cpu")
    if norm == "linf":
        u = torch.rand(shape, generator=generator, device=device, dtype=dtype)
        return (2.0 * u - 1.0) * eps
    direction = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    radius = torch.rand((shape[0],), generator=generator, device=device, dtype=dtype)
    radius = radius.view(-1, *([1] * (len(shape) - 1)))
    return direction / torch.clamp(_flat_norm(direction), min=_TINY) * radius * eps


def _model_device(model: nn.Module) -> torch.device | None:
    """The device of the model's first parameter or buffer (``None`` for a stateless model)."""
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        return tensor.device
    return None


def _check_class_indices(indices: torch.Tensor, n_classes: int, field: str) -> None:
    """Class indices must lie in ``[0, n_classes)`` (cross-entropy would fail obscurely)."""
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= n_classes):
        raise InputError(
            f"class indices must lie in [0, {n_classes}) for a model with {n_classes} outputs, "
            f"got [{int(indices.min())}, {int(indices.max())}]",
            field=field,
        )


def check_attack_inputs(images: torch.Tensor, labels: torch.Tensor) -> None:
    """Raise :class:`InputError` unless ``images`` are finite floats in ``[0, 1]`` with one label each."""
    if images.dim() < 2 or labels.shape != images.shape[:1]:
        raise InputError(f"images {tuple(images.shape)} and labels {tuple(labels.shape)} do not match", field="labels")
    if not images.is_floating_point():
        raise InputError(f"expected floating-point images in [0, 1], got dtype {images.dtype}", field="images")
    if images.numel() and not (bool(torch.isfinite(images).all()) and float(images.min()) >= 0.0 and float(images.max()) <= 1.0):
        raise InputError("images must be finite and lie in [0, 1]", field="images")


def pgd_attack(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    attack: PgdSettings,
    targets: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    init_delta: torch.Tensor | None = None,
) -> torch.Tensor:
    """Adversarial versions of ``images`` (``(N, C, H, W)`` floats in ``[0, 1]``).

    ``attack`` (:class:`~classwise.shifts.attack_settings.PgdSettings`) holds the norm, the radius
    ``eps``, the number of steps and their size ``alpha`` (:attr:`~classwise.shifts.attack_settings.PgdSettings.alpha`),
    and whether the attack starts at random. Untargeted (``targets is None``): ascend the
    cross-entropy of ``labels``. Targeted: descend the cross-entropy of ``targets`` (``(N,)``
    class indices; a sample whose target equals its label is pushed further into its own class).
    ``linf`` steps ``alpha * sign(grad)`` and clips to the ``eps`` box; ``l2`` steps
    ``alpha * grad / ||grad||`` (zero gradients stay zero) and rescales onto the ``eps`` ball;
    both then clip to ``[0, 1]``. ``eps`` and ``alpha`` are in pixel units: the model takes
    ``[0, 1]`` images and normalises them itself.

    The start is the clean image, a random point in the ball from ``generator``
    (``attack.random_start``; drawn as torchattacks' PGD and PGDL2 draw theirs, see
    :func:`random_start_delta`), or ``images + init_delta`` when ``init_delta`` is given
    (projected; overrides ``random_start``). ``eps == 0`` returns a copy of the clean images.

    The attack runs on the model's device (CUDA when the model is there) and the result is
    returned on ``images``' device, as float32. The model is in eval mode during the attack
    and its modes are restored afterwards; gradients are taken with respect to the input only,
    so no parameter accumulates ``.grad``. Works inside :func:`torch.inference_mode`.
    """
    norm, eps, alpha, steps = attack.norm, attack.eps, attack.alpha, attack.steps  # checked when the record was made
    check_attack_inputs(images, labels)
    home = images.device
    device = _model_device(model) or home
    with torch.inference_mode(False):
        clean = images.detach().to(device=device, dtype=torch.float32).clone()
        if eps == 0:
            return clean.to(home)
        labels = labels.detach().to(device=device, dtype=torch.long).clone()
        targeted = targets is not None
        goal = targets.detach().to(device=device, dtype=torch.long).clone() if targets is not None else labels
        if goal.shape != labels.shape:
            raise InputError(f"targets {tuple(goal.shape)} do not match labels {tuple(labels.shape)}", field="targets")

        if init_delta is not None:
            if tuple(init_delta.shape) != tuple(clean.shape):
                raise InputError(
                    f"init_delta {tuple(init_delta.shape)} does not match images {tuple(clean.shape)}",
                    field="init_delta",
                )
            delta = project(init_delta.detach().to(device=device, dtype=clean.dtype).clone(), norm=norm, eps=eps)
            adv = torch.clamp(clean + delta, 0.0, 1.0)
        elif attack.random_start:
            delta = random_start_delta(clean.shape, norm=norm, eps=eps, generator=generator, dtype=clean.dtype)
            adv = torch.clamp(clean + delta.to(device), 0.0, 1.0)
        else:
            adv = clean.clone()

        modes = [(module, module.training) for module in model.modules()]
        model.eval()
        try:
            with torch.enable_grad():
                for step_index in range(steps):
                    adv.requires_grad_(True)
                    logits = model(adv)
                    if step_index == 0:
                        _check_class_indices(goal, int(logits.shape[1]), "targets" if targeted else "labels")
                    loss = F.cross_entropy(logits, goal, reduction="sum")
                    if targeted:
                        loss = -loss
                    (grad,) = torch.autograd.grad(loss, adv)
                    with torch.no_grad():
                        if norm == "linf":
                            step = grad.sign()
                        else:
                            step = grad / torch.clamp(_flat_norm(grad), min=_TINY)
                        moved = adv.detach() + alpha * step
                        delta = project(moved - clean, norm=norm, eps=eps)
                        adv = torch.clamp(clean + delta, 0.0, 1.0)
        finally:
            for module, mode in modes:
                module.training = mode
        return adv.detach().to(home)
