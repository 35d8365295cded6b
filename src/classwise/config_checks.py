"""Checks of the workflow config that a JSON schema cannot express (cross references, paths)."""

from __future__ import annotations

from typing import Any

from classwise.errors import InputError


def check_references(config: dict[str, Any], *, source: str = "config", shifts: list[str] | None = None) -> None:
    """Raise :class:`InputError` when a key refers to something the config does not define, or a
    directory the user must provide is missing (so the run stops before any job)."""
    from classwise.data.sources import check_dataset_paths
    from classwise.superclasses import resolve_superclasses

    datasets = config.get("datasets", {})
    models = config.get("models", {})
    for name, model in models.items():
        train_on = model.get("train_on")
        if train_on is not None and train_on not in datasets:
            raise InputError(
                f"names dataset '{train_on}', expected one of {sorted(datasets)}",
                path=source,
                field=f"models.{name}.train_on",
            )
    for name, dataset in datasets.items():
        try:
            check_dataset_paths(dataset, name)
            resolve_superclasses(dataset.get("superclasses"))
        except InputError as error:
            raise InputError(str(error), path=source) from None
        for shift in dataset.get("shifts", []):
            if shifts is not None and shift not in shifts:
                raise InputError(f"names shift {shift!r}, expected one of {shifts}", path=source, field=f"datasets.{name}.shifts")
        for view, view_cfg in dataset.get("label_views", {}).items():
            field = f"datasets.{name}.label_views.{view}"
            reference = view_cfg.get("reference_model")
            if view_cfg.get("kind") == "confident_learning" and reference not in models:
                raise InputError(
                    f"names model {reference!r}, expected one of {sorted(models)}", path=source, field=f"{field}.reference_model"
                )
            if view_cfg.get("kind") == "imagenet_cleaned" and "variant" not in view_cfg:
                raise InputError("is required for kind imagenet_cleaned (paper or aligned)", path=source, field=f"{field}.variant")
            for shift in view_cfg.get("shifts", []):
                if shifts is not None and shift not in shifts:
                    raise InputError(f"names shift {shift!r}, expected one of {shifts}", path=source, field=f"{field}.shifts")
