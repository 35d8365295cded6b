"""A model's outputs from a file the user brings (``source: predictions``), matched to a dataset
and written as the pipeline's cached outputs.

Three formats, told apart by the file's extension and, for a CSV, its header:

* ``.npz`` in the logits-file format (:mod:`classwise.logits_io`): ``logits`` or ``probs``
  (N x C), or ``predictions`` (N,) for hard predictions; ``sample_ids`` (N,) required, ``labels``
  optional (checked against the dataset's when given), ``class_names`` ignored (the dataset's
  are used);
* a CSV ``sample_id,label,score_0,...,score_{C-1}`` (``label`` optional): probabilities when
  every row is non-negative and sums to 1 (within
  :data:`~classwise.validation.PROB_ROW_TOLERANCE`), logits otherwise;
* a CSV of hard predictions ``sample_id,prediction`` (a ``label`` column optional).

Rows are matched to the dataset's samples by ``sample_id`` (in any order): a sample of the
dataset without a row, a row of no sample, or a repeated id is an :class:`InputError` naming the
file and the first ids (:func:`classwise.sample_ids.sample_id_positions`). So is a label that
differs from the dataset's (a file of another split), a score matrix with another number of
columns than the dataset has classes, or a predicted class out of range.

The workflow's plan checks what it can before any job, without reading a file's values
(:func:`check_outputs_file`): the score columns against the dataset's class count, and the ids
against the dataset's where those are known before any job (:func:`align` uses the same checks).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.logits_io import PREDICTIONS, OutputKind, save_predictions, save_scores, stored_kind, stored_shapes
from classwise.sample_ids import sample_id_positions
from classwise.validation import (
    PROB_ROW_TOLERANCE,
    check_finite_rows,
    check_probabilities,
    check_score_matrix,
    rows_message,
)

__all__ = [
    "FORMATS",
    "UserOutputs",
    "align",
    "check_outputs_file",
    "file_has_scores",
    "import_outputs",
    "read_outputs",
    "sha256_of",
]

#: The formats a file may have (recorded in the cache's sidecar).
FORMATS = ("npz", "csv-scores", "csv-predictions")
_SCORE_PREFIX = "score_"
_PREDICTION = "prediction"
_MAX_IDS_IN_MESSAGE = 5


@dataclass(frozen=True, eq=False)
class UserOutputs:
    """A model's outputs as read from the user's file, in the file's row order."""

    kind: OutputKind
    #: (N, C) scores, or (N,) int64 predicted class indices when ``kind == "predictions"``.
    values: np.ndarray
    sample_ids: np.ndarray
    #: The labels the file gives (None: it gives none).
    labels: np.ndarray | None
    format: str
    path: str


def _format_of(path: Path) -> str:
    suffixes = "".join(path.suffixes[-2:]).lower()
    if path.suffix.lower() == ".npz":
        return "npz"
    if path.suffix.lower() == ".csv" or suffixes == ".csv.gz":
        return "csv"
    raise InputError(
        "expected a .npz file (the logits-file format) or a .csv file (sample_id,label,score_0,... or "
        f"sample_id,prediction), got a {path.suffix or 'file without extension'}",
        path=path,
    )


