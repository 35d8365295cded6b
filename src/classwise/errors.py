"""Errors raised for bad user input.

Every message names the file (when there is one), the field and what was expected,
so that a user can fix the input without reading a traceback. A field is named by its path in
one style, :func:`field_path`'s: keys joined by dots, list positions in brackets
(``shifts.pgd[0].eps``). :func:`check_count` is the one check of a count (an integer, not a
bool, at least some minimum), which every layer of the library makes.
"""

from __future__ import annotations

import numbers
from pathlib import Path

__all__ = ["InputError", "check_count", "field_path"]


def field_path(*parts: str | int) -> str:
    """The path of a field in a config or file, in the one style of every message: keys joined
    by dots, list positions in brackets. ``field_path("shifts", "pgd", 0, "eps")`` is
    ``shifts.pgd[0].eps``; a part may be a path already (``field_path("datasets.digits", "shifts")``),
    and a path that starts with a position is ``[3]`` (the fourth entry of a file's top-level list)."""
    path = ""
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


class InputError(ValueError):
    """Bad user input: a file, a field, and what was expected instead."""

    def __init__(self, message: str, *, path: str | Path | None = None, field: str | None = None):
        self.path = None if path is None else str(path)
        self.field = field
        #: What was expected, without the file and the field.
        self.message = message
        where = []
        if self.path is not None:
            where.append(self.path)
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


def check_count(
    value: object, field: str, *, minimum: int = 1, meaning: str | None = None, path: str | Path | None = None
) -> int:
    """``value`` as a plain ``int`` when it is an integer ``>= minimum``: a Python ``int`` or a
    numpy integer (any :class:`numbers.Integral`), never a bool (nor ``np.bool_``), a float or a
    string, even one of integral value. Else an :class:`InputError` naming ``field`` (and the
    file ``path``, when given): ``expected an integer >= {minimum}, got {value!r}``, with
    ``meaning`` in brackets after the bound where the field's name says less
    (``expected an integer >= 0 (a class index), got -1``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        note = f" ({meaning})" if meaning else ""
        raise InputError(f"expected an integer >= {minimum}{note}, got {value!r}", path=path, field=field)
    return int(value)
