"""The cached-logits format shared by the workflow and ``classwise metrics``.

One inference job writes ``results/logits/{dataset}/{model}/{shift}.npz`` and a sidecar
``{shift}.json``. The ``.npz`` holds:

=============  ==========================  ============================================
array          dtype / shape               meaning
=============  ==========================  ============================================
``logits``     float32, (N, C)             raw model outputs (pre-softmax scores)
``labels``     int64, (N,)                 ground-truth class index in ``[0, C)``
``sample_ids`` unicode, (N,)               stable id of each evaluation sample
``class_names`` unicode, (C,)              human-readable class names, in index order
=============  ==========================  ============================================

A shift restricted to a class subset (ImageNet-R, ImageNet-A: :mod:`classwise.class_subsets`)
adds ``class_indices`` (int64, (C,)): the base dataset's class index of each column.

A user-supplied file for ``classwise metrics`` needs only ``labels`` and either ``logits``
(any float dtype) or ``probs`` (rows on the simplex); ``sample_ids`` and ``class_names``
are optional. The sidecar JSON records the model, the resolved preprocessing, the shift
parameters and the code version.

The outputs of a model the pipeline did not run (``source: predictions``) are cached in the
same place and format: ``probs`` instead of ``logits`` when the user gave probabilities (float64
kept as given), or, when the user has only hard predictions, ``predictions`` and no score matrix
at all: int64, (N,) the predicted class index, or (N, k) the k top-ranked classes, best first
(timm's top-k outputs); ``-1`` (the whole row) where the model abstained.
:func:`load_scores` refuses such a file with an error saying that it holds hard predictions
only, so no reader that needs scores can misread it; :func:`load_outputs` reads it for the
metrics that need only the predicted class (or the top-k set), encoded by rank
(:func:`ranked_scores`) with the abstentions flagged.

Files are written deterministically (fixed zip timestamps, no pickles) and atomically,
so the same inputs give byte-identical files and an interrupted write leaves nothing.
"""

from __future__ import annotations

import dataclasses
import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from classwise.atomic import atomic_path, write_json
from classwise.errors import InputError
from classwise.validation import (
    PROB_ROW_TOLERANCE,
    ScoreKind,
    check_finite_rows,
    check_labels,
    check_probabilities,
    check_score_matrix,
    row_locations,
)

__all__ = [
    "ABSTAINED",
    "PREDICTIONS",
    "ROUNDED_PROB_TOLERANCE",
    "OutputKind",
    "ScoreKind",
    "ScoreKindDecision",
    "ScoresFile",
    "check_predictions",
    "decide_score_kind",
    "load_outputs",
    "load_sample_ids",
    "load_scores",
    "ranked_scores",
    "save_logits",
    "save_predictions",
    "save_scores",
    "sidecar_path",
    "stored_kind",
    "stored_shapes",
    "validate_scores",
    "write_npz_deterministic",
]

#: The array of a file of hard predictions (the predicted class index per sample).
PREDICTIONS = "predictions"
#: The prediction of a sample on which the model abstained (named no class).
ABSTAINED = -1
#: What a cached outputs file holds: a score matrix of either kind, or hard predictions only.
OutputKind = Literal["logits", "probs", "predictions"]

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)

#: Probabilities rounded in a file (to 2 decimals, say) sum to 1 within this, not within
#: PROB_ROW_TOLERANCE: such rows are read as logits, with a warning, unless the user says that
#: they are probabilities; then they are renormalised.
ROUNDED_PROB_TOLERANCE = 0.02

#: What each kind is called where outputs say how the scores were read.
_READ_AS: dict[str, str] = {"probs": "probabilities", "logits": "logits", PREDICTIONS: "hard predictions"}


