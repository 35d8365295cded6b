"""A model's outputs from a file the user brings, matched to a dataset (``source: predictions``:
written as the pipeline's cached outputs) or to a file of labels (``classwise metrics``).

The formats, told apart by the file's extension and, for a CSV, its header:

* ``.npz`` in the logits-file format (:mod:`classwise.logits_io`): ``logits`` or ``probs``
  (N x C), or ``predictions`` for hard predictions ((N,) class indices or names, ``-1`` =
  abstained; (N, k) the top-k classes, best first); ``sample_ids`` (N,) required, ``labels``
  optional (checked against the dataset's when given), ``class_names`` ignored (the dataset's
  are used);
* a CSV ``sample_id,label,score_0,...,score_{C-1}`` (``label`` optional): probabilities when
  every row is non-negative and sums to 1 (within
  :data:`~classwise.validation.PROB_ROW_TOLERANCE`), logits otherwise, unless the user says
  which (:func:`~classwise.logits_io.decide_score_kind`, which decides it for every format and
  says why: ``UserOutputs.read_as``);
* a CSV of hard predictions ``sample_id,prediction`` (a ``label`` column optional): class
  indices or class names (names are mapped through the dataset's class names); an empty cell,
  ``-1`` or the configured abstention token means that the model abstained;
* the outputs of timm's ``inference.py`` (``--include-index``): its ``--results-separate-col``
  form ``filename, index_0..index_{k-1}, logit_0.. | prob_0..`` as CSV or Parquet, or its
  default form (list-valued ``index`` and ``logit`` / ``prob`` columns) as JSON (``json``:
  an object filename -> row, or ``json-split``) or Parquet. ``filename`` is the sample id;
  timm's ``label`` columns (its predicted class descriptions, not the truth) are ignored. A file
  whose every row ranks all of its ``k`` classes (indices a permutation of ``0..k-1``) gives the
  scores of ``k`` classes; any other gives hard top-k predictions (A@k and WCA@k need only the
  top-k set); without index columns the outputs are scores in class order (``--topk 0``);
* cleanlab's label-errors arrays: an ``.npy`` of N x C probabilities (or N predicted class
  indices), row i being sample i of the dataset (they carry no ids); their labels, an ``.npy``
  of N class indices, are given to ``classwise metrics --labels``.

Rows are matched to the dataset's samples by ``sample_id`` (in any order): a sample of the
dataset without a row, a row of no sample, or a repeated id is an :class:`InputError` naming the
file and the first ids (:func:`classwise.sample_ids.sample_id_positions`). So is a label that
differs from the dataset's (a file of another split), a class name the dataset does not have (the
rows named), a score matrix with another number of columns than the dataset has classes, a timm
file of another class count, or a predicted class out of range.

The workflow's plan checks what it can before any job, reading the files' headers and ids
(:func:`check_outputs_file`): the score columns against the dataset's class count, and the ids
against the dataset's where those are known before any job (:func:`align` uses the same checks).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from classwise._extras import require
from classwise.errors import InputError
from classwise.logits_io import (
    ABSTAINED,
    PREDICTIONS,
    OutputKind,
    ScoreKindDecision,
    ScoresFile,
    check_predictions,
    decide_score_kind,
    load_outputs,
    ranked_scores,
    save_predictions,
    save_scores,
    stored_kind,
    stored_shapes,
)
from classwise.sample_ids import sample_id_positions
from classwise.validation import (
    ScoreKind,
    check_finite_rows,
    check_labels,
    check_probabilities,
    check_score_matrix,
    row_locations,
)

__all__ = [
    "FORMATS",
    "SUFFIXES",
    "Reference",
    "UserOutputs",
    "align",
    "check_outputs_file",
    "file_has_scores",
    "import_outputs",
    "load_for_metrics",
    "read_class_names",
    "read_outputs",
    "read_reference",
    "sha256_of",
]

#: The formats a file may have (recorded in the cache's sidecar).
FORMATS = ("npz", "csv-scores", "csv-predictions", "timm-csv", "timm-json", "timm-parquet", "npy")
#: The file extensions read (a CSV may be gzipped).
SUFFIXES = (".npz", ".csv", ".csv.gz", ".json", ".parquet", ".npy")
_SCORE_PREFIX = "score_"
_PREDICTION = "prediction"
_MAX_IDS_IN_MESSAGE = 5
#: Cells of a prediction column that mean "abstained", beside the configured token.
_ABSTAIN_CELLS = ("", str(ABSTAINED))
# timm inference.py's default column names (--filename-col, --index-col, --label-col, --output-type)
_TIMM_ID = "filename"
_TIMM_INDEX = "index"
_TIMM_LABEL = "label"
_TIMM_OUTPUTS: dict[str, ScoreKind] = {"logit": "logits", "prob": "probs"}
_FORMATS_MESSAGE = (
    "expected a .npz file (the logits-file format) or a .csv file (sample_id,label,score_0,... or "
    "sample_id,prediction), timm inference.py's outputs (.csv with a 'filename' column, .json, .parquet) or a .npy "
    "(cleanlab's N x C probabilities)"
)


@dataclass(frozen=True, eq=False)
class UserOutputs:
    """A model's outputs as read from the user's file, in the file's row order."""

    kind: OutputKind
    #: (N, C) scores; or hard predictions: (N,) or (N, k) int64 class indices (-1: abstained),
    #: or (N,) class names as strings ("": abstained) until :func:`align` maps them.
    values: np.ndarray
    #: The rows' ids (None: the file has none, its rows are the samples in order).
    sample_ids: np.ndarray | None
    #: The labels the file gives (None: it gives none): int64 indices, or names as strings.
    labels: np.ndarray | None
    format: str
    path: str
    #: What the scores were read as, and why (:func:`~classwise.logits_io.decide_score_kind`).
    read_as: ScoreKindDecision | None = None

    @property
    def n_rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def value_field(self) -> str:
        """The field of the file that holds the outputs, for error messages."""
        if self.format.startswith("timm"):
            return f"{_TIMM_INDEX}*" if self.kind == PREDICTIONS else "logit* / prob*"
        if self.format in ("npz", "npy"):
            return self.kind if self.kind != PREDICTIONS else PREDICTIONS
        return _PREDICTION if self.kind == PREDICTIONS else _SCORE_PREFIX + "*"

    @property
    def label_field(self) -> str:
        return "labels" if self.format == "npz" else "label"


