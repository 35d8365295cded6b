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


@contextlib.contextmanager
def job_log(snakemake: Any) -> Iterator[TextIO]:
    """Redirect stdout, stderr and ``logging`` into the job's first log file."""
    log_files = list(getattr(snakemake, "log", []))
    if not log_files:
        yield sys.stderr
        return
    path = Path(log_files[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", buffering=1) as stream:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        try:
            with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
                yield stream
        except BaseException:
            traceback.print_exc(file=stream)
            raise
        finally:
            root.removeHandler(handler)


def limit_threads(threads: int | None) -> None:
    """Give torch exactly the job's threads (``None``: leave it). Its default, every core,
    oversubscribes the machine when Snakemake runs jobs side by side (CleaneX, for one, then
    runs many times slower)."""
    if threads is not None:
        import torch

        torch.set_num_threads(max(1, int(threads)))
