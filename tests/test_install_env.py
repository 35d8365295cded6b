"""tools/install_env.py: pip's configuration translated for uv, and the pip fallback when uv is
missing or fails, on a one-module wheel the tests build (seconds, not the project's minutes)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from paths import REPO

SCRIPT = REPO / "tools" / "install_env.py"
sys.path.insert(0, str(SCRIPT.parent))

import bench_install  # noqa: E402  (tools/ is no package: it runs before the environment exists)
import install_env  # noqa: E402


def test_pip_config_listing_translated_for_uv_with_pip_precedence() -> None:
    listing = "\n".join(
        [
            "global.find-links='/opt/wheels /srv/more-wheels'",
            "global.extra-index-url='file:///a/simple https://b.example/simple'",
            "global.index-url='https://global.example/simple'",
            "global.constraint='/etc/pip/c1.txt'",
            "install.index-url='https://install.example/simple'",
            "download.find-links='/not/for/install'",
            ":env:.constraint='/env/c2.txt /env/c3.txt'",
            ":env:.no-index='true'",
            ":env:.cert='/etc/ssl/bundle.pem'",
            "not a config line",
        ]
    )
    env, options = install_env.uv_settings_from_pip_config(listing)
    assert env == {
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        "UV_FIND_LINKS": "/opt/wheels,/srv/more-wheels",  # uv splits this one on commas
        "UV_EXTRA_INDEX_URL": "file:///a/simple https://b.example/simple",
        "UV_INDEX_URL": "https://install.example/simple",  # [install] over [global]
        "UV_CONSTRAINT": "/env/c2.txt /env/c3.txt",  # PIP_CONSTRAINT over both
        "SSL_CERT_FILE": "/etc/ssl/bundle.pem",
    }
    assert options == ["--no-index"]


def test_empty_pip_config_gives_only_pips_index_rule() -> None:
    assert install_env.uv_settings_from_pip_config("") == ({"UV_INDEX_STRATEGY": "unsafe-best-match"}, [])


def test_real_pip_config_list_output_is_understood(tmp_path: Path) -> None:
    """The format `pip config list` really prints, multi-line values included."""
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nfind-links =\n    /w/one\n    /w/two\nextra-index-url = file:///i/simple\n"
        "[install]\nconstraint = /c/constraints.txt\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    environ["PIP_CONFIG_FILE"] = str(config)
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], env=environ, capture_output=True, text=True, check=True
    ).stdout
    env, options = install_env.uv_settings_from_pip_config(listing)
    assert env["UV_FIND_LINKS"] == "/w/one,/w/two"
    assert env["UV_EXTRA_INDEX_URL"] == "file:///i/simple"
    assert env["UV_CONSTRAINT"] == "/c/constraints.txt"
    assert options == []


def _tiny_wheel(directory: Path) -> Path:
    """A pure-Python wheel of one module, ``classwise_tiny_probe``, that pip installs offline."""
    name, version = "classwise_tiny_probe", "0.1"
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": "ANSWER = 42\n",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{dist_info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{dist_info}/RECORD"])
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


@pytest.fixture(scope="module")
def template_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One venv (with pip), made by the script's own ``ensure_venv``, for the module; each test
    installs into a copy (``python -m venv`` with pip takes seconds)."""
    return install_env.ensure_venv(tmp_path_factory.mktemp("template") / "venv").parents[1]