def _format_of(path: Path) -> str:
    name = path.name.lower()
    for suffix, fmt in ((".npz", "npz"), (".csv", "csv"), (".csv.gz", "csv"), (".json", "json"), (".parquet", "parquet")):
        if name.endswith(suffix):
            return fmt
    if name.endswith(".npy"):
        return "npy"
    raise InputError(f"{_FORMATS_MESSAGE}, got a {path.suffix or 'file without extension'}", path=path)


def _existing(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputError("file does not exist (relative paths are relative to the working directory)", path=p)
    return p


def file_has_scores(path: str | Path) -> bool:
    """Whether the file holds scores (False: hard predictions only), from an ``.npz``'s array
    names or a CSV's header line alone (a timm file's index columns are read: whether they rank
    every class); :class:`InputError` for a missing or unreadable file."""
    p = _existing(path)
    fmt = _format_of(p)
    if fmt == "npz":
        return stored_kind(p) != PREDICTIONS
    if fmt == "npy":
        return len(_npy_shape(p)) == 2
    if fmt == "csv":
        columns = _csv_header(p)
        if _TIMM_ID not in columns:
            return _PREDICTION not in _csv_columns(columns, p)
    return read_outputs(p).kind != PREDICTIONS


def _open_text(path: Path) -> IO[str]:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding="utf-8")
    return open(path, newline="", encoding="utf-8")


def _csv_header(path: Path) -> list[str]:
    """A CSV's column names, from its first line alone (the plan reads thousands of files before
    any job: a plain read, with pandas' reading and its message where that one fails)."""
    try:
        with _open_text(path) as handle:
            header = next(csv.reader(handle), None)
    except (OSError, UnicodeDecodeError, csv.Error, EOFError):
        header = None
    if not header:
        return [str(c) for c in _read_csv(path, nrows=0).columns]
    return header


def _csv_ids(path: Path, column: str) -> np.ndarray:
    """A CSV's ``column`` of sample ids, read plainly where every row gives one (else through
    pandas, whose checks name the empty cells)."""
    try:
        with _open_text(path) as handle:
            rows = csv.reader(handle)
            index = next(rows).index(column)
            ids = [row[index] if len(row) > index else "" for row in rows if row]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError, StopIteration, ValueError):
        ids = [""]
    found = np.asarray(ids, dtype=str)
    if found.size == 0 or (found == "").any():
        frame = _read_csv(path, usecols=[column], dtype={column: str})
        return _id_column(frame[column], path, column)
    return found


def _read_csv(path: Path, **options: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""], **options)
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a readable CSV file ({exc})", path=path) from None


def _csv_columns(columns: list[str], path: Path) -> list[str]:
    if "sample_id" not in columns:
        raise InputError(
            f"expected a 'sample_id' column (then 'prediction', or 'label' and 'score_0', 'score_1', ...), or timm "
            f"inference.py's '{_TIMM_ID}' column; found {columns}",
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


def _id_column(column: pd.Series, path: Path, field: str) -> np.ndarray:
    if column.isna().any():
        rows = np.flatnonzero(column.isna().to_numpy())
        raise InputError(f"empty sample ids in {row_locations(rows, path)}", path=path, field=field)
    return column.to_numpy().astype(str)


def read_outputs(path: str | Path, *, abstain: str | None = None, kind: ScoreKind | None = None) -> UserOutputs:
    """The outputs in a user's file (any of :data:`FORMATS`), validated on their own (finite
    scores, probability rows, integer predictions, unique ids); not yet matched to a dataset.
    ``abstain``: a prediction cell that means "abstained" (beside an empty cell and ``-1``).
    ``kind``: what the user says the scores are; None: what the file says, else what the values
    say (:func:`~classwise.logits_io.decide_score_kind`, whose decision ``read_as`` holds)."""
    p = _existing(path)
    fmt = _format_of(p)
    tokens = (*_ABSTAIN_CELLS, *(() if abstain is None else (str(abstain),)))
    if fmt == "npz":
        return _read_npz(p, tokens, kind)
    if fmt == "npy":
        return _read_npy(p, kind)
    if fmt == "json":
        return _read_timm(_timm_json_frame(p), p, "timm-json", kind)
    if fmt == "parquet":
        require("pyarrow", extra="pipeline", feature="reading Parquet files")
        try:
            frame = pd.read_parquet(p)
        except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
            raise InputError(f"not a readable Parquet file ({exc})", path=p) from None
        if frame.index.name == _TIMM_ID:  # timm writes df.set_index('filename').to_parquet(...)
            frame = frame.reset_index()
        return _read_timm(frame, p, "timm-parquet", kind)
    frame = _read_csv(p, dtype={"sample_id": str, _TIMM_ID: str, _PREDICTION: str, "label": str})
    if _TIMM_ID in frame.columns:
        return _read_timm(frame, p, "timm-csv", kind)
    return _read_classwise_csv(frame, p, tokens, kind)


def _read_npz(path: Path, tokens: tuple[str, ...], requested: ScoreKind | None) -> UserOutputs:
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
        if values.ndim == 1 and values.dtype.kind in "US":
            values = _class_column(pd.Series(values.astype(str)), path, PREDICTIONS, tokens)
        elif values.ndim != 2:
            values = _integer_column(values, path, PREDICTIONS)
        read_as = ScoreKindDecision.hard_predictions(f"its array '{PREDICTIONS}'")
    else:
        stated: ScoreKind = "probs" if kind == "probs" else "logits"
        values, read_as = _scores_as_decided(values, path, requested, stated=(stated, f"its array '{kind}'"))
    labels = _optional_labels(labels, values.shape[0], path, "labels")
    return UserOutputs(kind, values, sample_ids, labels, "npz", str(path), read_as)


def _read_classwise_csv(frame: pd.DataFrame, path: Path, tokens: tuple[str, ...], requested: ScoreKind | None) -> UserOutputs:
    columns = _csv_columns([str(c) for c in frame.columns], path)
    if frame.empty:
        raise InputError("has no rows", path=path)
    sample_ids = _id_column(frame["sample_id"], path, "sample_id")
    labels = _optional_labels(frame["label"] if "label" in columns else None, len(frame), path, "label")
    if _PREDICTION in columns:
        unknown = [c for c in columns if c not in ("sample_id", "label", _PREDICTION)]
        if unknown:
            raise InputError(
                f"unexpected columns {unknown}; a file of hard predictions has sample_id, prediction and optionally label",
                path=path,
                field=unknown[0],
            )
        values = _class_column(frame[_PREDICTION], path, _PREDICTION, tokens)
        read_as = ScoreKindDecision.hard_predictions(f"its '{_PREDICTION}' column")
        return UserOutputs("predictions", values, sample_ids, labels, "csv-predictions", str(path), read_as)
    scores, read_as = _scores_as_decided(_numbers(frame, _score_columns(columns, path), path), path, requested)
    return UserOutputs(read_as.kind, scores, sample_ids, labels, "csv-scores", str(path), read_as)


def _numbers(frame: pd.DataFrame, columns: list[str], path: Path) -> np.ndarray:
    try:
        return frame[columns].to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        bad = next(c for c in columns if pd.to_numeric(frame[c], errors="coerce").isna().any())
        rows = np.flatnonzero(pd.to_numeric(frame[bad], errors="coerce").isna().to_numpy())
        raise InputError(f"expected numbers, found other text in {row_locations(rows, path)}", path=path, field=bad) from None


def _scores_as_decided(
    scores: np.ndarray, path: Path, requested: ScoreKind | None, stated: tuple[ScoreKind, str] | None = None
) -> tuple[np.ndarray, ScoreKindDecision]:
    """A file's scores read as :func:`~classwise.logits_io.decide_score_kind` decides, checked."""
    decision = decide_score_kind(scores, path=path, stated=stated, requested=requested)
    return _checked_scores(decision.applied(scores), decision.kind, path), decision


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
                f"expected integer class indices, found other values in {row_locations(rows, path)} (e.g. {arr[rows[0]]!r})",
                path=path,
                field=field,
            )
        arr = numbers
    return arr.astype(np.int64)


