"""The light core: ``pip install classwise`` (numpy, scipy, pandas) is enough for the metrics and
``classwise metrics`` / ``compare`` / ``extrapolate`` / ``check``, and a feature of an extra used without it
says which extra to install.

Each check runs in a fresh interpreter whose import system refuses every package of an extra
(a ``sys.meta_path`` finder that raises ``ModuleNotFoundError``), as on a machine where only the
core is installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
from paths import REPO

from classwise._extras import EXTRA_OF_MODULE

#: Import name -> distribution name, where they differ.
DISTRIBUTION = {"sklearn": "scikit-learn", "yaml": "pyyaml", "PIL": "pillow"}

#: Everything outside the core, including what the issue names; the extras' table may only add to it.
REFUSED = sorted(
    {"torch", "torchvision", "timm", "albumentations", "safetensors", "matplotlib", "snakemake", "cleanlab", "sklearn"}
    | set(EXTRA_OF_MODULE)
)

_PRELUDE = textwrap.dedent(
    """
    import importlib.abc, sys

    REFUSED = set({refused!r})

    class RefuseExtras(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in REFUSED:
                raise ModuleNotFoundError(f"No module named {{name!r}} (refused: not in the light core)", name=name)
            return None

    sys.meta_path.insert(0, RefuseExtras())
    """
)


def _run_without_extras(code: str, cwd: Path) -> dict:
    """Run ``code`` in a fresh interpreter that cannot import any extra; the JSON it prints last."""
    script = _PRELUDE.format(refused=REFUSED) + textwrap.dedent(code)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def score_files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("light")
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(4), 10)
    for name in ("a", "b"):
        logits = rng.normal(size=(labels.size, 4)).astype(np.float32)
        logits[np.arange(labels.size), labels] += 1.0
        np.savez(folder / f"{name}.npz", logits=logits, labels=labels)
    return folder


def test_the_metrics_commands_run_without_any_extra(score_files):
    report = _run_without_extras(
        """
        import json, pkgutil, sys, importlib
        import classwise, classwise.metrics
        for module in pkgutil.walk_packages(classwise.metrics.__path__, "classwise.metrics."):
            importlib.import_module(module.name)
        from classwise.cli import main

        status = {
            "metrics": main(["metrics", "a.npz", "--out", "m.json", "--n", "2", "--k", "2", "--bootstrap", "20"]),
            "compare": main(["compare", "a.npz", "b.npz", "--out", "c.json", "--n", "2", "--k", "2", "--bootstrap", "20"]),
            "extrapolate": main(["extrapolate", "a.npz", "--k-max", "6", "--method", "naive", "--out", "e.csv"]),
            "robust-fairness": main(["robust-fairness", "a.npz", "b.npz", "--out", "r.json"]),
        }
        status["check"] = main(["check", "m.json", "--min", "WCA=0", "--max", "CFPS_max=1"])
        loaded = sorted({name.partition(".")[0] for name in sys.modules} & REFUSED)
        print(json.dumps({"status": status, "loaded": loaded}))
        """,
        score_files,
    )
    assert report == {
        "status": {"metrics": 0, "compare": 0, "extrapolate": 0, "robust-fairness": 0, "check": 0},
        "loaded": [],
    }
    metrics = json.loads((score_files / "m.json").read_text())["metrics"]
    assert {"WCA", "W2CA", "CFPS_max"} <= set(metrics)
    assert "WCA" in json.loads((score_files / "c.json").read_text())["metrics"]
    assert (score_files / "e.csv").read_text().startswith("k,accuracy\n2,")
    assert len(json.loads((score_files / "r.json").read_text())["per_class"]) == 4


def test_a_feature_of_an_extra_names_the_extra_to_install(score_files):
    report = _run_without_extras(
        """
        import contextlib, io, json
        import classwise
        from classwise.cli import main

        def message(action):
            try:
                action()
            except ImportError as error:
                return f"{type(error).__name__}: {error}"
            return "no error"

        def imports(statement):
            return lambda: exec(statement, {})

        out = {
            "models": message(imports("from classwise.models import build_model")),
            "corruptions": message(imports("from classwise.shifts import CORRUPTIONS; CORRUPTIONS['gaussian_noise'].transform(1, (8, 8))")),
            "pgd": message(lambda: classwise.pgd_attack),
            "plots": message(imports("import classwise.plots")),
            "pipeline": message(imports("import classwise.pipeline.plan")),
            "torchmetrics": message(imports("from classwise.torchmetrics import WorstClassAccuracy")),
        }
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            status = main(["extrapolate", "a.npz", "--k-max", "4", "--method", "cleanex", "--out", "x.csv"])
        out["cleanex"] = f"exit {status}: {stderr.getvalue().strip()}"
        print(json.dumps(out))
        """,
        score_files,
    )
    expected = {"models": "models", "corruptions": "models", "pgd": "models", "plots": "pipeline", "pipeline": "pipeline"}
    expected |= {"torchmetrics": "torchmetrics", "cleanex": "models"}
    for feature, extra in expected.items():
        assert f'pip install "classwise[{extra}]"' in report[feature], (feature, report[feature])
    assert all(message.startswith("MissingExtraError") for name, message in report.items() if name != "cleanex")
    assert report["cleanex"].startswith("exit 2: classwise extrapolate: error: the CleaneX extrapolation needs torch")
    assert not (score_files / "x.csv").exists()


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def test_pyproject_core_is_light_and_the_extras_hold_what_the_table_says():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert _requirement_names(project["dependencies"]) == {"numpy", "scipy", "pandas"}
    extras = project["optional-dependencies"]
    for module, extra in EXTRA_OF_MODULE.items():
        assert DISTRIBUTION.get(module, module).lower() in _requirement_names(extras[extra]), (module, extra)
    assert project["optional-dependencies"]["all"] == ["classwise[models,pipeline,torchmetrics]"]
    assert "classwise[all]" in extras["dev"]
    # make test installs the dev extra, hence everything (make run: tests/test_install_env.py)
    assert '-e ".[dev]"' in (REPO / "Makefile").read_text()