def test_ensure_venv_made_an_environment_with_pip(template_venv: Path) -> None:
    python = install_env.venv_python(template_venv)
    result = subprocess.run([str(python), "-m", "pip", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and str(template_venv) in result.stdout, result.stdout + result.stderr


@pytest.fixture
def workspace(tmp_path: Path, template_venv: Path) -> dict:
    """A fresh copy of the template venv, the tiny wheel, a bin directory for a fake uv, and an
    environment in which pip reads no configuration and reaches no index (so bootstrapping uv
    fails) and no uv is on PATH."""
    venv = tmp_path / "venv"
    shutil.copytree(template_venv, venv, symlinks=True)
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    path = [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry and not (Path(entry) / "uv").exists()]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV")) and k != "PYTHONDONTWRITEBYTECODE"}
    environ.update(PATH=os.pathsep.join([str(bin_dir), *path]), PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    return {"venv": venv, "wheel": _tiny_wheel(tmp_path), "bin": bin_dir, "env": environ, "tmp": tmp_path}


def _install(ws: dict, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), "--venv", str(ws["venv"]), *options, "--", str(ws["wheel"])]
    return subprocess.run(command, env=ws["env"], capture_output=True, text=True)


def _probe(venv: Path) -> subprocess.CompletedProcess[str]:
    code = "import classwise_tiny_probe; print(classwise_tiny_probe.ANSWER)"
    return subprocess.run([str(install_env.venv_python(venv)), "-c", code], capture_output=True, text=True)


def _fake_uv(ws: dict, status: int) -> Path:
    """A ``uv`` on PATH that records its arguments and UV_* environment, then exits ``status``."""
    record = ws["tmp"] / "uv-call.txt"
    uv = ws["bin"] / "uv"
    uv.write_text(f'#!/bin/sh\necho "$@" > "{record}"\nenv | grep "^UV_" >> "{record}"\nexit {status}\n')
    uv.chmod(0o755)
    return record


def test_falls_back_to_pip_when_uv_cannot_be_had(workspace: dict) -> None:
    result = _install(workspace)
    assert result.returncode == 0, result.stderr
    assert "could not bootstrap uv" in result.stderr
    assert "uv is not available; installing with pip instead" in result.stderr
    assert "with pip" in result.stdout
    assert _probe(workspace["venv"]).stdout.strip() == "42"


def test_falls_back_to_pip_when_uv_fails(workspace: dict) -> None:
    record = _fake_uv(workspace, status=3)
    result = _install(workspace)
    assert result.returncode == 0, result.stderr
    assert record.exists(), "the uv on PATH was not tried first"
    assert "uv failed (exit 3); installing with pip instead" in result.stderr
    assert _probe(workspace["venv"]).stdout.strip() == "42"


@pytest.mark.parametrize("dont_write_bytecode", [False, True])
def test_uv_gets_the_environment_and_pips_indexes(workspace: dict, dont_write_bytecode: bool) -> None:
    if dont_write_bytecode:
        workspace["env"]["PYTHONDONTWRITEBYTECODE"] = "1"
    config = workspace["tmp"] / "pip.conf"
    config.write_text("[global]\nfind-links = /w/one /w/two\nconstraint = /c/pins.txt\n")
    workspace["env"]["PIP_CONFIG_FILE"] = str(config)
    del workspace["env"]["PIP_NO_INDEX"]  # else uv is told --no-index, as pip was
    record = _fake_uv(workspace, status=0)
    result = _install(workspace)
    assert result.returncode == 0, result.stderr
    call = record.read_text().splitlines()
    python = install_env.venv_python(workspace["venv"])
    compile_option = "--compile-bytecode " if dont_write_bytecode else ""  # else the first import writes them
    assert call[0] == f"pip install {compile_option}--python {python} {workspace['wheel']}"
    assert {"UV_FIND_LINKS=/w/one,/w/two", "UV_CONSTRAINT=/c/pins.txt", "UV_INDEX_STRATEGY=unsafe-best-match"} <= set(call[1:])
    assert "with uv" in result.stdout
    assert _probe(workspace["venv"]).returncode != 0, "pip ran although uv succeeded"


def test_installer_uv_refuses_to_fall_back(workspace: dict) -> None:
    _fake_uv(workspace, status=3)
    result = _install(workspace, "--installer", "uv")
    assert result.returncode != 0
    assert "uv failed (exit 3) and --installer uv was asked for" in result.stderr
    assert _probe(workspace["venv"]).returncode != 0


def test_installer_pip_skips_uv(workspace: dict) -> None:
    record = _fake_uv(workspace, status=0)
    result = _install(workspace, "--installer", "pip")
    assert result.returncode == 0, result.stderr
    assert not record.exists()
    assert _probe(workspace["venv"]).stdout.strip() == "42"


def _real_uv() -> str | None:
    bootstrapped = REPO / ".venv" / ".uv" / "bin" / "uv"  # where `make install` puts it
    return shutil.which("uv") or (str(bootstrapped) if bootstrapped.exists() else None)


def test_real_uv_installs_the_wheel(workspace: dict) -> None:
    uv = _real_uv()
    if uv is None:
        pytest.skip("no uv on PATH and none bootstrapped into .venv/.uv")
    workspace["env"]["UV"] = uv
    workspace["env"]["UV_CACHE_DIR"] = str(workspace["tmp"] / "uv-cache")
    workspace["env"]["PYTHONDONTWRITEBYTECODE"] = "1"
    result = _install(workspace, "--installer", "uv")
    assert result.returncode == 0, result.stderr
    # compiled at install time, as pip does: with PYTHONDONTWRITEBYTECODE no import would write it
    assert list(workspace["venv"].glob("lib/python*/site-packages/__pycache__/classwise_tiny_probe.*.pyc"))
    assert _probe(workspace["venv"]).stdout.strip() == "42"


def test_make_install_runs_the_installer_script() -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    result = subprocess.run(
        ["make", "-n", "-B", "install", "VENV=/nonexistent/venv", "INSTALLER=pip", "PYTHON=python3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "python3 tools/install_env.py --venv /nonexistent/venv --installer pip --" in result.stdout


def test_bench_install_times_uv_and_pip_on_the_tiny_wheel(workspace: dict, template_venv: Path, monkeypatch) -> None:
    uv = _real_uv()
    if uv is None:
        pytest.skip("no uv on PATH and none bootstrapped into .venv/.uv")

    def copy_of_the_template(venv: Path, python: str = sys.executable) -> Path:
        if not venv.exists():
            shutil.copytree(template_venv, venv, symlinks=True)
        return install_env.venv_python(venv)

    monkeypatch.setattr(install_env, "ensure_venv", copy_of_the_template)  # seconds saved per venv
    for name, value in workspace["env"].items():
        monkeypatch.setenv(name, value)
    dropped = ("PIP_", "UV", "PYTHONDONTWRITEBYTECODE")
    for name in [name for name in os.environ if name.startswith(dropped) and name not in workspace["env"]]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("UV", uv)
    out = workspace["tmp"] / "install.json"
    bench_install.main(["--out", str(out), "--pip", "--", str(workspace["wheel"])])
    report = json.loads(out.read_text())
    assert report["requirements"] == [str(workspace["wheel"])]
    timings = [report["uv"][key] for key in ("venv_s", "uv_bootstrap_s", "install_cold_cache_s", "install_warm_cache_s")]
    assert all(seconds >= 0 for seconds in timings)
    assert report["uv"]["total_cold_cache_s"] == pytest.approx(sum(timings[:3]), abs=0.15)
    assert report["uv"]["compile_bytecode"] is False  # the workspace has no PYTHONDONTWRITEBYTECODE
    assert report["pip"]["measured"] and report["pip"]["total_s"] > 0
    assert report["speedup_cold_cache"] == pytest.approx(
        report["pip"]["total_s"] / report["uv"]["total_cold_cache_s"], abs=0.06
    )  # 1 decimal


# --------------------------------------------------------------------------- what each install holds

#: The tools of the tests and the docs: make test installs them, make run none of them.
TEST_TOOLS = {
    "pytest", "pytest-xdist", "hypothesis", "snakefmt", "black", "import-linter", "ruff", "mypy",
    "pandas-stubs", "scipy-stubs", "mkdocs", "mkdocstrings-python", "playwright",
}  # fmt: skip


def _make_requirements(target: str) -> list[str]:
    """What ``make <target>`` hands pip or uv when it installs (``make -n``: nothing runs)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    commands = subprocess.run(
        ["make", "-n", "-B", target, "VENV=/nonexistent/venv", "PYTHON=python3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in commands.splitlines() if "tools/install_env.py" in line]
    return shlex.split(line.split(" -- ", 1)[1])


def _name(requirement: str) -> str:
    from packaging.utils import canonicalize_name

    return canonicalize_name(re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0])


def _installed_set(requirements: list[str]) -> set[str]:
    """Every distribution pip would install for ``requirements``, by name: this project's extras
    from pyproject.toml, every other package's requirements (their markers and extras applied)
    from its metadata in this environment, which has them all (the dev install)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted: list[tuple[str, set[str]]] = []
    for requirement in requirements:
        if requirement.startswith(".["):  # -e ".[pipeline,models]": the project with those extras
            wanted.append(("classwise", set(requirement[2:-1].split(","))))
        elif requirement != "-e":
            parsed = Requirement(requirement)
            wanted.append((parsed.name, set(parsed.extras)))
    found: set[str] = set()
    while wanted:
        name, extras = wanted.pop()
        if _name(name) == "classwise":
            for extra in extras:
                for requirement in project["optional-dependencies"][extra]:
                    parsed = Requirement(requirement)
                    wanted.append((parsed.name, set(parsed.extras)))
            wanted += [(Requirement(r).name, set()) for r in project["dependencies"] if _name(r) not in found]
            continue
        if _name(name) in found and not extras:
            continue
        found.add(_name(name))
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in map(Requirement, requires):
            applies = requirement.marker is None or any(
                requirement.marker.evaluate({"extra": extra}) for extra in (extras or {""})
            )
            if applies and (_name(requirement.name) not in found or requirement.extras):
                wanted.append((requirement.name, set(requirement.extras)))
    return found


def test_make_run_installs_the_pipeline_and_no_test_tool() -> None:
    requirements = _make_requirements("install")
    assert requirements[:2] == ["torch==2.14.1", "torchvision==0.29.1"] and requirements[2:] == ["-e", ".[pipeline,models]"]
    installed = _installed_set(requirements)
    assert {"snakemake", "snakemake-executor-plugin-slurm", "torch", "timm", "matplotlib", "scikit-learn"} <= installed
    assert sorted(installed & TEST_TOOLS) == []
    assert "torchmetrics" not in installed  # classwise.torchmetrics is for training loops, not the pipeline


def test_make_test_adds_the_test_tools_and_every_extra() -> None:
    requirements = _make_requirements("install-dev")
    assert requirements[2:] == ["-e", ".[dev]"]
    installed = _installed_set(requirements)
    assert sorted(TEST_TOOLS - installed) == []
    assert _installed_set(_make_requirements("install")) | {"torchmetrics"} <= installed


def test_the_light_core_installs_no_extra() -> None:
    installed = _installed_set(["classwise"])  # pip install classwise
    assert not installed & {"torch", "snakemake", "matplotlib", *TEST_TOOLS}


def test_a_run_install_is_upgraded_by_the_test_install_and_each_renewed_by_pyproject() -> None:
    """Each install has its own marker in the venv, made from pyproject.toml; the test install
    (a superset) renews the run's marker too, and the targets ask for the install they need."""
    makefile = (REPO / "Makefile").read_text()
    for marker in (".installed-run", ".installed-dev"):
        assert re.search(rf"^\$\(VENV\)/{re.escape(marker)}: pyproject\.toml$", makefile, re.MULTILINE), marker
    dry_run = subprocess.run(["make", "-n", "-B", "install-dev", "VENV=/v"], cwd=REPO, capture_output=True, text=True, check=True)
    assert "touch /v/.installed-dev /v/.installed-run" in dry_run.stdout
    needs = dict(re.findall(r"^(\w+): (install(?:-dev)?)$", makefile, re.MULTILINE))
    assert needs == {"run": "install", "report": "install", "lint": "install-dev", "docs": "install-dev", "bench": "install-dev"}
    assert re.search(r"^test: lint$", makefile, re.MULTILINE)
