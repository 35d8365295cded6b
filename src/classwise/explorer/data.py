"""What the explorer reads of one dataset and label view: the cached metric outputs of every
(model, shift), never the logits.

* ``per_class.csv`` (the worst-class step's per-class numbers): each class's support, recall,
  CFPS and the recall's interval;
* ``confusion.csv`` (counts, true x predicted): each class's most frequent confusions, reduced
  on reading to the ``confusions`` largest off-diagonal cells of its row (:func:`top_confusions`),
  so that a run of 1,000 classes x 100 shifts never holds its 400 matrices at once;
* ``worst_class.json``: A and WCA with their intervals, where the run has them (the bootstrap on);
* ``shift_summary.csv`` (the class-wise robustness step's, original labels only): A, WCA with its
  class and ties, and both changes from clean on the same samples, matched by sample id, with
  ``n`` and the pairing. Where a view has no shift summary (a label view, a shift over a class
  subset) the explorer shows A and WCA of ``worst_class.json`` and no change from clean: a
  change needs the pairing of samples, which only the robustness step knows;
* ``class_drops.csv`` (the class-drop tests of the view, where they run): which (model, shift,
  class) changed significantly from clean, with the change, its interval and adjusted p-value,
  and how (the tests, the adjustment, q);
* ``model_ranking.csv`` (per shift, where two models or more are compared with the bootstrap
  on): each model's rank on A and WCA with its interval and group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError, field_path
from classwise.metrics.result import (
    metric_entry,
    read_checked_csv,
    read_metrics_document,
    read_per_class_table,
    read_text_table,
)

__all__ = [
    "DROP_CODES",
    "PER_CLASS_COLUMNS",
    "RANKED_METRICS",
    "SUMMARY_COLUMNS",
    "ClassDrops",
    "ViewData",
    "ViewFiles",
    "read_view",
    "top_confusions",
]

#: The columns of ``per_class.csv`` the explorer reads.
PER_CLASS_COLUMNS = ("class", "name", "support", "recall", "cfps", "recall_ci_low", "recall_ci_high")

#: The columns of :attr:`ViewData.summary`, one row per (shift, model), and the type of each (as
#: the page gets them, in this order); those of :data:`SHIFT_SUMMARY_COLUMNS` are read from the
#: robustness step's ``shift_summary.csv`` where it has the row, the intervals always from
#: ``worst_class.json``.
SUMMARY_COLUMNS: dict[str, type] = {
    "worst_class": int,
    "worst_class_tied": int,
    "n": int,
    "reference_n": int,
    "pairing": str,
    "accuracy": float,
    "accuracy_low": float,
    "accuracy_high": float,
    "worst_class_accuracy": float,
    "worst_class_low": float,
    "worst_class_high": float,
    "accuracy_change": float,
    "worst_class_accuracy_change": float,
}
#: The interval columns, always from ``worst_class.json`` (the shift summary has no intervals).
INTERVAL_COLUMNS = ("accuracy_low", "accuracy_high", "worst_class_low", "worst_class_high")
#: The columns of ``shift_summary.csv`` the explorer reads besides ``shift`` and ``model``.
SHIFT_SUMMARY_COLUMNS = tuple(column for column in SUMMARY_COLUMNS if column not in INTERVAL_COLUMNS)

#: The code of each (model, shift, class) of :attr:`ClassDrops.codes`.
DROP_CODES = {"no test": 0, "not significant": 1, "drop": 2, "rise": 3}
#: The columns of ``class_drops.csv`` the explorer reads.
DROP_COLUMNS = (
    "model",
    "shift",
    "class",
    "change",
    "change_low",
    "change_high",
    "p_adjusted",
    "significant",
    "test",
    "adjustment",
    "q",
    "confidence",
    "family_size",
)
#: The metrics of ``model_ranking.csv`` the models x shifts table shows.
RANKED_METRICS = ("A", "WCA")
#: The columns of ``model_ranking.csv`` the explorer reads.
RANKING_COLUMNS = (
    "metric",
    "model",
    "rank",
    "rank_low",
    "rank_high",
    "group",
    "n_tied",
    "rank_low_pairwise",
    "rank_high_pairwise",
)

#: How many confusions of each class (true -> predicted) the explorer keeps per model and shift.
DEFAULT_CONFUSIONS = 3

#: A recall must be hits / support to this tolerance (the CSV holds it at full precision; runs
#: before it wrote 6 decimals).
_RATIO_TOLERANCE = 1e-6


@dataclass(frozen=True)
class ViewFiles:
    """The files of one dataset and label view: per model and shift its ``per_class.csv``,
    ``confusion.csv`` and ``worst_class.json``, and the view's ``shift_summary.csv`` (``None``
    where the robustness step writes none: label views other than the original)."""

    dataset: str
    labels: str
    models: tuple[str, ...]
    shifts: tuple[str, ...]
    #: ``{model: {shift: {"per_class": path, "confusion": path, "worst_class": path}}}``
    files: Mapping[str, Mapping[str, Mapping[str, str]]]
    shift_summary: str | None = None
    #: The view's shifts over a class subset (ImageNet-R, -A), left out: their classes are not the
    #: dataset's (the page names them).
    left_out: tuple[str, ...] = ()
    #: The view's ``class_drops.csv`` (``None`` where the class-drop tests do not run).
    class_drops: str | None = None
    #: Shift -> its ``model_ranking.csv`` (the shifts where models are ranked).
    rankings: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> ViewFiles:
        """From the workflow's parameters (:func:`classwise.pipeline.explorer.explorer_views`)."""
        return cls(
            dataset=str(entry["dataset"]),
            labels=str(entry["labels"]),
            models=tuple(entry["models"]),
            shifts=tuple(entry["shifts"]),
            files=entry["files"],
            shift_summary=entry.get("shift_summary"),
            left_out=tuple(entry.get("left_out", ())),
            class_drops=entry.get("class_drops"),
            rankings=dict(entry.get("rankings") or {}),
        )

    def path(self, model: str, shift: str, kind: str) -> str:
        try:
            return str(self.files[model][shift][kind])
        except KeyError:
            raise InputError(
                f"no {kind} file given for model {model!r} under shift {shift!r}",
                field=field_path("views", f"{self.dataset}/{self.labels}", "files", model, shift, kind),
            ) from None


