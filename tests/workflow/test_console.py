"""The console of ``make run`` (``snakemake --logger classwise``, classwise.pipeline.console): a bad
config's one message, a failed job's cause and log, the progress line on a terminal, and the
Makefile's use of it. A successful run's screen: tests/workflow/test_workflow.py, on its tiny run."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from paths import REPO
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_runner import run_snakemake

from classwise.pipeline.console import Console
from classwise.pipeline.scripting import QUIET_JOBS_VARIABLE


def _console_output(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines of a run, without the one Snakemake's command line prints before any logger
    exists ("Using workflow specific profile ... for setting default command line arguments.")."""
    lines = (result.stdout + result.stderr).splitlines()
    return [line for line in lines if not line.startswith("Using workflow specific profile")]


@pytest.mark.workflow
def test_a_bad_config_prints_its_one_message_and_nothing_of_snakemake(tmp_path: Path) -> None:
    config = {
        "datasets": {"shapes": {"source": "image_folder", "root": "data/no_such_dir"}},
        "models": {"linear": {"source": "train", "train_on": "shapes", "architecture": "linear"}},
        "shifts": {"clean": True},
    }
    configfile = tmp_path / "bad.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, configfile, "--logger", "classwise")
    assert result.returncode != 0
    (line,) = _console_output(result)  # Snakemake alone: a header, the message, 2-6 'File "...' lines
    assert line.startswith(f"classwise: error: {configfile}: field 'datasets.shapes.root': ")
    assert "data/no_such_dir" in line and "does not exist" in line


@pytest.mark.workflow
def test_a_failed_job_prints_its_cause_once_and_its_log(tmp_path: Path) -> None:
    """A predictions file naming no sample of the dataset passes the plan and stops the first
    job (tests/workflow/test_faults.py has the same fault under Snakemake's own output)."""
    rows = "\n".join(f"nope-{i}," + ",".join(["0.1"] * 10) for i in range(3))
    (tmp_path / "net.csv").write_text("sample_id," + ",".join(f"score_{j}" for j in range(10)) + "\n" + rows + "\n")
    config = {
        "datasets": {"digits": {"source": "sklearn_digits"}},
        "models": {"net": {"source": "predictions", "files": {"clean": "net.csv"}}},
        "shifts": {"clean": True},
        "analyses": {name: {"enabled": False} for name in ("subset_tests", "reference_tests", "extrapolation")},
    }
    configfile = tmp_path / "net.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, configfile, "--logger", "classwise")
    assert result.returncode != 0
    lines = _console_output(result)
    log = tmp_path / "results/logs/import_predictions/digits/net/clean.log"
    cause = log.read_text().splitlines()[0].removeprefix("classwise: error: ")
    assert cause.startswith("net.csv: field 'sample_id': ") and "name no sample of dataset 'digits'" in cause
    # the job itself printed nothing (it would have printed the cause, and Snakemake its command
    # and the log with its traceback): the console says it, once
    assert lines[1:] == [
        f"FAILED import_predictions (digits, clean, net): {cause}",
        f"  its log: {log}",
        lines[3],
        f"Snakemake's full log: {lines[-1].split(': ', 1)[1]}",
    ], "\n".join(lines)
    assert lines[0].startswith("Running 11 jobs on 2 cores; ")
    assert lines[3].startswith("Stopped: 1 job failed (above); 0 of 11 jobs done in ")
    assert Path(lines[-1].split(": ", 1)[1]).is_file()  # .snakemake/log/<time>.snakemake.log


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _record(event: LogEvent | None, msg: str | None = None, **extra: object) -> logging.LogRecord:
    return logging.makeLogRecord({"msg": msg, "levelno": logging.INFO, "levelname": "INFO", "event": event, **extra})