@dataclass(frozen=True)
class ScoreKindDecision:
    """What a file's scores were read as, and why (:func:`decide_score_kind`): written into every
    output that depends on it (:meth:`to_json`)."""

    kind: OutputKind
    #: The reason, in words: "every row is non-negative and sums to 1 within 0.001", ...
    why: str
    #: Set when the scores are read as logits though they look like probabilities rounded in the
    #: file: what the user should know and can do (the caller shows it; None: nothing to say).
    warning: str | None = None
    #: Each row is divided by its sum (the user says probabilities, rounded ones).
    renormalise: bool = False

    @classmethod
    def hard_predictions(cls, where: str) -> ScoreKindDecision:
        """A file of hard predictions: no scores to read; ``where`` says what holds them."""
        return cls("predictions", f"the file holds hard predictions ({where}), no scores")

    def to_json(self) -> dict[str, str]:
        """``{"read_as": "probabilities" | "logits" | "hard predictions", "why": ...}``."""
        return {"read_as": _READ_AS[self.kind], "why": self.why}

    def applied(self, scores: np.ndarray) -> np.ndarray:
        """``scores`` as the decision reads them: renormalised rows where it says so."""
        return scores / scores.sum(axis=1, keepdims=True) if self.renormalise else scores


def decide_score_kind(
    scores: np.ndarray,
    *,
    path: str | Path | None = None,
    stated: tuple[ScoreKind, str] | None = None,
    requested: ScoreKind | None = None,
    how_to_say_probs: str = "--kind probs",
) -> ScoreKindDecision:
    """Whether the ``(N, C)`` ``scores`` of the file ``path`` are read as probabilities or as
    logits, and why: the one place that decides it.

    * ``stated``: the kind the file says it holds, and where it says so (``("logits", "its array
      'logits'")``): read as it says; a ``requested`` kind (the user's) that differs is an
      :class:`InputError`.
    * ``requested`` alone: read as asked. Probabilities must then be non-negative rows summing to
      1 within :data:`ROUNDED_PROB_TOLERANCE` (else :class:`InputError` naming the row); rows off
      by more than :data:`~classwise.validation.PROB_ROW_TOLERANCE` are renormalised.
    * Otherwise from the values, as always: probabilities when every row is non-negative and sums
      to 1 within ``PROB_ROW_TOLERANCE``, logits otherwise. Where every row is non-negative and
      sums to 1 within ``ROUNDED_PROB_TOLERANCE`` but one does not within ``PROB_ROW_TOLERANCE``
      (probabilities rounded in the file?), the decision carries a warning naming the farthest
      row, its sum and how to have them read as probabilities (``how_to_say_probs``).

    Rows that are not finite decide nothing (the readers refuse them with their own message)."""
    if stated is not None:
        kind, where = stated
        if requested is not None and requested != kind:
            raise InputError(
                f"the file says its scores are {kind!r} ({where}), but {requested!r} was asked for (a kind is asked "
                "for files that do not say theirs: a CSV of scores, an .npy)",
                path=path,
                field="kind",
            )
        return ScoreKindDecision(kind, f"the file says {kind} ({where})")
    if requested == "logits":
        return ScoreKindDecision("logits", "as asked (kind 'logits')")
    finite = np.isfinite(scores).all(axis=1)
    negative = np.asarray((scores < 0).any(axis=1))
    with np.errstate(invalid="ignore"):
        sums = scores.sum(axis=1, dtype=np.float64)
    off = np.where(finite, np.abs(sums - 1.0), 0.0)
    farthest = int(np.argmax(off))
    farthest_sum, at_farthest = f"{sums[farthest]:.6g}", row_locations([farthest], path)
    if requested == "probs":
        bad = np.flatnonzero(finite & (negative | (off > ROUNDED_PROB_TOLERANCE)))
        if bad.size:
            first = int(bad[0])
            what = f"holds a negative score ({scores[first].min():.6g})" if negative[first] else f"sums to {sums[first]:.6g}"
            raise InputError(
                f"asked to read the scores as probabilities, but {row_locations([first], path)} {what}: probabilities "
                f"are non-negative and, rounded in a file, sum to 1 within {ROUNDED_PROB_TOLERANCE:g} (off in "
                f"{row_locations(bad, path)})",
                path=path,
                field="kind",
            )
        renormalised = int((off > PROB_ROW_TOLERANCE).sum())
        if not renormalised:
            return ScoreKindDecision("probs", "as asked (kind 'probs')")
        why = (
            f"as asked (kind 'probs'); {renormalised} rows summing to 1 only within {ROUNDED_PROB_TOLERANCE:g} "
            f"renormalised (the farthest, {at_farthest}, summed to {farthest_sum})"
        )
        return ScoreKindDecision("probs", why, renormalise=True)
    if not finite.all():
        first = int(np.flatnonzero(~finite)[0])
        return ScoreKindDecision("logits", f"{row_locations([first], path)} holds NaN or infinite values")
    if negative.any():
        first = int(np.flatnonzero(negative)[0])
        return ScoreKindDecision(
            "logits", f"a score is negative ({row_locations([first], path)}: {scores[first].min():.6g}); probabilities are not"
        )
    if off[farthest] <= PROB_ROW_TOLERANCE:
        return ScoreKindDecision("probs", f"every row is non-negative and sums to 1 within {PROB_ROW_TOLERANCE:g}")
    why = f"a row sums to {farthest_sum} ({at_farthest}): outside the tolerance {PROB_ROW_TOLERANCE:g} of probabilities"
    if off[farthest] > ROUNDED_PROB_TOLERANCE:
        return ScoreKindDecision("logits", why)
    warning = (
        f"{'' if path is None else f'{path}: '}the scores are read as logits, but every row is non-negative and sums "
        f"to 1 within {ROUNDED_PROB_TOLERANCE:g}: probabilities rounded in the file? The farthest row, {at_farthest}, "
        f"sums to {farthest_sum}, outside the tolerance {PROB_ROW_TOLERANCE:g} of probabilities. If they are "
        f"probabilities, renormalise each row to sum to 1, or give {how_to_say_probs}"
    )
    return ScoreKindDecision("logits", why, warning=warning)


