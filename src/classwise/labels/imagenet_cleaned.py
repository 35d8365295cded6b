"""Label-cleaned views from cleanlab/label-errors' Mechanical Turk votes (ImageNet, CIFAR-10).

A *view* is one integer per image of the evaluation set, in its canonical order: the label the
image keeps, or ``-1`` (:data:`REMOVED`) if the view drops it. For ImageNet the order is the
sorted ImageFolder order (``val/<wnid>/<file>`` sorted), the row order of label-errors'
``imagenet_val_set_index_to_filepath.json`` and ``.npy`` files; for CIFAR-10 the test-set order.

The rule (Bitterwolf et al., 2022, label-errors' 5-vote MTurk study): every image that confident
learning did **not** flag keeps its label; a flagged image (one entry in ``*_mturk.json``) keeps
its given label if all its votes (5/5) say "given", takes the guessed label if all its votes say
"guessed", and is removed otherwise.

- ``paper``: the file j-cb/worst_classes ``new_labels.csv`` as published (46,044 kept). It applied
  the rule with each entry's ``id`` (the 1-based number in ``ILSVRC2012_val_%08d.JPEG``) used as a
  0-based row index of the sorted order, so its removed and relabelled rows are mostly the wrong
  images; :func:`misaligned_rule_labels` reproduces it exactly from the votes. Kept only to
  reproduce the paper's Table 2.
- ``aligned``: the same rule placed through each entry's ``url`` (its file), checked against the
  original labels (also 46,044 kept, every removed row a flagged image).
- CIFAR-10 ``cleaned``: the rule on ``cifar10_mturk.json``, whose ``id`` is the 0-based test index
  (checked: every entry's ``given_original_label`` equals the original label at ``id``).

Label files are text, one integer per line, ``\\n``-terminated, written atomically.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import urlparse

import numpy as np

from classwise.atomic import atomic_open
from classwise.errors import InputError, field_path
from classwise.labels.labelled_scores import REMOVED
from classwise.sample_ids import sample_id_positions

__all__ = [
    "CIFAR10_FILES",
    "IMAGENET_FILES",
    "REMOVED",
    "MturkVotes",
    "aligned_imagenet_labels",
    "apply_vote_rule",
    "build_cifar10_view",
    "build_imagenet_view",
    "cifar10_cleaned_labels",
    "misaligned_rule_labels",
    "read_index_to_filepath",
    "read_label_file",
    "read_mturk",
    "read_original_labels",
    "view_for_samples",
    "view_summary",
    "write_label_file",
]

IMAGENET_VAL_SIZE = 50_000
IMAGENET_CLASSES = 1_000
CIFAR10_TEST_SIZE = 10_000
CIFAR10_CLASSES = 10

IMAGENET_FILES = {
    "mturk": "imagenet_mturk.json",
    "index_to_filepath": "imagenet_val_set_index_to_filepath.json",
    "original_labels": "imagenet_val_set_original_labels.npy",
    "paper": "worst_classes_new_labels.csv",
}
"""File names in a label-errors directory (as in label-errors and j-cb/worst_classes)."""

CIFAR10_FILES = {
    "mturk": "cifar10_mturk.json",
    "original_labels": "cifar10_test_set_original_labels.npy",
}

VOTE_FIELDS = ("given", "guessed", "neither", "both")

ImageNetVariant = Literal["paper", "aligned"]


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, eq=False)
class MturkVotes:
    """The entries of a label-errors ``*_mturk.json``, as arrays (one row per flagged image).

    ``votes`` has columns ``given, guessed, neither, both``; ``files`` is the last path component
    of each ``url``.
    """

    path: str
    ids: np.ndarray
    files: np.ndarray
    urls: np.ndarray
    given_labels: np.ndarray
    guessed_labels: np.ndarray
    votes: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def read_mturk(path: str | Path) -> MturkVotes:
    """Read and validate a ``*_mturk.json`` (a list of entries with id, url, labels and votes)."""
    path = Path(path)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the MTurk votes as JSON: {error}", path=path) from None
    if not isinstance(entries, list) or not entries:
        raise InputError("expected a non-empty JSON list of entries", path=path)
    ids, urls, given, guessed, votes = [], [], [], [], []
    for i, entry in enumerate(entries):
        try:
            ids.append(int(entry["id"]))
            urls.append(str(entry["url"]))
            given.append(int(entry["given_original_label"]))
            guessed.append(int(entry["our_guessed_label"]))
            votes.append([int(entry["mturk"][f]) for f in VOTE_FIELDS])
        except (KeyError, TypeError, ValueError) as error:
            raise InputError(
                "expected id, url, given_original_label, our_guessed_label and mturk "
                f"{{{', '.join(VOTE_FIELDS)}}} as integers/strings ({type(error).__name__}: {error})",
                path=path,
                field=field_path(i),
            ) from None
    votes_arr = np.array(votes, dtype=np.int64)
    if (votes_arr < 0).any() or (votes_arr.sum(axis=1) == 0).any():
        bad = np.flatnonzero((votes_arr < 0).any(axis=1) | (votes_arr.sum(axis=1) == 0))[:5].tolist()
        raise InputError(f"vote counts must be >= 0 with at least one vote; entries {bad}", path=path, field="mturk")
    ids_arr = np.array(ids, dtype=np.int64)
    if len(np.unique(ids_arr)) != len(ids_arr):
        raise InputError("entry ids must be unique", path=path, field="id")
    files = np.array([PurePosixPath(urlparse(u).path).name for u in urls], dtype=str)
    return MturkVotes(
        path=str(path),
        ids=ids_arr,
        files=files,
        urls=np.array(urls, dtype=str),
        given_labels=np.array(given, dtype=np.int64),
        guessed_labels=np.array(guessed, dtype=np.int64),
        votes=votes_arr,
    )


def read_original_labels(path: str | Path, *, n_expected: int | None = None) -> np.ndarray:
    """A label-errors ``*_original_labels.npy`` as int64 ``(N,)``."""
    path = Path(path)
    try:
        labels = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the original labels: {error}", path=path) from None
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise InputError(f"expected a 1-D integer array, got {labels.dtype} {labels.shape}", path=path)
    if n_expected is not None and labels.shape[0] != n_expected:
        raise InputError(f"expected {n_expected} labels, got {labels.shape[0]}", path=path)
    return labels.astype(np.int64)


def read_index_to_filepath(path: str | Path) -> list[str]:
    """label-errors' ``imagenet_val_set_index_to_filepath.json``: row -> ``val/<wnid>/<file>``."""
    path = Path(path)
    try:
        paths = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the index-to-filepath list as JSON: {error}", path=path) from None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise InputError("expected a JSON list of file paths", path=path)
    return paths


