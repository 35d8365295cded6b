"""What the attacks take, checked in one place: their norms, the radius ``eps``, AutoAttack's versions
and the fewest classes each version needs, and the records of one attack's hyper-parameters
(:class:`PgdSettings`, :class:`AutoAttackSettings`), which check themselves when made.

Both sides read this module: the shift kinds (:mod:`classwise.shifts.kinds`), which check a
config's entries at DAG-build time without torch, and the attacks that run in the jobs
(:func:`classwise.shifts.pgd.pgd_attack`, :func:`classwise.shifts.autoattack.autoattack`), which
check their arguments the same way. It imports no torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from classwise.errors import InputError, check_count

Norm = Literal["linf", "l2"]
NORMS: tuple[Norm, ...] = ("linf", "l2")
AutoAttackVersion = Literal["standard", "rand"]
AUTOATTACK_VERSIONS: tuple[AutoAttackVersion, ...] = ("standard", "rand")
AUTOATTACK_MIN_CLASSES: dict[str, int] = {"standard": 4, "rand": 3}
#: The PGD settings a config entry may leave out (``step_size``: ``2.5 * eps / steps``, :attr:`PgdSettings.alpha`).
PGD_DEFAULTS: dict[str, Any] = {"steps": 10, "random_start": True}
"""The fewest classes each AutoAttack version's DLR losses can use (APGD-T's targeted DLR reads
the 3rd and 4th largest logits, APGD-DLR the 3rd)."""


def check_eps(value: Any, field: str) -> float:
    """``value`` as an attack's radius: a finite number ``>= 0`` (``0``: the clean images), else
    an :class:`InputError` naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(f"expected a finite number >= 0, got {value!r}", field=field)
    return float(value)


_Record = TypeVar("_Record")


def _prefixed(make: Callable[[], _Record], field_prefix: str) -> _Record:
    """``make()``, its :class:`InputError` naming the field under ``field_prefix`` (a config entry)."""
    try:
        return make()
    except InputError as error:
        raise InputError(error.message, field=f"{field_prefix}.{error.field}") from None


@dataclass(frozen=True)
class PgdSettings:
    """One PGD attack (:func:`classwise.shifts.pgd.pgd_attack`): the ``norm`` and radius ``eps`` of
    its ball (pixel units), ``steps`` steps of ``step_size`` (``None``: ``2.5 * eps / steps``,
    Madry et al.; :attr:`alpha`), from a random point of the ball (``random_start``) or from the
    clean image. Checked when made: an :class:`InputError` names the bad field."""

    norm: Norm
    eps: float
    steps: int = PGD_DEFAULTS["steps"]
    step_size: float | None = None
    random_start: bool = PGD_DEFAULTS["random_start"]

    def __post_init__(self) -> None:
        if self.norm not in NORMS:
            raise InputError(f"unknown norm {self.norm!r}; expected one of {list(NORMS)}", field="norm")
        check_eps(self.eps, "eps")
        # normalised as well as checked (a numpy integer): the steps go into a shift's params
        object.__setattr__(self, "steps", check_count(self.steps, "steps", minimum=0))
        step_size = self.step_size
        if step_size is not None:
            if isinstance(step_size, bool) or not isinstance(step_size, (int, float)) or not math.isfinite(step_size):
                raise InputError(f"expected a finite number, got {step_size!r}", field="step_size")
            if step_size < 0:
                raise InputError(f"expected a number >= 0, got {step_size!r}", field="step_size")
        if not isinstance(self.random_start, bool):
            raise InputError(f"expected true or false, got {self.random_start!r}", field="random_start")

    @property
    def alpha(self) -> float:
        """The size of each step: ``step_size``, or ``2.5 * eps / steps`` when it is ``None`` (0 without steps)."""
        if self.step_size is not None:
            return float(self.step_size)
        return 2.5 * float(self.eps) / self.steps if self.steps else 0.0

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any], field_prefix: str) -> PgdSettings:
        """From a config entry (``norm``, ``eps`` and those of :data:`PGD_DEFAULTS` and ``step_size``
        it gives); an :class:`InputError` names the field under ``field_prefix``."""
        return _prefixed(
            lambda: cls(
                norm=entry["norm"],
                eps=entry["eps"],
                steps=entry.get("steps", PGD_DEFAULTS["steps"]),
                step_size=entry.get("step_size"),
                random_start=entry.get("random_start", PGD_DEFAULTS["random_start"]),
            ),
            field_prefix,
        )


@dataclass(frozen=True)
class AutoAttackSettings:
    """One AutoAttack (:func:`classwise.shifts.autoattack.autoattack`): the ``norm`` and radius
    ``eps`` of its ball (pixel units) and the ensemble's ``version`` (one of
    :data:`AUTOATTACK_VERSIONS`). Checked when made: an :class:`InputError` names the bad field."""

    norm: Norm
    eps: float
    version: AutoAttackVersion = "standard"

    def __post_init__(self) -> None:
        if self.version not in AUTOATTACK_VERSIONS:
            raise InputError(
                f"unknown AutoAttack version {self.version!r}; expected one of {list(AUTOATTACK_VERSIONS)}", field="version"
            )
        if self.norm not in NORMS:
            raise InputError(f"AutoAttack supports the norms {list(NORMS)}, got {self.norm!r}", field="norm")
        check_eps(self.eps, "eps")

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any], field_prefix: str) -> AutoAttackSettings:
        """From a config entry (``norm``, ``eps`` and, when given, ``version``); an
        :class:`InputError` names the field under ``field_prefix``."""
        return _prefixed(
            lambda: cls(norm=entry["norm"], eps=entry["eps"], version=entry.get("version", "standard")), field_prefix
        )
