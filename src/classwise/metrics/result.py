"""The value type every metric returns, and the metrics step's files of them read back."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.errors import InputError, field_path

if TYPE_CHECKING:
    import pandas as pd


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


def read_checked_csv(path: str | Path, columns: Sequence[str], what: str, **read_csv: Any) -> pd.DataFrame:
    """A CSV a step wrote, read by ``pandas.read_csv(path, **read_csv)`` and holding ``columns``;
    an :class:`InputError` naming the file when it cannot be read as ``what`` or lacks a column."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, **read_csv)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"cannot read {what}: {error}", path=path) from error
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise InputError(f"expected the columns {list(columns)}, missing {missing}", path=path)
    return frame


def read_text_table(path: str | Path, columns: Sequence[str], what: str) -> pd.DataFrame:
    """:func:`read_checked_csv` with every cell as written (text; an empty cell "")."""
    return read_checked_csv(path, columns, what, dtype=str, keep_default_na=False)


def read_per_class_table(path: str | Path, columns: Sequence[str]) -> pd.DataFrame:
    """``per_class.csv`` as the metrics step writes it (:func:`classwise.metrics.suite.per_class_table`),
    with every column of ``columns``: the names as written (a class named ``NA`` stays ``NA``),
    the other columns of ``columns`` as numbers (an empty cell NaN), the rest as text. An
    :class:`InputError` naming the file (and the column) when it cannot be read, lacks one of
    ``columns``, holds something else than a number in one, or is not one row per class in class
    order. The one reader of the file for the views that read its numbers (the robustness
    analyses, the explorer)."""
    import pandas as pd  # here: the metrics' core imports no pandas for a file it may not read

    frame = read_text_table(path, columns, "the per-class numbers")
    for column in columns:
        if column == "name":
            continue
        try:
            frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
        except (ValueError, TypeError) as error:
            raise InputError(f"expected numbers: {error}", path=path, field=column) from error
    if not np.array_equal(frame["class"].to_numpy(), np.arange(len(frame))):
        raise InputError("expected one row per class, in class order 0, 1, 2, ...", path=path, field="class")
    return frame
