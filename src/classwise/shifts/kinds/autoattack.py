"""``autoattack``: AutoAttack's ensemble on the model (:func:`classwise.shifts.autoattack.autoattack`),
seeded per batch (``params == {"norm": "linf"|"l2", "eps": float, "version": "standard"|"rand"}``,
and ``"per_class": int`` when only that many samples of each class are attacked). ``shifts.autoattack``
lists them, one shift ``autoattack_{norm}_eps{eps:g}`` each (``autoattack_rand_...`` for ``rand``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.errors import field_path
from classwise.shifts.attack_settings import AUTOATTACK_MIN_CLASSES, AutoAttackSettings
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


def autoattack_spec(
    attack: AutoAttackSettings, *, per_class: int | None = None, field_prefix: str = "shifts.autoattack"
) -> ShiftSpec:
    """The spec of ``attack`` named ``autoattack_{norm}_eps{eps:g}`` (``standard``) or
    ``autoattack_rand_{norm}_eps{eps:g}``; ``per_class`` is checked here, its error naming the
    field under ``field_prefix``."""
    eps_f, norm, version = float(attack.eps), attack.norm, attack.version
    params: dict[str, Any] = {"norm": norm, "eps": eps_f, "version": version}
    add_per_class(params, per_class, field_prefix)
    infix = "" if version == "standard" else f"{version}_"
    return ShiftSpec(name=f"autoattack_{infix}{norm}_eps{eps_f:g}", kind=KIND.name, params=params)


def autoattack_settings(spec: ShiftSpec) -> AutoAttackSettings:
    """The attack of an ``autoattack`` spec."""
    params = spec.params
    return AutoAttackSettings(norm=params["norm"], eps=float(params["eps"]), version=params.get("version", "standard"))


class AutoAttack(ShiftKind):
    name = "autoattack"
    config_keys = ("autoattack",)
    attacks_the_model = True

    def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
        entries = []
        for i, entry in enumerate(as_list(section.get("autoattack", []) or [], "shifts.autoattack")):
            prefix = field_path("shifts.autoattack", i)
            check_mapping(entry, prefix)
            check_keys(entry, prefix, allowed={"norm", "eps", "version", "per_class", "shards"}, required=("norm", "eps"))
            attack = AutoAttackSettings.from_entry(entry, prefix)
            spec = autoattack_spec(attack, per_class=entry.get("per_class"), field_prefix=prefix)
            entries.append(Entry(prefix, entry, [spec]))
        return entries

    def misfit(self, spec: ShiftSpec, dataset: str, classes: int) -> Misfit | None:
        version = spec.params.get("version", "standard")
        fewest = AUTOATTACK_MIN_CLASSES[version]
        if classes >= fewest:
            return None
        return Misfit(
            f"shift {spec.name!r}: AutoAttack {version} needs at least {fewest} classes (its DLR loss reads the logits "
            f"ranked below the top 2), dataset {dataset!r} has {classes}",
            "shifts.autoattack",
        )

    def shifted_batch(self, spec: ShiftSpec, batch: Batch, run: Run) -> torch.Tensor:
        import torch

        # Imported here: torchattacks is needed by AutoAttack shifts only.
        from classwise.shifts.autoattack import autoattack
        from classwise.shifts.seeding import sample_seed

        return autoattack(
            run.model,
            torch.from_numpy(np.ascontiguousarray(batch.images)).to(run.device),
            torch.from_numpy(np.ascontiguousarray(batch.labels)).to(run.device),
            attack=autoattack_settings(spec),
            seed=sample_seed(run.base_seed, spec.name),
            progress=run.attack_log,
        )


KIND = AutoAttack()
