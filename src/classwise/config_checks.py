"""Checks of the workflow config that a JSON schema cannot express (cross references)."""

from __future__ import annotations

from typing import Any

from classwise.errors import InputError


def check_references(config: dict[str, Any], *, source: str = "config") -> None:
    """Raise :class:`InputError` when a key refers to something the config does not define."""
    datasets = config.get("datasets", {})
    for name, model in config.get("models", {}).items():
        train_on = model.get("train_on")
        if train_on is not None and train_on not in datasets:
            raise InputError(
                f"names dataset '{train_on}', expected one of {sorted(datasets)}",
                path=source,
                field=f"models.{name}.train_on",
            )
