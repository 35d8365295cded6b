"""ImageNet ReaL labels (Beyer et al. 2020, "Are we done with ImageNet?") as a label view.

``real.json`` (google-research/reassessed-imagenet) is a JSON list of 50,000 lists of
ImageNet-1k class indices, entry ``i`` belonging to ``ILSVRC2012_val_{i + 1:08d}.JPEG``: the
set of labels the reassessment found correct for that image, empty when the raters kept none.

Under the view, a prediction is correct when it is in the image's set; images with an empty
set are removed; every per-class figure groups the images by their *original* label (the one
stored with the logits). The view file is a CSV ``sample_id,real``: the image's file name and
its set as space-separated class indices (empty = removed). It is matched to a dataset's
samples by file name (the last component of ``<wnid>/<file>``), so it applies to every
ImageNet validation layout and to corrupted copies that keep the file names (ImageNet-C).

The metric core stays one label per sample: :func:`best_set_rank` gives each sample the rank
of its best-ranked correct class, which replaces the rank of the single true class in
:class:`~classwise.metrics.stats.ClassificationStats` (top-1 correct iff rank 0, top-k
correct iff rank < k). docs/real-labels.md lists the convention of every metric.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classwise.atomic import atomic_open
from classwise.errors import InputError, field_path

__all__ = [
    "REAL_CLASSES",
    "REAL_FILE",
    "REAL_IMAGES",
    "REAL_URL",
    "LabelSets",
    "best_set_rank",
    "download_real",
    "read_real_json",
    "read_real_view",
    "real_file_ids",
    "write_real_view",
]

REAL_FILE = "real.json"
REAL_IMAGES = 50_000
REAL_CLASSES = 1_000
#: No sha256 of real.json is published; the default download records the digest of the file it
#: gets (``real.json.sha256``) and checks it on every later use (see :func:`download_real`).
REAL_URL = "https://raw.githubusercontent.com/google-research/reassessed-imagenet/master/real.json"
#: The column of a view file that marks it as a view of label sets (a ``label`` column: one label).
SETS_COLUMN = "real"


@dataclass(frozen=True, eq=False)
class LabelSets:
    """One set of correct class indices per sample, in CSR form: sample ``i`` has
    ``classes[offsets[i]:offsets[i + 1]]`` (sorted, without repeats)."""

    offsets: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def rows(self) -> np.ndarray:
        """The sample of every entry of ``classes``."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.sizes)

    def take(self, index: np.ndarray) -> LabelSets:
        """The sets of the samples ``index`` (positions, in that order)."""
        index = np.asarray(index, dtype=np.int64)
        sizes = self.sizes[index]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        starts = np.repeat(self.offsets[index] - offsets[:-1], sizes)
        return LabelSets(offsets, self.classes[np.arange(offsets[-1], dtype=np.int64) + starts])

    def contains(self, predictions: np.ndarray) -> np.ndarray:
        """``(N,)`` bool: whether each sample's prediction is in its set."""
        predictions = np.asarray(predictions, dtype=np.int64)
        rows = self.rows
        hit = self.classes == predictions[rows]
        return np.bincount(rows[hit], minlength=len(self)) > 0

    def as_lists(self) -> list[list[int]]:
        return [self.classes[a:b].tolist() for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    @classmethod
    def from_lists(cls, sets: list[list[int]]) -> LabelSets:
        sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        flat = np.fromiter((c for s in sets for c in s), dtype=np.int64, count=int(offsets[-1]))
        return cls(offsets, flat)


def read_real_json(path: str | Path, *, n_images: int = REAL_IMAGES, n_classes: int = REAL_CLASSES) -> LabelSets:
    """The sets of a ``real.json``, checked: a list of ``n_images`` lists of integers in
    ``[0, n_classes)``; anything else is an :class:`InputError` naming the file and the entry.
    Repeated indices within a set are dropped."""
    path = Path(path)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the ReaL labels as JSON: {error}", path=path) from None
    if not isinstance(entries, list):
        raise InputError(f"expected a JSON list of {n_images} lists of class indices, got {type(entries).__name__}", path=path)
    if len(entries) != n_images:
        raise InputError(
            f"expected {n_images} entries (one per ILSVRC2012_val_*.JPEG, in file-number order), got {len(entries)}",
            path=path,
            field="length",
        )
    for i, entry in enumerate(entries):
        # bool is an int subclass; a set is a list of plain integers
        if not isinstance(entry, list) or not all(type(c) is int for c in entry):
            raise InputError(f"expected a list of integer class indices, got {entry!r:.80}", path=path, field=field_path(i))
    sets = LabelSets.from_lists(entries)
    bad = (sets.classes < 0) | (sets.classes >= n_classes)
    if bad.any():
        row = int(sets.rows[np.flatnonzero(bad)[0]])
        raise InputError(
            f"class indices must lie in [0, {n_classes}), got {entries[row]} (entry {row}, image "
            f"ILSVRC2012_val_{row + 1:08d}.JPEG)",
            path=path,
            field=field_path(row),
        )
    return _normalised(sets)


def _normalised(sets: LabelSets) -> LabelSets:
    """Each set sorted, without repeats (vectorised: one lexsort over (row, class))."""
    rows = sets.rows
    order = np.lexsort((sets.classes, rows))
    rows, classes = rows[order], sets.classes[order]
    keep = np.ones(classes.shape[0], dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]) | (classes[1:] != classes[:-1])
    sizes = np.bincount(rows[keep], minlength=len(sets))
    return LabelSets(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), classes[keep])


