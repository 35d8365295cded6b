"""What the explorer of a run reads (rule build_explorer, workflow/rules/explorer.smk): per
dataset and label view, the metric outputs of every model and shift, the shift summary of the
class-wise robustness step where it runs, the class-drop tests where they run and the models'
ranking of each shift where they are ranked. The paths come from the output records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from classwise.outputs import output
from classwise.pipeline.plan import Plan, RobustnessRuns

__all__ = ["explorer_inputs", "explorer_views"]


def explorer_views(plan: Plan, robustness: Mapping[str, RobustnessRuns], *, out: str) -> list[dict[str, Any]]:
    """One entry per dataset and label view with shifts (datasets in config order, ``original``
    first): its models and shifts, per model and shift the ``per_class`` CSV, ``confusion`` CSV
    and ``worst_class`` JSON, the ``shift_summary`` CSV of the original labels when the
    class-wise robustness step runs on the dataset (``None`` otherwise), ``left_out``, the
    shifts over a class subset (their classes are not the dataset's), ``class_drops``, the
    view's class-drop CSV where the tests run (``None`` otherwise), and ``rankings``, shift ->
    its model-ranking CSV where the dataset's models are compared (``plan.compared``: the
    bootstrap on, two models or more) and the view has one true class per image, as
    :meth:`classwise.explorer.ViewFiles.from_json` reads them."""
    views = []
    for (dataset, labels), planned in plan.view_shifts.items():
        if dataset not in plan.models:
            continue
        runs = robustness.get(dataset)
        # a shift over a class subset (ImageNet-R, -A) has its own class list: left out, as the
        # class-wise robustness step leaves it out (the shifts of the original labels it does not read)
        original = plan.view_shifts.get((dataset, "original"), [])
        subset_only = set(original) - set(runs.full_label_space) if runs is not None else set()
        shifts = [shift for shift in planned if shift not in subset_only]
        if not shifts:
            continue
        models = plan.models[dataset]
        files = {
            model: {
                shift: {
                    "per_class": _file("per_class_numbers", out, dataset, labels, model, shift),
                    "confusion": _file("confusion_counts", out, dataset, labels, model, shift),
                    "worst_class": _file("worst_class_metrics", out, dataset, labels, model, shift),
                }
                for shift in shifts
            }
            for model in models
        }
        runs = robustness.get(dataset)
        summary = None
        if labels == "original" and runs is not None and runs.classwise:
            summary = output("shift_summary_table").files_of(out, {"dataset": dataset})["shift_summary_csv"]
        drops = None
        if runs is not None and labels in runs.class_drops:
            drops = output("class_drops_table").files_of(out, {"dataset": dataset, "labels": labels})["drops_csv"]
        rankings = {}
        if dataset in plan.compared and (dataset, labels) not in plan.label_set_views:
            record = output("model_ranking_table")
            rankings = {
                shift: record.files_of(out, {"dataset": dataset, "labels": labels, "shift": shift})["ranking_csv"]
                for shift in shifts
            }
        views.append(
            {
                "dataset": dataset,
                "labels": labels,
                "models": list(models),
                "shifts": list(shifts),
                "files": files,
                "shift_summary": summary,
                "left_out": [shift for shift in planned if shift in subset_only],
                "class_drops": drops,
                "rankings": rankings,
            }
        )
    order = {dataset: i for i, dataset in enumerate(plan.models)}
    return sorted(views, key=lambda view: (order[view["dataset"]], view["labels"] != "original"))


def _file(name: str, out: str, dataset: str, labels: str, model: str, shift: str) -> str:
    files = output(name).files_of(out, {"dataset": dataset, "labels": labels, "model": model, "shift": shift})
    return next(iter(files.values()))


def explorer_inputs(views: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every file of :func:`explorer_views`, once each: the rule's input."""
    paths: list[str] = []
    for view in views:
        for by_shift in view["files"].values():
            for by_kind in by_shift.values():
                paths.extend(by_kind.values())
        if view["shift_summary"]:
            paths.append(view["shift_summary"])
        if view.get("class_drops"):
            paths.append(view["class_drops"])
        paths.extend((view.get("rankings") or {}).values())
    return list(dict.fromkeys(paths))
