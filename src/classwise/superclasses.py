"""Superclass groupings: a mapping from a superclass name to its class indices."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from classwise.errors import InputError

Superclasses = dict[str, list[int]]


def validate_superclasses(raw: Any, n_classes: int, *, path: str | Path | None = None) -> Superclasses:
    """Check ``{name: [class index, ...]}`` with every index in ``[0, n_classes)``."""
    if not isinstance(raw, Mapping) or not raw:
        raise InputError("expected a non-empty JSON object mapping superclass names to lists of class indices", path=path)
    out: Superclasses = {}
    for name, members in raw.items():
        if not isinstance(members, Sequence) or isinstance(members, str) or not members:
            raise InputError("expected a non-empty list of class indices", path=path, field=str(name))
        indices = []
        for member in members:
            if isinstance(member, bool) or not isinstance(member, int):
                raise InputError(f"expected integer class indices, got {member!r}", path=path, field=str(name))
            if not 0 <= member < n_classes:
                raise InputError(f"class index {member} is out of range [0, {n_classes})", path=path, field=str(name))
            indices.append(int(member))
        out[str(name)] = indices
    return out


def load_superclasses(path: str | Path, n_classes: int) -> Superclasses:
    """Read and validate a superclass JSON file."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("file does not exist", path=p) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=p) from exc
    return validate_superclasses(raw, n_classes, path=p)


#: Restricted ImageNet (MadryLab/robustness): nine superclasses as inclusive ranges of
#: ImageNet-1k class indices (sorted-wnid order).
RESTRICTED_IMAGENET_RANGES: dict[str, tuple[int, int]] = {
    "dog": (151, 268),
    "cat": (281, 285),
    "frog": (30, 32),
    "turtle": (33, 37),
    "bird": (80, 100),
    "monkey": (365, 382),
    "fish": (389, 397),
    "crab": (118, 121),
    "insect": (300, 319),
}

#: Named superclass sets a config may give instead of a mapping.
NAMED_SUPERCLASSES: dict[str, dict[str, list[int]]] = {
    "restricted_imagenet": {name: list(range(first, last + 1)) for name, (first, last) in RESTRICTED_IMAGENET_RANGES.items()},
}


def resolve_superclasses(value: Any) -> dict[str, list[int]]:
    """A config's ``superclasses``: a mapping as given, a named set resolved, absent -> ``{}``."""
    if value is None:
        return {}
    if isinstance(value, str):
        if value not in NAMED_SUPERCLASSES:
            raise InputError(
                f"unknown superclass set {value!r}; expected one of {sorted(NAMED_SUPERCLASSES)}", field="superclasses"
            )
        return NAMED_SUPERCLASSES[value]
    return {str(name): list(members) for name, members in dict(value).items()}
