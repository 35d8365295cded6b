"""Glue for the thin Snakemake scripts in ``scripts/``.

A script runs ``with job_log(snakemake) as log:``; everything the job prints (progress bars,
warnings, tracebacks) lands in the rule's ``log:`` file rather than on the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from classwise.errors import InputError


@contextlib.contextmanager
def job_log(snakemake: Any) -> Iterator[TextIO]:
    """Redirect stdout, stderr and ``logging`` into the job's first log file.

    When the job fails, the log starts with the error in one line (for bad input, the
    :class:`InputError` message naming the file, the field and what was expected), followed by
    what the job printed and the traceback; the same line goes to the terminal, where Snakemake
    reports the failed job. Bad input exits with status 1 without a traceback on the terminal.
    """
    log_files = list(getattr(snakemake, "log", []))
    if not log_files:
        yield sys.stderr
        return
    path = Path(log_files[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stderr
    failure: BaseException | None = None
    with open(path, "w", encoding="utf-8", buffering=1) as stream:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
                yield stream
        except Exception as error:
            traceback.print_exc(file=stream)
            failure = error
        finally:
            root.removeHandler(handler)
    if failure is None:
        return
    summary = error_line(failure)
    path.write_text(f"{summary}\n\n{path.read_text(encoding='utf-8')}", encoding="utf-8")
    print(summary, file=terminal)
    if isinstance(failure, InputError):
        raise SystemExit(1)
    raise failure


def error_line(error: BaseException) -> str:
    """One line for a failed job: an InputError's own message (file, field, expectation), else
    the exception's type and message."""
    message = " ".join(str(error).split())
    if isinstance(error, InputError):
        return f"classwise: error: {message}"
    return f"classwise: error: {type(error).__name__}: {message}"
