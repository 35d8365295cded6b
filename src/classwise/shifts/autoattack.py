"""AutoAttack (Croce and Hein, ICML 2020) through torchattacks, with the reference's hyper-parameters.

Why torchattacks: it is maintained, already a dependency of the test suite (the PGD tests
compare against it), pure PyTorch, and implements every attack of the ensemble (APGD-CE,
APGD-DLR, APGD-T, FAB-T, Square) for L-inf and L2. Its ``AutoAttack`` class does not, however,
set the reference's hyper-parameters (``fra31/auto-attack``, ``AutoAttack.set_version``): it
leaves APGD, APGD-T and FAB at 10 iterations instead of 100, uses ``n_classes - 1`` target
classes instead of 9 (99 targets on CIFAR-100), and Square's rescaled schedule where the
reference turns it off. :func:`autoattack_components` builds the same attacks with the
reference's values:

* ``standard``: APGD-CE (100 iterations, 1 restart), APGD-T (100 iterations, 1 restart, 9
  target classes), FAB-T (100 iterations, 1 restart, 9 target classes), Square (5000 queries,
  ``p_init`` 0.8, no schedule rescaling);
* ``rand`` (randomised defences): APGD-CE and APGD-DLR, 100 iterations, 1 restart, 20
  expectation-over-transformation samples per step.

**At L2**, APGD-T and Square are :mod:`classwise.shifts.autoattack_l2`'s subclasses of
torchattacks' attacks, which correct two departures of torchattacks from the reference: APGD-T
gives every image of a batch the first image's step size, and Square takes its window norms over
all channels at once and does not cap its square at the image's side. At L-inf they are
torchattacks' attacks unchanged.

**Targets on fewer than 10 classes**: APGD-T and FAB-T attack the classes ranked 2nd to
``k + 1``-th by the model's logits of each sample, ``k = min(9, C - 1)``: 9 on 10 or more
classes (the reference), every other class on fewer (torchattacks' ``n_classes - 1``; the
reference would index past the last class). APGD-T's targeted DLR loss reads the 3rd and
4th largest logits, so ``standard`` needs a model of at least 4 classes; ``rand``'s DLR loss
needs 3.

**The per-sample worst case**: every attack runs on the samples that all earlier attacks left
correctly classified (the first, on all of them; a sample misclassified clean is kept as it
is). A sample is robust only if every attack fails on it. The image returned is that of the
first attack that fools the model, or of the last attack when all fail (torchattacks'
``MultiAttack`` and the reference return the clean image then; the predictions, hence the
robust accuracy, are the same). Which samples each attack sees is exactly ``MultiAttack``'s, so
at L-inf the robust accuracy equals torchattacks' own ``AutoAttack`` built with the same
hyper-parameters and seed (tested); at L2 it can differ where APGD-T or Square runs.

**Seeding**: every attack seeds torch's global generator with ``seed`` when it starts (as in
torchattacks and the reference); the caller's generator state is saved and restored around
the call. The random draws are per batch, so the result depends on which images are attacked
together: the workflow attacks fixed batches (``inference.batch_size``) and is deterministic
for a given config on a given machine.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator
from typing import IO, Any

import torch
from torch import nn

from classwise.errors import InputError, check_count
from classwise.shifts.attack_settings import AUTOATTACK_MIN_CLASSES, AUTOATTACK_VERSIONS, AutoAttackSettings, Norm
from classwise.shifts.attack_settings import AutoAttackVersion as Version
from classwise.shifts.pgd import _flat_norm, _model_device, check_attack_inputs

VERSIONS: tuple[Version, ...] = AUTOATTACK_VERSIONS
REFERENCE_ITERATIONS = 100
"""APGD's, APGD-T's and FAB-T's iterations in the reference (``n_iter=100``)."""
REFERENCE_TARGET_CLASSES = 9
"""APGD-T's and FAB-T's target classes in the reference, capped at ``C - 1``."""
SQUARE_QUERIES = 5000
EOT_SAMPLES = 20
"""The ``rand`` version's expectation-over-transformation samples per step."""
MIN_CLASSES = AUTOATTACK_MIN_CLASSES
_TORCHATTACKS_NORM = {"linf": "Linf", "l2": "L2"}


def target_classes(n_classes: int) -> int:
    """How many target classes APGD-T and FAB-T attack on a ``n_classes``-class model."""
    return min(REFERENCE_TARGET_CLASSES, n_classes - 1)


