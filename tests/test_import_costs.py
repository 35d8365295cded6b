"""A job pays for what it uses (issue 40): what a Snakemake script imports before its step
begins, what a step imports while it runs, and what the workflow imports while it builds its DAG.

Every job starts a Python process; the CPU it spends before its step (Snakemake's preamble,
then the script's imports) is on every job's bill, whatever its step. numpy, pandas, scipy
and matplotlib cost 0.1 to 0.8 CPU-s each to import and torch about 2, so a script imports none
of them: each step imports what it computes with when it runs (``python -m classwise.bench.demo``
shows the CPU before and in the step per rule; docs/benchmarks.md the numbers). Each check runs
in a fresh interpreter, since an import is paid once per process.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
from paths import REPO

#: Packages that cost a job a tenth of a CPU-second or more to import (scipy.stats alone ~0.7).
HEAVY = (
    "albumentations",
    "matplotlib",
    "numpy",
    "pandas",
    "PIL",
    "scipy",
    "scipy.stats",
    "sklearn",
    "timm",
    "torch",
    "torchvision",
)

_REPORT = textwrap.dedent(
    """
    def _heavy():
        import sys
        return sorted(name for name in {heavy!r} if name in sys.modules)
    """
).format(heavy=HEAVY)


def _run(code: str, cwd: Path | None = None) -> object:
    """Run ``code`` in a fresh interpreter (the checkout's src first on the path); the JSON it prints last."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", _REPORT + textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _script_imports(script: Path) -> str:
    """The module-level imports of a Snakemake script: what runs before its ``with job_log(...)``."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


SCRIPTS = sorted((REPO / "scripts").glob("*.py"))


def test_every_script_imports_none_of_the_heavy_packages_before_its_step():
    """One interpreter imports each script's imports in turn and records what each added: the
    first script that brings in a heavy package is the one named (those after it would not
    show it again), so a failure names the script to fix. Model-running scripts included: torch
    is imported by their step, once it runs."""
    assert len(SCRIPTS) >= 30  # the scripts are where this test looks for them
    calls = "\n".join(f"added[{script.stem!r}] = _imports({_script_imports(script)!r})" for script in SCRIPTS)
    prelude = """
        import json
        added = {}

        def _imports(statements):
            before = set(_heavy())
            exec(statements, {})
            return sorted(set(_heavy()) - before)
        """
    added = _run(f"{textwrap.dedent(prelude)}\n{calls}\nprint(json.dumps(added))")
    assert set(added) == {script.stem for script in SCRIPTS}
    assert {script: heavy for script, heavy in added.items() if heavy} == {}


def _dag_build_imports() -> str:
    """The ``from classwise... import ...`` statements at the top level of the Snakefile and its
    rule files (what Snakemake runs while it parses the workflow)."""
    texts = [(REPO / "Snakefile").read_text(encoding="utf-8")]
    texts += [path.read_text(encoding="utf-8") for path in sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    statement = re.compile(r"^(?:from classwise\S* import (?:\([^)]*\)|.*)|import classwise\S*)", re.MULTILINE)
    return "\n".join(sorted({match.group(0) for text in texts for match in statement.finditer(text)}))


def test_the_workflow_imports_no_model_figure_or_statistics_package_while_it_builds_its_dag():
    """Snakemake's own process imports the rules' classwise modules and every module of
    classwise.pipeline: numpy and pandas (the shift sets' samples, the label views' and gates'
    readers), none of the models', the figures' or the statistics' packages. (Snakemake imports
    pandas and PIL in that process anyway, through its SLURM executor and report plugins.)"""
    statements = _dag_build_imports()
    assert "classwise.pipeline.plan" in statements and "classwise.outputs" in statements
    loaded = _run(
        f"""
        import importlib, json, pkgutil
        exec({statements!r}, {{}})
        import classwise.pipeline
        for module in pkgutil.walk_packages(classwise.pipeline.__path__, "classwise.pipeline."):
            importlib.import_module(module.name)
        print(json.dumps(_heavy()))
        """
    )
    assert set(loaded) <= {"numpy", "pandas"}


#: The reliability figure is left out where a test runs the decisiveness step: drawing it
#: (matplotlib) costs seconds, and these tests are about what the step imports besides.
WITHOUT_THE_FIGURE = "classwise.plots.reliability", types.SimpleNamespace(plot_reliability=lambda *args, **kwargs: None)


@pytest.fixture(scope="module")
def metrics_files(tmp_path_factory) -> Path:
    """One model's worst-class and decisiveness metrics of a small logits file (computed in this
    process: the steps below run in fresh ones)."""
    from classwise.logits_io import save_logits
    from classwise.steps.metrics import DecisivenessSettings, WorstClassSettings, decisiveness_step, worst_class_step

    folder = tmp_path_factory.mktemp("import_costs")
    rng = np.random.default_rng(0)
    labels = np.arange(60) % 4
    logits = rng.normal(size=(60, 4)).astype(np.float32)
    logits[np.arange(60), labels] += 1.5
    save_logits(
        folder / "logits.npz", logits=logits, labels=labels, sample_ids=np.array([f"s{i}" for i in range(60)]),
        class_names=np.array(["a", "b", "c", "d"]), metadata={},
    )  # fmt: skip
    view = {"label_view": "original", "view_labels_path": None}
    worst_class_step(
        logits_path=folder / "logits.npz", **view, settings=WorstClassSettings(superclasses={}, k=2, n=[2]),
        metrics_path=folder / "wc.json", per_class_path=folder / "per_class.csv", confusion_path=folder / "confusion.csv",
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, *WITHOUT_THE_FIGURE)
        decisiveness_step(
            logits_path=folder / "logits.npz", **view, settings=DecisivenessSettings(gamma=0.01, gammas=[0.01], bins=5),
            metrics_path=folder / "dec.json", figure_path=folder / "reliability.png", title="t",
        )  # fmt: skip
    (folder / "gates.json").write_text(json.dumps({"passed": True, "checks": 2, "failed": []}))
    return folder


#: A step (as its script calls it, on the files of :func:`metrics_files`) -> exactly the heavy
#: packages it imports: what it computes with, and nothing it does not use.
STEPS = {
    "describe_results": (
        "from classwise.steps.reports import results_readme_step\n"
        "results_readme_step(description='d', output_dir='.', outputs=['wc.json'], readme_path='README.md')",
        [],
    ),
    "enforce_gates": (
        "from classwise.steps.gates import enforce_gates_step\n"
        "enforce_gates_step(summary_path='gates.json', report_path='gates.md', passed_path='passed')",
        [],
    ),
    # the tables: pandas, without the metrics' scipy or the figures' matplotlib
    "aggregate_worst_class_tables": (
        "from classwise.steps.reports import worst_class_table_step\n"
        "worst_class_table_step(metrics_paths={'m': 'wc.json'}, caption='c', markdown_path='t.md', csv_path='t.csv',"
        " latex_path='t.tex')",
        ["numpy", "pandas"],
    ),
    "aggregate_decisiveness_tables": (
        "from classwise.steps.reports import decisiveness_tables_step\n"
        "paths = lambda name: {s: f'{name}.{s}' for s in ('markdown', 'csv', 'latex')}\n"
        "decisiveness_tables_step(metrics_paths={'m': 'dec.json'}, caption='c', sweep_caption='s',"
        " table_paths=paths('t'), sweep_paths=paths('s'))",
        ["numpy", "pandas"],
    ),
    # the decisiveness metrics: scipy.special, and no table (pandas); the figure adds matplotlib
    "compute_decisiveness_metrics": (
        "import sys, types\n"
        "sys.modules['classwise.plots.reliability'] = types.SimpleNamespace(plot_reliability=lambda *a, **k: None)\n"
        "from classwise.steps.metrics import DecisivenessSettings, decisiveness_step\n"
        "settings = DecisivenessSettings.from_config({'gamma': 0.01, 'gammas': [0.01], 'bins': 5, 'bootstrap': None})\n"
        "decisiveness_step(logits_path='logits.npz', label_view='original', view_labels_path=None, settings=settings,"
        " metrics_path='d.json', figure_path='d.png', title='t')",
        ["numpy", "scipy"],
    ),
}


@pytest.mark.parametrize("rule", sorted(STEPS))
def test_a_step_imports_what_it_computes_with_and_nothing_else(rule, metrics_files):
    code, expected = STEPS[rule]
    loaded = _run(f"import json\n{code}\nprint(json.dumps(_heavy()))", cwd=metrics_files)
    assert loaded == sorted(expected)
