"""``source: sklearn_digits``: scikit-learn's 8x8 digits, split by ``test_fraction`` and
``split_seed`` (the embedded demo)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from classwise.data.sources.base import BaseDatasetSource, Split


class DigitsSource(BaseDatasetSource):
    name = "sklearn_digits"
    has_train_split = True

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        return 10

    def image_shape(self, dataset: Mapping[str, Any]) -> tuple[int, ...] | None:
        return (1, 8, 8)

    def job_parameters(self, dataset: Mapping[str, Any]) -> dict[str, Any]:
        """Plus the version of the split's convention, so that Snakemake reruns every job that
        saw a split made under another convention."""
        from classwise.data.digits import SPLIT_CONVENTION

        return json.loads(json.dumps({**dataset, "split_convention": SPLIT_CONVENTION}, sort_keys=True))

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        from classwise.data.digits import load_digits_split

        train, test = load_digits_split(
            test_fraction=float(dataset.get("test_fraction", 0.5)),
            seed=int(dataset.get("split_seed", 0)),
        )
        return train if split == "train" else test


SOURCE = DigitsSource()