@dataclass(frozen=True)
class ScoresFile:
    """Scores of one model on one evaluation set, as read from an ``.npz`` file."""

    scores: np.ndarray
    labels: np.ndarray
    kind: ScoreKind
    sample_ids: np.ndarray
    class_names: np.ndarray
    path: str | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    #: The file holds hard predictions only (:func:`load_outputs`): ``scores`` is their encoding
    #: by rank (:func:`ranked_scores`; one-hot for one class per sample), whose argmax is the
    #: prediction, whose ranks say which classes are among the ``top_k`` and whose values mean
    #: nothing.
    hard_predictions: bool = False
    #: Hard predictions: how many top-ranked classes each sample names (1: its prediction alone).
    top_k: int = 1
    #: Hard predictions: ``(N,)`` bool, the samples on which the model abstained; None: none.
    abstained: np.ndarray | None = None
    #: What the file's scores were read as, and why (:func:`decide_score_kind`); None: not read
    #: from a file.
    read_as: ScoreKindDecision | None = None

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.scores.shape[1])

    @property
    def predictions(self) -> np.ndarray:
        """``(N,)`` int64 predicted class (the argmax; ties go to the lowest index), ``-1`` where
        the model abstained."""
        predicted = np.asarray(self.scores).argmax(axis=1).astype(np.int64)
        if self.abstained is not None:
            predicted[self.abstained] = ABSTAINED
        return predicted

    def rows(self, keep: np.ndarray) -> ScoresFile:
        """The file restricted to (or reordered as) the rows ``keep`` (indices or a mask)."""
        return dataclasses.replace(
            self,
            scores=self.scores[keep],
            labels=self.labels[keep],
            sample_ids=self.sample_ids[keep],
            abstained=None if self.abstained is None else self.abstained[keep],
        )