def read_label_file(path: str | Path, *, n_expected: int | None = None, n_classes: int | None = None) -> np.ndarray:
    """A view's label file: one integer per line, ``-1`` = removed; int64 ``(N,)``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot read the label file: {error}", path=path) from None
    lines = text.split()
    try:
        labels = np.array([int(line) for line in lines], dtype=np.int64)
    except ValueError:
        bad = next(i for i, line in enumerate(lines) if not _is_int(line))
        raise InputError(f"expected one integer per line, line {bad + 1} is {lines[bad]!r}", path=path, field="labels") from None
    if n_expected is not None and labels.shape[0] != n_expected:
        raise InputError(f"expected {n_expected} lines (one per image), got {labels.shape[0]}", path=path, field="labels")
    upper = n_classes if n_classes is not None else np.iinfo(np.int64).max
    invalid = (labels < REMOVED) | (labels >= upper)
    if invalid.any():
        rows = (np.flatnonzero(invalid)[:5] + 1).tolist()
        raise InputError(f"labels must be -1 (removed) or in [0, {upper}); lines {rows}", path=path, field="labels")
    return labels


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def write_label_file(path: str | Path, labels: np.ndarray) -> None:
    """Write one integer per line (``-1`` = removed), atomically."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or (labels.size and not np.issubdtype(labels.dtype, np.integer)):
        raise InputError(f"expected a 1-D integer array, got {labels.dtype} {labels.shape}", path=path, field="labels")
    with atomic_open(path, "w", encoding="utf-8", newline="\n") as handle:
        if labels.size:
            handle.write("\n".join(map(str, labels.tolist())) + "\n")