def real_file_ids(n_images: int) -> np.ndarray:
    """``ILSVRC2012_val_%08d.JPEG`` for the file numbers ``1 .. n_images`` (real.json's order)."""
    numbers = np.char.zfill(np.arange(1, n_images + 1).astype(str), 8)
    return np.char.add(np.char.add("ILSVRC2012_val_", numbers), ".JPEG")


def write_real_view(path: str | Path, sets: LabelSets) -> None:
    """The view file: ``sample_id,real`` (file name, space-separated set; empty = removed), atomically."""
    # pandas here and in read_real_view, not above: the metric jobs use LabelSets (through
    # labelled_scores) whether or not they read a ReaL view, and the workflow reads REAL_URL
    import pandas as pd

    text = pd.Series([" ".join(map(str, s)) for s in sets.as_lists()], dtype=object)
    frame = pd.DataFrame({"sample_id": real_file_ids(len(sets)), SETS_COLUMN: text})
    with atomic_open(path, "w", encoding="utf-8", newline="") as handle:
        frame.to_csv(handle, index=False, lineterminator="\n")


def is_sets_view(columns: list[str]) -> bool:
    return columns == ["sample_id", SETS_COLUMN]


def is_sets_view_file(path: str | Path) -> bool:
    """Whether the view file at ``path`` holds label sets (its header is ``sample_id,real``)."""
    try:
        with open(path, encoding="utf-8") as handle:
            header = handle.readline().strip()
    except OSError as exc:
        raise InputError(f"cannot read the label view ({exc})", path=path) from None
    return is_sets_view(header.split(","))


def read_real_view(path: str | Path, sample_ids: np.ndarray, *, n_classes: int) -> LabelSets:
    """The sets of the view file at ``path`` for ``sample_ids`` (in that order), matched by file
    name (the part after the last ``/``); an id without a row is an error naming the file."""
    import pandas as pd

    from classwise.sample_ids import sample_id_positions

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"cannot read the label view ({exc})", path=path) from None
    if not is_sets_view(list(frame.columns)):
        raise InputError(f"expected the columns sample_id,{SETS_COLUMN}, got {list(frame.columns)}", path=path, field="columns")
    text = frame[SETS_COLUMN].to_numpy(dtype=str)
    sizes = np.char.count(text, " ") + 1
    sizes[np.char.str_len(text) == 0] = 0
    try:
        flat = np.array(" ".join(text[sizes > 0]).split(), dtype=np.int64)
    except ValueError:
        raise InputError("sets must be space-separated integer class indices", path=path, field=SETS_COLUMN) from None
    if flat.shape[0] != int(sizes.sum()):
        raise InputError("sets must be single-space-separated class indices", path=path, field=SETS_COLUMN)
    if flat.size and (flat.min() < 0 or flat.max() >= n_classes):
        raise InputError(f"class indices must lie in [0, {n_classes}) (the scores' columns)", path=path, field=SETS_COLUMN)
    sets = LabelSets(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), flat)
    files = np.char.rpartition(np.asarray(sample_ids).astype(str), "/")[:, 2]
    index = sample_id_positions(
        files,
        frame["sample_id"].to_numpy(dtype=str),
        path=path,
        available_name="the ReaL view",
        missing="{count} of {total} samples (matched by file name) have no entry in this view",
    )
    return sets.take(index)


def best_set_rank(scores: np.ndarray, sets: LabelSets, *, chunk_entries: int = 4096) -> np.ndarray:
    """``(N,)`` int64: per sample, the fewest classes ranked ahead of a member of its set (the
    rank of its best-ranked correct class), with the tie rule of
    :func:`~classwise.metrics.stats.compute_stats` (``j`` is ahead of ``s`` iff ``s_j > s_s`` or
    ``s_j == s_s`` and ``j < s``). Rank 0 iff the argmax is in the set; rank ``< k`` iff one of
    the top ``k`` is. Every set must be non-empty. Chunks of ``chunk_entries`` set members bound
    the ``(entries, C)`` scratch comparison."""
    if (sets.sizes == 0).any():
        raise InputError("every sample needs a non-empty set of correct labels", field="label_sets")
    rows = sets.rows
    c = scores.shape[1]
    col = np.arange(c)
    member_rank = np.empty(rows.shape[0], dtype=np.int64)
    for lo in range(0, rows.shape[0], chunk_entries):
        r, s = rows[lo : lo + chunk_entries], sets.classes[lo : lo + chunk_entries]
        chunk = scores[r]
        if chunk.dtype.itemsize < 4:
            chunk = chunk.astype(np.float32)
        value = chunk[np.arange(r.shape[0]), s][:, None]
        ahead = (chunk > value) | ((chunk == value) & (col[None, :] < s[:, None]))
        member_rank[lo : lo + chunk_entries] = np.count_nonzero(ahead, axis=1)
    return np.minimum.reduceat(member_rank, sets.offsets[:-1]).astype(np.int64)


def download_real(dest: str | Path, *, url: str = REAL_URL, sha256: str | None = None) -> Path:
    """Fetch ``real.json`` to ``dest`` through the download core (atomic, retried, skipped when
    present and verified). With ``sha256`` the file must have that digest. Without it (no digest
    is published) the digest of the first download is recorded in ``<dest>.sha256`` and every
    later call checks the file against it, so the labels never change under a run unnoticed.
    A file that is not a valid real.json is removed (with its record) and reported."""
    from classwise.data.downloads import download

    path = download(url, dest, sha256=sha256, record=sha256 is None)
    try:
        read_real_json(path)
    except InputError:
        # not the published format: leave nothing behind (nor a record of its digest)
        path.unlink(missing_ok=True)
        Path(f"{path}.sha256").unlink(missing_ok=True)
        raise
    return path