def file_has_scores(path: str | Path) -> bool:
    """Whether the file holds scores (False: hard predictions only), from an ``.npz``'s array
    names or a CSV's header line alone; :class:`InputError` for a missing or unreadable file."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file does not exist (relative paths are relative to the working directory)", path=p)
    if _format_of(p) == "npz":
        return stored_kind(p) != PREDICTIONS
    return _PREDICTION not in _csv_columns(pd.read_csv(p, nrows=0), p)


def _csv_columns(frame: pd.DataFrame, path: Path) -> list[str]:
    columns = [str(c) for c in frame.columns]
    if "sample_id" not in columns:
        raise InputError(
            f"expected a 'sample_id' column (then 'prediction', or 'label' and 'score_0', 'score_1', ...); found {columns}",
            path=path,
            field="sample_id",
        )
    if PREDICTIONS in columns and _PREDICTION not in columns:
        raise InputError("the column of hard predictions is named 'prediction' (singular)", path=path, field=PREDICTIONS)
    return columns


def _score_columns(columns: list[str], path: Path) -> list[str]:
    """The score columns of a CSV of scores (``score_0`` ... ``score_{C-1}``, in class order)."""
    score_columns = [c for c in columns if c not in ("sample_id", "label")]
    expected = [f"{_SCORE_PREFIX}{j}" for j in range(len(score_columns))]
    if not score_columns or score_columns != expected:
        raise InputError(
            f"expected the columns sample_id, label, {_SCORE_PREFIX}0 ... {_SCORE_PREFIX}{{C-1}} (scores, in class order) "
            f"or sample_id, prediction; found {columns}",
            path=path,
            field=next((c for c, e in zip(score_columns, expected) if c != e), f"{_SCORE_PREFIX}0"),
        )
    return score_columns


def _csv_sample_ids(column: pd.Series, path: Path) -> np.ndarray:
    if column.isna().any():
        rows = np.flatnonzero(column.isna().to_numpy())
        raise InputError(f"empty sample ids in rows {rows_message(rows)}", path=path, field="sample_id")
    return column.to_numpy().astype(str)


def read_outputs(path: str | Path) -> UserOutputs:
    """The outputs in a user's file (any of :data:`FORMATS`), validated on their own (finite
    scores, probability rows, integer predictions, unique ids); not yet matched to a dataset."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file does not exist (relative paths are relative to the working directory)", path=p)
    if _format_of(p) == "npz":
        return _read_npz(p)
    return _read_csv(p)


def _read_npz(path: Path) -> UserOutputs:
    kind = stored_kind(path)
    with np.load(path, allow_pickle=False) as archive:
        names = set(archive.files)
        if "sample_ids" not in names:
            raise InputError(
                f"missing array 'sample_ids', needed to match the rows to the dataset's samples; found {sorted(names)}",
                path=path,
                field="sample_ids",
            )
        values = archive[kind]
        sample_ids = archive["sample_ids"].astype(str)
        labels = archive["labels"] if "labels" in names else None
    if kind == PREDICTIONS:
        values = _integer_column(values, path, PREDICTIONS)
    else:
        values = _checked_scores(values, kind, path)
    return UserOutputs(kind, values, sample_ids, _optional_labels(labels, values.shape[0], path), "npz", str(path))


