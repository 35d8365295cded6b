"""Image sets: the in-memory container and the embedded digits demo data.

The names below are imported on first use, so that importing a submodule (as the workflow does
at DAG-build time) does not load the digits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from classwise._extras import import_module

if TYPE_CHECKING:
    from classwise.data.digits import load_digits_imageset, load_digits_split
    from classwise.data.imageset import ImageSet

_LAZY = {
    "ImageSet": "classwise.data.imageset",
    "load_digits_imageset": "classwise.data.digits",
    "load_digits_split": "classwise.data.digits",
}

__all__ = ["ImageSet", "load_digits_imageset", "load_digits_split"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)  # names the extra when torch & co. are missing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
