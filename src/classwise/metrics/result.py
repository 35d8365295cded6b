"""The value type every metric returns, and the metrics step's document of them read back."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from classwise.errors import InputError, field_path


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


def read_metrics_document(path: str | Path) -> dict[str, Any]:
    """A worst-class metrics document as the metrics step writes it (``worst_class.json``: its
    ``metrics``, each a :meth:`MetricResult.to_json` with its interval); an
    :class:`InputError` naming the file when it is not one. The one reader of the file for
    the views that read its numbers (the robustness analyses, the explorer)."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"cannot read the worst-class metrics: {error}", path=path) from error
    if not isinstance(document, dict) or not isinstance(document.get("metrics"), dict):
        raise InputError("expected a worst-class metrics document with 'metrics'", path=path)
    return document


def metric_entry(document: Mapping[str, Any], name: str, path: str | Path) -> dict[str, Any]:
    """The entry of metric ``name`` of a document of :func:`read_metrics_document` (read from
    ``path``); an :class:`InputError` naming the file and the field when it has no value."""
    entry = document["metrics"].get(name)
    if not isinstance(entry, dict) or "value" not in entry:
        raise InputError(f"expected the metric {name} with its value", path=path, field=field_path("metrics", name))
    return entry