def check_predictions(values: object, n_classes: int, *, path: str | Path | None = None, field: str = PREDICTIONS) -> np.ndarray:
    """Hard predictions as int64: ``(N,)`` class indices, or ``(N, k)`` the ``k <= C`` top-ranked
    classes of each sample, best first, no class twice in a row; :data:`ABSTAINED` (the whole
    row) where the model abstained. Else :class:`InputError` naming the first bad rows."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    if arr.ndim not in (1, 2) or not arr.size:
        raise InputError(f"expected (N,) or (N, k) class indices, got shape {arr.shape}", path=path, field=field)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"expected integer class indices, got dtype {arr.dtype}", path=path, field=field)
    grid = arr.reshape(arr.shape[0], -1)
    k = grid.shape[1]
    if k > n_classes:
        raise InputError(f"ranks {k} classes per sample, but there are {n_classes} classes", path=path, field=field)
    abstained = grid[:, 0] == ABSTAINED
    bad = ((grid < 0) | (grid >= n_classes)) & ~abstained[:, None]
    bad |= (grid != ABSTAINED) & abstained[:, None]  # an abstention names no class at all
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size:
        first = int(rows[0])
        at = f"position {first}" if path is None else row_locations([first], path)  # an array's: its index
        raise InputError(
            f"predictions must lie in [0, {n_classes}): prediction {grid[first].tolist() if k > 1 else int(grid[first, 0])} "
            f"at {at} is out of range ({ABSTAINED} marks an abstention, the whole row); out of range: "
            f"{row_locations(rows, path)}",
            path=path,
            field=field,
        )
    if k > 1:
        ordered = np.sort(grid, axis=1)
        rows = np.flatnonzero(((ordered[:, 1:] == ordered[:, :-1]) & ~abstained[:, None]).any(axis=1))
        if rows.size:
            raise InputError(
                f"a class ranked twice in {row_locations(rows, path)} (e.g. {grid[rows[0]].tolist()})", path=path, field=field
            )
    return arr.astype(np.int64, copy=False)


def ranked_scores(predictions: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Hard predictions (:func:`check_predictions`) as the float32 ``(N, C)`` scores the metrics
    rank: the ``k`` named classes of a row score ``k, k - 1, ..., 1`` in their order, every other
    class 0 (one-hot for ``k = 1``); so the argmax is the prediction and the true class is among
    the top ``j <= k`` exactly when it is among the first ``j`` named. Also the ``(N,)`` bool
    mask of the abstentions (rows of zeros), None when there are none."""
    grid = predictions.reshape(predictions.shape[0], -1)
    n, k = grid.shape
    scores = np.zeros((n, n_classes), dtype=np.float32)
    abstained = grid[:, 0] == ABSTAINED
    answered = np.flatnonzero(~abstained)
    scores[answered[:, None], grid[answered]] = np.arange(k, 0, -1, dtype=np.float32)
    return scores, (abstained if abstained.any() else None)


def sidecar_path(npz_path: str | Path) -> Path:
    """The JSON metadata file that accompanies a logits ``.npz``."""
    return Path(npz_path).with_suffix(".json")


def write_npz_deterministic(path: str | Path, arrays: dict[str, np.ndarray]) -> None:
    """Write arrays as an uncompressed ``.npz`` whose bytes depend only on the arrays.

    ``numpy.savez`` stamps each member with the current time; fixed timestamps make two
    runs of the same config byte-identical.
    """
    with atomic_path(path) as tmp:
        _write_npz(tmp, arrays)


def _write_npz(file: Path, arrays: dict[str, np.ndarray]) -> None:
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_FIXED_ZIP_TIME)
            info.external_attr = 0o644 << 16
            archive.writestr(info, buffer.getvalue())


