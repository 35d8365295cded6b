"""The value type every metric returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MetricResult:
    """A metric value in [0, 1] (a fraction, never a percentage) and what it points at.

    ``classes`` names the worst class indices, superclass names or the worst pair where the
    metric has them, and is empty otherwise. ``details`` carries documented side facts
    (for example how many classes were excluded from a minimum).
    """

    value: float
    classes: tuple[Any, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON form; an undefined value (NaN, e.g. a 0/0 slope) becomes ``null``."""
        value = float(self.value)
        out: dict[str, Any] = {
            "value": value if math.isfinite(value) else None,
            "classes": [c.item() if hasattr(c, "item") else c for c in self.classes],
        }
        if self.details:
            out["details"] = self.details
        return out


@dataclass(frozen=True)
class MetricReplicates:
    """One metric's value in each bootstrap replicate and, for metrics that name a worst class,
    superclass or pair, what they name (``worst[r]``: a tuple, the first by the tie rule; empty
    when none) and ``shares``: each named element's number of replicates in which it is the
    worst, a replicate in which ``t`` elements tie counting ``1/t`` for each (so that a tie
    rule never makes one element the worst)."""

    values: np.ndarray
    worst: list[tuple[Any, ...]] | None = None
    shares: dict[tuple[Any, ...], float] | None = None
