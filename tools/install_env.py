"""Create a virtualenv if it is missing and install requirements into it, with uv when it can
be had (several times faster than pip), falling back to pip when uv is missing or fails.

    python3 tools/install_env.py --venv .venv [--installer auto|uv|pip] -- torch==2.14.1 -e ".[dev]"

uv is found as ``$UV`` (a path to the executable), as ``uv`` on PATH, or bootstrapped with
``pip install --target <venv>/.uv uv`` (kept out of the project's environment). uv reads
neither pip's configuration files nor ``PIP_*`` variables, so ``pip config list`` is translated
into the matching ``UV_*`` variables (:func:`uv_settings_from_pip_config`): a machine whose pip
finds its packages on local indexes gives uv the same indexes. Variables the caller already set
win. Standard library only: this runs before the environment exists.
"""

from __future__ import annotations

import argparse
import ast
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# pip config sections in increasing precedence: [global], then the install command's own
# section, then PIP_* environment variables (listed by `pip config list` as ":env:").
_SECTION_PRECEDENCE = ("global", "install", ":env:")

# pip option -> (uv variable, separator uv splits that variable on).
_PIP_TO_UV = {
    "index-url": ("UV_INDEX_URL", None),
    "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
}
_TRUE = {"1", "true", "yes", "on"}


def parse_pip_config(listing: str) -> dict[str, str]:
    """``pip config list`` output (``section.key='value'`` lines) -> {key: value} as pip applies
    it to ``pip install``: the environment over the install section over the global one."""
    by_section: dict[str, dict[str, str]] = {section: {} for section in _SECTION_PRECEDENCE}
    for line in listing.splitlines():
        name, sep, quoted = line.strip().partition("=")
        if not sep:
            continue
        section, _, key = name.rpartition(".")
        if section not in by_section:
            continue
        try:
            value = ast.literal_eval(quoted)
        except (ValueError, SyntaxError):
            value = quoted
        by_section[section][key] = str(value)
    merged: dict[str, str] = {}
    for section in _SECTION_PRECEDENCE:
        merged.update(by_section[section])
    return merged


def uv_settings_from_pip_config(listing: str) -> tuple[dict[str, str], list[str]]:
    """The ``UV_*`` variables and the options (uv has no variable for ``--no-index``) that make
    ``uv pip install`` look where ``pip install`` looks.

    ``UV_INDEX_STRATEGY=unsafe-best-match`` is pip's own rule (the best version over all
    indexes); uv's default stops at the first index that has the package, which fails where a
    package lies on more than one local index with different versions."""
    config = parse_pip_config(listing)
    env = {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    for option, (variable, separator) in _PIP_TO_UV.items():
        values = config.get(option, "").split()  # pip splits list options on whitespace
        if values:
            env[variable] = values[0] if separator is None else separator.join(values)
    if config.get("cert"):
        env["SSL_CERT_FILE"] = config["cert"]
    options = ["--no-index"] if config.get("no-index", "").lower() in _TRUE else []
    return env, options


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(venv: Path, python: str = sys.executable) -> Path:
    """``python -m venv`` unless ``venv`` already has an interpreter; its interpreter's path."""
    if not venv_python(venv).exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    return venv_python(venv)


def find_uv(venv: Path, *, bootstrap: bool = True) -> str | None:
    """``$UV``, ``uv`` on PATH, a uv bootstrapped earlier into ``<venv>/.uv``, or (``bootstrap``)
    one installed there now with the environment's pip; None when none can be had."""
    explicit = os.environ.get("UV")
    if explicit:
        return explicit if shutil.which(explicit) else None
    on_path = shutil.which("uv")
    if on_path:
        return on_path
    target = venv / ".uv"
    bootstrapped = target / "bin" / "uv"
    if bootstrapped.exists():
        return str(bootstrapped)
    if not bootstrap:
        return None
    pip = [str(venv_python(venv)), "-m", "pip", "install", "-qq", "--disable-pip-version-check"]
    result = subprocess.run([*pip, "--target", str(target), "uv"], capture_output=True, text=True)
    if result.returncode != 0 or not bootstrapped.exists():
        print(f"install_env: could not bootstrap uv with pip:\n{result.stderr.strip()[-2000:]}", file=sys.stderr)
        return None
    return str(bootstrapped)


def pip_config_listing(python: Path) -> str:
    """``pip config list`` of the environment's pip (empty when pip cannot say)."""
    result = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else ""


def needs_bytecode(environ: Mapping[str, str]) -> bool:
    """Whether uv must write the .pyc files at install time (pip always does). uv leaves them to
    the first import by default, which never writes them where PYTHONDONTWRITEBYTECODE is set
    (as on this project's machines): every process then compiles torch, snakemake & co. from
    source (importing them took 22 s instead of 8 s, collecting the tests 48 s instead of 10 s).
    Compiling everything costs a fresh build about a minute, so it is done only when needed."""
    return bool(environ.get("PYTHONDONTWRITEBYTECODE"))


def uv_install(
    uv: str, python: Path, requirements: Sequence[str], environ: Mapping[str, str] | None = None, *, quiet: bool = False
) -> int:
    """``uv pip install`` into the environment of ``python``; uv's exit status."""
    environ = dict(os.environ if environ is None else environ)
    settings, options = uv_settings_from_pip_config(pip_config_listing(python))
    for variable, value in settings.items():
        environ.setdefault(variable, value)
    command = [uv, "pip", "install", *(["--compile-bytecode"] if needs_bytecode(environ) else [])]
    command += [*(["--quiet"] if quiet else []), "--python", str(python), *options, *requirements]
    return subprocess.run(command, env=environ).returncode


def pip_install(python: Path, requirements: Sequence[str]) -> int:
    """``pip install`` into the environment of ``python``; pip's exit status."""
    return subprocess.run([str(python), "-m", "pip", "install", "-qq", *requirements]).returncode


def install(venv: Path, requirements: Sequence[str], installer: str = "auto") -> str:
    """Create ``venv`` if missing and install ``requirements``; the installer that succeeded
    ("uv" or "pip"). Raises SystemExit when none did."""
    python = ensure_venv(venv)
    if installer in ("auto", "uv"):
        uv = find_uv(venv)
        if uv is not None:
            status = uv_install(uv, python, requirements)
            if status == 0:
                return "uv"
            reason = f"uv failed (exit {status})"
        else:
            reason = "uv is not available"
        if installer == "uv":
            raise SystemExit(f"install_env: {reason} and --installer uv was asked for")
        print(f"install_env: {reason}; installing with pip instead", file=sys.stderr)
    status = pip_install(python, requirements)
    if status != 0:
        raise SystemExit(f"install_env: pip install {shlex.join(requirements)} failed (exit {status})")
    return "pip"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=Path(".venv"))
    parser.add_argument(
        "--installer", choices=("auto", "uv", "pip"), default="auto", help="auto: uv when it can be had, else pip (default)"
    )
    parser.add_argument("requirements", nargs="+", help="what `pip install` would take, after --")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    used = install(args.venv, args.requirements, args.installer)
    print(f"install_env: installed into {args.venv} with {used} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