def save_logits(
    path: str | Path,
    *,
    logits: np.ndarray,
    labels: np.ndarray,
    sample_ids: np.ndarray,
    class_names: np.ndarray,
    metadata: dict[str, Any],
    class_indices: np.ndarray | None = None,
) -> None:
    """Validate and write a logits file (float32) and its sidecar JSON, atomically as a pair
    (:func:`save_scores`)."""
    save_scores(
        path,
        scores=np.asarray(logits, dtype=np.float32),
        kind="logits",
        labels=labels,
        sample_ids=sample_ids,
        class_names=class_names,
        metadata=metadata,
        class_indices=class_indices,
    )


def save_scores(
    path: str | Path,
    *,
    scores: np.ndarray,
    kind: ScoreKind,
    labels: np.ndarray,
    sample_ids: np.ndarray,
    class_names: np.ndarray,
    metadata: dict[str, Any],
    class_indices: np.ndarray | None = None,
) -> None:
    """Validate and write a scores file (array ``logits`` or ``probs``; float64 kept, any other
    float dtype as float32) and its sidecar JSON, atomically as a pair.

    ``class_indices`` (a class-subset shift only): the base dataset's class index of each column.

    The ``.npz`` is renamed into place only after its sidecar is written, and the sidecar is
    removed again if that rename fails, so a failure (bad arrays, a full disk) leaves neither
    file nor a temporary; storage errors name the file that could not be written."""
    scores = np.asarray(scores)
    scores = scores if scores.dtype == np.float64 else scores.astype(np.float32)
    labels = np.asarray(labels, dtype=np.int64)
    validate_scores(scores, labels, kind=kind, path=path)
    _save_pair(path, {kind: scores, "labels": labels}, sample_ids, class_names, scores.shape[1], metadata, class_indices)


def save_predictions(
    path: str | Path,
    *,
    predictions: np.ndarray,
    labels: np.ndarray,
    sample_ids: np.ndarray,
    class_names: np.ndarray,
    metadata: dict[str, Any],
    class_indices: np.ndarray | None = None,
) -> None:
    """Validate and write a file of hard predictions (array ``predictions``, int64 class
    indices (N,) or top-k classes (N, k), :data:`ABSTAINED` where the model abstained; no
    scores, :func:`check_predictions`) and its sidecar JSON, atomically as a pair; the number
    of classes is that of ``class_names`` (``class_indices``: as for :func:`save_scores`)."""
    class_names = np.asarray(class_names).astype(str)
    # their length sets the number of samples
    predictions = check_predictions(np.asarray(predictions), class_names.shape[0], path=path)
    labels = check_labels(np.asarray(labels), predictions.shape[0], class_names.shape[0], path=path)
    _save_pair(
        path, {PREDICTIONS: predictions, "labels": labels}, sample_ids, class_names, class_names.shape[0], metadata, class_indices
    )


def _save_pair(
    path: str | Path,
    arrays: dict[str, np.ndarray],
    sample_ids: np.ndarray,
    class_names: np.ndarray,
    n_classes: int,
    metadata: dict[str, Any],
    class_indices: np.ndarray | None = None,
) -> None:
    n = arrays["labels"].shape[0]
    sample_ids = np.asarray(sample_ids).astype(str)
    class_names = np.asarray(class_names).astype(str)
    if sample_ids.shape != (n,):
        raise InputError(f"expected {n} sample ids, got shape {sample_ids.shape}", path=path, field="sample_ids")
    if class_names.shape != (n_classes,):
        raise InputError(f"expected {n_classes} class names, got shape {class_names.shape}", path=path, field="class_names")
    arrays = {**arrays, "sample_ids": sample_ids, "class_names": class_names}
    if class_indices is not None:
        arrays["class_indices"] = np.asarray(class_indices, dtype=np.int64)
        if arrays["class_indices"].shape != (n_classes,):
            raise InputError(
                f"expected {n_classes} class indices, got shape {arrays['class_indices'].shape}",
                path=path,
                field="class_indices",
            )
    sidecar = sidecar_path(path)
    sidecar_written = False
    try:
        with atomic_path(path) as tmp:
            _write_npz(tmp, arrays)
            write_json(sidecar, metadata)
            sidecar_written = True
    except BaseException:
        if sidecar_written:
            sidecar.unlink(missing_ok=True)
        raise


