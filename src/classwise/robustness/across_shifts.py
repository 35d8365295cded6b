"""One class-wise view across the shifts of a base dataset.

Everything starts, like :mod:`classwise.robustness.classwise`, from the confusion matrices
``{shift: {model: (C, C) [true, predicted]}}`` of one label space:

* :func:`shift_summary` -- per shift and model: accuracy A, worst-class accuracy WCA with its
  class, and both changes from the reference shift (``clean``) on the same samples;
* :func:`class_shift_matrix` -- class x shift matrices of class-wise accuracy or CFPS, one row
  per (model, class), and the reference's values on each subset shift's samples;
* :func:`corruption_summary` -- per model and class: clean error, the mean error over the
  corrupted copies (every corruption and severity), and the relative accuracy drop;
* :func:`severity_curves` -- per model and corruption family: A and WCA at each severity, the
  reference shift as severity 0;
* :func:`worst_classes` -- the classes to name when there are too many to show them all;
* :func:`accuracy_quantiles`, :func:`shifts_by_accuracy`, :func:`worst_shifts` -- the spread of
  class-wise accuracy per shift, the shifts easiest first, and the shifts to show when there are
  too many to show them all;
* :func:`ranked_confusions` -- the most-confused (true, predicted) pairs of one matrix.

WCA here is the minimum class-wise recall over the classes that have samples under the shift,
the convention of :mod:`classwise.metrics.worst_class` (a class without samples is no worst
class); ties go to the lowest class index.

Like with like: the functions that compare a shift with the reference take ``references``,
the reference shift's confusion on the samples of each paired shift
(:func:`classwise.robustness.pairing.pair_confusions`, which matches them by sample id; a shift
absent from it is unpaired, other images, compared with the whole reference set). Without it,
every shift is taken to hold the reference's samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.robustness.classwise import Confusions, as_nested_results, classwise_values
from classwise.robustness.pairing import REFERENCE_SHIFT, pairing_table
from classwise.robustness.results import ClassResults, as_results

References = Mapping[str, Mapping[str, "ClassResults | np.ndarray"]]
"""``{shift: {model: numbers}}``: the reference shift's numbers on each paired shift's samples
(:attr:`classwise.robustness.pairing.ComparedResults.references`; or confusion matrices)."""

__all__ = [
    "REFERENCE_SHIFT",
    "SPREAD_QUANTILES",
    "accuracy_quantiles",
    "class_shift_matrix",
    "corruption_summary",
    "models_of",
    "ranked_confusions",
    "reference_confusions",
    "severity_curves",
    "shift_summary",
    "shift_summary_display",
    "shifts_by_accuracy",
    "worst_classes",
    "worst_shifts",
]


def models_of(by_shift: Mapping[str, Mapping[str, object]]) -> list[str]:
    """The models of ``{shift: {model: ...}}``, in order of first appearance (a shift may lack
    some)."""
    return list(dict.fromkeys(model for by_model in by_shift.values() for model in by_model))


def reference_confusions(
    confusions: Confusions,
    references: References | None,
    *,
    reference: str = REFERENCE_SHIFT,
) -> dict[str, dict[str, ClassResults | np.ndarray]]:
    """``{shift: {model: numbers}}``: what each (shift, model) is compared with, the reference
    shift's numbers on the shift's samples (``references``; :func:`compare_with_reference
    <classwise.robustness.pairing.compare_with_reference>`) or, for an unpaired shift (absent
    from ``references``) and without ``references``, on all of its samples. A model without a
    reference run is left out."""
    base = confusions.get(reference, {})
    out: dict[str, dict[str, ClassResults | np.ndarray]] = {}
    for shift, by_model in confusions.items():
        paired = {} if references is None or shift == reference else references.get(shift, {})
        out[shift] = {model: paired.get(model, base[model]) for model in by_model if model in base}
    return out


def shift_summary(
    confusions: Confusions,
    class_names: Sequence[str],
    *,
    reference: str = REFERENCE_SHIFT,
    references: References | None = None,
) -> pd.DataFrame:
    """Long table, one row per (shift, model) in input order: ``accuracy``,
    ``worst_class_accuracy``, ``worst_class`` (index), ``worst_class_name``,
    ``worst_class_tied`` (how many classes share that accuracy: more than 1 means the class
    named is the tie rule's pick, the lowest index), as the metrics step computed them; the
    samples (``n``, ``n_abstained``, ``reference_n``, ``pairing``:
    :func:`classwise.robustness.pairing.pairing_table`); the reference shift's
    ``reference_accuracy`` and ``reference_worst_class_accuracy`` on the same samples
    (:func:`reference_confusions`: the whole reference set for an unpaired shift) and the
    changes ``accuracy_change`` and ``worst_class_accuracy_change`` (shift minus reference; NaN
    without a reference run)."""
    names = [str(n) for n in class_names]
    results = as_nested_results(confusions, len(names))
    compared_with = reference_confusions(results, references, reference=reference)
    samples = pairing_table(results, references, reference=reference).to_dict("index")
    rows = []
    nan = float("nan")
    for shift, by_model in results.items():
        for model, numbers in by_model.items():
            base = compared_with[shift].get(model)
            base_numbers = None if base is None else as_results(base)
            worst = numbers.worst_class
            pairing = samples[(shift, model)]
            row = {
                "shift": shift,
                "model": model,
                "accuracy": numbers.accuracy,
                "worst_class_accuracy": numbers.worst_class_accuracy,
                "worst_class": worst,
                "worst_class_name": names[worst] if worst >= 0 else "",
                "worst_class_tied": numbers.worst_class_tied,
                "n": pairing["n"],
                "n_abstained": numbers.n_abstained,
                "samples": numbers.samples,
                "reference_n": pairing["reference_n"],
                "pairing": pairing["pairing"],
                "reference_accuracy": nan if base_numbers is None else base_numbers.accuracy,
                "reference_worst_class_accuracy": nan if base_numbers is None else base_numbers.worst_class_accuracy,
            }
            rows.append(row)
    frame = pd.DataFrame(rows)
    for column in ("accuracy", "worst_class_accuracy"):
        frame[f"{column}_change"] = frame[column] - frame[f"reference_{column}"]
    return frame.set_index(["shift", "model"])


def shift_summary_display(summary: pd.DataFrame, *, reference: str = REFERENCE_SHIFT) -> pd.DataFrame:
    """The paper-style view of :func:`shift_summary`: rows are shifts, and per model one column
    ``A`` (``0.889 -0.043``: the value, then its change from the reference shift) and one
    ``WCA`` (``0.678 (8) -0.146``: the worst class in brackets; ``0.000 (0; 10 tied) -1.000``
    when classes tie at the minimum). The reference row shows the
    values alone. When a shift covers a subset of the reference's samples or other images, two
    first columns say so: ``n`` (the samples of the row; per model when they differ) and
    ``vs <reference>`` (``same samples``, ``same 20 samples``, ``unpaired: other images``)."""

    def cell(value: float, change: float, worst: str = "") -> str:
        if not np.isfinite(value):
            return "n/a"
        text = f"{value:.3f}" + (f" ({worst})" if worst else "")
        return text if not np.isfinite(change) else f"{text} {change:+.3f}"

    shifts = list(dict.fromkeys(summary.index.get_level_values("shift")))
    models = list(dict.fromkeys(summary.index.get_level_values("model")))
    columns: dict[str, list[str]] = {}
    if "pairing" in summary and summary["pairing"].isin(["subset", "unpaired"]).any():
        of_shift = summary.index.get_level_values("shift")
        by_shift = [summary[of_shift == shift].droplevel("shift") for shift in shifts]
        columns["n"] = [_samples_cell(rows) for rows in by_shift]
        columns[f"vs {reference}"] = [_pairing_cell(rows) for rows in by_shift]
    for model in models:
        a_column, w_column = [], []
        for shift in shifts:
            if (shift, model) not in summary.index:
                a_column.append("")
                w_column.append("")
                continue
            row = summary.loc[(shift, model)]
            nan = float("nan")
            a_change = nan if shift == reference else row["accuracy_change"]
            w_change = nan if shift == reference else row["worst_class_accuracy_change"]
            a_column.append(cell(row["accuracy"], a_change))
            tied = int(row["worst_class_tied"]) if "worst_class_tied" in row else 1
            worst = str(row["worst_class_name"]) + (f"; {tied} tied" if tied > 1 else "")
            w_column.append(cell(row["worst_class_accuracy"], w_change, worst))
        columns[f"{model} A"] = a_column
        columns[f"{model} WCA"] = w_column
    return pd.DataFrame(columns, index=pd.Index(shifts, name="shift"))


def _samples_cell(rows: pd.DataFrame) -> str:
    """``899``, or ``a: 20, b: 19`` when the models of a shift (the rows, indexed by model) hold
    different numbers."""
    counts = rows["n"].astype(int)
    if counts.nunique() == 1:
        return str(int(counts.iloc[0]))
    return ", ".join(f"{model}: {n}" for model, n in counts.items())


def _pairing_cell(rows: pd.DataFrame) -> str:
    kinds = list(dict.fromkeys(rows["pairing"]))
    if kinds == ["reference"]:
        return ""
    if "unpaired" in kinds:
        return "unpaired: other images"
    if "subset" in kinds:
        return f"same {_samples_cell(rows)} samples" if rows["n"].nunique() == 1 else "same samples, per model"
    return "same samples" if kinds == ["same samples"] else "no reference"


def class_shift_matrix(
    confusions: Confusions,
    class_names: Sequence[str],
    *,
    value: str = "accuracy",
    references: References | None = None,
    reference: str = REFERENCE_SHIFT,
) -> pd.DataFrame:
    """Class x shift matrix of ``value`` (``accuracy``: class-wise recall, NaN for a class
    without samples; ``cfps``: Eq. 1 of Medi et al., 2024), indexed
    (model, class, class_name), one column per shift (NaN where a shift lacks the model).

    A shift over a subset of the reference's samples (``references``, as for
    :func:`shift_summary`) is followed by the column ``<reference> on <shift>``: the reference
    shift's values on the same samples, the column to compare it with."""
    if value not in ("accuracy", "cfps"):
        raise InputError(f"expected 'accuracy' or 'cfps', got {value!r}", field="value")
    names = [str(n) for n in class_names]
    accuracy, cfps = classwise_values(confusions, len(names))
    pairing = pairing_table(confusions, references, reference=reference)

    def of(numbers: ClassResults | np.ndarray) -> np.ndarray:
        numbers = as_results(numbers)
        return numbers.recall if value == "accuracy" else numbers.cfps

    columns: dict[str, Mapping[str, np.ndarray]] = {}
    for shift in confusions:
        columns[shift] = (accuracy if value == "accuracy" else cfps)[shift]
        subset = pairing.xs(shift, level="shift")["pairing"] == "subset"
        if references is not None and subset.any():
            columns[f"{reference} on {shift}"] = {model: of(references[shift][model]) for model in subset.index[subset]}
    models = models_of(confusions)
    c = len(names)
    data = np.full((len(models) * c, len(columns)), np.nan)
    for j, by_model in enumerate(columns.values()):
        for i, model in enumerate(models):
            if model in by_model:
                data[i * c : (i + 1) * c, j] = by_model[model]
    index = pd.MultiIndex.from_arrays(
        [np.repeat(models, c), np.tile(np.arange(c), len(models)), np.tile(names, len(models))],
        names=["model", "class", "class_name"],
    )
    return pd.DataFrame(data, index=index, columns=pd.Index(list(columns), name="shift"))


