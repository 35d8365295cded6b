"""The pieces the captions of the outputs share: the source a table mirrors and the note on
corruptions made on the fly."""

from __future__ import annotations

from classwise.references import cite
from classwise.shifts.corruptions import own_definitions_note


def with_source(caption: str, key: str, locator: str, *shifts: str) -> str:
    """``caption``, the source it mirrors (``Source: Bitterwolf et al., 2022, Table 1 (link).``)
    and, when one of ``shifts`` is a corruption made on the fly, the note that it is classwise's own."""
    return " ".join(filter(None, [caption, f"Source: {cite(key, locator)}.", own_definitions_note(shifts)]))