def check_autoattack_arguments(*, norm: Any, eps: Any, version: Any, seed: Any, field_prefix: str = "") -> None:
    """Raise :class:`InputError` on an unknown version or norm, ``eps`` that is not a finite
    number ``>= 0``, or a seed that is not an integer ``>= 0`` (``field_prefix`` names the
    config entry in the message, e.g. ``"shifts.autoattack[0]."``)."""
    try:
        AutoAttackSettings(norm=norm, eps=eps, version=version)
    except InputError as error:
        raise InputError(error.message, field=f"{field_prefix}{error.field}") from None
    check_count(seed, f"{field_prefix}seed", minimum=0)


def autoattack_components(model: nn.Module, *, attack: AutoAttackSettings, n_classes: int, seed: int) -> list[tuple[str, Any]]:
    """The ensemble of ``attack``'s version as ``(name, torchattacks attack)`` pairs, in the order
    they run, with the reference's hyper-parameters (module docstring)."""
    import torchattacks

    from classwise.shifts import autoattack_l2

    ta_norm, eps, version = _TORCHATTACKS_NORM[attack.norm], float(attack.eps), attack.version
    with contextlib.redirect_stdout(io.StringIO()):  # a model without parameters makes torchattacks print
        if version == "standard":
            attacks: list[tuple[str, Any]] = [
                (
                    "apgd-ce",
                    torchattacks.APGD(
                        model,
                        norm=ta_norm,
                        eps=eps,
                        steps=REFERENCE_ITERATIONS,
                        n_restarts=1,
                        seed=seed,
                        loss="ce",
                        eot_iter=1,
                        rho=0.75,
                    ),
                ),
                (
                    "apgd-t",
                    autoattack_l2.APGDT(
                        model,
                        norm=ta_norm,
                        eps=eps,
                        steps=REFERENCE_ITERATIONS,
                        n_restarts=1,
                        seed=seed,
                        eot_iter=1,
                        rho=0.75,
                        n_classes=n_classes,
                    ),
                ),
                (
                    "fab-t",
                    torchattacks.FAB(
                        model,
                        norm=ta_norm,
                        eps=eps,
                        steps=REFERENCE_ITERATIONS,
                        n_restarts=1,
                        seed=seed,
                        multi_targeted=True,
                        n_classes=n_classes,
                    ),
                ),
                (
                    "square",
                    autoattack_l2.Square(
                        model,
                        norm=ta_norm,
                        eps=eps,
                        n_queries=SQUARE_QUERIES,
                        n_restarts=1,
                        p_init=0.8,
                        loss="margin",
                        resc_schedule=False,
                        seed=seed,
                    ),
                ),
            ]
        else:
            attacks = [
                (
                    f"apgd-{loss}",
                    torchattacks.APGD(
                        model,
                        norm=ta_norm,
                        eps=eps,
                        steps=REFERENCE_ITERATIONS,
                        n_restarts=1,
                        seed=seed,
                        loss=loss,
                        eot_iter=EOT_SAMPLES,
                        rho=0.75,
                    ),
                )
                for loss in ("ce", "dlr")
            ]
    for _, component in attacks:
        if hasattr(component, "n_target_classes"):
            component.n_target_classes = target_classes(n_classes)
    return attacks


@contextlib.contextmanager
def _own_generators(device: torch.device) -> Iterator[None]:
    """torchattacks reseeds torch's global generators; the caller's states come back afterwards."""
    devices = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        yield


def _within_budget(adv: torch.Tensor, clean: torch.Tensor, *, norm: Norm, eps: float) -> torch.Tensor:
    """``adv`` unchanged where it is a valid attack; a non-finite image becomes the clean one,
    and one outside the ball (beyond rounding) or ``[0, 1]`` is projected back. A guard: the
    attacks of torchattacks stay inside, so on them this changes nothing."""
    adv = torch.where(torch.isfinite(adv), adv, clean)
    delta = adv - clean
    if norm == "linf":
        outside = delta.flatten(1).abs().amax(dim=1) > eps * (1 + 1e-6) + 1e-7
        projected = delta.clamp(-eps, eps)
    else:
        norms = _flat_norm(delta)
        outside = norms.flatten() > eps * (1 + 1e-6) + 1e-7
        projected = delta * torch.clamp(eps / torch.clamp(norms, min=1e-12), max=1.0)
    outside |= (adv.flatten(1).amin(dim=1) < 0) | (adv.flatten(1).amax(dim=1) > 1)
    if bool(outside.any()):
        fixed = torch.clamp(clean + projected, 0.0, 1.0)
        adv = torch.where(outside.view(-1, *([1] * (adv.dim() - 1))), fixed, adv)
    return adv


