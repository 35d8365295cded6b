"""Atomic file writing: write to a temporary name in the same directory, then rename.

A reader (or a resumed Snakemake run) therefore sees either the old file or the
complete new one, never a half-written file, even if the writer is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    The temporary file is removed if the body raises (including ``OSError`` from a
    full disk), so nothing half-written is left behind.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file for writing that replaces ``path`` when closed cleanly."""
    if not any(flag in mode for flag in "wx"):
        raise ValueError(f"atomic_open is for writing, got mode {mode!r}")
    with atomic_path(path) as tmp:
        with open(tmp, mode.replace("x", "w"), **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())


def write_json(path: str | Path, payload: Any) -> None:
    """Write ``payload`` as indented, key-sorted JSON, atomically."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2, sort_keys=True, allow_nan=False)
        handle.write("\n")


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` atomically."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
