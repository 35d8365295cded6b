"""What the explorer page holds of each dataset and label view, as JSON-ready values.

Size matters at ImageNet's scale (1,000 classes x 100 shifts x 4 models: 400,000 class-wise
cells), so the class-wise numbers go as counts: each cell's support and hits (recall is
hits / support, exact), its CFPS to 4 significant digits, and its recall interval looked up by
(hits, support) in one small table (the interval is a function of the two counts, so a run of
50 images per class has a few hundred distinct ones). The confusions are each class's
``K`` most frequent (predicted class, count) pairs; the share is count / support.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from classwise.errors import InputError
from classwise.explorer.data import RANKED_METRICS, SUMMARY_COLUMNS, ViewData
from classwise.outputs import output
from classwise.robustness.across_shifts import REFERENCE_SHIFT, shifts_by_accuracy, worst_classes

__all__ = ["FORMAT", "LISTED_WORST", "explorer_payload", "view_payload", "worst_class_lists"]

#: The version of the page's data layout (the page's JavaScript reads this one).
FORMAT = 1

#: How many of the worst classes of each model and shift the page lists.
LISTED_WORST = 10


def worst_class_lists(recall: np.ndarray, listed: int = LISTED_WORST) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The worst classes of each row of ``recall`` ``(..., C)`` (NaN: a class without samples,
    never a worst class), as the tables name them: lowest recall first, ties to the lower
    index. Returns ``(classes, tied_at_minimum, tied_past_list)``: ``classes`` ``(..., listed)``
    the class indices (-1 past the classes with samples); ``tied_at_minimum`` ``(...)`` how many
    classes share the lowest recall (the WCA's ``(0; 10 tied)``); ``tied_past_list`` ``(...)``
    how many classes left off the list share the recall of the last one listed."""
    r = np.asarray(recall, dtype=np.float64)
    finite = np.isfinite(r)
    masked = np.where(finite, r, np.inf)
    listed = max(1, min(int(listed), r.shape[-1]))
    order = np.argsort(masked, axis=-1, kind="stable")[..., :listed]
    with_samples = finite.sum(axis=-1)
    shown = np.minimum(with_samples, listed)
    valid = np.arange(listed) < shown[..., None]
    classes = np.where(valid, order, -1)
    values = np.take_along_axis(masked, order, axis=-1)
    minimum = masked.min(axis=-1)
    tied_at_minimum = np.where(with_samples > 0, (masked == minimum[..., None]).sum(axis=-1), 0)
    last = np.take_along_axis(values, np.maximum(shown - 1, 0)[..., None], axis=-1)
    equal_listed = ((values == last) & valid).sum(axis=-1)
    equal_all = (masked == last).sum(axis=-1)
    tied_past_list = np.where(with_samples > 0, equal_all - equal_listed, 0)
    return classes.astype(np.int64), tied_at_minimum.astype(np.int64), tied_past_list.astype(np.int64)


def _significant(values: np.ndarray, digits: int = 4) -> list[float | None]:
    """``values`` rounded to ``digits`` significant digits (written short), NaN as ``None``."""
    return [float(f"{x:.{digits}g}") if np.isfinite(x) else None for x in np.asarray(values, dtype=np.float64).ravel()]


def _floats(values: Any) -> list[float | None]:
    """Full-precision floats, NaN as ``None`` (JSON has no NaN)."""
    return [float(x) if np.isfinite(x) else None for x in np.asarray(values, dtype=np.float64).ravel()]


def _interval_table(data: ViewData) -> dict[str, list[Any]]:
    """Each (hits, support) pair of the view once with its recall interval: the page looks each
    cell's interval up here (``per_class.csv`` computes it from the two counts alone)."""
    has = data.support > 0
    hits, support = data.hits[has], data.support[has]
    low, high = data.recall_low[has], data.recall_high[has]
    if hits.size == 0:
        return {"hits": [], "support": [], "low": [], "high": []}
    key = hits * (int(support.max()) + 1) + support
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    for values, column in ((low, "recall_ci_low"), (high, "recall_ci_high")):
        unique = values[first]
        same = np.isclose(values, unique[inverse], rtol=0.0, atol=1e-12) | (np.isnan(values) & np.isnan(unique[inverse]))
        if not same.all():
            raise InputError(f"expected one interval per (hits, support) in {data.dataset} ({data.labels} labels)", field=column)
    return {
        "hits": hits[first].tolist(),
        "support": support[first].tolist(),
        "low": _floats(low[first]),
        "high": _floats(high[first]),
    }


def _summary(data: ViewData) -> dict[str, list[Any]]:
    """The models x shifts table, column by column (shift and model as indices)."""
    frame = data.summary
    shifts = frame.index.get_level_values("shift")
    models = frame.index.get_level_values("model")
    columns: dict[str, list[Any]] = {
        "shift": [data.shifts.index(s) for s in shifts],
        "model": [data.models.index(m) for m in models],
    }
    for column, kind in SUMMARY_COLUMNS.items():
        columns[column] = _floats(frame[column]) if kind is float else [kind(value) for value in frame[column]]
    return columns