SEVERITY_COLUMNS: tuple[str, ...] = (
    "shift",
    "n",
    "accuracy",
    "worst_class_accuracy",
    "worst_class_name",
    "accuracy_change",
    "worst_class_accuracy_change",
)
"""Columns of :func:`severity_curves`, in order."""


def severity_curves(
    summary: pd.DataFrame, steps: Mapping[str, Sequence[Any]], *, reference: str = REFERENCE_SHIFT
) -> pd.DataFrame:
    """Per (model, family, severity), from :func:`shift_summary`'s rows: the shift and its ``n``,
    A, WCA with its class, and both changes from the reference on the same samples; ``steps``
    maps each shift that is one severity of a corruption family to ``(family, severity)``. Each
    family's curve starts at severity 0, the reference shift itself (where it is evaluated).
    Index ``(model, family, severity)``, columns :data:`SEVERITY_COLUMNS`; empty without steps."""
    rows = summary.reset_index() if "shift" not in summary.columns else summary
    by_shift = {shift: frame for shift, frame in rows.groupby("shift", sort=False)}
    families = list(dict.fromkeys(str(step[0]) for step in steps.values()))
    records = []
    for family in families:
        members = [(reference, 0)] + sorted(
            ((shift, int(step[1])) for shift, step in steps.items() if str(step[0]) == family), key=lambda m: m[1]
        )
        for shift, severity in members:
            if shift not in by_shift:
                continue
            for _, row in by_shift[shift].iterrows():
                records.append(
                    {"model": row["model"], "family": family, "severity": severity, **{c: row[c] for c in SEVERITY_COLUMNS}}
                )
    index = ["model", "family", "severity"]
    if not records:
        return pd.DataFrame(columns=[*index, *SEVERITY_COLUMNS]).set_index(index)
    frame = pd.DataFrame(records)
    order = {model: i for i, model in enumerate(dict.fromkeys(frame["model"]))}
    frame = frame.sort_values(
        ["model", "family", "severity"], key=lambda c: c.map(order) if c.name == "model" else c, kind="stable"
    )
    return frame.set_index(index)[list(SEVERITY_COLUMNS)]


