"""``dataset``: a published shift set, its images read from its own files with the base dataset's
labels (:mod:`classwise.data.shift_sets`): ``params`` hold ``family``, ``set`` (the
``datasets.<name>.shift_sets`` key), ``root``, the family's own keys (``corruption``,
``severity``, ``variant``, ...), ``paired`` (the images are copies of the base's test images,
with their sample ids) and ``restricted`` (the outputs are restricted to the set's classes). A
``datasets.<name>.shift_sets`` entry expands into these shifts, not the ``shifts:`` section."""

from __future__ import annotations

from typing import Any

import numpy as np

from classwise.shifts.kinds.base import ImageSources, ShiftKind, ShiftSpec


class PublishedSet(ShiftKind):
    name = "dataset"

    def paired(self, spec: ShiftSpec) -> bool:
        return bool(spec.params.get("paired"))

    def restricted(self, spec: ShiftSpec) -> bool:
        return bool(spec.params.get("restricted"))

    def shift_set(self, spec: ShiftSpec) -> str | None:
        return str(spec.params["set"])

    def transformed(self, spec: ShiftSpec) -> bool:
        return self.paired(spec) and not self.restricted(spec)

    def severity_step(self, spec: ShiftSpec) -> tuple[str, int] | None:
        """A published corrupted copy (CIFAR-10-C, ImageNet-C): its corruption in its set (the
        prefix of its name, ``<set>_<corruption>``) at its severity."""
        if "corruption" not in spec.params or "severity" not in spec.params:
            return None
        return f"{spec.params['set']}_{spec.params['corruption']}", int(spec.params["severity"])

    def evaluation_images(self, spec: ShiftSpec, sources: ImageSources) -> tuple[Any, np.ndarray | None]:
        return sources.shift_set(spec)


KIND = PublishedSet()