def _class_column(cells: pd.Series, path: Path, field: str, abstain: tuple[str, ...] | None) -> np.ndarray:
    """A column of classes, as int64 indices when every cell is a number (then each must be an
    integer), else as names (strings). ``abstain``: the cells that mean "abstained" (-1 among
    indices, "" among names); None: every cell must name a class (labels)."""
    text = cells.astype(object).where(cells.notna(), "").astype(str).str.strip().to_numpy()
    if abstain is None:
        empty = np.flatnonzero(text == "")
        if empty.size:
            raise InputError(f"empty cells in {row_locations(empty, path)}; every sample needs a label", path=path, field=field)
        abstained = np.zeros(text.shape, dtype=bool)
    else:
        abstained = np.isin(text, list(abstain))
    numbers = pd.to_numeric(pd.Series(text[~abstained]), errors="coerce").to_numpy(dtype=np.float64)
    if not np.isnan(numbers).any():
        bad = np.flatnonzero(~np.isfinite(numbers) | (numbers != np.round(numbers)))
        if bad.size:
            rows = np.flatnonzero(~abstained)[bad]
            raise InputError(
                f"expected integer class indices (or class names), found other numbers in {row_locations(rows, path)} "
                f"(e.g. {text[rows[0]]!r})",
                path=path,
                field=field,
            )
        out = np.full(text.shape, ABSTAINED, dtype=np.int64)
        out[~abstained] = numbers.astype(np.int64)
        return out
    return np.where(abstained, "", text).astype(str)


def _optional_labels(labels: Any, n: int, path: Path, field: str) -> np.ndarray | None:
    if labels is None:
        return None
    if isinstance(labels, pd.Series) or np.asarray(labels).dtype.kind in "USO":
        column = _class_column(pd.Series(np.asarray(labels)), path, field, None)
    else:
        column = _integer_column(labels, path, field)
    if column.shape != (n,):
        raise InputError(f"expected {n} labels, one per row, got shape {column.shape}", path=path, field=field)
    return column


def _npy_shape(path: Path) -> tuple[int, ...]:
    try:
        return tuple(np.load(path, mmap_mode="r", allow_pickle=False).shape)
    except Exception as exc:  # numpy raises several types for a file that is not .npy
        raise InputError(f"not a readable .npy array ({exc})", path=path) from None


def _read_npy(path: Path, requested: ScoreKind | None) -> UserOutputs:
    try:
        values = np.load(path, allow_pickle=False)
    except Exception as exc:  # numpy raises several types for a file that is not .npy
        raise InputError(f"not a readable .npy array ({exc})", path=path) from None
    if values.ndim == 1:  # cleanlab's predicted labels
        predictions = _integer_column(values, path, PREDICTIONS)
        read_as = ScoreKindDecision.hard_predictions("one class index per row")
        return UserOutputs("predictions", predictions, None, None, "npy", str(path), read_as)
    scores, read_as = _scores_as_decided(check_score_matrix(values, field="scores", path=path, min_classes=2), path, requested)
    return UserOutputs(read_as.kind, scores, None, None, "npy", str(path), read_as)


# ------------------------------------------------------------------------------------- timm


def _timm_json_frame(path: Path) -> pd.DataFrame:
    """The rows of timm's ``json`` (``orient='index'``: filename -> row) or ``json-split``
    (``{"columns", "data"}``) output as a frame with a ``filename`` column."""
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path=path) from None
    if isinstance(document, dict) and set(document) >= {"columns", "data"}:
        return pd.DataFrame(document["data"], columns=document["columns"])
    if isinstance(document, dict) and document and all(isinstance(row, dict) for row in document.values()):
        frame = pd.DataFrame.from_dict(document, orient="index")
        frame.index.name = _TIMM_ID
        return frame.reset_index()
    raise InputError(
        "holds no timm inference.py outputs (an object filename -> {index, logit | prob}, or json-split's "
        f"{{columns, data}}); {_FORMATS_MESSAGE}",
        path=path,
    )


def _numbered(columns: list[str], prefix: str) -> list[str]:
    """``prefix_0, prefix_1, ...`` among ``columns``, in number order (they must run from 0)."""
    found = sorted((int(m.group(1)), c) for c in columns if (m := re.fullmatch(rf"{prefix}_(\d+)", c)))
    return [c for _, c in found] if [i for i, _ in found] == list(range(len(found))) else []