@dataclass
class ClassDrops:
    """The class-drop tests of a view, over (model, shift, class) in the view's order."""

    #: ``(M, S, C)`` int8 codes of :data:`DROP_CODES` (0 where nothing was tested: clean, a class
    #: without samples on a side).
    codes: np.ndarray
    #: The significant cells, one row each: ``m``, ``s``, ``c`` (indices), ``change``,
    #: ``change_low``, ``change_high``, ``p_adjusted``.
    significant: pd.DataFrame
    #: What the tests were: ``tests`` (the names of the tests used), ``adjustment``, ``q``,
    #: ``confidence`` and ``family_size`` (per model: its tests).
    method: dict[str, Any]


@dataclass
class ViewData:
    """Everything the explorer shows of one dataset and label view, as arrays over
    (model, shift, class) in the view's model, shift and class order."""

    dataset: str
    labels: str
    models: list[str]
    shifts: list[str]
    class_names: list[str]
    #: ``(M, S, C)`` int64: each class's samples under the shift (``per_class.csv``'s support).
    support: np.ndarray
    #: ``(M, S, C)`` int64: the samples of the class classified right (recall x support).
    hits: np.ndarray
    #: ``(M, S, C)`` float64: recall (NaN without samples), its interval and CFPS.
    recall: np.ndarray
    recall_low: np.ndarray
    recall_high: np.ndarray
    cfps: np.ndarray
    #: ``(M, S, C, K)`` int64: each class's ``K`` most frequent confusions (-1 / 0 past the last).
    confused_with: np.ndarray
    confused_count: np.ndarray
    #: One row per (shift, model), indexed so, the columns :data:`SUMMARY_COLUMNS`.
    summary: pd.DataFrame
    #: The shifts left out (:attr:`ViewFiles.left_out`).
    left_out: list[str] = field(default_factory=list)
    #: The class-drop tests, where they run.
    drops: ClassDrops | None = None
    #: One row per (shift, model, metric of :data:`RANKED_METRICS`) of the rankings, where the
    #: models are ranked: the columns of :data:`RANKING_COLUMNS` and ``shift``.
    ranking: pd.DataFrame | None = None


