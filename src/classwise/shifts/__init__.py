"""Distribution shifts: specifications and their kinds, seeding, common corruptions, PGD and AutoAttack.

The names below are imported on first use, so that the workflow's DAG build (which needs only
:mod:`classwise.shifts.spec`) does not import torch through the PGD module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from classwise._extras import import_module

if TYPE_CHECKING:
    from classwise.shifts.attack_settings import AutoAttackSettings, PgdSettings
    from classwise.shifts.autoattack import autoattack
    from classwise.shifts.corruptions import (
        CORRUPTIONS,
        Corruption,
        corrupt_batch,
        corrupt_image,
        register_corruption,
    )
    from classwise.shifts.kinds import KINDS, ShiftKind, shift_kind
    from classwise.shifts.pgd import pgd_attack, random_start_delta
    from classwise.shifts.seeding import sample_seed
    from classwise.shifts.spec import ADVERSARIAL_KINDS, ShiftSpec, expand_shifts, stratified_subset

_LAZY = {
    "AutoAttackSettings": "classwise.shifts.attack_settings",
    "PgdSettings": "classwise.shifts.attack_settings",
    "autoattack": "classwise.shifts.autoattack",
    "KINDS": "classwise.shifts.kinds",
    "ShiftKind": "classwise.shifts.kinds",
    "shift_kind": "classwise.shifts.kinds",
    "CORRUPTIONS": "classwise.shifts.corruptions",
    "Corruption": "classwise.shifts.corruptions",
    "corrupt_batch": "classwise.shifts.corruptions",
    "corrupt_image": "classwise.shifts.corruptions",
    "register_corruption": "classwise.shifts.corruptions",
    "pgd_attack": "classwise.shifts.pgd",
    "random_start_delta": "classwise.shifts.pgd",
    "sample_seed": "classwise.shifts.seeding",
    "ADVERSARIAL_KINDS": "classwise.shifts.spec",
    "ShiftSpec": "classwise.shifts.spec",
    "stratified_subset": "classwise.shifts.spec",
    "expand_shifts": "classwise.shifts.spec",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)  # names the extra when torch & co. are missing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
