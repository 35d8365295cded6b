"""Gates: bounds on metric values that a model must meet (a model-release pipeline's checks).

A gate is ``(metric, "min" | "max", threshold)``: it passes when the metric's value is at least
(``min``) or at most (``max``) the threshold, both inclusive. Values are compared as the metrics
JSON holds them: fractions in ``[0, 1]`` for the accuracies (``WCA=0.5`` is 50 %), not percent.
A metric the file lists under ``skipped`` (trivial for the class count, or needing scores that
hard predictions lack), or whose value is undefined (``null``), cannot pass: the gate fails and
says why, since a check that could not be made must not let a release through. A metric the file
does not know at all is an error (a typo), not a failure.

The documents are ``classwise metrics`` JSON files or the workflow's ``worst_class.json`` and
``decisiveness.json`` (the same ``metrics: {NAME: {"value": ...}}`` layout).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from classwise.errors import InputError

__all__ = [
    "SCOPE_KEYS",
    "Gate",
    "GateResult",
    "applies",
    "check",
    "gates_from_config",
    "parse_bound",
    "results_table",
]

Bound = Literal["min", "max"]
_BOUNDS: tuple[Bound, ...] = ("min", "max")
_SYMBOL = {"min": ">=", "max": "<="}


#: The scope keys of a gate in the workflow config -> the part of a run they restrict.
SCOPE_KEYS = {"datasets": "dataset", "label_views": "labels", "models": "model", "shifts": "shift"}


def applies(bounds: Mapping[str, Any], run: Mapping[str, str]) -> bool:
    """Whether a config gate (``{min, max, datasets, label_views, models, shifts}``) applies to
    ``run`` (``{dataset, labels, model, shift}``): every scope it gives names the run's part."""
    return all(key not in bounds or run[part] in bounds[key] for key, part in SCOPE_KEYS.items())


@dataclass(frozen=True)
class Gate:
    metric: str
    bound: Bound
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric} {_SYMBOL[self.bound]} {self.threshold:g}"


@dataclass(frozen=True)
class GateResult:
    """One gate checked on one document (``where``: what the document is, e.g. its file)."""

    gate: Gate
    where: Mapping[str, str]
    value: float | None
    passed: bool
    note: str = ""


def parse_bound(text: str, bound: Bound) -> Gate:
    """``"WCA=0.5"`` -> ``Gate("WCA", bound, 0.5)``; :class:`InputError` naming ``--min`` /
    ``--max`` for anything else (no ``=``, an empty name, a threshold that is not a finite number)."""
    field = f"--{bound}"
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise InputError(f"expected METRIC=VALUE (e.g. WCA=0.5), got {text!r}", field=field)
    try:
        threshold = float(value)
    except ValueError:
        raise InputError(f"expected a number after '=' in {text!r}", field=field) from None
    if not math.isfinite(threshold):
        raise InputError(f"expected a finite number after '=' in {text!r}", field=field)
    return Gate(name, bound, threshold)


def gates_from_config(section: Mapping[str, Mapping[str, Any]]) -> list[Gate]:
    """The gates of the workflow config's ``gates:`` (metric -> ``{min, max, ...}``)."""
    return [
        Gate(metric, bound, float(bounds[bound])) for metric, bounds in section.items() for bound in _BOUNDS if bound in bounds
    ]


def check(
    document: Mapping[str, Any], gates: Iterable[Gate], *, where: Mapping[str, str], source: str = "metrics"
) -> list[GateResult]:
    """Each gate checked on ``document`` (``source`` names it in errors): a metric neither in its
    ``metrics`` nor in its ``skipped`` is an :class:`InputError` listing the metrics it has."""
    metrics = document.get("metrics")
    if not isinstance(metrics, Mapping):
        raise InputError(
            "expected a metrics JSON with a 'metrics' mapping (classwise metrics output)", path=source, field="metrics"
        )
    skipped = document.get("skipped") or {}
    results = []
    for gate in gates:
        if gate.metric in metrics:
            value = metrics[gate.metric].get("value") if isinstance(metrics[gate.metric], Mapping) else None
            if value is None or not math.isfinite(float(value)):
                results.append(GateResult(gate, where, None, False, "undefined value"))
                continue
            value = float(value)
            passed = value >= gate.threshold if gate.bound == "min" else value <= gate.threshold
            results.append(GateResult(gate, where, value, passed))
        elif gate.metric in skipped:
            results.append(GateResult(gate, where, None, False, f"not computed: {skipped[gate.metric]}"))
        else:
            raise InputError(f"unknown metric {gate.metric!r}; this file has {sorted(metrics)}", path=source, field=gate.metric)
    return results


def results_table(results: Sequence[GateResult]) -> pd.DataFrame:
    """One row per checked gate: where, the gate, the value and pass / FAIL (with why)."""
    rows = []
    for result in results:
        status = "pass" if result.passed else "FAIL"
        rows.append(
            {
                **dict(result.where),
                "gate": str(result.gate),
                "value": "" if result.value is None else f"{result.value:.4f}",
                "status": f"{status} ({result.note})" if result.note else status,
            }
        )
    return pd.DataFrame(rows)
