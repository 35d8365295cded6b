"""Glue for the thin Snakemake scripts in ``scripts/``.

A script runs ``with job_log(snakemake) as log:``; everything the job prints (progress bars,
warnings, tracebacks) lands in the rule's ``log:`` file rather than on the terminal. A job that
succeeds ends its log with one :data:`COST_PREFIX` line: its wall and CPU time, and how much of
each went before the step began (starting Python, unpickling Snakemake's job object and the
script's imports), which ``classwise.bench.demo`` adds up per rule.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from classwise.errors import InputError


@contextlib.contextmanager
def job_log(snakemake: Any, *, exit_when_done: bool = False) -> Iterator[TextIO]:
    """Redirect stdout, stderr and ``logging`` into the job's first log file.

    ``exit_when_done`` ends the process as soon as the job has succeeded and its log is
    closed, skipping the interpreter's teardown: with torch, pandas and matplotlib loaded that
    teardown costs a job more CPU than most jobs' own work (about 1.4 CPU-seconds, measured on
    16 jobs: ``python -m classwise.bench.demo`` shows it per rule), and Snakemake waits for it.
    Every output is written and closed by then (the atomic writers), so nothing is lost; code
    after the ``with`` block does not run, so only a script with nothing after it passes it.
    The process ends only when it is the job's own (the script runs as ``__main__`` with this
    ``snakemake`` object, as Snakemake runs it): a script run in-process by a test, through
    :func:`runpy.run_path`, returns as usual.

    When the job fails, the log starts with the error in one line (for bad input, the
    :class:`InputError` message naming the file, the field and what was expected), followed by
    what the job printed and the traceback; the same line goes to the terminal, where Snakemake
    reports the failed job. Bad input exits with status 1 without a traceback on the terminal;
    under the console of ``make run`` (:data:`QUIET_JOBS_VARIABLE` set) every failure does, and
    the line goes to the log only, as the console prints it with the log's path.
    """
    before = _cost_so_far()
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
        if failure is None and before is not None:
            after = _cost_so_far()
            if after is not None:
                stream.write(cost_line(wall=after[0], cpu=after[1], wall_before=before[0], cpu_before=before[1]) + "\n")
    if failure is None:
        if exit_when_done and _runs_as_the_job(snakemake):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        return
    summary = error_line(failure)
    path.write_text(f"{summary}\n\n{path.read_text(encoding='utf-8')}", encoding="utf-8")
    console_reports_it = os.environ.get(QUIET_JOBS_VARIABLE) == "1"
    if not console_reports_it:
        print(summary, file=terminal)
    if isinstance(failure, InputError) or (console_reports_it and _runs_as_the_job(snakemake)):
        raise SystemExit(1)
    raise failure


def _runs_as_the_job(snakemake: Any) -> bool:
    return getattr(sys.modules.get("__main__"), "snakemake", None) is snakemake


#: The start of a failed job's first log line (see :func:`error_line`).
ERROR_PREFIX = "classwise: error: "

#: Set by the console of ``make run`` (``snakemake --logger classwise``, classwise.pipeline.console),
#: which prints a failed job's cause and the path of its log itself: the job then leaves the
#: terminal alone (its error line and traceback go to its log only) and exits with status 1.
QUIET_JOBS_VARIABLE = "CLASSWISE_QUIET_JOBS"


def error_line(error: BaseException) -> str:
    """One line for a failed job: an InputError's own message (file, field, expectation), else
    the exception's type and message."""
    message = " ".join(str(error).split())
    if isinstance(error, InputError):
        return f"{ERROR_PREFIX}{message}"
    return f"{ERROR_PREFIX}{type(error).__name__}: {message}"


#: The start of the last line of a successful job's log (see :func:`cost_line`).
COST_PREFIX = "classwise: job cost:"


def cost_line(*, wall: float, cpu: float, wall_before: float, cpu_before: float) -> str:
    """``classwise: job cost: wall=W cpu=C wall_before=WB cpu_before=CB`` (seconds since the
    process started; CPU is user + system of the process and its waited-for children)."""
    return f"{COST_PREFIX} wall={wall:.3f} cpu={cpu:.3f} wall_before={wall_before:.3f} cpu_before={cpu_before:.3f}"


def parse_cost_line(line: str) -> dict[str, float] | None:
    """The numbers of a :func:`cost_line`, or None for any other line."""
    if not line.startswith(COST_PREFIX):
        return None
    fields = dict(item.split("=", 1) for item in line[len(COST_PREFIX) :].split())
    return {key: float(value) for key, value in fields.items()}


def _cost_so_far() -> tuple[float, float] | None:
    """(wall seconds since this process started, CPU seconds it used); None where the process's
    start time cannot be read (not Linux)."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    started = int(stat[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of proc(5): start time in ticks
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    return uptime - started, cpu