def validate_scores(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    kind: ScoreKind = "logits",
    path: str | Path | None = None,
    n_classes: int | None = None,
) -> None:
    """Raise :class:`InputError` unless ``scores`` (N, C) and ``labels`` (N,) are usable: the
    checks of :mod:`classwise.validation`, with at least two classes and finite scores."""
    check_score_matrix(scores, field=kind, path=path, min_classes=2)
    check_finite_rows(scores, field=kind, path=path)
    check_labels(labels, scores.shape[0], scores.shape[1] if n_classes is None else n_classes, path=path)
    if kind == "probs":
        check_probabilities(scores, field=kind, path=path)


def stored_kind(path: str | Path) -> OutputKind:
    """What an outputs file holds (``logits``, ``probs`` or ``predictions``), from the names of
    its arrays alone (nothing is read or validated: cheap enough for the workflow's plan)."""
    p = Path(path)
    try:
        with zipfile.ZipFile(p) as archive:
            names = {name.removesuffix(".npy") for name in archive.namelist()}
    except FileNotFoundError:
        raise InputError("file does not exist", path=p) from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(f"not a readable .npz archive ({exc})", path=p) from exc
    return _kind_of(names, p)


def stored_shapes(path: str | Path) -> dict[str, tuple[int, ...] | None]:
    """Array name -> shape of an ``.npz``, from each array's ``.npy`` format header alone (no
    array is read: cheap enough for the workflow's plan); None for an array whose header numpy's
    public readers do not read (format 3.0)."""
    p = Path(path)
    shapes: dict[str, tuple[int, ...] | None] = {}
    try:
        with zipfile.ZipFile(p) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                    reader = readers.get(version)
                    shapes[info.filename.removesuffix(".npy")] = None if reader is None else tuple(reader(member)[0])
    except FileNotFoundError:
        raise InputError("file does not exist", path=p) from None
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise InputError(f"not a readable .npz archive ({exc})", path=p) from exc
    return shapes


def _kind_of(names: set[str], path: Path) -> OutputKind:
    if "logits" in names and "probs" in names:
        raise InputError("holds both 'logits' and 'probs'; keep exactly one", path=path)
    if "logits" in names:
        return "logits"
    if "probs" in names:
        return "probs"
    if PREDICTIONS in names:
        return "predictions"
    raise InputError(f"missing array 'logits' (or 'probs', or '{PREDICTIONS}'); found {sorted(names)}", path=path, field="logits")


def load_scores(path: str | Path) -> ScoresFile:
    """Read and validate a scores file (``logits`` or ``probs`` plus ``labels``). A file of hard
    predictions only is an :class:`InputError` saying so (read it with :func:`load_outputs`)."""
    return _load(path, allow_predictions=False)


def load_outputs(path: str | Path, *, kind: ScoreKind | None = None) -> ScoresFile:
    """Read and validate a scores file or a file of hard predictions; the latter comes encoded
    by rank (:func:`ranked_scores`: one-hot for one class per sample) with ``hard_predictions``,
    ``top_k`` and ``abstained`` set (only its argmax, its top-k set, and what follows from the
    confusion matrix, is meaningful). ``kind``: the kind the user asks for, which a file of
    scores must hold (:func:`decide_score_kind`; a file of hard predictions has no scores)."""
    return _load(path, allow_predictions=True, requested=kind)


