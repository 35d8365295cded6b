"""Atomic file writing: write to a temporary name in the same directory, then rename.

A reader (or a resumed Snakemake run) therefore sees either the old file or the
complete new one, never a half-written file, even if the writer is killed.

A storage error while writing (a full disk, a quota, a read-only or failing file system) is
re-raised as an ``OSError`` with the same ``errno`` whose ``filename`` is the target, not the
temporary name, so the message says which output could not be written. A writer killed with
SIGKILL cannot clean up: it may leave a hidden ``.<name>.<random>.tmp`` beside the target, never
a file under the target's name.

The file gets the permissions a plain ``open(path, "w")`` would give (``0o666`` less the
process umask), not ``mkstemp``'s owner-only ``0o600``: results are meant to be shared.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

#: ``errno`` values of a failing write to storage (not, e.g., of a network error inside a download).
STORAGE_ERRNOS = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG, errno.EROFS, errno.EIO) if code
)


#: Permissions of a new file before the umask, as ``open()`` creates it.
_NEW_FILE_MODE = 0o666


def current_umask() -> int:
    """The process umask, read without changing it where the system allows.

    ``os.umask`` can only be read by setting it, which for a moment gives other threads'
    new files the wrong permissions; Linux reports it in ``/proc/self/status`` instead.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _naming_target(error: OSError, target: Path, tmp: Path | None) -> OSError | None:
    """A copy of storage error ``error`` whose ``filename`` is ``target`` (``None``: keep ``error``,
    e.g. one that already names another file, such as a nested atomic write's target)."""
    if error.errno not in STORAGE_ERRNOS:
        return None
    if tmp is not None and error.filename not in (None, str(tmp)):
        return None
    return OSError(error.errno, error.strerror or str(error), str(target))


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    The temporary file is removed if the body raises (including ``OSError`` from a
    full disk), so nothing half-written is left behind; a storage error names ``path``.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        renamed = _naming_target(error, target, None)
        if renamed is None:
            raise
        raise renamed from error
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        os.chmod(tmp, _NEW_FILE_MODE & ~current_umask())
        yield tmp
        os.replace(tmp, target)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        renamed = _naming_target(error, target, tmp)
        if renamed is None:
            raise
        raise renamed from error
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
