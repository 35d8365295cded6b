"""``autoattack``: AutoAttack's ensemble on the model (:func:`classwise.shifts.autoattack.autoattack`),
seeded per batch (``params == {"norm": "linf"|"l2", "eps": float, "version": "standard"|"rand"}``,
and ``"per_class": int`` when only that many samples of each class are attacked). ``shifts.autoattack``
lists them, one shift ``autoattack_{norm}_eps{eps:g}`` each (``autoattack_rand_...`` for ``rand``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.errors import InputError, field_path
from classwise.shifts.attack_settings import AUTOATTACK_MIN_CLASSES, AUTOATTACK_VERSIONS, NORMS, check_eps
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
    *, norm: str, eps: float, version: str = "standard", per_class: int | None = None, field_prefix: str = "shifts.autoattack"
) -> ShiftSpec:
    """The spec named ``autoattack_{norm}_eps{eps:g}`` (``standard``) or
    ``autoattack_rand_{norm}_eps{eps:g}``; validates every parameter."""
    if version not in AUTOATTACK_VERSIONS:
        raise InputError(
            f"unknown AutoAttack version {version!r}; expected one of {list(AUTOATTACK_VERSIONS)}",
            field=f"{field_prefix}.version",
        )
    if norm not in NORMS:
        raise InputError(f"AutoAttack supports the norms {list(NORMS)}, got {norm!r}", field=f"{field_prefix}.norm")
    eps_f = check_eps(eps, f"{field_prefix}.eps")
    params: dict[str, Any] = {"norm": norm, "eps": eps_f, "version": version}
    add_per_class(params, per_class, field_prefix)
    infix = "" if version == "standard" else f"{version}_"
    return ShiftSpec(name=f"autoattack_{infix}{norm}_eps{eps_f:g}", kind=KIND.name, params=params)


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
            spec = autoattack_spec(
                norm=entry["norm"],
                eps=entry["eps"],
                version=entry.get("version", "standard"),
                per_class=entry.get("per_class"),
                field_prefix=prefix,
            )
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

        params = spec.params
        return autoattack(
            run.model,
            torch.from_numpy(np.ascontiguousarray(batch.images)).to(run.device),
            torch.from_numpy(np.ascontiguousarray(batch.labels)).to(run.device),
            norm=params["norm"],
            eps=float(params["eps"]),
            version=params.get("version", "standard"),
            seed=sample_seed(run.base_seed, spec.name),
            progress=run.attack_log,
        )


KIND = AutoAttack()
