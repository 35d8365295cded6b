"""What ``make run`` prints: Snakemake's run as a progress line, each failed job's cause and log,
a bad config's one message, and at the end the three things to open.

A Snakemake logger plugin, ``snakemake --logger classwise`` (the package
``snakemake_logger_plugin_classwise`` hands Snakemake :class:`Console`). Snakemake's own log file,
``.snakemake/log/<time>.snakemake.log``, is written in full as without it; without ``--logger``
Snakemake prints what it always prints (docs/pipeline.md, "What make run prints").

On a terminal the progress is one line, rewritten in place; elsewhere (a CI log, a pipe) a line at
each tenth of the jobs, naming the rules finished since the line before.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

from classwise.pipeline.scripting import ERROR_PREFIX, QUIET_JOBS_VARIABLE

#: Lines of a non-terminal run's progress: one at each tenth of the jobs.
PROGRESS_STEPS = 10

#: The header Snakemake puts above an error's message: ``InputError in file "...", line 41:``,
#: ``RuleException:``, ``WorkflowError in rule x in file "...", line 3:``.
_ERROR_HEADER = re.compile(r'^\w+( in rule \S+)?( in file ".*", line \d+)?:$')

#: What the things to open are, in the order they are listed.
THINGS_TO_OPEN = (
    ("explorer.html", "every class, model and shift in one page (open it in a browser)"),
    ("tables", "the paper tables"),
    ("README.md", "every file of the run and the paper table or figure it mirrors"),
)


def error_message(snakemake_text: str) -> list[str]:
    """The lines of an exception's message as Snakemake formats it, without Snakemake's header
    line and its traceback lines (``  File "...", line ...``): for an :class:`InputError`, its
    one line naming the file, the field and what was expected."""
    lines = [line for line in snakemake_text.splitlines() if line.strip() and not line.startswith('  File "')]
    return [line for line in lines if not _ERROR_HEADER.match(line)]


def job_failure_cause(log: Path) -> str:
    """Why a job failed, from its log: the first line that ``job_log`` writes for a failed job,
    else the log's last line (a job that failed before its log was set up), else a note."""
    try:
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return "it wrote no log (Snakemake's log has its exit status)"
    if lines and lines[0].startswith(ERROR_PREFIX):
        return lines[0][len(ERROR_PREFIX) :]
    return lines[-1].strip() if lines else "its log is empty (Snakemake's log has its exit status)"


def jobs_phrase(count: int) -> str:
    """``1 job``, ``166 jobs``."""
    return f"{count} job{'' if count == 1 else 's'}"


def duration(seconds: float) -> str:
    """``42 s``, ``2 min 05 s``."""
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


