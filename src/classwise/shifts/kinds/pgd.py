"""``pgd``: projected gradient descent on the model (:func:`classwise.shifts.pgd.pgd_attack`),
its random start drawn per sample (``params == {"norm": "linf"|"l2", "eps": float, "steps": int,
"step_size": float, "random_start": bool}``, and ``"target": int`` when targeted, ``"per_class":
int`` when only that many samples of each class are attacked).

``shifts.pgd`` lists the untargeted attacks, one shift ``pgd_{norm}_eps{eps:g}`` each;
``shifts.pgd_targeted`` (one entry with ``targets``) one shift ``pgd_targeted_{t}`` per target
class, every sample attacked towards ``t``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.errors import check_count, field_path
from classwise.shifts.attack_settings import NORMS, PgdSettings
from classwise.shifts.kinds.base import (
    Batch,
    Entry,
    Misfit,
    Run,
    ShiftKind,
    ShiftSpec,
    add_per_class,
    as_list,
    check_keys,
    check_mapping,
)

if TYPE_CHECKING:
    import torch

PGD_NORMS = NORMS


def pgd_spec(
    attack: PgdSettings, *, target: int | None = None, per_class: int | None = None, field_prefix: str = "shifts.pgd"
) -> ShiftSpec:
    """The spec of ``attack`` named ``pgd_{norm}_eps{eps:g}`` (untargeted) or
    ``pgd_targeted_{target}`` (every sample attacked towards class ``target``), its step size
    resolved (:attr:`PgdSettings.alpha`); ``target`` and ``per_class`` are checked here, their
    errors naming the field under ``field_prefix``."""
    eps_f = float(attack.eps)
    params: dict[str, Any] = {
        "norm": attack.norm,
        "eps": eps_f,
        "steps": int(attack.steps),
        "step_size": attack.alpha,
        "random_start": attack.random_start,
    }
    name = f"pgd_{attack.norm}_eps{eps_f:g}"
    if target is not None:
        target = check_count(target, f"{field_prefix}.targets", minimum=0, meaning="a class index")
        params["target"] = target
        name = f"pgd_targeted_{target}"
    add_per_class(params, per_class, field_prefix)
    return ShiftSpec(name=name, kind=KIND.name, params=params)


def pgd_entry(entry: Any, prefix: str, *, target: int | None = None, inline: bool = False) -> ShiftSpec:
    """One PGD shift from a config entry (``shifts.pgd[i]``, ``shifts.pgd_targeted`` and a
    target, or a transfer entry's inline attack: ``inline``, whose ``shards`` is the transfer
    entry's)."""
    if target is None:
        _check_pgd_keys(entry, prefix, inline=inline)
    return pgd_spec(PgdSettings.from_entry(entry, prefix), target=target, per_class=entry.get("per_class"), field_prefix=prefix)


def pgd_settings(spec: ShiftSpec) -> PgdSettings:
    """The attack of a ``pgd`` spec (its step size as resolved when the spec was made)."""
    params = spec.params
    return PgdSettings(
        norm=params["norm"],
        eps=float(params["eps"]),
        steps=int(params["steps"]),
        step_size=float(params["step_size"]),
        random_start=params.get("random_start", True),
    )


def _check_pgd_keys(entry: Any, prefix: str, *, extra_keys: tuple[str, ...] = (), inline: bool = False) -> None:
    check_mapping(entry, prefix)
    allowed = {"norm", "eps", "steps", "step_size", "random_start", "per_class", *extra_keys}
    if not inline:
        allowed.add("shards")
    check_keys(entry, prefix, allowed=allowed, required=("norm", "eps", *extra_keys))


class Pgd(ShiftKind):
    name = "pgd"
    config_keys = ("pgd", "pgd_targeted")
    attacks_the_model = True

    def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
        entries = []
        for i, entry in enumerate(as_list(section.get("pgd", []) or [], "shifts.pgd")):
            prefix = field_path("shifts.pgd", i)
            entries.append(Entry(prefix, entry, [pgd_entry(entry, prefix)]))
        targeted = section.get("pgd_targeted")
        if targeted is not None:
            prefix = "shifts.pgd_targeted"
            _check_pgd_keys(targeted, prefix, extra_keys=("targets",))
            targets = as_list(targeted["targets"], f"{prefix}.targets")
            entries.append(Entry(prefix, targeted, [pgd_entry(targeted, prefix, target=target) for target in targets]))
        return entries

    def target(self, spec: ShiftSpec) -> int | None:
        # as given: the job checks that it is a class of the model (classwise.inference.stream.pgd_target)
        target: int | None = spec.params.get("target")
        return target

    def misfit(self, spec: ShiftSpec, dataset: str, classes: int) -> Misfit | None:
        target = self.target(spec)
        if target is None or int(target) < classes:
            return None
        return Misfit(
            f"target class {target} is not a class of dataset {dataset!r} ({classes} classes, 0..{classes - 1})",
            "shifts.pgd_targeted.targets",
        )

    def shifted_batch(self, spec: ShiftSpec, batch: Batch, run: Run) -> torch.Tensor:
        import torch

        from classwise.shifts.pgd import pgd_attack

        attack = pgd_settings(spec)
        x = torch.from_numpy(np.ascontiguousarray(batch.images)).to(run.device)
        y = torch.from_numpy(np.ascontiguousarray(batch.labels)).to(run.device)
        init = None
        if attack.random_start and attack.eps > 0:
            init = _random_start(batch, spec, run.base_seed).to(run.device)
        target = self.target(spec)
        return pgd_attack(
            run.model,
            x,
            y,
            # each sample's random start drawn from its own seed (init_delta), none from a shared generator
            attack=dataclasses.replace(attack, random_start=False),
            targets=None if target is None else torch.full_like(y, target),
            init_delta=init,
        )


def _random_start(batch: Batch, spec: ShiftSpec, base_seed: int) -> torch.Tensor:
    """Each sample's random start, drawn on the CPU from its own seeded generator, so that it
    depends neither on the batch size nor on the order of the samples."""
    import torch

    from classwise.shifts.pgd import random_start_delta
    from classwise.shifts.seeding import sample_seed

    shape = (1, *batch.images.shape[1:])
    deltas = []
    for sid in batch.sample_ids:
        generator = torch.Generator(device="cpu").manual_seed(sample_seed(base_seed, spec.name, str(sid)))
        deltas.append(random_start_delta(shape, norm=spec.params["norm"], eps=float(spec.params["eps"]), generator=generator))
    return torch.cat(deltas, dim=0)


KIND = Pgd()
