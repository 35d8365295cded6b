"""Checks of score matrices, class labels and probability rows, shared by every entry point.

The logits file reader (:mod:`classwise.logits_io`), the sufficient statistics
(:mod:`classwise.metrics.stats`), the probability wrapper (:mod:`classwise.metrics.probabilities`),
the test suites (:mod:`classwise.testsuites.classification`) and confident learning
(:mod:`classwise.labels.confident_learning`) validate their arrays here, so that one input gets
the same verdict and the same message wherever it enters. What differs between them is only what
each accepts, and that is a parameter: the number of classes, the number of samples (none
given for a file of hard predictions, whose length sets it), and which non-finite scores are
allowed (the statistics rank ``+-inf`` logits, the probability wrapper allows ``-inf`` = log 0,
a logits file holds neither).

Every check raises :class:`~classwise.errors.InputError` naming the field (and the file, when
given) and returns the array in the form its callers compute with. The one scalar check,
:func:`check_count`, is every package's test of "an integer (not a bool) ``>= n``": a batch
size, a seed, a number of classes, a class index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np

from classwise.errors import InputError

__all__ = [
    "PROB_ROW_TOLERANCE",
    "SCORE_KINDS",
    "ScoreKind",
    "check_kind",
    "check_finite_rows",
    "check_labels",
    "check_probabilities",
    "check_score_matrix",
    "row_locations",
]

#: What a score matrix holds: raw logits (pre-softmax) or probabilities (rows on the simplex).
ScoreKind = Literal["logits", "probs"]
SCORE_KINDS: tuple[ScoreKind, ...] = ("logits", "probs")

#: Tolerance on probability rows: each must sum to 1 within this, and no entry may exceed
#: ``1 + PROB_ROW_TOLERANCE`` (float32 softmax outputs are off by a few 1e-7; 1e-3 catches
#: unnormalised scores passed as probabilities without rejecting rounded ones).
PROB_ROW_TOLERANCE = 1e-3

_MAX_ROWS_IN_MESSAGE = 10

PathLike = str | Path | None


def row_locations(rows: np.ndarray | list[int], path: PathLike = None, *, limit: int = _MAX_ROWS_IN_MESSAGE) -> str:
    """Where the data rows ``rows`` (0-based indices) are, abridged, as the user finds them: in a
    CSV file (``.csv``, ``.csv.gz``) its line numbers, the header being line 1 (data row 0 is
    ``"line 2"``; ``"lines 2, 4"``); in any other file (``.npz``, ``.npy``, Parquet, JSON)
    ``"data rows 0, 2 (0-based)"``; in an array given in memory (no ``path``) its indices,
    ``"rows 0, 2"`` (``"rows 1"`` for one, as these messages always said). Line numbers assume
    one line per row, as classwise, pandas and timm write CSV files."""
    indices = np.asarray(rows, dtype=np.int64).ravel()
    shown = ", ".join(str(int(r)) for r in (indices[:limit] + (2 if _is_csv(path) else 0)))
    more = f" and {indices.size - limit} more" if indices.size > limit else ""
    if path is None:
        return f"rows {shown}{more}"
    plural = "s" if indices.size > 1 else ""
    if _is_csv(path):
        return f"line{plural} {shown}{more}"
    return f"data row{plural} {shown}{more} (0-based)"


def _is_csv(path: PathLike) -> bool:
    return path is not None and str(path).lower().endswith((".csv", ".csv.gz"))


def check_kind(kind: object) -> ScoreKind:
    """``kind`` if it is ``"logits"`` or ``"probs"``, else :class:`InputError`."""
    if kind not in SCORE_KINDS:
        raise InputError(f"kind must be 'logits' or 'probs', got {kind!r}", field="kind")
    return kind  # narrowed to ScoreKind by the test against SCORE_KINDS


def check_score_matrix(
    scores: object, *, field: str, path: PathLike = None, min_classes: int = 1, min_samples: int = 1
) -> np.ndarray:
    """``scores`` as a 2-D floating-point array with at least ``min_samples`` rows and
    ``min_classes`` columns (no copy when it already is one), else :class:`InputError`."""
    if isinstance(scores, np.ndarray):
        arr = scores
    else:
        try:
            arr = np.asarray(scores)
        except Exception as exc:  # ragged lists and the like
            raise InputError(f"could not convert to an array: {exc}", path=path, field=field) from exc
    if arr.ndim != 2:
        raise InputError(f"expected a 2-D array (samples x classes), got shape {arr.shape}", path=path, field=field)
    if not np.issubdtype(arr.dtype, np.floating):
        raise InputError(f"expected a floating-point array, got dtype {arr.dtype}", path=path, field=field)
    if arr.shape[0] < min_samples:
        raise InputError(f"expected at least one sample (row), got shape {arr.shape}", path=path, field=field)
    if arr.shape[1] < min_classes:
        classes = "1 class" if min_classes == 1 else f"{min_classes} classes"
        raise InputError(f"expected at least 1 sample and {classes}, got shape {arr.shape}", path=path, field=field)
    return arr


def check_labels(
    labels: object,
    n_samples: int | None,
    n_classes: int,
    *,
    field: str = "labels",
    path: PathLike = None,
    noun: str = "label",
) -> np.ndarray:
    """``labels`` as an int64 ``(n_samples,)`` array of class indices in ``[0, n_classes)``
    (no copy when it already is one), else :class:`InputError` naming the first bad row.

    ``n_samples=None`` accepts any length but zero: a file of hard predictions, whose length
    sets the number of samples. ``noun`` is what one entry is called in the message
    (``"label"``, ``"prediction"``)."""
    arr = labels if isinstance(labels, np.ndarray) else np.asarray(labels)
    if arr.ndim != 1 or (n_samples is None and not arr.size):
        count = "" if n_samples is None else f"{n_samples} "
        raise InputError(f"expected a 1-D array of {count}class indices, got shape {arr.shape}", path=path, field=field)
    if n_samples is not None and arr.shape[0] != n_samples:
        raise InputError(
            f"expected shape ({n_samples},), one label per score row: "
            f"scores have {n_samples} rows but labels have length {arr.shape[0]}",
            path=path,
            field=field,
        )
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"expected integer class indices, got dtype {arr.dtype}", path=path, field=field)
    if arr.size:
        out_of_range = (arr < 0) | (arr >= n_classes)
        if out_of_range.any():
            bad = np.flatnonzero(out_of_range)
            first = int(bad[0])
            at = f"position {first}" if path is None else row_locations([first], path)  # an array's: its index
            raise InputError(
                f"{noun}s must lie in [0, {n_classes}): {noun} {int(arr[first])} at {at} is out of range "
                f"(expected 0 <= {noun} < {n_classes}); out of range: {row_locations(bad, path)}",
                path=path,
                field=field,
            )
    return arr.astype(np.int64, copy=False)


def check_finite_rows(scores: np.ndarray, *, field: str, path: PathLike = None, row_offset: int = 0) -> None:
    """Raise :class:`InputError` listing the rows of ``scores`` that hold NaN or +-inf."""
    finite = np.isfinite(scores).all(axis=1)
    if not finite.all():
        bad = row_offset + np.flatnonzero(~finite)
        raise InputError(f"NaN or infinite values in {row_locations(bad, path)}", path=path, field=field)


def check_probabilities(probs: np.ndarray, *, field: str = "probs", path: PathLike = None, row_offset: int = 0) -> None:
    """Raise :class:`InputError` unless every row of ``probs`` is finite, lies in
    ``[0, 1 + PROB_ROW_TOLERANCE]`` and sums to 1 within :data:`PROB_ROW_TOLERANCE`.

    ``row_offset`` is added to the row numbers in messages (for a block of a larger matrix).
    """
    check_finite_rows(probs, field=field, path=path, row_offset=row_offset)
    out_of_range = ((probs < 0) | (probs > 1 + PROB_ROW_TOLERANCE)).any(axis=1)
    if out_of_range.any():
        bad = row_offset + np.flatnonzero(out_of_range)
        raise InputError(
            f"probabilities must be non-negative and lie in [0, 1]; {row_locations(bad, path)}", path=path, field=field
        )
    sums = probs.sum(axis=1, dtype=np.float64)
    off = np.abs(sums - 1.0) > PROB_ROW_TOLERANCE
    if off.any():
        bad = row_offset + np.flatnonzero(off)
        raise InputError(
            f"probability rows must sum to 1 (within {PROB_ROW_TOLERANCE:g}); {row_locations(bad, path)}",
            path=path,
            field=field,
        )
