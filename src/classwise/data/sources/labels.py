"""``source: labels``: an evaluation set given as its labels alone, for evaluating the outputs of
models run elsewhere (``source: predictions``): a CSV ``sample_id,label[,class_name]`` at
``path``, no images.

Config shape (one entry of ``datasets:``)::

    {source: labels, path: labels.csv, class_names: [zero, one, ...]}   # class_names optional

``label`` is a class index in ``[0, C)``. The class count C is the length of ``class_names``
when given, else the largest label plus one; the names come from ``class_names``, else from the
``class_name`` column (one name per label), else the indices. Having no images, such a set is
evaluated on ``clean`` (the file at ``path``) and on shifts given by labels files of their own
(a ``shift_sets`` entry of family ``labels``, :mod:`classwise.data.shift_sets.labels`, read in
the dataset's classes by :func:`read_shift_labels`), and only by models whose outputs come from
a file; the workflow's plan says so before any job (:mod:`classwise.pipeline.plan`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from classwise.data.sources.base import BaseDatasetSource, Split
from classwise.errors import InputError

_MAX_IN_MESSAGE = 5


@dataclass(frozen=True, eq=False)
class LabelledSamples:
    """The samples of an evaluation set without images: ids, labels and class names."""

    sample_ids: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def read_label_file(
    path: str | Path, class_names: Sequence[str] | None = None, *, field: str = "path", names_of: str | None = None
) -> LabelledSamples:
    """The samples of a ``sample_id,label[,class_name]`` CSV, checked: unique non-empty ids,
    integer labels in ``[0, C)``, one name per label (``field`` names the config key in errors;
    ``names_of`` says whose ``class_names`` they are, default the config's)."""
    names = None if class_names is None else tuple(str(n) for n in class_names)
    return _read(str(path), _mtime(path), names, field, names_of)


def read_shift_labels(path: str | Path, base: LabelledSamples, *, dataset: str, field: str) -> LabelledSamples:
    """The samples of a shift's own labels file in the classes of its dataset (``base``, the
    dataset's samples): labels in ``[0, C)`` and, where the file names classes, the dataset's names."""
    return read_label_file(path, base.class_names, field=field, names_of=f"dataset {dataset!r}")


def shift_samples(dataset: Mapping[str, Any], name: str, path: str | Path) -> LabelledSamples:
    """The samples of a shift's labels file ``path`` in the classes of the dataset ``name``
    (its config ``dataset``)."""
    base = read_label_file(dataset["path"], dataset.get("class_names"), field=f"datasets.{name}.path")
    return read_shift_labels(path, base, dataset=name, field=f"datasets.{name}.shift_sets")


def _mtime(path: str | Path) -> int:
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return -1


@functools.lru_cache(maxsize=256)
def _read(path: str, mtime: int, class_names: tuple[str, ...] | None, field: str, names_of: str | None) -> LabelledSamples:
    import pandas as pd

    if mtime < 0:
        raise InputError("file does not exist (relative paths are relative to the working directory)", path=path, field=field)
    try:
        frame = pd.read_csv(path, dtype={"sample_id": str, "class_name": str}, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a readable CSV file ({exc})", path=path) from None
    missing = [column for column in ("sample_id", "label") if column not in frame.columns]
    if missing:
        raise InputError(
            f"expected the columns sample_id, label[, class_name]; found {list(map(str, frame.columns))}",
            path=path,
            field=missing[0],
        )
    if frame.empty:
        raise InputError("has no rows", path=path)
    ids = frame["sample_id"]
    if ids.isna().any():
        raise InputError(f"empty sample ids in rows {_rows(ids.isna().to_numpy())}", path=path, field="sample_id")
    repeated = ids[ids.duplicated()].unique()
    if repeated.size:
        raise InputError(
            f"duplicate sample ids {repeated[:_MAX_IN_MESSAGE].tolist()} ({repeated.size} in all)", path=path, field="sample_id"
        )
    numbers = pd.to_numeric(frame["label"], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(numbers) | (numbers != np.round(numbers)) | (numbers < 0)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"expected class indices (integers >= 0); rows {_rows(bad)} are not (e.g. {frame['label'].iloc[first]!r})",
            path=path,
            field="label",
        )
    labels = numbers.astype(np.int64)
    names = _class_names(frame, labels, class_names, path, names_of)
    if labels.max() >= len(names):
        classes = (
            f"the {len(names)} class_names the config gives" if names_of is None else f"the {len(names)} classes of {names_of}"
        )
        raise InputError(
            f"label {int(labels.max())} is not a class of {classes} (rows {_rows(labels >= len(names))})",
            path=path,
            field="label",
        )
    sample_ids = ids.to_numpy().astype(str)
    sample_ids.flags.writeable = labels.flags.writeable = False  # shared by the cache
    return LabelledSamples(sample_ids, labels, names)


def _rows(mask: np.ndarray) -> str:
    rows = np.flatnonzero(mask)
    more = f" and {rows.size - _MAX_IN_MESSAGE} more" if rows.size > _MAX_IN_MESSAGE else ""
    return ", ".join(str(int(r)) for r in rows[:_MAX_IN_MESSAGE]) + more


def _class_names(
    frame: Any, labels: np.ndarray, configured: tuple[str, ...] | None, path: str, names_of: str | None
) -> tuple[str, ...]:
    """The configured names, else those of the ``class_name`` column, else the indices; a label
    with two names in the column (or another than the configured one) is an error."""
    count = len(configured) if configured is not None else int(labels.max()) + 1
    names = list(configured) if configured is not None else [str(i) for i in range(count)]
    if "class_name" not in frame.columns:
        return tuple(names)
    pairs = frame.assign(label=labels)[["label", "class_name"]].dropna().drop_duplicates()
    clashing = pairs["label"][pairs["label"].duplicated()].unique()
    if clashing.size:
        label = int(clashing[0])
        raise InputError(
            f"label {label} has several names: {sorted(pairs['class_name'][pairs['label'] == label])[:_MAX_IN_MESSAGE]}",
            path=path,
            field="class_name",
        )
    for label, name in zip(pairs["label"].to_numpy(), pairs["class_name"].to_numpy()):
        if label >= count:
            continue  # reported as a label beyond the configured classes
        if configured is not None and configured[label] != name:
            rows = _rows((labels == label) & (frame["class_name"].to_numpy() == name))
            whose = names_of or "the config's class_names"
            raise InputError(
                f"names class {int(label)} {name!r}, {whose} {configured[label]!r} (rows {rows})",
                path=path,
                field="class_name",
            )
        names[label] = str(name)
    return tuple(names)


class LabelsSource(BaseDatasetSource):
    name = "labels"
    required: tuple[str, ...] = ("path",)
    has_images = False

    def classes(self, dataset: Mapping[str, Any]) -> int | None:
        """The configured class names' count, else the largest label of the file plus one (None
        while the file is missing or unreadable: :meth:`check_paths` reports it)."""
        if dataset.get("class_names"):
            return len(dataset["class_names"])
        try:
            return len(read_label_file(dataset["path"]).class_names)
        except (InputError, KeyError):
            return None

    def check_paths(self, dataset: Mapping[str, Any], name: str) -> None:
        """The file exists and reads (checked before any job, so a bad file stops the run early)."""
        read_label_file(dataset["path"], dataset.get("class_names"), field=f"datasets.{name}.path")

    def input_files(self, dataset: Mapping[str, Any]) -> list[str]:
        return [str(dataset["path"])]

    def sample_ids(self, dataset: Mapping[str, Any], name: str) -> np.ndarray | None:
        """The ids of the label file (read once per version of the file)."""
        return read_label_file(dataset["path"], dataset.get("class_names"), field=f"datasets.{name}.path").sample_ids

    def open_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        return read_label_file(dataset["path"], dataset.get("class_names"), field=f"datasets.{name}.path")

    def load_split(self, dataset: Mapping[str, Any], split: Split, name: str) -> Any:
        raise InputError(
            f"source '{self.name}' holds labels, no images: only the outputs of models of source predictions can be "
            "evaluated on it",
            field=f"datasets.{name}.source",
        )


SOURCE = LabelsSource()