def _timm_block(frame: pd.DataFrame, prefix: str, path: Path) -> np.ndarray | None:
    """A timm column group as an (N, k) array: ``prefix_0..`` (separate columns) or ``prefix``
    (list-valued, or one value per row for top-1); None when absent."""
    columns = [str(c) for c in frame.columns]
    separate = _numbered(columns, prefix)
    if separate:
        return _numbers(frame, separate, path)
    if prefix not in columns:
        return None
    cells = frame[prefix].to_numpy()
    try:
        rows = [np.atleast_1d(np.asarray(cell, dtype=np.float64)) for cell in cells]
        lengths = {row.shape for row in rows}
        if len(lengths) != 1 or len(next(iter(lengths))) != 1:
            raise ValueError(f"rows of {sorted(len(r) for r in rows)[:: max(1, len(rows) - 1)]} entries")
        block = np.stack(rows)
    except (ValueError, TypeError) as exc:
        raise InputError(f"expected numbers, the same count in every row ({exc})", path=path, field=prefix) from None
    return block


def _read_timm(frame: pd.DataFrame, path: Path, fmt: str, requested: ScoreKind | None) -> UserOutputs:
    """timm ``inference.py``'s outputs: ids from ``filename``; the classes of ``index`` (with
    ``--include-index``) and the scores of ``logit`` or ``prob``."""
    columns = [str(c) for c in frame.columns]
    if frame.empty:
        raise InputError("has no rows", path=path)
    sample_ids = _id_column(frame[_TIMM_ID].astype(object).where(frame[_TIMM_ID].notna()), path, _TIMM_ID)
    present = {prefix: kind for prefix, kind in _TIMM_OUTPUTS.items() if prefix in columns or _numbered(columns, prefix)}
    if len(present) != 1:
        raise InputError(
            f"expected the scores of timm inference.py in one column group, 'logit' or 'prob' (its --output-type); "
            f"found the columns {columns}",
            path=path,
            field="logit" if not present else "logit / prob",
        )
    prefix, kind = next(iter(present.items()))
    scores = _timm_block(frame, prefix, path)
    assert scores is not None
    indices = _timm_block(frame, _TIMM_INDEX, path)
    if indices is None:
        if _TIMM_LABEL in columns or _numbered(columns, _TIMM_LABEL):
            raise InputError(
                f"holds the top-k scores without their classes: run timm's inference.py with --include-index "
                f"(or --topk 0 for the scores of every class); found the columns {columns}",
                path=path,
                field=_TIMM_INDEX,
            )
        scores, read_as = _scores_as_decided(scores, path, requested, stated=(kind, f"its '{prefix}' columns"))
        return UserOutputs(kind, scores, sample_ids, None, fmt, str(path), read_as)
    if indices.shape != scores.shape:
        raise InputError(
            f"expected as many classes as scores per row, got {indices.shape[1]} and {scores.shape[1]}", path=path, field=prefix
        )
    bad = np.flatnonzero((~np.isfinite(indices) | (indices != np.round(indices)) | (indices < 0)).any(axis=1))
    if bad.size:
        raise InputError(
            f"expected class indices, found other values in {row_locations(bad, path)}", path=path, field=f"{_TIMM_INDEX}*"
        )
    classes = indices.astype(np.int64)
    k = classes.shape[1]
    if k > 1 and bool((np.sort(classes, axis=1) == np.arange(k)).all()):  # every row ranks all k classes
        full = np.empty(scores.shape, dtype=np.float64)
        np.put_along_axis(full, classes, scores, axis=1)
        full, read_as = _scores_as_decided(full, path, requested, stated=(kind, f"its '{prefix}' columns"))
        return UserOutputs(kind, full, sample_ids, None, fmt, str(path), read_as)
    read_as = ScoreKindDecision.hard_predictions(f"the top {k} classes of each row, its '{_TIMM_INDEX}' columns")
    return UserOutputs("predictions", classes if k > 1 else classes[:, 0], sample_ids, None, fmt, str(path), read_as)


# ---------------------------------------------------------------------------------- matching


def _examples(ids: np.ndarray) -> str:
    return repr([str(i) for i in ids[:_MAX_IDS_IN_MESSAGE]])


def _indices_of_names(
    names: np.ndarray, class_names: np.ndarray | None, path: str | Path, field: str, where: str, sample_ids: np.ndarray | None
) -> np.ndarray:
    """Class names (strings; "" = abstained) as int64 indices into ``class_names`` (-1 for "");
    :class:`InputError` naming the rows (and their ids) of a name that is no class."""
    if class_names is None:
        raise InputError(
            f"gives classes by name, but no class names are known to map them to indices (classwise metrics: --classes "
            f"NAMES.txt); e.g. {str(next((n for n in names if n), ''))!r}",
            path=path,
            field=field,
        )
    known = pd.Index(np.asarray(class_names).astype(str))
    if not known.is_unique:
        repeated = known[known.duplicated()].unique().tolist()[:_MAX_IDS_IN_MESSAGE]
        raise InputError(f"the class names of {where} repeat {repeated}: names cannot be mapped", path=path, field=field)
    positions = known.get_indexer(names).astype(np.int64)
    unknown = np.flatnonzero((positions < 0) & (names != ""))
    if unknown.size:
        ids = "" if sample_ids is None else f" (sample ids {_examples(sample_ids[unknown])})"
        raise InputError(
            f"{str(names[unknown[0]])!r} is no class of {where}: unknown classes in {row_locations(unknown, path)}{ids}; "
            f"the classes are {known[:_MAX_IDS_IN_MESSAGE].tolist()}{' ...' if len(known) > _MAX_IDS_IN_MESSAGE else ''}",
            path=path,
            field=field,
        )
    positions[names == ""] = ABSTAINED
    return positions


def _as_indices(
    column: np.ndarray, class_names: np.ndarray | None, path: str | Path, field: str, where: str, sample_ids: np.ndarray | None
) -> np.ndarray:
    if column.dtype.kind in "US":
        return _indices_of_names(column, class_names, path, field, where, sample_ids)
    return column