def corruption_summary(
    confusions: Confusions,
    class_names: Sequence[str],
    corrupted: Sequence[str],
    *,
    reference: str = REFERENCE_SHIFT,
    references: References | None = None,
) -> pd.DataFrame:
    """Per (model, class): ``clean_error`` (1 - recall under ``reference``),
    ``mean_corruption_error`` (1 - recall, averaged over the ``corrupted`` shifts that have the
    model: every corruption and severity weighs the same, as in Hendrycks & Dietterich's
    corruption error before normalisation) and ``relative_drop``
    ``= (clean accuracy - mean corrupted accuracy) / clean accuracy`` (NaN for a clean accuracy
    of 0), the clean accuracy here being the mean over the same corrupted shifts of the clean
    recall on each one's samples (``references``, as for :func:`shift_summary`: equal to the
    recall under ``reference`` when every copy holds the reference's samples). Empty when the
    reference or every corrupted shift is missing."""
    names = [str(n) for n in class_names]
    present = [s for s in corrupted if s in confusions]
    columns = ["clean_error", "mean_corruption_error", "relative_drop"]
    if reference not in confusions or not present:
        empty = pd.MultiIndex.from_arrays([[], [], []], names=["model", "class", "class_name"])
        return pd.DataFrame(columns=columns, index=empty, dtype=np.float64)
    kept = {shift: confusions[shift] for shift in [reference, *present]}
    matrix = class_shift_matrix(kept, names)
    paired = class_shift_matrix(reference_confusions(kept, references, reference=reference), names)
    clean = matrix[reference].to_numpy()
    corrupted_accuracy = matrix[present].to_numpy()
    # the clean recall on each copy's samples, where the copy has the model
    paired_clean = np.where(np.isfinite(corrupted_accuracy), paired[present].to_numpy(), np.nan)
    mean_accuracy = _nanmean(corrupted_accuracy, axis=1)
    mean_clean = _nanmean(paired_clean, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        drop = np.where(mean_clean > 0, (mean_clean - mean_accuracy) / mean_clean, np.nan)
    frame = pd.DataFrame(
        {"clean_error": 1.0 - clean, "mean_corruption_error": 1.0 - mean_accuracy, "relative_drop": drop},
        index=matrix.index,
    )
    return frame


def worst_classes(accuracy: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` classes with the lowest mean accuracy over the rows of ``accuracy``
    ``(rows, C)`` (e.g. models x shifts flattened), NaN ignored; classes with no finite value
    come last; ties go to the lowest index. Returns class indices, worst first."""
    a = np.atleast_2d(np.asarray(accuracy, dtype=np.float64))
    mean = _nanmean(a, axis=0)
    mean[np.isnan(mean)] = np.inf
    order = np.lexsort((np.arange(a.shape[1]), mean))
    return order[: max(0, min(int(n), a.shape[1]))]


#: The quantiles over classes that :func:`accuracy_quantiles` returns by default: the worst class,
#: the 10th percentile, the median, the 90th percentile and the best class.
SPREAD_QUANTILES: tuple[float, ...] = (0.0, 0.1, 0.5, 0.9, 1.0)

ClassValues = Mapping[str, Mapping[str, np.ndarray]]
"""``{shift: {model: (C,) class-wise values}}`` (a shift may lack some models)."""


def _stacked(values: ClassValues) -> tuple[list[str], list[str], np.ndarray]:
    """(shifts, models, ``(M, S, C)`` array), NaN where a shift lacks a model."""
    shifts = list(values)
    models = models_of(values)
    if not shifts or not models:
        raise InputError("no shifts or models given", field="accuracy")
    sizes = {np.shape(v) for by_model in values.values() for v in by_model.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise InputError(
            f"expected every model and shift to have one (C,) vector of the same C, got shapes {sorted(sizes)}", field="accuracy"
        )
    (c,) = sizes.pop()
    stack = np.full((len(models), len(shifts), c), np.nan)
    for j, shift in enumerate(shifts):
        for i, model in enumerate(models):
            if model in values[shift]:
                stack[i, j] = np.asarray(values[shift][model], dtype=np.float64)
    return shifts, models, stack


def _nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    """Mean over ``axis`` of the finite values; NaN (no warning) where there is none."""
    counted = np.isfinite(a).sum(axis=axis)
    total = np.where(np.isfinite(a), a, 0.0).sum(axis=axis)
    return np.where(counted > 0, total / np.maximum(counted, 1), np.nan)


def accuracy_quantiles(accuracy: ClassValues, quantiles: Sequence[float] = SPREAD_QUANTILES) -> dict[str, np.ndarray]:
    """``{model: (len(quantiles), S)}``: per shift (input order), the ``quantiles`` of the
    model's class-wise accuracy over the classes with samples (NaN ignored; numpy's default
    linear interpolation). Quantile 0 is the worst class (WCA), 1 the best. NaN where the shift
    lacks the model or no class has samples."""
    q = np.asarray(quantiles, dtype=np.float64)
    if q.ndim != 1 or not np.all((q >= 0) & (q <= 1)):
        raise InputError(f"expected quantiles in [0, 1], got {list(quantiles)}", field="quantiles")
    _, models, stack = _stacked(accuracy)
    finite = np.isfinite(stack).any(axis=2)
    # the all-NaN rows (a missing model, a shift without samples) are filled, then put back to NaN,
    # so that nanquantile warns about nothing
    filled = np.where(finite[..., None], stack, 0.0)
    values = np.nanquantile(filled, q, axis=2)  # (Q, M, S)
    values[:, ~finite] = np.nan
    return {model: values[:, i] for i, model in enumerate(models)}


def shifts_by_accuracy(accuracy: ClassValues) -> list[str]:
    """The shifts, easiest first: by the mean over models of the mean class-wise accuracy,
    highest first (shifts without a finite value last; ties in input order)."""
    shifts, _, stack = _stacked(accuracy)
    score = _nanmean(_nanmean(stack, axis=2), axis=0)
    order = np.lexsort((np.arange(len(shifts)), -np.where(np.isfinite(score), score, -np.inf)))
    return [shifts[j] for j in order]


def worst_shifts(accuracy: ClassValues, n: int, *, reference: str = REFERENCE_SHIFT) -> list[str]:
    """At most ``n`` shifts to show when there are too many: the ``reference`` shift (when
    present) first, then the shifts of lowest worst-class accuracy, worst first. A shift's
    worst-class accuracy is the mean over models of each model's WCA (the minimum over the
    classes with samples); ties go to the lower mean over models of the mean class-wise accuracy,
    then to input order; shifts without a finite value come last."""
    shifts, _, stack = _stacked(accuracy)
    n = max(0, int(n))
    first = [reference] if reference in shifts and n > 0 else []
    finite = np.isfinite(stack).any(axis=2)
    wca = _nanmean(np.where(finite, np.min(np.where(np.isfinite(stack), stack, np.inf), axis=2), np.nan), axis=0)
    mean = _nanmean(_nanmean(stack, axis=2), axis=0)
    last = np.inf
    order = np.lexsort((np.arange(len(shifts)), np.where(np.isfinite(mean), mean, last), np.where(np.isfinite(wca), wca, last)))
    rest = [shifts[j] for j in order if shifts[j] not in first]
    return first + rest[: n - len(first)]


def ranked_confusions(confusion: np.ndarray, class_names: Sequence[str], *, top: int = 20) -> pd.DataFrame:
    """The ``top`` off-diagonal cells of a confusion matrix ``[true, predicted]``, most
    confused first: ranked by ``share`` (the cell over its true class's samples), then by
    ``count``, then by (true, predicted) index. Columns ``true``, ``true_name``,
    ``predicted``, ``predicted_name``, ``count``, ``share``; cells with no sample are left out."""
    m = np.asarray(confusion, dtype=np.float64)
    names = [str(n) for n in class_names]
    c = len(names)
    if m.shape != (c, c):
        raise InputError(f"expected a ({c}, {c}) confusion matrix to match class_names, got {m.shape}", field="confusion")
    support = m.sum(axis=1, keepdims=True)
    share = np.divide(m, support, out=np.zeros_like(m), where=support > 0)
    np.fill_diagonal(share, 0.0)
    off = m.copy()
    np.fill_diagonal(off, 0.0)
    flat = np.flatnonzero(off > 0)
    order = np.lexsort((flat, -off.ravel()[flat], -share.ravel()[flat]))[: max(0, int(top))]
    true, predicted = np.divmod(flat[order], c)
    return pd.DataFrame(
        {
            "true": true,
            "true_name": [names[i] for i in true],
            "predicted": predicted,
            "predicted_name": [names[j] for j in predicted],
            "count": off[true, predicted],
            "share": share[true, predicted],
        }
    )