def view_summary(view: np.ndarray, original: np.ndarray | None = None) -> dict[str, int]:
    """Counts of a view: images, kept, removed and (given the original labels) relabelled."""
    view = np.asarray(view)
    summary = {"images": int(view.size), "kept": int((view != REMOVED).sum()), "removed": int((view == REMOVED).sum())}
    if original is not None:
        summary["relabelled"] = int(((view != REMOVED) & (view != np.asarray(original))).sum())
    return summary


def view_for_samples(view: np.ndarray, view_ids: np.ndarray, sample_ids: np.ndarray) -> np.ndarray:
    """The rows of ``view`` (one per ``view_ids``, e.g. all 50,000 images) for ``sample_ids``.

    For evaluating a view on logits that lack some images (``on_bad_image: skip``): every
    sample id must be one of ``view_ids``; the result is in ``sample_ids`` order.
    """
    view, view_ids, sample_ids = np.asarray(view), np.asarray(view_ids).astype(str), np.asarray(sample_ids).astype(str)
    if view.shape != view_ids.shape:
        raise InputError(f"{view.shape[0]} labels for {view_ids.shape[0]} sample ids", field="labels")
    if not view_ids.size:
        if sample_ids.size:
            raise InputError("the view has no rows", field="sample_ids")
        return view[:0]
    positions = sample_id_positions(
        sample_ids,
        view_ids,
        field="sample_ids",
        available_name="the view",
        missing="{count} of {total} sample ids have no row in the view",
    )
    return view[positions]


# --------------------------------------------------------------------------- the rule


def apply_vote_rule(original: np.ndarray, rows: np.ndarray, votes: MturkVotes) -> np.ndarray:
    """``original`` with the rule applied to ``rows`` (one row per MTurk entry); ``-1`` = removed.

    All votes "given" -> keep (the entry's ``given_original_label``); all votes "guessed" ->
    ``our_guessed_label``; otherwise removed. Rows not listed keep their original label.
    """
    out = np.asarray(original, dtype=np.int64).copy()
    rows = np.asarray(rows, dtype=np.int64)
    total = votes.votes.sum(axis=1)
    keep = votes.votes[:, 0] == total
    relabel = ~keep & (votes.votes[:, 1] == total)
    remove = ~keep & ~relabel
    out[rows[keep]] = votes.given_labels[keep]
    out[rows[relabel]] = votes.guessed_labels[relabel]
    out[rows[remove]] = REMOVED
    return out


def _check_given_labels(original: np.ndarray, rows: np.ndarray, votes: MturkVotes, *, what: str) -> None:
    mismatch = np.flatnonzero(original[rows] != votes.given_labels)
    if mismatch.size:
        i = int(mismatch[0])
        raise InputError(
            f"{mismatch.size} entries are not aligned with the original labels ({what}); e.g. id "
            f"{votes.ids[i]} ({votes.files[i]}) has given_original_label {votes.given_labels[i]} but "
            f"row {rows[i]} has label {original[rows[i]]}",
            path=votes.path,
            field="given_original_label",
        )


def aligned_imagenet_labels(votes: MturkVotes, filepaths: list[str], original: np.ndarray) -> np.ndarray:
    """The ``aligned`` ImageNet view: the rule placed through each entry's file (its ``url``).

    ``filepaths`` (label-errors' index-to-filepath list) must be in sorted ImageFolder order, and
    ``original`` must be the sorted-wnid index of each path's folder; every entry's file must be
    one of the paths and carry the original label of its row. Any violation is an InputError.
    """
    original = np.asarray(original, dtype=np.int64)
    if len(filepaths) != original.shape[0]:
        raise InputError(f"{len(filepaths)} file paths but {original.shape[0]} original labels", field="index_to_filepath")
    if filepaths != sorted(filepaths):
        raise InputError("file paths are not in sorted ImageFolder order", field="index_to_filepath")
    parts = [PurePosixPath(p) for p in filepaths]
    wnids = np.array([p.parent.name for p in parts])
    _, wnid_index = np.unique(wnids, return_inverse=True)
    if not np.array_equal(wnid_index, original):
        row = int(np.flatnonzero(wnid_index != original)[0])
        raise InputError(
            f"original labels are not the sorted-wnid index of the file paths (row {row}: "
            f"{filepaths[row]} has label {original[row]})",
            field="original_labels",
        )
    row_of_file = {p.name: i for i, p in enumerate(parts)}
    if len(row_of_file) != len(parts):
        raise InputError("file names are not unique", field="index_to_filepath")
    missing = [f for f in votes.files.tolist() if f not in row_of_file]
    if missing:
        raise InputError(f"{len(missing)} entries name files not in the list, e.g. {missing[:3]}", path=votes.path, field="url")
    rows = np.array([row_of_file[f] for f in votes.files.tolist()], dtype=np.int64)
    _check_given_labels(original, rows, votes, what="through the url")
    return apply_vote_rule(original, rows, votes)