def _drops(data: ViewData) -> dict[str, Any] | None:
    """The class-drop tests as the page holds them: per (model, shift) one string of a digit
    per class (:data:`~classwise.explorer.data.DROP_CODES`: 1 char a cell, 100,000 a shift of
    ImageNet's 4 models), the significant cells' change, interval and adjusted p-value column by
    column, and how they were tested."""
    if data.drops is None:
        return None
    codes = data.drops.codes.astype(np.uint8) + ord("0")
    cells = data.drops.significant
    return {
        "codes": [[bytes(codes[m, s]).decode("ascii") for s in range(codes.shape[1])] for m in range(codes.shape[0])],
        "significant": {
            "m": cells["m"].astype(int).tolist(),
            "s": cells["s"].astype(int).tolist(),
            "c": cells["c"].astype(int).tolist(),
            **{key: _significant(cells[key].to_numpy()) for key in ("change", "change_low", "change_high", "p_adjusted")},
        },
        **data.drops.method,
    }


def _ranks(data: ViewData) -> dict[str, dict[str, list[Any]]] | None:
    """Per metric of :data:`~classwise.explorer.data.RANKED_METRICS`, each row of the models x
    shifts table's rank, its interval, group, ties and pairwise ranks (``None`` where the shift's
    models are not ranked)."""
    if data.ranking is None or data.ranking.empty:
        return None
    keyed = {(str(r["shift"]), str(r["model"]), str(r["metric"])): r for r in data.ranking.to_dict("records")}
    rows = list(data.summary.index)
    out: dict[str, dict[str, list[Any]]] = {}
    for metric in RANKED_METRICS:
        columns: dict[str, list[Any]] = {
            key: [] for key in ("rank", "low", "high", "group", "tied", "pairwise_low", "pairwise_high")
        }
        for shift, model in rows:
            row = keyed.get((str(shift), str(model), metric))
            columns["rank"].append(None if row is None else float(row["rank"]))
            columns["low"].append(None if row is None else float(row["rank_low"]))
            columns["high"].append(None if row is None else float(row["rank_high"]))
            columns["group"].append(None if row is None else str(row["group"]))
            columns["tied"].append(None if row is None else int(row["n_tied"]))
            columns["pairwise_low"].append(None if row is None else int(row["rank_low_pairwise"]))
            columns["pairwise_high"].append(None if row is None else int(row["rank_high_pairwise"]))
        out[metric] = columns
    return out


def _sources(data: ViewData, has_summary: bool) -> dict[str, str]:
    """The files behind the view's numbers, below the run's output directory (from the output
    records: the page names them)."""
    wildcards = {"dataset": data.dataset, "labels": data.labels}
    sources = {
        "per_class": output("per_class_numbers").fill(wildcards) + ".csv",
        "confusion": output("confusion_counts").fill(wildcards) + ".csv",
        "worst_class": output("worst_class_metrics").fill(wildcards) + ".json",
    }
    if has_summary:
        sources["shift_summary"] = output("shift_summary_table").fill(wildcards) + ".csv"
    if data.drops is not None:
        sources["class_drops"] = output("class_drops_table").fill(wildcards) + ".csv"
    if data.ranking is not None:
        sources["ranking"] = output("model_ranking_table").fill(wildcards) + ".csv"
    return sources


def view_payload(data: ViewData, *, listed: int = LISTED_WORST) -> dict[str, Any]:
    """What the page holds of one dataset and label view (:class:`ViewData`)."""
    m, s, c = data.support.shape
    recall = data.recall
    classes, tied_at_minimum, tied_past_list = worst_class_lists(recall, listed)
    by_shift = {shift: {model: recall[i, j] for i, model in enumerate(data.models)} for j, shift in enumerate(data.shifts)}
    shift_order = [data.shifts.index(shift) for shift in shifts_by_accuracy(by_shift)]
    class_order = worst_classes(recall.reshape(m * s, c), c)
    k = data.confused_with.shape[-1]
    return {
        "dataset": data.dataset,
        "labels": data.labels,
        "classes": data.class_names,
        "models": data.models,
        "shifts": data.shifts,
        "reference": REFERENCE_SHIFT if REFERENCE_SHIFT in data.shifts else None,
        "classOrder": class_order.tolist(),
        "shiftOrder": shift_order,
        "support": data.support.tolist(),
        "hits": data.hits.tolist(),
        "cfps": [[_significant(data.cfps[i, j]) for j in range(s)] for i in range(m)],
        "intervals": _interval_table(data),
        "confusions": k,
        "confusedWith": data.confused_with.reshape(m, s, c * k).tolist(),
        "confusedCount": data.confused_count.reshape(m, s, c * k).tolist(),
        "worst": {
            "classes": classes.tolist(),
            "tiedAtMinimum": tied_at_minimum.tolist(),
            "tiedPastList": tied_past_list.tolist(),
        },
        "summary": _summary(data),
        "hasShiftSummary": bool((data.summary["pairing"] != "").any()),
        "leftOut": list(data.left_out),
        "drops": _drops(data),
        "ranks": _ranks(data),
        "sources": _sources(data, bool((data.summary["pairing"] != "").any())),
    }


def explorer_payload(
    views: Sequence[Mapping[str, Any]], *, title: str, description: str = "", confidence: float = 0.95
) -> dict[str, Any]:
    """The page's data: its title, the run's description, the level of the class-wise
    intervals (``confidence``) and one :func:`view_payload` per dataset and label view."""
    if not views:
        raise InputError("expected at least one dataset and label view", field="views")
    return {
        "format": FORMAT,
        "title": title,
        "description": description,
        "confidence": float(confidence),
        "views": list(views),
    }
