"""What the attacks take, checked in one place: their norms, the radius ``eps``, AutoAttack's versions
and the fewest classes each version needs.

Both sides read this module: the shift kinds (:mod:`classwise.shifts.kinds`), which check a
config's entries at DAG-build time without torch, and the attacks that run in the jobs
(:func:`classwise.shifts.pgd.pgd_attack`, :func:`classwise.shifts.autoattack.autoattack`), which
check their arguments the same way. It imports no torch.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from classwise.errors import InputError

Norm = Literal["linf", "l2"]
NORMS: tuple[Norm, ...] = ("linf", "l2")
AutoAttackVersion = Literal["standard", "rand"]
AUTOATTACK_VERSIONS: tuple[AutoAttackVersion, ...] = ("standard", "rand")
AUTOATTACK_MIN_CLASSES: dict[str, int] = {"standard": 4, "rand": 3}
"""The fewest classes each AutoAttack version's DLR losses can use (APGD-T's targeted DLR reads
the 3rd and 4th largest logits, APGD-DLR the 3rd)."""


def check_eps(value: Any, field: str) -> float:
    """``value`` as an attack's radius: a finite number ``>= 0`` (``0``: the clean images), else
    an :class:`InputError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(f"expected a finite number >= 0, got {value!r}", field=field)
    return float(value)
