"""Errors raised for bad user input.

Every message names the file (when there is one), the field and what was expected,
so that a user can fix the input without reading a traceback.
"""

from __future__ import annotations

from pathlib import Path


class InputError(ValueError):
    """Bad user input: a file, a field, and what was expected instead."""

    def __init__(self, message: str, *, path: str | Path | None = None, field: str | None = None):
        self.path = None if path is None else str(path)
        self.field = field
        where = []
        if self.path is not None:
            where.append(self.path)
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