def align(
    outputs: UserOutputs,
    *,
    sample_ids: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    dataset: str,
    class_names: np.ndarray | None = None,
    reference: str | None = None,
    classes_from: str | None = None,
) -> UserOutputs:
    """``outputs`` in the order of the dataset's ``sample_ids``, checked against its ``labels``
    and class count: exactly the dataset's samples (:class:`InputError` naming the missing and
    the extra ids; a file without ids, an ``.npy``, holds them in order), class names mapped
    through ``class_names``, the same labels where the file gives them, one score column per
    class, or predictions in ``[0, n_classes)`` (or abstained). ``reference`` names what the
    file is matched to in messages (default: ``dataset '<dataset>'``), ``classes_from`` where
    the classes come from (default: the same)."""
    path = outputs.path
    where = reference or f"dataset {dataset!r}"
    classes = classes_from or where
    ids = np.asarray(sample_ids).astype(str)
    if outputs.sample_ids is None:
        if outputs.n_rows != ids.size:
            raise InputError(
                f"has {outputs.n_rows} rows, {where} has {ids.size} samples (a file without sample ids holds one row per "
                "sample, in the samples' order)",
                path=path,
                field=outputs.value_field,
            )
        positions = np.arange(ids.size)
    else:
        positions = _match_ids(outputs.sample_ids, ids, path, where)
    file_ids = outputs.sample_ids
    values = outputs.values
    if outputs.kind == PREDICTIONS:
        # checked in the file's row order, so that the messages give the file's rows
        row_ids = file_ids if file_ids is not None else ids
        values = _as_indices(values, class_names, path, outputs.value_field, classes, file_ids)
        if values.ndim == 1:
            bad = np.flatnonzero(((values < 0) & (values != ABSTAINED)) | (values >= n_classes))
            if bad.size:
                raise InputError(
                    f"predicted classes must lie in [0, {n_classes}) ({classes} has {n_classes} classes; -1: abstained); "
                    f"{bad.size} do not, e.g. {int(values[bad[0]])} in {row_locations(bad, path)} (sample ids "
                    f"{_examples(row_ids[bad])})",
                    path=path,
                    field=outputs.value_field,
                )
        else:
            _check_ranked_classes(values, n_classes, path, classes, row_ids, outputs.value_field)
        values = check_predictions(values, n_classes, path=path, field=outputs.value_field)[positions]
    else:
        _check_columns(values.shape[1], n_classes, path, classes, outputs)
        values = values[positions]
    given = None
    if outputs.labels is not None:
        given = _as_indices(outputs.labels, class_names, path, outputs.label_field, classes, file_ids)[positions]
        differ = np.flatnonzero(given != np.asarray(labels))
        if differ.size:
            raise InputError(
                f"labels differ from those of {where} on {differ.size} of {given.size} samples, e.g. sample ids "
                f"{_examples(ids[differ])} (a file of another split, or another class order?)",
                path=path,
                field=outputs.label_field,
            )
    return UserOutputs(outputs.kind, values, ids, given, outputs.format, path, outputs.read_as)


def _check_ranked_classes(values: np.ndarray, n_classes: int, path: str, where: str, ids: np.ndarray, field: str) -> None:
    """Top-k classes (timm's ``index``) of a file of as many classes as ``where``."""
    if values.shape[1] >= n_classes:
        raise InputError(
            f"ranks {values.shape[1]} classes per sample, but {where} has {n_classes} classes, and its rows do not rank "
            f"every class (a file of another class count?)",
            path=path,
            field=field,
        )
    bad = np.flatnonzero((values >= n_classes).any(axis=1))
    if bad.size:
        raise InputError(
            f"names class {int(values[bad[0]].max())}, but {where} has {n_classes} classes (a file of another class count?); "
            f"{bad.size} rows do: {row_locations(bad, path)}, sample ids {_examples(ids[bad])}",
            path=path,
            field=field,
        )


def _match_ids(file_ids: np.ndarray, sample_ids: np.ndarray, path: str | Path, where: str) -> np.ndarray:
    """Where each of the dataset's ``sample_ids`` sits among the file's rows: exactly the
    dataset's samples, no id twice (:class:`InputError` naming the first missing, extra or
    repeated ids, and the rows of the extra ones)."""
    try:
        return _positions(file_ids, sample_ids, path, where)
    except InputError as error:
        extra = np.flatnonzero(~pd.Index(np.asarray(file_ids).astype(str)).isin(np.asarray(sample_ids).astype(str)))
        if extra.size == 0 or "name no sample" not in str(error):
            raise
        raise InputError(f"{error.message} ({row_locations(extra, path)})", path=error.path, field=error.field) from None


def _positions(file_ids: np.ndarray, sample_ids: np.ndarray, path: str | Path, where: str) -> np.ndarray:
    return sample_id_positions(
        sample_ids,
        file_ids,
        path=path,
        field="sample_id" if not str(path).endswith((".json", ".parquet")) else _TIMM_ID,
        available_name="this file",
        exact=True,
        wanted_name=where,
        missing=f"{{count}} of the {{total}} samples of {where} have no row in this file",
        extra=f"{{count}} row(s) of this file name no sample of {where}",
    )


def _check_columns(columns: int, n_classes: int, path: str | Path, where: str, outputs: UserOutputs | None) -> None:
    """One score column per class of the dataset."""
    if columns != n_classes:
        timm = outputs is not None and outputs.format.startswith("timm")
        raise InputError(
            f"has {columns} score columns, {where} has {n_classes} classes (one score per class, in "
            f"class-index order{'; a timm file of another class count?' if timm else ''})",
            path=path,
            field=outputs.value_field if outputs is not None else _SCORE_PREFIX + "*",
        )