def test_on_a_terminal_the_progress_is_one_line_rewritten_in_place(tmp_path: Path, monkeypatch) -> None:
    """Records as Snakemake sends them for a run of 3 jobs (2 of rule a, then all)."""
    monkeypatch.setenv(QUIET_JOBS_VARIABLE, "")  # the console sets it; monkeypatch puts it back
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.yaml").write_text("output_dir: out\n")
    for name in ("explorer.html", "README.md", "tables/d/original/clean/worst_class.md"):
        (tmp_path / "out" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / name).write_text("x")
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    console = Console(SimpleNamespace(stdout=False, dryrun=False), None)
    records = [
        _record(LogEvent.WORKFLOW_STARTED, "Workflow has started!", configfiles=[tmp_path / "config.yaml"]),
        _record(LogEvent.RESOURCES_INFO, "Provided cores: 2", cores=2),
        _record(LogEvent.RUN_INFO, "Job stats: ...", stats={"a": 2, "all": 1, "total": 3}),
        _record(LogEvent.JOB_INFO, jobid=1, rule_name="a", wildcards={"x": "1"}),
        _record(LogEvent.JOB_INFO, jobid=2, rule_name="a", wildcards={"x": "2"}),
        _record(LogEvent.JOB_FINISHED, job_id=1),
        _record(LogEvent.PROGRESS, done=1, total=3),
        _record(LogEvent.JOB_FINISHED, job_id=2),
        _record(LogEvent.PROGRESS, done=2, total=3),
        _record(LogEvent.JOB_INFO, jobid=0, rule_name="all", wildcards={}),
        _record(LogEvent.JOB_FINISHED, job_id=0),
        _record(LogEvent.PROGRESS, done=3, total=3),
        _record(None, f"Complete log(s): {tmp_path}/.snakemake/log/1.snakemake.log"),
    ]
    for record in records:
        console.emit(record)
    assert os.environ[QUIET_JOBS_VARIABLE] == "1"  # the jobs leave the terminal to the console
    console.close()
    console.close()  # Python closes it once more at exit: the end is printed once
    lines = re.sub(r"\d+ s\b", "N s", terminal.getvalue()).split("\n")
    assert (
        lines[0] == "Running 3 jobs on 2 cores; Snakemake's full log goes to .snakemake/log/ (make run VERBOSE=1 prints it here)."
    )
    # the progress line: each state written over the last ("\r", erase the line), no new line
    states = lines[1].split("\r\033[K")
    assert states[0] == "" and "[1/3]  33 %  N s, about N s left  running: a" in states
    assert states[-2:] == ["[3/3] 100 %  N s", "Done: 3 jobs in N s. Open:"]
    assert lines[2:] == [
        "  out/explorer.html  every class, model and shift in one page (open it in a browser)",
        "  out/tables/        the paper tables, e.g. out/tables/d/original/clean/worst_class.md",
        "  out/README.md      every file of the run and the paper table or figure it mirrors",
        "Snakemake's full log: .snakemake/log/1.snakemake.log",
        "",
    ]


def test_a_dry_run_shows_the_plan_once_and_nothing_else(monkeypatch) -> None:
    monkeypatch.setenv(QUIET_JOBS_VARIABLE, "")
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    console = Console(SimpleNamespace(stdout=False, dryrun=True), None)
    plan = _record(LogEvent.RUN_INFO, "Job stats:\njob  count\n---  -----\na        2\ntotal    2\n", stats={"a": 2, "total": 2})
    for record in (plan, _record(LogEvent.JOB_INFO, jobid=1, rule_name="a", wildcards={}), plan):  # Snakemake logs it twice
        console.emit(record)
    console.close()
    assert terminal.getvalue() == "Job stats:\njob  count\n---  -----\na        2\ntotal    2\n(a dry run: nothing was run)\n"


def test_make_run_uses_the_console_and_verbose_gives_snakemake_s_own_output() -> None:
    def snakemake_line(*variables: str) -> str:
        dry_run = subprocess.run(["make", "-n", "run", "VENV=/v", *variables], cwd=REPO, capture_output=True, text=True)
        return next(line for line in dry_run.stdout.splitlines() if "/v/bin/snakemake" in line)

    assert snakemake_line() == "/v/bin/snakemake --cores all --configfile config/config.yaml --logger classwise"
    assert snakemake_line("VERBOSE=1") == "/v/bin/snakemake --cores all --configfile config/config.yaml"