def top_confusions(confusion: np.ndarray, k: int = DEFAULT_CONFUSIONS) -> tuple[np.ndarray, np.ndarray]:
    """``(predicted, count)``, each ``(C, k)`` int64: per true class (row of ``confusion``,
    ``[true, predicted]``), its ``k`` largest off-diagonal cells, largest first, ties to the
    lower predicted index (the order of :func:`classwise.robustness.across_shifts.ranked_confusions`
    within a row); cells with no sample left out, as predicted -1 and count 0."""
    m = np.asarray(confusion)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise InputError(f"expected a square (C, C) confusion matrix, got shape {m.shape}", field="confusion")
    c = m.shape[0]
    k = max(0, min(int(k), max(c - 1, 0)))
    counts = np.rint(m).astype(np.int64)
    np.fill_diagonal(counts, 0)
    # one key per cell: more samples first, then the lower predicted index
    key = counts * c + (c - 1 - np.arange(c))[None, :]
    if k == 0:
        return np.zeros((c, 0), dtype=np.int64), np.zeros((c, 0), dtype=np.int64)
    top = np.argpartition(-key, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(key, top, axis=1), axis=1)
    predicted = np.take_along_axis(top, order, axis=1)
    count = np.take_along_axis(counts, predicted, axis=1)
    predicted = np.where(count > 0, predicted, -1)
    return predicted.astype(np.int64), count


def _read_per_class(path: str) -> pd.DataFrame:
    """``per_class.csv`` (:func:`classwise.metrics.result.read_per_class_table`), its supports
    whole and non-negative."""
    frame = read_per_class_table(path, PER_CLASS_COLUMNS)
    support = frame["support"].to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(support) & (support >= 0) & (support == np.rint(support))):
        raise InputError("expected whole, non-negative sample counts", path=path, field="support")
    return frame


def _read_confusion(path: str, n_classes: int) -> np.ndarray:
    try:
        frame = pd.read_csv(path, index_col=0, keep_default_na=False)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"cannot read the confusion counts: {error}", path=path) from error
    try:
        counts = frame.to_numpy(dtype=np.float64)
    except (ValueError, TypeError) as error:
        raise InputError(f"expected counts: {error}", path=path) from error
    if counts.shape != (n_classes, n_classes):
        raise InputError(f"expected a ({n_classes}, {n_classes}) confusion matrix, got {counts.shape}", path=path)
    return counts


def _interval(entry: Mapping[str, Any], *keys: str) -> tuple[float, float]:
    """The first of ``keys`` the metric has (the exact bound before the bootstrap's percentile
    interval), NaN without one."""
    for key in keys:
        value = entry.get(key)
        if isinstance(value, list) and len(value) == 2 and None not in value:
            return float(value[0]), float(value[1])
    return float("nan"), float("nan")


def _tied(recall: np.ndarray) -> tuple[int, int]:
    """(worst class, classes tied at its recall) over the classes with samples; (-1, 0) without."""
    finite = np.isfinite(recall)
    if not finite.any():
        return -1, 0
    masked = np.where(finite, recall, np.inf)
    worst = int(np.argmin(masked))
    return worst, int(np.count_nonzero(masked == masked[worst]))


