"""Run this repository's Snakefile on a config in a working directory, as the workflow tests do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import REPO


def run_snakemake(workdir: Path, configfile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``snakemake --cores 2`` with the repository's Snakefile, its outputs below ``workdir``.

    No timeout: a run takes what the machine's load makes it take, and CI's own limit ends a hang."""
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile),
        "--cores",
        "2",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True)


def job_counts(stdout: str) -> dict[str, int]:
    """Rule -> job count, from the job table of Snakemake's output (empty when nothing runs)."""
    if "Nothing to be done" in stdout:
        return {}
    table = stdout[stdout.index("Job stats:") :].split("\n\n")[0].splitlines()[3:]
    return {line.split()[0]: int(line.split()[1]) for line in table if line.split() and line.split()[0] != "total"}


def scheduled_jobs(workdir: Path, configfile: Path, *args: str) -> dict[str, int]:
    """Rule -> job count of a dry run."""
    result = run_snakemake(workdir, configfile, "--dry-run", *args)
    assert result.returncode == 0, result.stderr[-4000:]
    return job_counts(result.stdout)
