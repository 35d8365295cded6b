"""``clean``: the dataset's test images as they are (``params == {}``); ``shifts.clean: true``
(the default) adds it. It needs no images, so a dataset given by its labels alone has it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from classwise.errors import InputError
from classwise.shifts.kinds.base import Entry, ShiftKind, ShiftSpec


def clean_spec() -> ShiftSpec:
    return ShiftSpec(name="clean", kind=KIND.name, params={})


class Clean(ShiftKind):
    name = "clean"
    config_keys = ("clean",)
    needs_images = False

    def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
        clean = section.get("clean", True)
        if not isinstance(clean, bool):
            raise InputError(f"expected true or false, got {clean!r}", field="shifts.clean")
        return [Entry("shifts.clean", {}, [clean_spec()])] if clean else []


KIND = Clean()
