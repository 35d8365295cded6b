"""Corruption severities, 1 (mildest) to 5, as in ImageNet-C."""

from __future__ import annotations

from typing import Any

from classwise.errors import InputError

SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)
DEFAULT_SEVERITIES: tuple[int, ...] = (3,)


def check_severity(severity: Any, field: str = "severity") -> int:
    """``severity`` as an int, or an :class:`InputError` naming ``field``."""
    import numpy as np  # here, not above: the captions import the severities and need no numpy

    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)) or int(severity) not in SEVERITIES:
        raise InputError(f"expected an integer severity from 1 to 5, got {severity!r}", field=field)
    return int(severity)