def autoattack(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    *,
    attack: AutoAttackSettings,
    seed: int = 0,
    progress: IO[str] | None = None,
) -> torch.Tensor:
    """Adversarial versions of ``images`` (``(N, C, H, W)`` floats in ``[0, 1]``) under AutoAttack.

    ``attack`` (:class:`~classwise.shifts.attack_settings.AutoAttackSettings`): the norm,
    ``"linf"`` or ``"l2"``, the radius ``eps`` in pixel units (the model takes ``[0, 1]`` images
    and normalises them itself) and the version, ``"standard"`` or ``"rand"``; ``seed`` the seed
    of every attack's random draws. The ensemble, its hyper-parameters, the
    per-sample worst case and the targets on fewer than 10 classes: see the module docstring.
    ``eps == 0`` returns a copy of the clean images without running the model.

    ``progress``: one line per attack (samples attacked, fooled, still robust, seconds).
    Runs on the model's device, returns float32 on ``images``' device; the model is in eval
    mode during the attack and its modes are restored afterwards; torch's global generators are
    left as they were. Raises :class:`InputError` before any work on a seed that is not an
    integer ``>= 0`` (``attack`` checked itself when made), images outside ``[0, 1]``, labels
    that do not match, and a model with fewer outputs than the version needs.
    """
    check_count(seed, "seed", minimum=0)
    check_attack_inputs(images, labels)
    eps, version = attack.eps, attack.version
    home = images.device
    device = _model_device(model) or home
    with torch.inference_mode(False):
        clean = images.detach().to(device=device, dtype=torch.float32).clone()
        if eps == 0 or len(clean) == 0:
            return clean.to(home)
        targets = labels.detach().to(device=device, dtype=torch.long).clone()
        modes = [(module, module.training) for module in model.modules()]
        model.eval()
        try:
            with torch.no_grad():
                n_classes = int(model(clean[:1]).shape[1])
            if n_classes < MIN_CLASSES[version]:
                raise InputError(
                    f"AutoAttack {version} needs a model of at least {MIN_CLASSES[version]} classes "
                    f"(its DLR loss reads the logits ranked below the top 2), got {n_classes}",
                    field="version",
                )
            if int(targets.min()) < 0 or int(targets.max()) >= n_classes:
                raise InputError(
                    f"labels must lie in [0, {n_classes}) for a model with {n_classes} outputs, "
                    f"got [{int(targets.min())}, {int(targets.max())}]",
                    field="labels",
                )
            with _own_generators(device):
                return _worst_case(model, clean, targets, attack=attack, n_classes=n_classes, seed=seed, progress=progress).to(
                    home
                )
        finally:
            for module, mode in modes:
                module.training = mode


def _worst_case(
    model: nn.Module,
    clean: torch.Tensor,
    labels: torch.Tensor,
    *,
    attack: AutoAttackSettings,
    n_classes: int,
    seed: int,
    progress: IO[str] | None,
) -> torch.Tensor:
    """Run the ensemble, each attack on the samples every earlier one left correct (module docstring)."""
    norm, eps, version = attack.norm, float(attack.eps), attack.version
    attacks = autoattack_components(model, attack=attack, n_classes=n_classes, seed=seed)
    result = clean.clone()
    remaining = torch.arange(len(clean), device=clean.device)
    for name, component in attacks:
        component.set_device(clean.device)
        started = time.perf_counter()
        adv = _within_budget(component(clean[remaining], labels[remaining]).detach(), clean[remaining], norm=norm, eps=eps)
        with torch.no_grad():
            fooled = model(adv).max(1)[1] != labels[remaining]
        result[remaining] = adv  # the fooled keep theirs; the others are overwritten by the next attack
        attacked = len(remaining)
        remaining = remaining[~fooled]
        if progress is not None:
            progress.write(
                f"autoattack {version} {norm} eps={eps:g}: {name}: {attacked} attacked, {attacked - len(remaining)} fooled, "
                f"{len(remaining)} robust ({time.perf_counter() - started:.1f} s)\n"
            )
            progress.flush()
        if len(remaining) == 0:
            break
    return result
