"""System programs that some tests need (chromium for the report, slurm for the cluster test).

Such a test installs what it misses with apt-get when it can (Debian or Ubuntu, as root);
where it cannot, it skips saying why, and under the environment variable CI=true it fails
instead, because in CI it must run.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def cannot_run(test: str, reason: str) -> NoReturn:
    """Skip with the reason; under CI=true fail instead (in CI the test must run)."""
    if IN_CI:
        pytest.fail(f"the {test} must run in CI (CI=true), but: {reason}")
    pytest.skip(reason)


def tail(text: str | bytes, lines: int = 30) -> str:
    """The last ``lines`` lines of a program's output, for an error message."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


@contextmanager
def one_apt_at_a_time() -> Iterator[None]:
    """Hold a lock file while apt-get runs: under pytest-xdist the report and SLURM tests may
    install side by side, and DPkg::Lock::Timeout makes apt wait for dpkg's lock, not
    necessarily for the package lists' lock that `apt-get update` takes."""
    with open(Path(tempfile.gettempdir()) / "classwise-tests-apt.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def apt_install(test: str, packages: Sequence[str], *, missing: Sequence[str], timeout_s: int = 900) -> None:
    """``apt-get update`` and ``apt-get install`` of ``packages`` (no recommends), or
    :func:`cannot_run` saying which programs are ``missing`` and which step failed and how."""
    wanted = " ".join(packages)
    if shutil.which("apt-get") is None:
        cannot_run(test, f"{', '.join(missing)} missing; cannot install {wanted}: there is no apt-get")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        cannot_run(test, f"{', '.join(missing)} missing; installing {wanted} with apt-get needs root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # The lock timeout: another apt-get (an unattended upgrade, a parallel test) may hold it.
    with one_apt_at_a_time():
        for command in (
            ["apt-get", "update", "-qq", "-o", "DPkg::Lock::Timeout=300"],
            ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", "--no-install-recommends", *packages],
        ):
            try:
                result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                cannot_run(test, f"`{' '.join(command)}` did not finish in {timeout_s} s")
            if result.returncode != 0:
                cannot_run(
                    test, f"`{' '.join(command)}` failed (exit {result.returncode}):\n{tail(result.stdout + result.stderr, 15)}"
                )
