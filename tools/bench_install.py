"""Time a fresh environment build as `make install` does it, with uv and (``--pip``) with pip.

    python3 tools/bench_install.py --out results/bench/install.json [--pip] -- torch==2.14.1 -e ".[dev]"

Each build goes into a new virtualenv in a temporary directory, removed afterwards. uv is timed
twice: with an empty cache (a newcomer's first build: ``UV_CACHE_DIR`` in the temporary
directory) and again into a second new environment with that cache filled. pip takes about
3 minutes here, so it is timed only with ``--pip``; without it the file carries the figure
measured earlier (``PIP_REFERENCE``, also in docs/install.md), marked as not measured by this run.
uv's own output is left out (``--quiet``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import install_env

# `make install` with pip into a fresh .venv on this project's 2-core machine (see docs/install.md).
PIP_REFERENCE = {
    "seconds": 171.8,
    "load_average_start": [6.61, 5.07, 3.66],
    "load_average_end": [4.79, 5.13, 3.94],
    "date": "2026-11-23",
    "note": "`time make install INSTALLER=pip` in a fresh clone, 2 shared cores; not measured by this run",
}


def load_average() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return round(time.perf_counter() - start, 1)


def _run(command: list[str], environ: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, env=environ, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"bench_install: {' '.join(command[:4])} ... failed:\n{result.stderr[-3000:]}")


def bench_uv(scratch: Path, requirements: list[str]) -> dict:
    cold, warm = scratch / "uv-cold", scratch / "uv-warm"
    environ = dict(os.environ, UV_CACHE_DIR=str(scratch / "uv-cache"))
    result: dict = {"load_average_start": load_average()}
    result["venv_s"] = timed(lambda: install_env.ensure_venv(cold))
    uv_holder: list[str | None] = []
    result["uv_bootstrap_s"] = timed(lambda: uv_holder.append(install_env.find_uv(cold)))
    uv = uv_holder[0]
    if uv is None:
        raise SystemExit("bench_install: uv could not be had (not on PATH, bootstrap failed)")
    result["uv"] = uv if shutil.which("uv") == uv else "bootstrapped with pip into <venv>/.uv"
    result["uv_version"] = subprocess.run([uv, "--version"], capture_output=True, text=True).stdout.strip()
    result["compile_bytecode"] = install_env.needs_bytecode(environ)

    def uv_install(venv: Path) -> None:
        status = install_env.uv_install(uv, install_env.venv_python(venv), requirements, environ, quiet=True)
        if status != 0:
            raise SystemExit(f"bench_install: uv pip install failed (exit {status})")

    result["install_cold_cache_s"] = timed(lambda: uv_install(cold))
    result["total_cold_cache_s"] = round(result["venv_s"] + result["uv_bootstrap_s"] + result["install_cold_cache_s"], 1)
    install_env.ensure_venv(warm)
    result["install_warm_cache_s"] = timed(lambda: uv_install(warm))
    result["load_average_end"] = load_average()
    return result


def bench_pip(scratch: Path, requirements: list[str]) -> dict:
    venv = scratch / "pip"
    result: dict = {"measured": True, "load_average_start": load_average()}
    result["venv_s"] = timed(lambda: install_env.ensure_venv(venv))
    python = str(install_env.venv_python(venv))
    result["install_s"] = timed(lambda: _run([python, "-m", "pip", "install", "-qq", *requirements]))
    result["total_s"] = round(result["venv_s"] + result["install_s"], 1)
    result["load_average_end"] = load_average()
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pip", action="store_true", help="time pip too (about 3 minutes here)")
    parser.add_argument("requirements", nargs="+")
    args = parser.parse_args(argv)
    report: dict = {
        "what": "fresh virtualenv + install of the given requirements, as `make install`",
        "requirements": args.requirements,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    with tempfile.TemporaryDirectory(prefix="classwise-bench-install-") as scratch:
        report["uv"] = bench_uv(Path(scratch), args.requirements)
        report["pip"] = bench_pip(Path(scratch), args.requirements) if args.pip else {"measured": False, **PIP_REFERENCE}
    pip_s = report["pip"]["total_s"] if args.pip else PIP_REFERENCE["seconds"]
    if pip_s:
        report["speedup_cold_cache"] = round(pip_s / report["uv"]["total_cold_cache_s"], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
