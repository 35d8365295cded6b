"""``labels``: a shift given by a file of labels alone, no images (a condition of an experiment
whose classifications come from elsewhere: a model's predictions, a human observer's answers).
A ``datasets.<name>.shift_sets`` entry of family ``labels`` expands into these shifts
(:mod:`classwise.data.shift_sets.labels`), not the ``shifts:`` section. ``params``: ``family``
(``labels``), ``set`` (the entry's key), ``condition`` (the shift's key in the entry's ``files``),
``labels`` (its ``sample_id,label[,class_name]`` file, or the dataset's own), ``paired`` (the
samples are the reference set's where their ids match: compared with ``clean`` on the shared
ids, flip rates included) and, optionally, ``severity``: a shift with a severity is a corrupted
copy of the reference set, one step of the entry's corruption family (its key), so the
corruption errors average it and the severity curves draw it.

Its samples are those of its labels file, so every model evaluated on it gives its outputs from
a file (``source: predictions``), matched by sample id."""

from __future__ import annotations

from typing import Any

import numpy as np

from classwise.shifts.kinds.base import ImageSources, ShiftKind, ShiftSpec


class LabelsShift(ShiftKind):
    name = "labels"
    needs_images = False

    def paired(self, spec: ShiftSpec) -> bool:
        return bool(spec.params.get("paired", True))

    def shift_set(self, spec: ShiftSpec) -> str | None:
        return str(spec.params["set"])

    def transformed(self, spec: ShiftSpec) -> bool:
        return self.paired(spec)

    def corrupted(self, spec: ShiftSpec) -> bool:
        return self.severity_step(spec) is not None

    def severity_step(self, spec: ShiftSpec) -> tuple[str, int] | None:
        severity = spec.params.get("severity")
        return None if severity is None else (str(spec.params["set"]), int(severity))

    def labels_file(self, spec: ShiftSpec) -> str | None:
        return str(spec.params["labels"])

    def evaluation_images(self, spec: ShiftSpec, sources: ImageSources) -> tuple[Any, np.ndarray | None]:
        return sources.labelled_samples(str(spec.params["labels"])), None


KIND = LabelsShift()