def check_outputs_file(
    path: str | Path,
    *,
    dataset: str,
    n_classes: int | None,
    sample_ids: np.ndarray | None,
    where: str | None = None,
    class_names: np.ndarray | None = None,
    abstain: str | None = None,
) -> None:
    """Check a user's outputs file against dataset ``dataset`` before any job, reading its header
    and its ids but not its values where the format allows (an ``.npz``, a CSV, an ``.npy``;
    a timm JSON or Parquet file is read whole): one score column per class (``n_classes``), and,
    where the samples' ``sample_ids`` are known, a row for each sample and for nothing else, no
    id twice (:class:`InputError` naming the file, the field and the first ids and rows). None
    skips that check. ``where`` names the samples in messages (default ``dataset '<dataset>'``;
    a shift's own samples: ``shift 's' of dataset 'd'``). A CSV of hard predictions is read
    whole: its predicted classes (and labels) must be classes of the dataset, by index in
    ``[0, n_classes)`` or by one of its ``class_names`` (where known; ``abstain``: the model's
    token for an abstention, beside an empty cell and ``-1``). A plain read decides whether a
    file is sound (the plan reads thousands); only a file that is not is read again for the
    message. The import job checks all of it again, and the rest: labels, values, classes."""
    p = _existing(path)
    where = where or f"dataset {dataset!r}"
    fmt = _format_of(p)
    file_ids: np.ndarray | None = None
    if fmt == "npz":
        kind = stored_kind(p)
        shapes = stored_shapes(p)
        shape = shapes.get(kind)
        if kind != PREDICTIONS and n_classes is not None and shape is not None and len(shape) == 2:
            _check_columns(shape[1], n_classes, p, where, UserOutputs(kind, np.empty(0), None, None, "npz", str(p)))
        if sample_ids is not None:
            if "sample_ids" not in shapes:
                raise InputError(
                    f"missing array 'sample_ids', needed to match the rows to the dataset's samples; found {sorted(shapes)}",
                    path=p,
                    field="sample_ids",
                )
            with np.load(p, allow_pickle=False) as archive:  # that array alone is read
                file_ids = archive["sample_ids"].astype(str)
    elif fmt == "npy":
        shape = _npy_shape(p)
        if len(shape) == 2 and n_classes is not None:
            _check_columns(shape[1], n_classes, p, where, None)
        if sample_ids is not None and shape[0] != len(sample_ids):
            raise InputError(
                f"has {shape[0]} rows, {where} has {len(sample_ids)} samples (an .npy holds one row per sample, in the "
                "dataset's order)",
                path=p,
                field="rows",
            )
    elif fmt == "csv" and _TIMM_ID not in (columns := _csv_header(p)):
        _csv_columns(columns, p)
        if _PREDICTION not in columns and n_classes is not None:
            _check_columns(len(_score_columns(columns, p)), n_classes, p, where, None)
        if _PREDICTION in columns and (n_classes is not None or class_names is not None):
            file_ids = _sound_prediction_csv(p, n_classes, class_names, abstain)
            if file_ids is None:  # read it again, for the message
                outputs = read_outputs(p, abstain=abstain)
                _check_predicted_classes(outputs, n_classes, class_names, where)
                file_ids = outputs.sample_ids
        elif sample_ids is not None:
            file_ids = _csv_ids(p, "sample_id")
    else:  # timm's outputs: whether they rank every class is in their values
        outputs = read_outputs(p)
        if n_classes is not None:
            if outputs.kind == PREDICTIONS and outputs.values.ndim == 2:
                rows = outputs.sample_ids if outputs.sample_ids is not None else np.arange(outputs.n_rows).astype(str)
                _check_ranked_classes(outputs.values, n_classes, str(p), where, rows, outputs.value_field)
            elif outputs.kind == PREDICTIONS:
                _check_predicted_classes(outputs, n_classes, class_names, where)
            elif outputs.kind != PREDICTIONS:
                _check_columns(outputs.values.shape[1], n_classes, p, where, outputs)
        file_ids = outputs.sample_ids
    if file_ids is not None and sample_ids is not None and not _same_ids(file_ids, sample_ids):
        _match_ids(file_ids, sample_ids, p, where)


def _same_ids(file_ids: np.ndarray, sample_ids: np.ndarray) -> bool:
    """Whether a file's ids are the samples' ids, each once, in any order."""
    ours, theirs = np.sort(np.asarray(file_ids).astype(str)), np.sort(np.asarray(sample_ids).astype(str))
    return ours.shape == theirs.shape and bool((ours == theirs).all()) and bool((ours[1:] != ours[:-1]).all())


def _sound_prediction_csv(
    path: Path, n_classes: int | None, class_names: np.ndarray | None, abstain: str | None
) -> np.ndarray | None:
    """The ids of a CSV of hard predictions whose every row gives an id and whose predicted
    classes (and labels) are classes of the dataset or abstentions; None where any is not (or
    the file is not plain), for the slower read that names the rows."""
    try:
        with _open_text(path) as handle:
            rows = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error, EOFError):
        return None
    if len(rows) < 2 or any(len(row) != len(rows[0]) for row in rows):
        return None
    header, body = rows[0], np.asarray(rows[1:], dtype=str)
    ids = body[:, header.index("sample_id")]
    if (ids == "").any():
        return None
    known = None if class_names is None else np.asarray(class_names).astype(str)
    abstained = [*_ABSTAIN_CELLS, *(() if abstain is None else (str(abstain),))]
    for column in [c for c in (_PREDICTION, "label") if c in header]:
        cells = body[:, header.index(column)]
        cells = cells[~np.isin(cells, abstained)] if column == _PREDICTION else cells
        digits = np.char.isdigit(cells)
        if not digits.all() and (known is None or not np.isin(cells[~digits], known).all()):
            return None
        if digits.any() and n_classes is not None and (cells[digits].astype(np.int64) >= n_classes).any():
            return None
    return ids


def _check_predicted_classes(outputs: UserOutputs, n_classes: int | None, class_names: np.ndarray | None, where: str) -> None:
    """The classes a file of hard predictions names (and its labels) are the dataset's: names
    among ``class_names`` (where known), indices in ``[0, n_classes)``; the error names the
    first rows and their sample ids."""
    ids = outputs.sample_ids
    for column, field in ((outputs.values, outputs.value_field), (outputs.labels, outputs.label_field)):
        if column is None:
            continue
        if column.dtype.kind in "US":
            if class_names is not None:
                _indices_of_names(column, class_names, outputs.path, field, where, ids)
            continue
        if n_classes is None:
            continue
        bad = np.flatnonzero(((column < 0) & (column != ABSTAINED)) | (column >= n_classes))
        if bad.size:
            shown = "" if ids is None else f" (sample ids {_examples(ids[bad])})"
            raise InputError(
                f"names class {int(column[bad[0]])}, but {where} has {n_classes} classes (indices 0 to {n_classes - 1}; -1: "
                f"abstained): {row_locations(bad, outputs.path)}{shown} (a file of another class count?)",
                path=outputs.path,
                field=field,
            )


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
    abstain: str | None = None,
    class_subset: np.ndarray | None = None,
) -> OutputKind:
    """Read the user's file, match it to the dataset (its ``sample_ids``, ``labels`` and
    ``class_names``, named ``dataset`` in errors) and write it as the cached outputs
    ``cache_path`` (:func:`~classwise.logits_io.save_scores` or
    :func:`~classwise.logits_io.save_predictions`), with ``metadata`` plus the file's format,
    kind and sha256 in the sidecar. ``abstain``: the prediction cell that means "abstained"
    (beside an empty cell and ``-1``). ``class_subset``: the base class indices a shift set
    restricted to a class subset keeps (ImageNet-A, -R): the file still gives the dataset's
    classes, and the cache keeps the subset's columns, as inference does
    (:mod:`classwise.class_subsets`). Returns what the file held."""
    class_names = np.asarray(class_names).astype(str)
    aligned = align(
        read_outputs(path, abstain=abstain),
        sample_ids=sample_ids,
        labels=labels,
        n_classes=class_names.shape[0],
        dataset=dataset,
        class_names=class_names,
    )
    record = {
        **dict(metadata),
        "outputs": {"file": str(path), "sha256": sha256_of(path), "format": aligned.format, "kind": aligned.kind},
    }
    values, labels = aligned.values, np.asarray(labels)
    if class_subset is not None:
        class_subset = np.asarray(class_subset, dtype=np.int64)
        values, labels = _restricted(aligned, labels, class_subset, class_names.shape[0], dataset)
        record["class_subset"] = {"class_indices": class_subset.tolist(), "of": int(class_names.shape[0])}
        class_names = class_names[class_subset]
    if aligned.kind == PREDICTIONS:
        save_predictions(
            cache_path,
            predictions=values,
            labels=labels,
            sample_ids=np.asarray(aligned.sample_ids),
            class_names=class_names,
            metadata=record,
            class_indices=class_subset,
        )
    else:
        save_scores(
            cache_path,
            scores=values,
            kind=aligned.kind,  # type: ignore[arg-type]
            labels=labels,
            sample_ids=np.asarray(aligned.sample_ids),
            class_names=class_names,
            metadata=record,
            class_indices=class_subset,
        )
    return aligned.kind


