"""The config's ``gates:`` checked before any job, and the runs they are checked on.

``gates:`` maps a metric to its bounds and, optionally, a scope::

    gates:
      WCA: {min: 0.5}                                   # every (dataset, label view, model, shift)
      CFPS_max: {max: 0.3, models: [net], shifts: [clean]}

A gate applies to every (dataset, label view, model, shift) the run evaluates, unless it names
``datasets``, ``label_views``, ``models`` or ``shifts`` to keep; it is checked on that run's
``worst_class.json`` and ``decisiveness.json`` (:mod:`classwise.metrics.gates`). Before any job:
an unknown metric, a scope naming something the config does not evaluate, a scope that keeps no
run, ``min`` above ``max``, a metric that needs scores on a model with hard predictions only
there, or one that needs one label per image on a ReaL view is an :class:`InputError` naming
the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from classwise.errors import InputError
from classwise.metrics.catalogue import label_sets_metric_names, metric_names
from classwise.metrics.gates import SCOPE_KEYS, applies
from classwise.pipeline.plan import Plan

__all__ = ["gate_runs"]


def gate_runs(
    gates: Mapping[str, Mapping[str, Any]],
    plan: Plan,
    *,
    views: Mapping[str, Sequence[str]],
    k: int,
    ns: Sequence[int],
    source: str = "config",
) -> list[dict[str, str]]:
    """Every (dataset, label view, model, shift) some gate applies to, as ``{dataset, labels,
    model, shift, scored}`` (``scored``: ``"yes"`` when the model has scores there, so a
    ``decisiveness.json`` exists); ``views`` maps a dataset to its label views."""
    runs = [
        {"dataset": dataset, "labels": view, "model": model, "shift": shift}
        for dataset, dataset_views in views.items()
        for view in dataset_views
        for shift in plan.view_shifts[(dataset, view)]
        for model in plan.models[dataset]
    ]
    known = list(metric_names(k=k, ns=ns))
    needs_scores = set(metric_names(k=k, ns=ns, where=lambda entry: entry.needs_scores))
    needs_one_label = set(label_sets_metric_names())
    kept: list[dict[str, str]] = []
    for metric, bounds in gates.items():
        where = f"gates.{metric}"
        if metric not in known:
            raise InputError(f"unknown metric; expected one of {known}", path=source, field=where)
        if "min" in bounds and "max" in bounds and bounds["min"] > bounds["max"]:
            raise InputError(f"min {bounds['min']} is above max {bounds['max']}: no value passes", path=source, field=where)
        for key, part in SCOPE_KEYS.items():
            evaluated = sorted({run[part] for run in runs})
            unknown = [name for name in bounds.get(key, []) if name not in evaluated]
            if unknown:
                raise InputError(f"names {unknown}, expected some of {evaluated}", path=source, field=f"{where}.{key}")
        scoped = [run for run in runs if applies(bounds, run)]
        if not scoped:
            raise InputError("keeps no (dataset, label view, model, shift) the config evaluates", path=source, field=where)
        if metric in needs_scores:
            hard = sorted({(r["dataset"], r["model"], r["shift"]) for r in scoped} & plan.hard_predictions)
            if hard:
                dataset, model, shift = hard[0]
                raise InputError(
                    f"{metric} needs scores, and model {model!r} has hard predictions only on {dataset}/{shift}; "
                    f"leave it out with {where}.models",
                    path=source,
                    field=where,
                )
        if metric in needs_one_label:
            sets = sorted({(r["dataset"], r["labels"]) for r in scoped} & plan.label_set_views)
            if sets:
                dataset, view = sets[0]
                raise InputError(
                    f"{metric} needs one correct label per image, and label view {view!r} of {dataset} (ImageNet "
                    f"ReaL) has several; leave it out with {where}.label_views",
                    path=source,
                    field=where,
                )
        kept += [run for run in scoped if run not in kept]
    return [{**run, "scored": "yes" if _has_decisiveness(plan, run) else "no"} for run in kept]


def _has_decisiveness(plan: Plan, run: Mapping[str, str]) -> bool:
    """Whether the run has a decisiveness.json: scores, and one label per image."""
    hard = (run["dataset"], run["model"], run["shift"]) in plan.hard_predictions
    return not hard and (run["dataset"], run["labels"]) not in plan.label_set_views