def _read_summary(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The robustness step's shift summary: (shift, model) -> its row."""
    frame = read_text_table(path, ("shift", "model", *SHIFT_SUMMARY_COLUMNS), "the shift summary")
    out = frame[["shift", "model"]].copy()
    for column in SHIFT_SUMMARY_COLUMNS:
        if SUMMARY_COLUMNS[column] is str:
            out[column] = frame[column]
            continue
        try:
            out[column] = pd.to_numeric(frame[column].replace("", np.nan))
        except (ValueError, TypeError) as error:
            raise InputError(f"expected numbers: {error}", path=path, field=column) from error
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for record in out.to_dict("records"):
        row = {str(key): value for key, value in record.items()}
        rows[(str(row["shift"]), str(row["model"]))] = row
    return rows


def _read_table(path: str, columns: Sequence[str], what: str, *, dtype: Mapping[str, type]) -> pd.DataFrame:
    """A step's CSV (:func:`~classwise.metrics.result.read_checked_csv`), an empty cell NaN."""
    return read_checked_csv(path, columns, what, keep_default_na=False, na_values=[""], dtype=dict(dtype))


def read_class_drops(path: str, models: Sequence[str], shifts: Sequence[str], n_classes: int) -> ClassDrops:
    """The class-drop tests of ``class_drops.csv`` on the view's models, shifts and classes (a
    row of another model, shift or class is an :class:`InputError`: the file is of another view)."""
    frame = _read_table(path, DROP_COLUMNS, "the class-drop tests", dtype={"model": str, "shift": str, "test": str})
    m = frame["model"].map({name: i for i, name in enumerate(models)})
    s = frame["shift"].map({name: i for i, name in enumerate(shifts)})
    c = pd.to_numeric(frame["class"], errors="coerce")
    bad = m.isna() | s.isna() | c.isna() | (c < 0) | (c >= n_classes)
    if bad.any():
        row = frame[bad].iloc[0]
        raise InputError(
            f"a row of model {row['model']!r}, shift {row['shift']!r}, class {row['class']!r} is not of this view "
            f"(models {list(models)}, shifts {list(shifts)}, {n_classes} classes)",
            path=path,
        )
    mi, si, ci = m.to_numpy(dtype=np.int64), s.to_numpy(dtype=np.int64), c.to_numpy(dtype=np.int64)
    tested = frame["p_adjusted"].notna().to_numpy()
    significant = frame["significant"].astype(str).str.lower().isin(["true", "1"]).to_numpy() & tested
    change = frame["change"].to_numpy(dtype=np.float64)
    codes = np.zeros((len(models), len(shifts), n_classes), dtype=np.int8)
    code = np.where(significant, np.where(change < 0, DROP_CODES["drop"], DROP_CODES["rise"]), DROP_CODES["not significant"])
    codes[mi[tested], si[tested], ci[tested]] = code[tested]
    details = pd.DataFrame(
        {
            "m": mi,
            "s": si,
            "c": ci,
            **{key: frame[key].to_numpy(dtype=np.float64) for key in ("change", "change_low", "change_high", "p_adjusted")},
        }
    )[significant].reset_index(drop=True)
    sizes = frame[tested].groupby("model", sort=False)["family_size"].first()
    first = frame[tested].iloc[0] if tested.any() else frame.iloc[0]
    method = {
        "tests": sorted(set(frame.loc[tested, "test"].astype(str))),
        "adjustment": str(first["adjustment"]),
        "q": float(first["q"]),
        "confidence": float(first["confidence"]),
        "family_size": {str(model): int(size) for model, size in sizes.items()},
    }
    return ClassDrops(codes, details, method)


def read_rankings(paths: Mapping[str, str], models: Sequence[str]) -> pd.DataFrame:
    """The rows of each shift's ``model_ranking.csv`` of :data:`RANKED_METRICS`, with ``shift``."""
    parts = []
    for shift, path in paths.items():
        frame = _read_table(path, RANKING_COLUMNS, "the model ranking", dtype={"metric": str, "model": str, "group": str})
        frame = frame[frame["metric"].isin(RANKED_METRICS) & frame["model"].isin(list(models))]
        parts.append(frame[list(RANKING_COLUMNS)].assign(shift=shift))
    if not parts:
        return pd.DataFrame(columns=["shift", *RANKING_COLUMNS])
    return pd.concat(parts, ignore_index=True)


def read_view(view: ViewFiles, *, confusions: int = DEFAULT_CONFUSIONS) -> ViewData:
    """Read every file of ``view`` (:class:`ViewFiles`) into :class:`ViewData`. A file that
    cannot be read, lacks a column or disagrees with the others on the class names is an
    :class:`~classwise.errors.InputError` naming it."""
    models, shifts = list(view.models), list(view.shifts)
    if not models or not shifts:
        raise InputError(
            f"expected at least one model and one shift, got {models} and {shifts}",
            field=field_path("views", f"{view.dataset}/{view.labels}"),
        )
    names: list[str] | None = None
    first = ""
    arrays: dict[str, np.ndarray] = {}
    summary_rows: list[dict[str, Any]] = []
    summary = _read_summary(view.shift_summary) if view.shift_summary else None
    for i, model in enumerate(models):
        for j, shift in enumerate(shifts):
            path = view.path(model, shift, "per_class")
            per_class = _read_per_class(path)
            if names is None:
                names, first = [str(name) for name in per_class["name"]], path
                shape = (len(models), len(shifts), len(names))
                kept = max(0, min(int(confusions), len(names) - 1))
                arrays = {key: np.full(shape, np.nan) for key in ("support", "recall", "low", "high", "cfps")}
                arrays["confused_with"] = np.full((*shape, kept), -1, dtype=np.int64)
                arrays["confused_count"] = np.zeros((*shape, kept), dtype=np.int64)
            elif per_class["name"].tolist() != names:
                raise InputError(f"expected the class names of {first}", path=path, field="name")
            for key, column in (
                ("support", "support"),
                ("recall", "recall"),
                ("low", "recall_ci_low"),
                ("high", "recall_ci_high"),
                ("cfps", "cfps"),
            ):
                arrays[key][i, j] = per_class[column].to_numpy()
            confusion = _read_confusion(view.path(model, shift, "confusion"), len(names))
            arrays["confused_with"][i, j], arrays["confused_count"][i, j] = top_confusions(confusion, confusions)
            summary_rows.append(
                _summary_row(model, shift, summary, arrays["recall"][i, j], path=view.path(model, shift, "worst_class"))
            )
    assert names is not None
    support = arrays["support"]
    support_int = support.astype(np.int64)
    hits = np.rint(np.nan_to_num(arrays["recall"]) * support_int).astype(np.int64)
    ratio = np.divide(hits, support_int, out=np.full(support.shape, np.nan), where=support_int > 0)
    wrong = np.abs(np.nan_to_num(ratio) - np.nan_to_num(arrays["recall"])) > _RATIO_TOLERANCE
    if wrong.any():
        i, j, c = (int(x) for x in np.argwhere(wrong)[0])
        raise InputError(
            f"expected each recall to be hits / support, got {arrays['recall'][i, j, c]!r} for class {c} of support {support_int[i, j, c]}",
            path=view.path(models[i], shifts[j], "per_class"),
            field="recall",
        )
    frame = pd.DataFrame(summary_rows).set_index(["shift", "model"])
    return ViewData(
        dataset=view.dataset,
        labels=view.labels,
        models=models,
        shifts=shifts,
        class_names=names,
        support=support_int,
        hits=hits,
        recall=ratio,
        recall_low=arrays["low"],
        recall_high=arrays["high"],
        cfps=arrays["cfps"],
        confused_with=arrays["confused_with"],
        confused_count=arrays["confused_count"],
        summary=frame[list(SUMMARY_COLUMNS)],
        left_out=list(view.left_out),
        drops=read_class_drops(view.class_drops, models, shifts, len(names)) if view.class_drops else None,
        ranking=read_rankings(view.rankings, models) if view.rankings else None,
    )


def _summary_row(
    model: str,
    shift: str,
    summary: Mapping[tuple[str, str], Mapping[str, Any]] | None,
    recall: np.ndarray,
    *,
    path: str,
) -> dict[str, Any]:
    """One (shift, model) row of the models x shifts table: the shift summary's numbers where it
    has the row, else ``worst_class.json``'s; the intervals of ``worst_class.json`` (the exact
    bound of WCA before its bootstrap interval), where the run has them and they are of the same
    samples as the row."""
    document = read_metrics_document(path)
    a, wca = metric_entry(document, "A", path), metric_entry(document, "WCA", path)
    a_low, a_high = _interval(a, "ci")
    w_low, w_high = _interval(wca, "ci_bound", "ci")
    n_samples = int(document.get("n_samples", 0))
    nan = float("nan")
    if summary is not None and (shift, model) in summary:
        row = summary[(shift, model)]
        same = int(row["n"]) == n_samples
        return {
            "shift": shift,
            "model": model,
            **{column: SUMMARY_COLUMNS[column](row[column]) for column in SHIFT_SUMMARY_COLUMNS},
            "accuracy_low": a_low if same else nan,
            "accuracy_high": a_high if same else nan,
            "worst_class_low": w_low if same else nan,
            "worst_class_high": w_high if same else nan,
        }
    worst, tied = _tied(recall)
    value = wca.get("value")
    classes = wca.get("classes") or []
    return {
        "shift": shift,
        "model": model,
        "accuracy": nan if a["value"] is None else float(a["value"]),
        "accuracy_low": a_low,
        "accuracy_high": a_high,
        "worst_class_accuracy": nan if value is None else float(value),
        "worst_class_low": w_low,
        "worst_class_high": w_high,
        "worst_class": int(classes[0]) if classes and isinstance(classes[0], int) else worst,
        "worst_class_tied": tied,
        "n": n_samples,
        "reference_n": n_samples,
        "pairing": "",
        "accuracy_change": nan,
        "worst_class_accuracy_change": nan,
    }