def _restricted(
    aligned: UserOutputs, labels: np.ndarray, subset: np.ndarray, n_classes: int, dataset: str
) -> tuple[np.ndarray, np.ndarray]:
    """Scores kept to a class subset's columns, hard predictions renumbered into it (an
    abstention stays one; a class outside the subset is an error naming the first sample ids),
    and the labels renumbered (:func:`~classwise.class_subsets.restrict_to_classes`)."""
    from classwise.class_subsets import restrict_to_classes

    if aligned.kind == "logits":
        return restrict_to_classes(aligned.values, labels, subset)
    if aligned.kind == "probs":  # the softmax of the subset's logits: its probabilities renormalised
        probs, renumbered = restrict_to_classes(aligned.values, labels, subset)
        mass = probs.sum(axis=1, keepdims=True)
        empty = np.flatnonzero(mass[:, 0] <= 0)
        if empty.size:
            raise InputError(
                f"{dataset} keeps {subset.size} of the dataset's {n_classes} classes, and {empty.size} rows give them no "
                f"probability, e.g. for sample ids {_examples(np.asarray(aligned.sample_ids)[empty])}",
                path=aligned.path,
                field="probs",
            )
        return probs / mass, renumbered
    position = np.full(n_classes, -1, dtype=np.int64)
    position[subset] = np.arange(subset.size)
    values = aligned.values
    abstained = values == ABSTAINED
    renumbered_values = np.where(abstained, ABSTAINED, position[np.where(abstained, 0, values)])
    outside = np.flatnonzero(((renumbered_values < 0) & ~abstained).reshape(values.shape[0], -1).any(axis=1))
    if outside.size:
        raise InputError(
            f"{dataset} keeps {subset.size} of the dataset's {n_classes} classes, and {outside.size} predictions name "
            f"another class, e.g. for sample ids {_examples(np.asarray(aligned.sample_ids)[outside])}",
            path=aligned.path,
            field="prediction",
        )
    _, renumbered_labels = restrict_to_classes(np.zeros((labels.shape[0], n_classes), dtype=np.float32), labels, subset)
    return renumbered_values, renumbered_labels


# ------------------------------------------------------------------- outside the pipeline


@dataclass(frozen=True, eq=False)
class Reference:
    """The labels a user's files are evaluated against outside the pipeline (``classwise
    metrics --labels``): ids (None: a file without ids, whose rows are the samples in order),
    int64 labels or names (strings), and the file they came from."""

    sample_ids: np.ndarray | None
    labels: np.ndarray
    path: str


def read_reference(path: str | Path) -> Reference:
    """A file of labels: a CSV ``sample_id,label`` (class indices or names) or an ``.npy`` of
    N class indices in the samples' order (cleanlab's ``original_test_labels``)."""
    p = _existing(path)
    if p.name.lower().endswith(".npy"):
        try:
            labels = np.load(p, allow_pickle=False)
        except Exception as exc:  # numpy raises several types for a file that is not .npy
            raise InputError(f"not a readable .npy array ({exc})", path=p) from None
        return Reference(None, _integer_column(labels, p, "labels"), str(p))
    frame = _read_csv(p, dtype={"sample_id": str, "label": str})
    if not {"sample_id", "label"} <= set(frame.columns) or frame.empty:
        raise InputError(f"expected a CSV sample_id,label with rows; found the columns {list(frame.columns)}", path=p)
    ids = _id_column(frame["sample_id"], p, "sample_id")
    sample_id_positions(ids, ids, path=p, available_name="this file")  # refuses a repeated id, naming this file
    return Reference(ids, _class_column(frame["label"], p, "label", None), str(p))


