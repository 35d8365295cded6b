"""Dataset dispatch: a ``datasets:`` config entry -> an :class:`ImageSet` split."""

from __future__ import annotations

from typing import Any, Literal

from classwise.data.digits import load_digits_split
from classwise.data.imageset import ImageSet
from classwise.errors import InputError

Split = Literal["train", "test"]


def load_split(dataset: dict[str, Any], split: Split, *, name: str = "dataset") -> ImageSet:
    """Load one split of a configured dataset (the test split is the evaluation set)."""
    source = dataset.get("source")
    if source == "sklearn_digits":
        train, test = load_digits_split(
            test_fraction=float(dataset.get("test_fraction", 0.5)),
            seed=int(dataset.get("split_seed", 0)),
        )
        return train if split == "train" else test
    raise InputError(f"unknown source {source!r}; expected 'sklearn_digits'", field=f"datasets.{name}.source")
