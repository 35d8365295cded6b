"""``transfer``: an untargeted attack (a ``pgd`` or ``autoattack`` shift) crafted on another model
of the config, its images fed to the evaluated model (``params == {"source": str, "attack": <the
attack spec's JSON>}``, and the attack's ``per_class`` when set). The images are the source's own
attack images (same seeds: they derive from the attack's name), regenerated in every job, never
stored. ``shifts.transfer`` lists them (``{source, attack}``: ``attack`` names a pgd or autoattack
shift of the section or is an inline PGD entry), one shift ``transfer_{source}_{attack}`` each."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError, field_path
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
from classwise.shifts.kinds.pgd import pgd_entry

if TYPE_CHECKING:
    import torch


def transfer_spec(source: str, attack: ShiftSpec, *, field_prefix: str = "shifts.transfer") -> ShiftSpec:
    """The spec named ``transfer_{source}_{attack.name}``: ``attack`` (an untargeted ``pgd`` or
    ``autoattack`` spec) crafted on model ``source``, evaluated on another model. Its
    ``per_class`` is the attack's, so that it attacks the same samples."""
    if not isinstance(source, str) or not source:
        raise InputError(f"expected a model name, got {source!r}", field=f"{field_prefix}.source")
    if not attack.adversarial:
        raise InputError(
            f"a transfer attack crafts an untargeted pgd or autoattack shift, got {attack.name!r} ({attack.kind})",
            field=f"{field_prefix}.attack",
        )
    params: dict[str, Any] = {"source": source, "attack": attack.to_json()}
    add_per_class(params, attack.per_class, field_prefix)
    return ShiftSpec(name=f"transfer_{source}_{attack.name}", kind=KIND.name, params=params)


class Transfer(ShiftKind):
    name = "transfer"
    config_keys = ("transfer",)

    def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
        attacks = {name: spec for name, spec in earlier.items() if spec.adversarial}
        entries = []
        for i, entry in enumerate(as_list(section.get("transfer", []) or [], "shifts.transfer")):
            prefix = field_path("shifts.transfer", i)
            entries.append(Entry(prefix, entry, [_transfer_entry(entry, prefix, attacks)]))
        return entries

    def adversarial_images(self, spec: ShiftSpec) -> bool:
        return True

    def source_model(self, spec: ShiftSpec) -> str | None:
        return str(spec.params["source"])

    def misfit(self, spec: ShiftSpec, dataset: str, classes: int) -> Misfit | None:
        """The attack's, under this shift's name."""
        return dataclasses.replace(spec.attack, name=spec.name).misfit(dataset, classes)

    def shifted_batch(self, spec: ShiftSpec, batch: Batch, run: Run) -> torch.Tensor:
        """The attack's images on the source model (:func:`classwise.inference.stream.transferred_images`),
        through the CPU as float32, as they were when the whole set was crafted first."""
        import numpy as np
        import torch

        if run.source_model is None:
            raise InputError(
                f"shift {spec.name!r} transfers an attack from model {spec.params['source']!r}: pass it", field="source"
            )
        attack = spec.attack
        crafted = attack.shift_kind.shifted_batch(attack, batch, dataclasses.replace(run, model=run.source_model))
        images = crafted.float().cpu().numpy().astype(np.float32, copy=False)
        return torch.from_numpy(np.ascontiguousarray(images)).to(run.device)


def _transfer_entry(entry: Any, prefix: str, attacks: Mapping[str, ShiftSpec]) -> ShiftSpec:
    """One transfer shift from a config entry ``{source, attack}``."""
    check_mapping(entry, prefix)
    check_keys(entry, prefix, allowed={"source", "attack", "shards"}, required=("source", "attack"))
    attack = entry["attack"]
    if isinstance(attack, Mapping):
        spec = pgd_entry(attack, f"{prefix}.attack", inline=True)
    elif isinstance(attack, str) and attack in attacks:
        spec = attacks[attack]
    else:
        raise InputError(
            f"unknown attack {attack!r}; expected the name of an untargeted pgd or autoattack shift "
            f"({sorted(attacks)}) or an inline pgd entry",
            field=f"{prefix}.attack",
        )
    return transfer_spec(entry["source"], spec, field_prefix=prefix)


KIND = Transfer()
