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

Files are written deterministically (fixed zip timestamps, no pickles) and atomically,
so the same inputs give byte-identical files and an interrupted write leaves nothing.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from classwise.atomic import atomic_path, write_json
from classwise.errors import InputError
from classwise.validation import ScoreKind, check_finite_rows, check_labels, check_probabilities, check_score_matrix

__all__ = ["ScoreKind", "ScoresFile", "load_scores", "save_logits", "sidecar_path", "validate_scores", "write_npz_deterministic"]

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


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

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.scores.shape[1])


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
    """Validate and write a logits file and its sidecar JSON, atomically as a pair.

    ``class_indices`` (a class-subset shift only): the base dataset's class index of each column.

    The ``.npz`` is renamed into place only after its sidecar is written, and the sidecar is
    removed again if that rename fails, so a failure (bad arrays, a full disk) leaves neither
    file nor a temporary; storage errors name the file that could not be written."""
    logits = np.asarray(logits, dtype=np.float32)
    labels = np.asarray(labels, dtype=np.int64)
    sample_ids = np.asarray(sample_ids).astype(str)
    class_names = np.asarray(class_names).astype(str)
    validate_scores(logits, labels, kind="logits", path=path)
    if sample_ids.shape != labels.shape:
        raise InputError(f"expected {labels.shape[0]} sample ids, got shape {sample_ids.shape}", path=path, field="sample_ids")
    if class_names.shape != (logits.shape[1],):
        raise InputError(f"expected {logits.shape[1]} class names, got shape {class_names.shape}", path=path, field="class_names")
    arrays = {"logits": logits, "labels": labels, "sample_ids": sample_ids, "class_names": class_names}
    if class_indices is not None:
        arrays["class_indices"] = np.asarray(class_indices, dtype=np.int64)
        if arrays["class_indices"].shape != (logits.shape[1],):
            raise InputError(
                f"expected {logits.shape[1]} class indices, got shape {arrays['class_indices'].shape}",
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


def load_scores(path: str | Path) -> ScoresFile:
    """Read and validate a scores file (``logits`` or ``probs`` plus ``labels``)."""
    p = Path(path)
    if not p.exists():
        raise InputError("file does not exist", path=p)
    try:
        archive = np.load(p, allow_pickle=False)
    except Exception as exc:  # numpy raises several types for a non-npz file
        raise InputError(f"not a readable .npz archive ({exc})", path=p) from exc
    with archive:
        names = set(archive.files)
        if "logits" in names and "probs" in names:
            raise InputError("holds both 'logits' and 'probs'; keep exactly one", path=p)
        if "logits" in names:
            kind: ScoreKind = "logits"
        elif "probs" in names:
            kind = "probs"
        else:
            raise InputError(f"missing array 'logits' (or 'probs'); found {sorted(names)}", path=p, field="logits")
        if "labels" not in names:
            raise InputError(f"missing array 'labels'; found {sorted(names)}", path=p, field="labels")
        scores = archive[kind]
        labels = archive["labels"]
        validate_scores(scores, labels, kind=kind, path=p)
        n, c = scores.shape
        sample_ids = archive["sample_ids"].astype(str) if "sample_ids" in names else np.arange(n).astype(str)
        class_names = archive["class_names"].astype(str) if "class_names" in names else np.arange(c).astype(str)
        if sample_ids.shape != (n,):
            raise InputError(f"expected shape ({n},), got {sample_ids.shape}", path=p, field="sample_ids")
        if class_names.shape != (c,):
            raise InputError(f"expected shape ({c},), got {class_names.shape}", path=p, field="class_names")
        extra = {name: archive[name] for name in names - {kind, "labels", "sample_ids", "class_names"}}
    return ScoresFile(
        scores=scores,
        labels=labels.astype(np.int64, copy=False),
        kind=kind,
        sample_ids=sample_ids,
        class_names=class_names,
        path=str(p),
        extra=extra,
    )