def _read_csv(path: Path) -> UserOutputs:
    try:
        frame = pd.read_csv(path, dtype={"sample_id": str}, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a readable CSV file ({exc})", path=path) from None
    columns = _csv_columns(frame, path)
    if frame.empty:
        raise InputError("has no rows", path=path)
    sample_ids = _csv_sample_ids(frame["sample_id"], path)
    labels = _optional_labels(frame["label"].to_numpy() if "label" in columns else None, len(frame), path)
    if _PREDICTION in columns:
        unknown = [c for c in columns if c not in ("sample_id", "label", _PREDICTION)]
        if unknown:
            raise InputError(
                f"unexpected columns {unknown}; a file of hard predictions has sample_id, prediction and optionally label",
                path=path,
                field=unknown[0],
            )
        values = _integer_column(frame[_PREDICTION].to_numpy(), path, _PREDICTION)
        return UserOutputs("predictions", values, sample_ids, labels, "csv-predictions", str(path))
    score_columns = _score_columns(columns, path)
    try:
        scores = frame[score_columns].to_numpy(dtype=np.float64)
    except ValueError:
        bad = next(c for c in score_columns if pd.to_numeric(frame[c], errors="coerce").isna().any())
        rows = np.flatnonzero(pd.to_numeric(frame[bad], errors="coerce").isna().to_numpy())
        raise InputError(f"expected numbers; rows {rows_message(rows)} are not", path=path, field=bad) from None
    on_simplex = bool(((scores >= 0).all()) and np.allclose(scores.sum(axis=1), 1.0, rtol=0, atol=PROB_ROW_TOLERANCE))
    kind: OutputKind = "probs" if on_simplex else "logits"
    return UserOutputs(kind, _checked_scores(scores, kind, path), sample_ids, labels, "csv-scores", str(path))


def _checked_scores(values: np.ndarray, kind: str, path: Path) -> np.ndarray:
    scores = check_score_matrix(values, field=kind, path=path, min_classes=2)
    check_finite_rows(scores, field=kind, path=path)
    if kind == "probs":
        check_probabilities(scores, field=kind, path=path)
    return scores


def _integer_column(values: np.ndarray, path: Path, field: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"expected one value per sample, got shape {arr.shape}", path=path, field=field)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        numbers = pd.to_numeric(pd.Series(arr), errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(numbers) | (numbers != np.round(numbers)))
        if bad.size or arr.dtype == np.bool_:
            rows = bad if bad.size else np.arange(arr.size)
            raise InputError(
                f"expected integer class indices; rows {rows_message(rows)} are not (e.g. {arr[rows[0]]!r})",
                path=path,
                field=field,
            )
        arr = numbers
    return arr.astype(np.int64)


def _optional_labels(labels: np.ndarray | None, n: int, path: Path) -> np.ndarray | None:
    if labels is None:
        return None
    labels = _integer_column(labels, path, "label")
    if labels.shape != (n,):
        raise InputError(f"expected {n} labels, one per row, got shape {labels.shape}", path=path, field="label")
    return labels


def _examples(ids: np.ndarray) -> str:
    return repr([str(i) for i in ids[:_MAX_IDS_IN_MESSAGE]])


def align(outputs: UserOutputs, *, sample_ids: np.ndarray, labels: np.ndarray, n_classes: int, dataset: str) -> UserOutputs:
    """``outputs`` in the order of the dataset's ``sample_ids``, checked against its ``labels``
    and class count: exactly the dataset's samples (:class:`InputError` naming the missing and
    the extra ids), the same labels where the file gives them, one score column per class or
    predictions in ``[0, n_classes)``."""
    path = outputs.path
    positions = _match_ids(outputs.sample_ids, sample_ids, path, dataset)
    values = outputs.values[positions]
    if outputs.kind == PREDICTIONS:
        bad = np.flatnonzero((values < 0) | (values >= n_classes))
        if bad.size:
            raise InputError(
                f"predicted classes must lie in [0, {n_classes}) (dataset {dataset!r} has {n_classes} classes); "
                f"{bad.size} do not, e.g. {int(values[bad[0]])} for sample ids {_examples(np.asarray(sample_ids)[bad])}",
                path=path,
                field=_PREDICTION if outputs.format != "npz" else PREDICTIONS,
            )
    else:
        _check_columns(values.shape[1], n_classes, path, dataset, outputs.kind if outputs.format == "npz" else None)
    given = None if outputs.labels is None else outputs.labels[positions]
    if given is not None:
        differ = np.flatnonzero(given != np.asarray(labels))
        if differ.size:
            raise InputError(
                f"labels differ from those of dataset {dataset!r} on {differ.size} of {given.size} samples, e.g. sample ids "
                f"{_examples(np.asarray(sample_ids)[differ])} (a file of another split, or another class order?)",
                path=path,
                field="label" if outputs.format != "npz" else "labels",
            )
    return UserOutputs(outputs.kind, values, np.asarray(sample_ids).astype(str), given, outputs.format, path)


def _match_ids(file_ids: np.ndarray, sample_ids: np.ndarray, path: str | Path, dataset: str) -> np.ndarray:
    """Where each of the dataset's ``sample_ids`` sits among the file's rows: exactly the
    dataset's samples, no id twice (:class:`InputError` naming the first missing, extra or
    repeated ids)."""
    return sample_id_positions(
        sample_ids,
        file_ids,
        path=path,
        field="sample_id",
        available_name="this file",
        exact=True,
        wanted_name=f"dataset {dataset!r}",
        missing=f"{{count}} of the {{total}} samples of dataset {dataset!r} have no row in this file",
        extra=f"{{count}} row(s) of this file name no sample of dataset {dataset!r}",
    )


def _check_columns(columns: int, n_classes: int, path: str | Path, dataset: str, npz_kind: str | None) -> None:
    """One score column per class of the dataset (``npz_kind``: the array of an npz, None: a CSV)."""
    if columns != n_classes:
        raise InputError(
            f"has {columns} score columns, dataset {dataset!r} has {n_classes} classes (one score per class, in "
            "class-index order)",
            path=path,
            field=npz_kind or _SCORE_PREFIX + "*",
        )


def check_outputs_file(path: str | Path, *, dataset: str, n_classes: int | None, sample_ids: np.ndarray | None) -> None:
    """Check a user's outputs file against dataset ``dataset`` before any job, reading its header
    and its ids but never its values: one score column per class (``n_classes``; an ``.npz``'s
    array header, a CSV's header line), and, where the dataset's ``sample_ids`` are known, a row
    for each sample and for nothing else, no id twice (:class:`InputError` naming the file, the
    field and the first ids). None skips that check. The import job checks all of it again, and
    the rest: labels, values, predicted classes."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file does not exist (relative paths are relative to the working directory)", path=p)
    file_ids: np.ndarray | None = None
    if _format_of(p) == "npz":
        kind = stored_kind(p)
        shapes = stored_shapes(p)
        shape = shapes.get(kind)
        if kind != PREDICTIONS and n_classes is not None and shape is not None and len(shape) == 2:
            _check_columns(shape[1], n_classes, p, dataset, kind)
        if sample_ids is not None:
            if "sample_ids" not in shapes:
                raise InputError(
                    f"missing array 'sample_ids', needed to match the rows to the dataset's samples; found {sorted(shapes)}",
                    path=p,
                    field="sample_ids",
                )
            with np.load(p, allow_pickle=False) as archive:  # that array alone is read
                file_ids = archive["sample_ids"].astype(str)
    else:
        columns = _csv_columns(pd.read_csv(p, nrows=0), p)
        if _PREDICTION not in columns and n_classes is not None:
            _check_columns(len(_score_columns(columns, p)), n_classes, p, dataset, None)
        if sample_ids is not None:
            ids = pd.read_csv(p, usecols=["sample_id"], dtype={"sample_id": str}, keep_default_na=False, na_values=[""])
            file_ids = _csv_sample_ids(ids["sample_id"], p)
    if file_ids is not None and sample_ids is not None:
        _match_ids(file_ids, sample_ids, p, dataset)


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def import_outputs(
    path: str | Path,
    *,
    sample_ids: np.ndarray,
    labels: np.ndarray,
    class_names: np.ndarray,
    dataset: str,
    cache_path: str | Path,
    metadata: Mapping[str, Any],
) -> OutputKind:
    """Read the user's file, match it to the dataset (its ``sample_ids``, ``labels`` and
    ``class_names``, named ``dataset`` in errors) and write it as the cached outputs
    ``cache_path`` (:func:`~classwise.logits_io.save_scores` or
    :func:`~classwise.logits_io.save_predictions`), with ``metadata`` plus the file's format,
    kind and sha256 in the sidecar. Returns what the file held."""
    class_names = np.asarray(class_names).astype(str)
    aligned = align(read_outputs(path), sample_ids=sample_ids, labels=labels, n_classes=class_names.shape[0], dataset=dataset)
    record = {
        **dict(metadata),
        "outputs": {"file": str(path), "sha256": sha256_of(path), "format": aligned.format, "kind": aligned.kind},
    }
    if aligned.kind == PREDICTIONS:
        save_predictions(
            cache_path,
            predictions=aligned.values,
            labels=labels,
            sample_ids=aligned.sample_ids,
            class_names=class_names,
            metadata=record,
        )
    else:
        save_scores(
            cache_path,
            scores=aligned.values,
            kind=aligned.kind,  # type: ignore[arg-type]
            labels=labels,
            sample_ids=aligned.sample_ids,
            class_names=class_names,
            metadata=record,
        )
    return aligned.kind
