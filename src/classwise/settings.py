"""A stage's settings as one typed, frozen object, parsed once from its config block.

A settings class is a frozen, keyword-only dataclass whose fields are named as the keys of its
config block (``analyses.extrapolation``'s ``cleanex_patience`` is the field
``cleanex_patience``), so that one name runs from the schema to the step and a step takes its
settings whole instead of one keyword per key. :meth:`Settings.from_config` picks the fields
from a block (or a rule's ``params``, which carry the block's keys), ignoring the keys that
belong to other parts of the stage; a missing required key is an :class:`InputError` naming the
block and the field before any work.

This module imports nothing heavy: a job imports its step's settings before the step begins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, TypeVar

from classwise.errors import InputError

S = TypeVar("S", bound="Settings")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The base of a stage's settings (see the module). ``block`` names the config block the
    fields come from, for errors (``analyses.extrapolation``)."""

    block: ClassVar[str] = ""

    @classmethod
    def from_config(cls: type[S], values: Mapping[str, Any], **given: Any) -> S:
        """The settings from ``values`` (a config block or a rule's ``params``; keys that are not
        fields are ignored) and ``given`` (values from outside the block, e.g. the run's
        ``seed``), ``given`` first."""
        chosen: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name in given:
                chosen[spec.name] = given[spec.name]
            elif spec.name in values:
                chosen[spec.name] = values[spec.name]
            elif spec.default is MISSING and spec.default_factory is MISSING:
                raise InputError(f"missing setting {spec.name!r}", field=f"{cls.block}.{spec.name}".lstrip("."))
        return cls(**chosen)