def read_class_names(spec: str) -> tuple[int, np.ndarray | None]:
    """``classwise metrics --classes``: a number of classes, or a text file of class names, one
    per line in class-index order (blank lines ignored). Returns the count and the names."""
    if spec.strip().isdigit():
        count = int(spec)
        if count < 2:
            raise InputError(f"expected at least 2 classes, got {count}", field="classes")
        return count, None
    p = _existing(spec)
    try:
        names = [line.strip() for line in p.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable text file of class names ({exc})", path=p) from None
    if len(names) < 2 or len(set(names)) != len(names):
        raise InputError(f"expected at least 2 distinct class names, one per line; got {len(names)}", path=p, field="classes")
    return len(names), np.asarray(names)


def load_for_metrics(
    path: str | Path,
    *,
    reference: Reference | None = None,
    n_classes: int | None = None,
    class_names: np.ndarray | None = None,
    abstain: str | None = None,
    match_by_row: bool = False,
    kind: ScoreKind | None = None,
) -> ScoresFile:
    """Any user file of outputs (:data:`FORMATS`) as the :class:`~classwise.logits_io.ScoresFile`
    the metrics read (hard predictions encoded by rank, abstentions flagged): labels from the file
    or from ``reference`` (a file without labels needs one; with both, they must agree). The file
    and ``reference`` are paired by sample id where both have ids, by row where neither has; where
    only one side has ids, only with ``match_by_row`` (the user says that both are in the same
    order), else :class:`InputError`. The number of classes is ``n_classes``
    (or ``len(class_names)``), else the file's score columns, else the largest class index in its
    labels and predictions + 1; class names map names to indices. ``kind``: what the user says
    the scores are (:func:`read_outputs`); the result's ``read_as`` says what they were read as
    and why. A logits-format ``.npz`` with its labels and no ``reference`` is read as
    :func:`~classwise.logits_io.load_outputs` reads it."""
    p = _existing(path)
    if class_names is not None:
        n_classes = len(class_names)
    fmt = _format_of(p)
    if fmt == "npz" and reference is None and abstain is None:
        loaded = load_outputs(p, kind=kind)
        if n_classes is not None and n_classes != loaded.n_classes:
            raise InputError(f"has {loaded.n_classes} classes, expected {n_classes} (--classes)", path=p)
        return loaded if class_names is None else replace(loaded, class_names=np.asarray(class_names).astype(str))
    outputs = read_outputs(p, abstain=abstain, kind=kind)
    classes_from = _classes_from(class_names, n_classes)
    if reference is not None:
        labels = _as_indices(reference.labels, class_names, reference.path, "label", classes_from, reference.sample_ids)
        if reference.sample_ids is not None and outputs.sample_ids is not None:
            ids = reference.sample_ids
        else:
            _check_pairing_by_row(outputs, reference, labels.size, match_by_row)
            given = [i for i in (reference.sample_ids, outputs.sample_ids) if i is not None]
            ids = given[0] if given else np.arange(labels.size).astype(str)
            outputs = replace(outputs, sample_ids=None)  # paired by row
        where = f"the labels file {reference.path!r}"
    elif outputs.labels is not None:
        labels = _as_indices(outputs.labels, class_names, p, outputs.label_field, classes_from, outputs.sample_ids)
        ids = outputs.sample_ids if outputs.sample_ids is not None else np.arange(labels.size).astype(str)
        where = "this file"
    else:
        raise InputError(
            "gives no labels: add a 'label' column (an .npz: a 'labels' array), or give the labels with --labels",
            path=p,
            field="label",
        )
    if n_classes is None:
        n_classes = _inferred_class_count(outputs, labels, p)
    try:
        check_labels(labels, labels.size, n_classes, path=reference.path if reference else p)
    except InputError as error:
        if reference is None:
            raise
        # the labels file is read once for every file: say which file's classes it exceeds
        counted = f"{p} has {n_classes} classes" if classes_from == "this file" else f"--classes gives {n_classes}"
        raise InputError(f"{error.message} ({counted})", path=error.path, field=error.field) from None
    aligned = align(
        outputs,
        sample_ids=ids,
        labels=labels,
        n_classes=n_classes,
        dataset="",
        class_names=class_names,
        reference=where,
        classes_from=classes_from,
    )
    names = np.asarray(class_names).astype(str) if class_names is not None else np.arange(n_classes).astype(str)
    if aligned.kind == PREDICTIONS:
        scores, abstained = ranked_scores(aligned.values, n_classes)
        top_k = 1 if aligned.values.ndim == 1 else int(aligned.values.shape[1])
        return ScoresFile(
            scores, labels, "logits", np.asarray(aligned.sample_ids), names, path=str(p), hard_predictions=True, top_k=top_k,
            abstained=abstained, read_as=aligned.read_as,
        )  # fmt: skip
    read_kind: ScoreKind = "probs" if aligned.kind == "probs" else "logits"
    return ScoresFile(
        aligned.values, labels, read_kind, np.asarray(aligned.sample_ids), names, path=str(p), read_as=aligned.read_as
    )


def _classes_from(class_names: np.ndarray | None, n_classes: int | None) -> str:
    """Where ``classwise metrics`` takes a file's classes from, for messages."""
    if class_names is not None:
        return "the class names (--classes)"
    return "this file" if n_classes is None else "--classes"


def _check_pairing_by_row(outputs: UserOutputs, reference: Reference, n_labels: int, match_by_row: bool) -> None:
    """A file and a labels file of which one has no sample ids are paired by row: refused where
    the other has ids, unless the user says (``match_by_row``) that both are in the same order;
    then (and where neither has ids) they must have as many rows."""
    if outputs.sample_ids is None and reference.sample_ids is not None and not match_by_row:
        raise InputError(
            f"has no sample ids, and the labels file {reference.path} gives its labels by sample id: paired by row, "
            "they would be right only if both list the samples in the same order. If they do, say so with "
            "--match-by-row; else give the labels in this file's row order (an .npy)",
            path=outputs.path,
            field="sample_id",
        )
    if outputs.sample_ids is not None and reference.sample_ids is None and not match_by_row:
        raise InputError(
            f"gives sample ids, and the labels file {reference.path} has none (one label per row): paired by row, they "
            "would be right only if both list the samples in the same order. If they do, say so with --match-by-row; "
            "else give the labels by sample id (a CSV sample_id,label)",
            path=outputs.path,
            field="sample_id",
        )
    if outputs.n_rows != n_labels:
        raise InputError(
            f"has {outputs.n_rows} rows, the labels file {reference.path} has {n_labels} labels (paired by row: one "
            "label per row, in the same order)",
            path=outputs.path,
            field=outputs.value_field,
        )


def _inferred_class_count(outputs: UserOutputs, labels: np.ndarray, path: Path) -> int:
    """The class count of a file that does not state it: its score columns, else the largest
    class index among its labels and predictions + 1 (timm's top-k files need ``--classes``)."""
    if outputs.kind != PREDICTIONS:
        return int(outputs.values.shape[1])
    if outputs.values.ndim == 2:
        raise InputError(
            "holds the top-k classes of an unknown number of classes: give the count or the names with --classes",
            path=path,
            field=outputs.value_field,
        )
    if outputs.values.dtype.kind in "US":
        raise InputError(
            "gives classes by name: give the class names with --classes NAMES.txt", path=path, field=outputs.value_field
        )
    return int(max(labels.max(initial=0), outputs.values.max(initial=0))) + 1
