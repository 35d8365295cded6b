"""The shift kinds: one module per ``kind`` of a shift's specification, one registry of them.

Every kind answers the questions of :class:`~classwise.shifts.kinds.base.ShiftKind`: the shifts
of its ``shifts:`` entries, checked once; what its shifts are (paired with clean, restricted to
classes, an attack on the model, crafted on another model, a published set, needing images,
fitting a dataset's classes); which images a job evaluates and how it makes each batch. Nothing
outside this package branches on a shift's kind (``tests/test_architecture.py``): a
:class:`~classwise.shifts.kinds.base.ShiftSpec` asks its kind. Adding a kind is one module here,
one line in the registry below and its test (docs/architecture.md).

The order of the registry is the order in which the ``shifts:`` section expands. Importing this
package imports no torch: a kind imports it when a job makes a batch.
"""

from __future__ import annotations

from classwise.shifts.kinds import autoattack, clean, corruption, dataset, labels, pgd, transfer
from classwise.shifts.kinds.base import KINDS, Batch, Entry, ImageSources, Misfit, Run, ShiftKind, ShiftSpec, shift_kind

__all__ = ["KINDS", "Batch", "Entry", "ImageSources", "Misfit", "Run", "ShiftKind", "ShiftSpec", "shift_kind"]

KINDS.update(
    (kind.name, kind)
    for kind in (
        clean.KIND,
        corruption.KIND,
        pgd.KIND,
        autoattack.KIND,
        transfer.KIND,
        dataset.KIND,
        labels.KIND,
    )
)