def results_dir(configfiles: list[Any]) -> str:
    """The config's ``output_dir`` (the last config file that sets it, as Snakemake's merge
    would; the schema's default ``results`` otherwise)."""
    import yaml

    found = "results"
    for configfile in configfiles:
        try:
            config = yaml.safe_load(Path(configfile).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(config, dict) and isinstance(config.get("output_dir"), str):
            found = config["output_dir"]
    return found


class Console(LogHandlerBase):
    """Snakemake's log records as ``make run`` prints them (see the module's docstring)."""

    def __post_init__(self) -> None:
        self.stream: TextIO = sys.stdout if self.common_settings.stdout else sys.stderr
        self.on_terminal = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        # Snakemake changes into --directory after this; paths are printed relative to here.
        self.invoked_in = os.getcwd()
        # This console reports a failed job's cause and log; the job writes them to its log only.
        os.environ[QUIET_JOBS_VARIABLE] = "1"
        self.started = time.monotonic()
        self.results = os.path.abspath("results")
        self.jobs: dict[int, tuple[str, dict[str, Any]]] = {}  # job id -> rule, wildcards
        self.running: Counter[str] = Counter()
        self.jobs_of_rule: Counter[str] = Counter()
        self.done_of_rule: Counter[str] = Counter()
        self.rules_done_unreported: list[str] = []
        self.done = self.total = 0
        self.cores: int | None = None
        self.planned = False  # Snakemake got as far as its table of jobs (not in a dry run)
        self.dry_run_shown = False
        self.up_to_date = False
        self.failed_jobs = 0
        self.errors_shown = 0
        self.next_progress_line = 0
        self.status_shown = False
        self.logfile: str | None = None
        self.closed = False

    # --------------------------------------------------------------- Snakemake's records

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._handle(record)
        except Exception:  # a broken console must not stop the run; Snakemake's log file has everything
            self.handleError(record)

    def _handle(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.INFO:
            return
        fields: dict[str, Any] = record.__dict__  # Snakemake's extra fields of the event
        event = fields.get("event")
        message = record.getMessage() if record.msg is not None else ""
        if event == LogEvent.WORKFLOW_STARTED:
            self.results = os.path.abspath(results_dir(list(fields.get("configfiles") or [])))
        elif event == LogEvent.RESOURCES_INFO and fields.get("cores") is not None:
            self.cores = fields["cores"]
        elif event == LogEvent.RUN_INFO:
            self._planned(dict(fields.get("stats", {})), message)
        elif event == LogEvent.JOB_INFO:
            self.jobs[fields["jobid"]] = (fields["rule_name"], dict(fields.get("wildcards") or {}))
            self.running[fields["rule_name"]] += 1
            self._show_status()
        elif event == LogEvent.JOB_FINISHED:
            self._finished(fields["job_id"])
        elif event == LogEvent.PROGRESS:
            self.done, self.total = fields["done"], fields["total"]
            self._progress()
        elif event == LogEvent.JOB_ERROR:
            self._job_failed(fields["rule_name"], fields["jobid"], list(fields.get("log") or []))
        elif event == LogEvent.GROUP_ERROR:
            for info in fields.get("job_error_info", []):
                self._job_failed(info["rule_name"], info["jobid"], list(info.get("log") or []))
        elif event == LogEvent.ERROR:
            self._error(fields.get("exception", ""), message)
        elif event is None:
            self._plain(record, message)

    def _planned(self, stats: dict[str, int], table: str) -> None:
        if self.common_settings.dryrun:  # the plan's table, which a dry run logs twice, once
            if not self.dry_run_shown:
                self._print(table.rstrip() + "\n(a dry run: nothing was run)")
            self.dry_run_shown = True
            return
        self.planned = True
        self.total = stats.pop("total", sum(stats.values()))
        self.jobs_of_rule = Counter(stats)
        self.next_progress_line = 1
        cores = f" on {self.cores} core{'s' if self.cores != 1 else ''}" if self.cores else ""
        self._print(
            f"Running {jobs_phrase(self.total)}{cores}; Snakemake's full log goes to "
            f"{self._shown(os.path.abspath('.snakemake/log'))}/ (make run VERBOSE=1 prints it here)."
        )

    def _finished(self, job_id: int) -> None:
        rule, _ = self.jobs.pop(job_id, ("", {}))
        if not rule:
            return
        self.running[rule] -= 1
        self.done_of_rule[rule] += 1
        if self.done_of_rule[rule] == self.jobs_of_rule[rule]:
            self.rules_done_unreported.append(rule)

    def _job_failed(self, rule: str, jobid: int, logs: list[str]) -> None:
        self.failed_jobs += 1
        _, wildcards = self.jobs.pop(jobid, (rule, {}))
        self.running[rule] -= 1
        where = f" ({', '.join(map(str, wildcards.values()))})" if wildcards else ""
        if logs:
            log = os.path.abspath(logs[0])
            lines = [f"FAILED {rule}{where}: {job_failure_cause(Path(log))}", f"  its log: {self._shown(log)}"]
        else:
            lines = [f"FAILED {rule}{where}: the rule has no log; Snakemake's log has its error"]
        self._print("\n".join(lines))

    def _error(self, exception: str, message: str) -> None:
        if "CalledProcessError" in message or (self.failed_jobs and "At least one job did not complete" in message):
            return  # a job's failed command (its JOB_ERROR follows) and Snakemake's closing words
        lines = error_message(message)
        if not lines:
            return
        self.errors_shown += 1
        if exception == "InputError":
            self._print("\n".join([ERROR_PREFIX + lines[0], *lines[1:]]))
        else:
            where = self._shown(os.path.abspath(".snakemake/log"))
            self._print("\n".join([f"{ERROR_PREFIX}{exception}: {lines[0]}", *lines[1:], f"(the traceback: {where}/)"]))

    def _plain(self, record: logging.LogRecord, message: str) -> None:
        if message.startswith("Nothing to be done"):
            self.up_to_date = True
        elif message.startswith("Complete log(s): "):
            self.logfile = message.removeprefix("Complete log(s): ").split(", ")[0]
        elif record.levelno >= logging.WARNING and not message.startswith("Exiting because a job execution failed"):
            self._print(message)

    # --------------------------------------------------------------- the progress line

    def _progress(self) -> None:
        if self.on_terminal:
            self._show_status()
            return
        if not self.total or self.done < self.next_progress_line * self.total / PROGRESS_STEPS and self.done < self.total:
            return
        while self.next_progress_line * self.total / PROGRESS_STEPS <= self.done:
            self.next_progress_line += 1
        finished = ", ".join(f"{rule} ({self.jobs_of_rule[rule]})" for rule in self.rules_done_unreported if rule != "all")
        self.rules_done_unreported = []
        self._print(self._status() + (f"; finished: {finished}" if finished else ""))

    def _status(self) -> str:
        elapsed = time.monotonic() - self.started
        width = len(str(self.total))
        status = f"[{self.done:>{width}}/{self.total}] {100 * self.done // max(self.total, 1):3d} %  {duration(elapsed)}"
        if 0 < self.done < self.total:
            status += f", about {duration(elapsed * (self.total - self.done) / self.done)} left"
        return status

    def _show_status(self) -> None:
        if not (self.on_terminal and self.planned) or self.closed:
            return
        running = ", ".join(rule for rule, count in self.running.items() if count > 0)
        line = self._status() + (f"  running: {running}" if running else "")
        columns = shutil.get_terminal_size().columns
        self.stream.write("\r\033[K" + line[: max(columns - 1, 10)])
        self.stream.flush()
        self.status_shown = True

    def _print(self, text: str) -> None:
        """Lines that stay: on a terminal, above the progress line."""
        if self.status_shown:
            self.stream.write("\r\033[K")
            self.status_shown = False
        self.stream.write(text + "\n")
        self.stream.flush()
        self._show_status()

    # --------------------------------------------------------------- the end

    def _shown(self, path: str) -> str:
        """``path`` relative to where Snakemake was started, when below it."""
        relative = os.path.relpath(path, self.invoked_in)
        return path if relative.startswith("..") else relative

    def _things_to_open(self) -> list[str]:
        found = []
        for name, what in THINGS_TO_OPEN:
            path = Path(self.results) / name
            if not path.exists():
                continue
            shown = self._shown(str(path)) + ("/" if path.is_dir() else "")
            if name == "tables":
                tables = sorted(path.glob("*/original/clean/worst_class.md")) or sorted(path.rglob("worst_class.md"))
                what += f", e.g. {self._shown(str(tables[0]))}" if tables else ""
            found.append((shown, what))
        width = max((len(shown) for shown, _ in found), default=0)
        return [f"  {shown:<{width}}  {what}" for shown, what in found]

    def _closing_words(self) -> list[str]:
        log = f"Snakemake's full log: {self._shown(self.logfile)}" if self.logfile else ""
        elapsed = duration(time.monotonic() - self.started)
        if self.failed_jobs:
            return [
                f"Stopped: {jobs_phrase(self.failed_jobs)} failed (above); {self.done} of {jobs_phrase(self.total)} done in {elapsed}.",
                log,
            ]
        if self.common_settings.dryrun or self.errors_shown:
            return []
        if self.up_to_date:
            things = self._things_to_open()
            return ["Nothing to be done: every output is up to date.", *(["Open:", *things] if things else [])]
        if self.planned and self.done == self.total:
            things = self._things_to_open()
            return [f"Done: {jobs_phrase(self.total)} in {elapsed}." + (" Open:" if things else ""), *things, log]
        return [f"Stopped after {self.done} of {jobs_phrase(self.total)} ({elapsed}).", log] if self.planned else []

    def close(self) -> None:
        """Snakemake closes its handlers when the run is over (and Python once more at exit)."""
        if not self.closed:
            self.closed = True
            words = [line for line in self._closing_words() if line]
            if words:
                self._print("\n".join(words))
            elif self.status_shown:
                self.stream.write("\n")
        super().close()

    # --------------------------------------------------------------- what Snakemake asks of a plugin

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False