def load_sample_ids(path: str | Path) -> np.ndarray:
    """The sample ids of an outputs file as strings (``0..N-1`` for a file without them), its
    scores left unread: what matching two files by sample id needs. :class:`InputError` naming
    the file when it is missing, not an archive, lacks ``labels`` or repeats an id."""
    # pandas (through sample_ids) only here: loading scores, as every metric job does, needs none
    from classwise.sample_ids import sample_id_positions

    p = Path(path)
    if not p.exists():
        raise InputError("file does not exist", path=p)
    with open_npz(p) as archive:
        if "sample_ids" in archive.files:
            ids = archive["sample_ids"].astype(str)
        elif "labels" in archive.files:
            ids = np.arange(archive["labels"].shape[0]).astype(str)
        else:
            raise InputError(f"missing array 'labels'; found {sorted(archive.files)}", path=p, field="labels")
    if ids.ndim != 1:
        raise InputError(f"expected a 1-D array, got shape {ids.shape}", path=p, field="sample_ids")
    sample_id_positions(ids, ids, path=p, available_name="this file")  # refuses repeated ids
    return ids


def open_npz(path: Path) -> Any:
    """``np.load(path)`` of an existing ``.npz`` without pickles; an :class:`InputError` naming
    the file when it is not a readable archive."""
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:  # numpy raises several types for a non-npz file
        raise InputError(f"not a readable .npz archive ({exc})", path=path) from exc


def _load(path: str | Path, *, allow_predictions: bool, requested: ScoreKind | None = None) -> ScoresFile:
    p = Path(path)
    if not p.exists():
        raise InputError("file does not exist", path=p)
    with open_npz(p) as archive:
        names = set(archive.files)
        stored = _kind_of(names, p)
        if stored == PREDICTIONS and not allow_predictions:
            raise InputError(
                "holds hard predictions only (array 'predictions'), no scores: the metrics that rank or "
                "weigh classes by score (W2CA, the top-k metrics, decisiveness, extrapolation) cannot be "
                "computed from it",
                path=p,
                field=PREDICTIONS,
            )
        if "labels" not in names:
            raise InputError(f"missing array 'labels'; found {sorted(names)}", path=p, field="labels")
        labels = archive["labels"]
        if stored == PREDICTIONS:
            class_names = archive["class_names"].astype(str) if "class_names" in names else None
            if class_names is None:
                raise InputError(
                    "a file of hard predictions needs 'class_names' (the number of classes)", path=p, field="class_names"
                )
            predictions = check_predictions(archive[PREDICTIONS], class_names.shape[0], path=p)
            scores, abstained = ranked_scores(predictions, class_names.shape[0])
            top_k = 1 if predictions.ndim == 1 else int(predictions.shape[1])
            kind: ScoreKind = "logits"
            check_labels(labels, scores.shape[0], scores.shape[1], path=p)
            read_as = ScoreKindDecision.hard_predictions(f"its array '{PREDICTIONS}'")
        else:
            kind = stored  # type: ignore[assignment]
            scores = archive[kind]
            abstained, top_k = None, 1
            validate_scores(scores, labels, kind=kind, path=p)
            read_as = decide_score_kind(scores, path=p, stated=(kind, f"its array '{kind}'"), requested=requested)
        n, c = scores.shape
        sample_ids = archive["sample_ids"].astype(str) if "sample_ids" in names else np.arange(n).astype(str)
        class_names = archive["class_names"].astype(str) if "class_names" in names else np.arange(c).astype(str)
        if sample_ids.shape != (n,):
            raise InputError(f"expected shape ({n},), got {sample_ids.shape}", path=p, field="sample_ids")
        if class_names.shape != (c,):
            raise InputError(f"expected shape ({c},), got {class_names.shape}", path=p, field="class_names")
        extra = {name: archive[name] for name in names - {stored, "labels", "sample_ids", "class_names"}}
    return ScoresFile(
        scores=scores,
        labels=labels.astype(np.int64, copy=False),
        kind=kind,
        sample_ids=sample_ids,
        class_names=class_names,
        path=str(p),
        extra=extra,
        hard_predictions=stored == PREDICTIONS,
        top_k=top_k,
        abstained=abstained,
        read_as=read_as,
    )
