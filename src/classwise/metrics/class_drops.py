"""Which classes really got worse under a shift: an exact test per (model, shift, class).

A class's accuracy moves a lot by chance (50 images a class on ImageNet, 10 a class and
condition in model-vs-human), and with 1,000 classes x 100 shifts some class drops 20 points
under every shift by chance alone. :func:`class_drops` tests, for every class, whether its
accuracy under a shift differs from its clean accuracy, and controls the errors over the many
tests of a model.

**Pairing** (by sample id; the function's job, per model and shift):

* ``paired``: the shift holds the clean samples (a corruption, an attack); ``paired_subset``: a
  subset of them (an attack on some samples of each class), compared with the clean outcomes
  of the same samples; ``paired_overlap``: some shared samples and others, compared on the
  shared ones (each side's others are left out and counted in ``clean_left_out`` /
  ``shift_left_out``). Per class, the samples correct in both, only clean, only under the shift
  and in neither; **McNemar's exact test** on the discordant ones (:func:`~classwise.metrics.
  proportions.mcnemar_exact`) and **Newcombe's paired hybrid score interval** of the change
  (``newcombe_paired_score``).
* ``unpaired``: no shared sample (other images: ImageNet-V2, -Sketch), compared with every clean
  sample: **Fisher's exact test** (or **Boschloo's**, ``unpaired_test="boschloo"``) of ``k`` of
  ``n`` against ``k'`` of ``n'`` and **Newcombe's hybrid score interval**
  (``newcombe_hybrid_score``; :mod:`classwise.metrics.proportions`).

How the classes are tested (the unpaired test, the intervals' ``confidence``, the adjustment and
its level ``q``) is one :class:`DropTestSettings`.

The **change** is ``accuracy_shift - accuracy_clean`` (negative: a drop), its interval at
``confidence`` (two-sided, per class: not adjusted for the many classes; the adjusted decision is
``significant``). Tests are two-sided. **Abstentions** are errors, never a class
(:mod:`classwise.metrics.outcomes`).

**The family** of one adjustment is every tested (shift, class) of one model in the table: call
:func:`class_drops` once per dataset and label view. Benjamini-Hochberg at ``q`` (false discovery
rate; default) or Holm (family-wise error; :mod:`classwise.metrics.multiple_testing`); a row is
``significant`` when ``p_adjusted <= q``. A class without samples on one side (or, paired, without
shared samples) gets **no test**: ``p_value`` and ``p_adjusted`` NaN, ``significant`` False,
``test`` ``"none"``, and it is not counted in the family (``family_size``).

The table's columns are :data:`COLUMNS` (the interface: never renamed or reordered) followed by
:data:`EXTRA_COLUMNS`. Vectorised: one bincount per (model, shift) and array tests over the
classes; Python loops over models and shifts only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.metrics import proportions
from classwise.metrics.intervals import check_confidence
from classwise.metrics.multiple_testing import adjust_p_values, check_adjustment, check_level
from classwise.metrics.outcomes import Outcomes, SampleOutcomes, as_outcomes, class_names_of, id_index, n_classes_of

__all__ = [
    "COLUMNS",
    "EXTRA_COLUMNS",
    "INTERVAL_METHODS",
    "PAIRINGS",
    "TESTS",
    "DropTestSettings",
    "adjust_families",
    "class_changes",
    "class_drops",
    "drop_counts",
    "significant_changes",
]

#: The interface: one row per (model, shift, class), these columns in this order.
COLUMNS: tuple[str, ...] = (
    "model",
    "shift",
    "class",
    "class_name",
    "pairing",
    "n_clean",
    "n_shift",
    "accuracy_clean",
    "accuracy_shift",
    "change",
    "change_low",
    "change_high",
    "p_value",
    "p_adjusted",
    "significant",
)
#: After :data:`COLUMNS`: how each row was computed, and what the paired table adds.
EXTRA_COLUMNS: tuple[str, ...] = (
    "test",
    "interval_method",
    "adjustment",
    "q",
    "confidence",
    "family_size",
    # paired: the discordant samples of the class (correct clean only, correct under the shift
    # only); empty when unpaired
    "clean_only_correct",
    "shift_only_correct",
    # samples of the class on one side that the comparison leaves out (a partial overlap, or the
    # clean samples a subset shift does not hold)
    "clean_left_out",
    "shift_left_out",
)

#: ``pairing`` value -> what it means.
PAIRINGS: dict[str, str] = {
    "paired": "the shift holds the clean samples (matched by sample id): paired on all of them",
    "paired_subset": "the shift holds a subset of the clean samples: paired on those",
    "paired_overlap": "the shift shares some samples with clean and has others: paired on the shared ones",
    "unpaired": "the shift shares no sample with clean (other images): compared with every clean sample",
}
#: ``test`` value -> the test.
TESTS: dict[str, str] = {
    "mcnemar_exact": "McNemar's exact test (two-sided binomial test of the discordant pairs at 1/2)",
    "fisher_exact": "Fisher's exact test (two-sided)",
    "boschloo_exact": "Boschloo's exact unconditional test (two-sided: twice the smaller one-sided p-value)",
    "none": "no test: the class has no sample on one side",
}
#: ``interval_method`` value -> the interval of ``change``.
INTERVAL_METHODS: dict[str, str] = {
    "newcombe_paired_score": "Newcombe (1998b) hybrid score interval for a paired difference (method 10)",
    "newcombe_hybrid_score": "Newcombe (1998a) hybrid score interval for a difference of independent proportions (method 10)",
    "none": "no interval: the class has no sample on one side",
}


@dataclass(frozen=True, kw_only=True)
class DropTestSettings:
    """How :func:`class_drops` tests the classes: ``unpaired_test`` (``"fisher"`` or
    ``"boschloo"``) where a shift shares no sample with clean (paired: McNemar's, always), the
    ``confidence`` of each change's interval, and the ``adjustment`` over each model's family
    (``"bh"``: false discovery rate, ``"holm"``: family-wise error) at level ``q``. Checked when
    made: a bad value is an :class:`InputError` naming it, before any outputs are read."""

    q: float = 0.05
    adjustment: str = "bh"
    unpaired_test: str = "fisher"
    confidence: float = 0.95

    def __post_init__(self) -> None:
        # checked in the order class_drops checked its arguments, so that the same bad call
        # names the same one
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        object.__setattr__(self, "q", check_level(self.q))
        object.__setattr__(self, "adjustment", check_adjustment(self.adjustment))
        object.__setattr__(self, "unpaired_test", proportions.check_unpaired_test(self.unpaired_test))


def _pairing(
    clean: SampleOutcomes, shift: SampleOutcomes, clean_index: pd.Index, *, other_images: bool = False
) -> tuple[str, np.ndarray, np.ndarray]:
    """``(pairing, clean rows, shift rows)`` of the compared samples (empty rows: unpaired).
    ``other_images``: the caller knows the shift's images are not clean's (a natural shift set),
    so it is unpaired whatever its ids (two sets may number their images alike)."""
    if other_images:
        rows = np.zeros(0, dtype=np.int64)
        return "unpaired", rows, rows
    if clean.sample_ids.shape == shift.sample_ids.shape and np.array_equal(clean.sample_ids, shift.sample_ids):
        rows = np.arange(clean.n_samples)
        return "paired", rows, rows
    where = clean_index.get_indexer(id_index(shift))
    shared = where >= 0
    shift_rows = np.flatnonzero(shared)
    if shift_rows.size == 0:
        return "unpaired", shift_rows, shift_rows
    clean_rows = where[shared].astype(np.int64)
    if shift_rows.size == shift.n_samples:
        kind = "paired" if shift.n_samples == clean.n_samples else "paired_subset"
    else:
        kind = "paired_overlap"
    return kind, clean_rows, shift_rows


def _changes(
    clean: SampleOutcomes,
    shift: SampleOutcomes,
    n_classes: int,
    *,
    unpaired_test: str,
    confidence: float,
    clean_index: pd.Index | None = None,
    other_images: bool = False,
) -> dict[str, Any]:
    """The per-class columns of one (model, shift), unadjusted."""
    index = clean_index if clean_index is not None else id_index(clean)
    kind, clean_rows, shift_rows = _pairing(clean, shift, index, other_images=other_images)
    clean_support = np.bincount(clean.labels, minlength=n_classes)
    shift_support = np.bincount(shift.labels, minlength=n_classes)
    if kind == "unpaired":
        n_clean, n_shift = clean_support, shift_support
        k_clean = np.bincount(clean.labels[clean.correct], minlength=n_classes)
        k_shift = np.bincount(shift.labels[shift.correct], minlength=n_classes)
        tested = (n_clean > 0) & (n_shift > 0)
        test_p = proportions.boschloo_exact if unpaired_test == "boschloo" else proportions.fisher_exact
        p_value = test_p(k_shift, n_shift, k_clean, n_clean)
        low, high = proportions.newcombe_unpaired_interval(k_shift, n_shift, k_clean, n_clean, confidence)
        test, method = f"{unpaired_test}_exact", "newcombe_hybrid_score"
        only_clean = only_shift = np.full(n_classes, pd.NA)
    else:
        labels = clean.labels[clean_rows]
        differ = np.flatnonzero(labels != shift.labels[shift_rows])
        if differ.size:
            first = shift_rows[differ[0]]
            raise InputError(
                f"sample {str(shift.sample_ids[first])!r} has label {int(shift.labels[first])} here but "
                f"{int(labels[differ[0]])} in {clean.source} ({differ.size} shared samples differ)",
                path=shift.source,
                field="labels",
            )
        # one bincount: cell = 4 * class + 2 * (clean correct) + (shift correct)
        cell = labels * 4 + clean.correct[clean_rows] * 2 + shift.correct[shift_rows]
        table = np.bincount(cell, minlength=4 * n_classes).reshape(n_classes, 4)
        neither, only_shift, only_clean, both = table[:, 0], table[:, 1], table[:, 2], table[:, 3]
        n_clean = n_shift = table.sum(axis=1)
        k_clean, k_shift = both + only_clean, both + only_shift
        tested = n_clean > 0
        p_value = np.where(tested, proportions.mcnemar_exact(only_clean, only_shift), np.nan)
        low, high = proportions.newcombe_paired_interval(both, only_shift, only_clean, neither, confidence)
        test, method = "mcnemar_exact", "newcombe_paired_score"
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy_clean = np.where(n_clean > 0, k_clean / np.maximum(n_clean, 1), np.nan)
        accuracy_shift = np.where(n_shift > 0, k_shift / np.maximum(n_shift, 1), np.nan)
    return {
        "pairing": kind,
        "n_clean": n_clean.astype(np.int64),
        "n_shift": n_shift.astype(np.int64),
        "accuracy_clean": accuracy_clean,
        "accuracy_shift": accuracy_shift,
        "change": accuracy_shift - accuracy_clean,
        "change_low": np.where(tested, low, np.nan),
        "change_high": np.where(tested, high, np.nan),
        "p_value": np.where(tested, p_value, np.nan),
        "test": np.where(tested, test, "none"),
        "interval_method": np.where(tested, method, "none"),
        "clean_only_correct": only_clean,
        "shift_only_correct": only_shift,
        "clean_left_out": (clean_support - n_clean).astype(np.int64),
        "shift_left_out": (shift_support - n_shift).astype(np.int64),
    }


def _frame(parts: list[tuple[str, str, dict[str, Any]]], class_names: np.ndarray, confidence: float) -> pd.DataFrame:
    """One table of the per-(model, shift) columns, rows in the order of ``parts``, classes
    ascending; the adjustment columns left for :func:`adjust_families`."""
    c = class_names.shape[0]
    if not parts:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in COLUMNS + EXTRA_COLUMNS})
    count = len(parts)
    columns: dict[str, Any] = {
        "model": np.repeat(np.array([m for m, _, _ in parts], dtype=object), c),
        "shift": np.repeat(np.array([s for _, s, _ in parts], dtype=object), c),
        "class": np.tile(np.arange(c, dtype=np.int64), count),
        "class_name": np.tile(class_names.astype(object), count),
        "pairing": np.repeat(np.array([p["pairing"] for _, _, p in parts], dtype=object), c),
    }
    for name in ("n_clean", "n_shift", "accuracy_clean", "accuracy_shift", "change", "change_low", "change_high", "p_value"):
        columns[name] = np.concatenate([p[name] for _, _, p in parts])
    columns["p_adjusted"] = np.full(count * c, np.nan)
    columns["significant"] = np.zeros(count * c, dtype=np.bool_)
    columns["test"] = np.concatenate([p["test"] for _, _, p in parts]).astype(object)
    columns["interval_method"] = np.concatenate([p["interval_method"] for _, _, p in parts]).astype(object)
    columns["adjustment"] = np.full(count * c, "", dtype=object)
    columns["q"] = np.full(count * c, np.nan)
    columns["confidence"] = np.full(count * c, confidence)
    columns["family_size"] = np.zeros(count * c, dtype=np.int64)
    frame = pd.DataFrame(columns)
    for name in ("clean_only_correct", "shift_only_correct"):
        frame[name] = pd.array(np.concatenate([p[name] for _, _, p in parts]), dtype="Int64")
    for name in ("clean_left_out", "shift_left_out"):
        frame[name] = np.concatenate([p[name] for _, _, p in parts])
    return frame[list(COLUMNS + EXTRA_COLUMNS)]


def adjust_families(table: pd.DataFrame, *, q: float = 0.05, adjustment: str = "bh") -> pd.DataFrame:
    """``table`` (rows of :func:`class_drops` or :func:`class_changes`, e.g. concatenated from
    per-shift jobs) with ``p_adjusted``, ``significant``, ``adjustment``, ``q`` and ``family_size``
    computed over each model's family: every tested row of the model in the table."""
    level = check_level(q)
    method = check_adjustment(adjustment)
    out = table.copy()
    p_adjusted = np.full(len(out), np.nan)
    family_size = np.zeros(len(out), dtype=np.int64)
    models = out["model"].to_numpy()
    p_value = out["p_value"].to_numpy(dtype=np.float64)
    for model in pd.unique(models):  # one family per model
        rows = np.flatnonzero(models == model)
        p_adjusted[rows] = adjust_p_values(p_value[rows], method)
        family_size[rows] = int(np.count_nonzero(~np.isnan(p_value[rows])))
    out["p_adjusted"] = p_adjusted
    with np.errstate(invalid="ignore"):
        out["significant"] = p_adjusted <= level
    out["adjustment"] = method
    out["q"] = level
    out["family_size"] = family_size
    return out


def class_changes(
    clean: Outcomes,
    shift: Outcomes,
    *,
    model: str = "model",
    shift_name: str = "shift",
    n_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    tests: DropTestSettings = DropTestSettings(),
) -> pd.DataFrame:
    """:func:`class_drops` of one model under one shift: the family is this shift's classes.
    To adjust over several shifts computed apart, concatenate the tables and call
    :func:`adjust_families`."""
    return class_drops(
        {model: clean},
        {shift_name: {model: shift}},
        n_classes=n_classes,
        class_names=class_names,
        tests=tests,
    )


def class_drops(
    clean: Mapping[str, Outcomes],
    shifted: Mapping[str, Mapping[str, Outcomes]],
    *,
    n_classes: int | None = None,
    class_names: Sequence[str] | None = None,
    tests: DropTestSettings = DropTestSettings(),
    unpaired: Collection[str] = (),
) -> pd.DataFrame:
    """One row per (model, shift, class): is the class's change from clean real?

    ``clean``: model -> its outputs on the clean set; ``shifted``: shift -> model -> its
    outputs under the shift (each a :class:`~classwise.metrics.outcomes.SampleOutcomes`, a
    loaded :class:`~classwise.logits_io.ScoresFile` or the path of an outputs file). Every
    model of a shift needs clean outputs. The reference itself does not belong in ``shifted``
    (it would be compared with itself). Paired or unpaired by sample id, tested as ``tests``
    says (default: Fisher's test, 95 % intervals, Benjamini-Hochberg at q = 0.05), and adjusted
    over each model's family (see the module docstring); ``n_classes`` and ``class_names``
    default to what the outputs carry. The shifts named in ``unpaired`` are sets of other
    images (ImageNet-V2, -Sketch): compared unpaired whatever their sample ids, which may
    number other images as clean's are numbered. Rows: models in the order of ``clean``, then
    shifts in the order of ``shifted``, then classes ascending.
    """
    clean_outcomes = {model: as_outcomes(source) for model, source in clean.items()}
    shift_outcomes = {
        shift: {model: as_outcomes(source) for model, source in by_model.items()} for shift, by_model in shifted.items()
    }
    for shift, by_model in shift_outcomes.items():
        for model, outcomes in by_model.items():
            if model not in clean_outcomes:
                raise InputError(
                    f"model {model!r} has outputs under shift {shift!r} but none on the clean set",
                    path=outcomes.source,
                    field="model",
                )
    everything = [*clean_outcomes.values(), *(o for by_model in shift_outcomes.values() for o in by_model.values())]
    c = n_classes_of(everything, n_classes)
    names = class_names_of(everything, c, class_names)
    parts = []
    for model, reference in clean_outcomes.items():  # loops over models and shifts; classes are arrays
        index = id_index(reference)
        for shift, by_model in shift_outcomes.items():
            if model in by_model:
                changes = _changes(
                    reference,
                    by_model[model],
                    c,
                    unpaired_test=tests.unpaired_test,
                    confidence=tests.confidence,
                    clean_index=index,
                    other_images=shift in unpaired,
                )
                parts.append((model, shift, changes))
    return adjust_families(_frame(parts, names, tests.confidence), q=tests.q, adjustment=tests.adjustment)


def significant_changes(table: pd.DataFrame, *, direction: str = "drop") -> pd.DataFrame:
    """The significant rows of a :func:`class_drops` table, largest effect first: ``"drop"``
    (``change < 0``, most negative first), ``"rise"`` (largest rise first) or ``"both"`` (largest
    ``|change|`` first); equal changes by adjusted p-value, then model, shift and class. For a
    Markdown table of the findings."""
    if direction not in ("drop", "rise", "both"):
        raise InputError(f"expected drop, rise or both, got {direction!r}", field="direction")
    rows = table[table["significant"].to_numpy(dtype=bool)]
    change = rows["change"].to_numpy(dtype=np.float64)
    if direction == "drop":
        rows, key = rows[change < 0], change[change < 0]
    elif direction == "rise":
        rows, key = rows[change > 0], -change[change > 0]
    else:
        key = -np.abs(change)
    order = np.lexsort(
        (
            rows["class"].to_numpy(),
            rows["shift"].astype(str).to_numpy(),
            rows["model"].astype(str).to_numpy(),
            rows["p_adjusted"].to_numpy(dtype=np.float64),
            key,
        )
    )
    return rows.iloc[order].reset_index(drop=True)


def drop_counts(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, class) of a :func:`class_drops` table: ``n_shifts_tested``, ``n_shifts_dropped``
    (significant, ``change < 0``), ``n_shifts_rose`` (significant, ``change > 0``) and
    ``largest_drop`` (the most negative significant change, NaN without one); most dropped
    first, then model order and class."""
    significant = table["significant"].to_numpy(dtype=bool)
    change = table["change"].to_numpy(dtype=np.float64)
    dropped = significant & (change < 0)
    frame = pd.DataFrame(
        {
            "model": table["model"].to_numpy(),
            "class": table["class"].to_numpy(),
            "class_name": table["class_name"].to_numpy(),
            "n_shifts_tested": ~np.isnan(table["p_value"].to_numpy(dtype=np.float64)),
            "n_shifts_dropped": dropped,
            "n_shifts_rose": significant & (change > 0),
            "largest_drop": np.where(dropped, change, np.nan),
        }
    )
    counts = frame.groupby(["model", "class"], sort=False).agg(
        class_name=("class_name", "first"),
        n_shifts_tested=("n_shifts_tested", "sum"),
        n_shifts_dropped=("n_shifts_dropped", "sum"),
        n_shifts_rose=("n_shifts_rose", "sum"),
        largest_drop=("largest_drop", "min"),
    )
    counts = counts.reset_index()
    model_order = {m: i for i, m in enumerate(pd.unique(frame["model"]))}
    order = np.lexsort(
        (counts["class"].to_numpy(), counts["model"].map(model_order).to_numpy(), -counts["n_shifts_dropped"].to_numpy())
    )
    return counts.iloc[order].reset_index(drop=True)
