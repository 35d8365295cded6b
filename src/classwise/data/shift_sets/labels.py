"""Shifts of a dataset given by its labels alone (``source: labels``): each shift a file of labels,
no images; the models evaluated on them give their outputs from files (``source: predictions``).

An entry::

    datasets:
      contrast:
        source: labels
        path: contrast_c100.csv              # the reference set: shift clean
        shift_sets:
          contrast:                          # the key: the prefix of its shifts' names
            family: labels
            files: {c50: contrast_c50.csv, c30: contrast_c30.csv, c100_again: null}
            severities: {c50: 1, c30: 2}     # optional
            paired: true                     # default; or per shift: {c50: true, c30: false}

expands into the shifts ``contrast_c50``, ``contrast_c30`` and ``contrast_c100_again``, of kind
``labels`` (:mod:`classwise.shifts.kinds.labels`). Each reads its own ``sample_id,label[,class_name]``
file (``null``: the dataset's own, the same samples as clean) in the dataset's classes. A
*paired* shift holds the reference set's samples where its sample ids are the reference's: it is
compared with clean on the ids both hold (and its flip rates counted on them); an unpaired one
(``paired: false``) is a set of other samples, compared with the whole reference set. A shift
with a severity is one step of the entry's corruption family (its key): the corruption errors
average it and the severity curves draw it.

Checked before any job (:meth:`LabelsFamily.check_samples`): every file reads, its labels are
classes of the dataset and its class names the dataset's, and a paired shift shares sample ids
with the reference set and gives them the reference's labels.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from classwise.data.shift_sets.base import ShiftFamily, ShiftImages
from classwise.errors import InputError, check_count, field_path
from classwise.shifts.spec import ShiftSpec

_CONDITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_MAX_IDS_IN_MESSAGE = 5


class LabelsFamily(ShiftFamily):
    name = "labels"
    description = "shifts given by labels files (no images)"
    options = ("files", "severities", "paired")
    takes_root = False

    def shifts(self, key: str, entry: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        files = entry.get("files")
        if not isinstance(files, Mapping) or not files:
            raise InputError(
                f"expected a mapping condition -> labels file (null: the dataset's own), got {files!r}", field=f"{where}.files"
            )
        for condition, path in files.items():
            if not isinstance(condition, str) or not _CONDITION.match(condition):
                raise InputError(
                    f"expected a name of letters, digits, '_', '.' or '-', got {condition!r}", field=f"{where}.files"
                )
            if path is not None and (not isinstance(path, str) or not path.strip()):
                raise InputError(
                    f"expected the path of a sample_id,label[,class_name] file, or null for the dataset's own, got {path!r}",
                    field=field_path(where, "files", condition),
                )
        severities = _per_condition(entry, "severities", files, where, default=None)
        paired = _per_condition(entry, "paired", files, where, default=True)
        specs = []
        for condition, path in files.items():
            severity, pairs = severities[condition], paired[condition]
            if severity is not None:
                severity = check_count(severity, field_path(where, "severities", condition), meaning="a severity")
            if not isinstance(pairs, bool):
                raise InputError(f"expected true or false, got {pairs!r}", field=field_path(where, "paired", condition))
            params: dict[str, Any] = {
                "family": self.name,
                "set": key,
                "condition": condition,
                "labels": path,  # None until check_samples reads the dataset's own path
                "paired": pairs,
            }
            if severity is not None:
                params["severity"] = int(severity)
            specs.append(ShiftSpec(name=f"{key}_{condition}", kind="labels", params=params))
        return specs

    def check_base(
        self, base_name: str, base: Mapping[str, Any], classes: int | None, shape: tuple[int, ...] | None, where: str
    ) -> None:
        from classwise.data.sources import has_images

        if has_images(base):
            raise InputError(
                f"{self.description} belong to a dataset of labels alone (source: labels), not of source "
                f"{base.get('source')!r}, whose models run on images",
                field=f"{where}.family",
            )

    def check_samples(self, specs: list[ShiftSpec], base_name: str, base: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        """Each shift's labels file read in the dataset's classes (the dataset's own for ``null``,
        filled in), and, for a paired shift, its ids shared with the dataset's, with its labels."""
        from classwise.data.sources.labels import read_label_file, read_shift_labels

        reference = read_label_file(base["path"], base.get("class_names"), field=f"datasets.{base_name}.path")
        checked = []
        for spec in specs:
            condition = spec.params["condition"]
            path = spec.params["labels"]
            if path is None:
                checked.append(ShiftSpec(spec.name, spec.kind, {**spec.params, "labels": str(base["path"])}))
                continue
            samples = read_shift_labels(path, reference, dataset=base_name, field=field_path(where, "files", condition))
            if spec.params["paired"]:
                _check_paired(samples.sample_ids, samples.labels, reference.sample_ids, reference.labels, path, base["path"])
            checked.append(spec)
        return checked

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        raise InputError(f"{self.description} have no images to open", field=where)


def _per_condition(entry: Mapping[str, Any], key: str, files: Mapping[str, Any], where: str, *, default: Any) -> dict[str, Any]:
    """``entry[key]`` per condition: one value for all, or a mapping condition -> value (the
    conditions it leaves out get ``default``); a condition that is no key of ``files`` is an error."""
    value = entry.get(key, default)
    if not isinstance(value, Mapping):
        return dict.fromkeys(files, value)
    unknown = [condition for condition in value if condition not in files]
    if unknown:
        raise InputError(
            f"names condition {unknown[0]!r}, which is no key of files; expected some of {list(files)}",
            field=field_path(where, key, str(unknown[0])),
        )
    return {condition: value.get(condition, default) for condition in files}


def _check_paired(
    ids: np.ndarray, labels: np.ndarray, reference_ids: np.ndarray, reference_labels: np.ndarray, path: str, reference: str
) -> None:
    """A paired shift shares sample ids with the reference set, and gives them its labels."""
    import pandas as pd

    positions = pd.Index(reference_ids).get_indexer(ids)
    shared = positions >= 0
    if not shared.any():
        raise InputError(
            f"shares no sample id with the dataset's labels file {reference} (e.g. {ids[:_MAX_IDS_IN_MESSAGE].tolist()}), so "
            "it cannot be paired with clean; set paired: false for a set of other samples",
            path=path,
            field="sample_id",
        )
    differ = np.flatnonzero(shared & (labels != reference_labels[np.where(shared, positions, 0)]))
    if differ.size:
        raise InputError(
            f"labels differ from those of the dataset's labels file {reference} on {differ.size} shared sample ids, e.g. "
            f"{ids[differ[:_MAX_IDS_IN_MESSAGE]].tolist()} (rows {differ[:_MAX_IDS_IN_MESSAGE].tolist()}); a paired shift "
            "holds the same samples (set paired: false for other samples)",
            path=path,
            field="label",
        )


LABELS = LabelsFamily()