def misaligned_rule_labels(votes: MturkVotes, original: np.ndarray) -> np.ndarray:
    """The rule as the published ``new_labels.csv`` applied it: ``id`` used as a 0-based row index.

    Reproduces j-cb/worst_classes ``new_labels.csv`` exactly (kept labels of "given" rows are the
    entry's ``given_original_label`` written at the wrong row). For documentation and checks only.
    """
    original = np.asarray(original, dtype=np.int64)
    if votes.ids.min() < 0 or votes.ids.max() >= original.shape[0]:
        raise InputError("entry ids out of range as row indices", path=votes.path, field="id")
    return apply_vote_rule(original, votes.ids, votes)


def cifar10_cleaned_labels(votes: MturkVotes, original: np.ndarray) -> np.ndarray:
    """The CIFAR-10 ``cleaned`` view: ``id`` is the 0-based test index (checked against url and labels)."""
    original = np.asarray(original, dtype=np.int64)
    if votes.ids.min() < 0 or votes.ids.max() >= original.shape[0]:
        raise InputError(f"entry ids must be test indices in [0, {original.shape[0]})", path=votes.path, field="id")
    named = np.array([f"{i}.png" for i in votes.ids.tolist()])
    if not np.array_equal(named, votes.files):
        i = int(np.flatnonzero(named != votes.files)[0])
        raise InputError(
            f"entry id {votes.ids[i]} names file {votes.files[i]}, expected {named[i]}", path=votes.path, field="url"
        )
    _check_given_labels(original, votes.ids, votes, what="id as test index")
    return apply_vote_rule(original, votes.ids, votes)


# --------------------------------------------------------------------------- views from a directory


def _require(directory: Path, name: str, field: str) -> Path:
    path = directory / name
    if not path.is_file():
        raise InputError(f"missing {name} (expected the files named as in label-errors)", path=directory, field=field)
    return path


def build_imagenet_view(
    label_errors_dir: str | Path, variant: ImageNetVariant, *, paper_file: str | Path | None = None
) -> np.ndarray:
    """One label per ImageNet validation image (sorted ImageFolder order), ``-1`` = removed.

    ``paper`` reads ``paper_file`` (default ``<dir>/worst_classes_new_labels.csv``) as published;
    ``aligned`` builds the view from the directory's mturk votes, index-to-filepath list and
    original labels (:data:`IMAGENET_FILES`).
    """
    directory = Path(label_errors_dir)
    if variant == "paper":
        path = Path(paper_file) if paper_file is not None else _require(directory, IMAGENET_FILES["paper"], "paper_file")
        return read_label_file(path, n_expected=IMAGENET_VAL_SIZE, n_classes=IMAGENET_CLASSES)
    if variant == "aligned":
        votes = read_mturk(_require(directory, IMAGENET_FILES["mturk"], "mturk"))
        filepaths = read_index_to_filepath(_require(directory, IMAGENET_FILES["index_to_filepath"], "index_to_filepath"))
        original = read_original_labels(
            _require(directory, IMAGENET_FILES["original_labels"], "original_labels"), n_expected=len(filepaths)
        )
        return aligned_imagenet_labels(votes, filepaths, original)
    raise InputError(f"expected 'paper' or 'aligned', got {variant!r}", field="variant")


def build_cifar10_view(label_errors_dir: str | Path) -> np.ndarray:
    """The CIFAR-10 ``cleaned`` view (test-set order, ``-1`` = removed) from a label-errors directory."""
    directory = Path(label_errors_dir)
    votes = read_mturk(_require(directory, CIFAR10_FILES["mturk"], "mturk"))
    original = read_original_labels(_require(directory, CIFAR10_FILES["original_labels"], "original_labels"))
    return cifar10_cleaned_labels(votes, original)
