"""The metric steps' settings (classwise.steps.metrics.WorstClassSettings, DecisivenessSettings):
read from the rules' ``params`` as the scripts read them, and what the steps write with them."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from paths import REPO

from classwise.errors import InputError
from classwise.logits_io import save_logits
from classwise.metrics.bootstrap import BootstrapSettings
from classwise.pipeline.captions import caption_of, title_of
from classwise.steps.metrics import DecisivenessSettings, WorstClassSettings, decisiveness_step, worst_class_step
from classwise.steps.reports import compare_models_step

N, C = 200, 5
SUPERCLASSES = {"x": [0, 1], "y": [2, 3, 4]}
BOOTSTRAP = {"confidence": 0.9, "replicates": 30, "seed": 3}
#: The rules' ``params`` (workflow/rules/metrics.smk, tables.smk) with the bootstrap on.
WORST_CLASS_PARAMS = {"k": 2, "n": [2, 3], "superclasses": SUPERCLASSES, "confidence": 0.9, "bootstrap": BOOTSTRAP}
DECISIVENESS_PARAMS = {"gamma": 0.01, "gammas": [0.01, 0.1], "bins": 5, "bootstrap": BOOTSTRAP}
COMPARISON_PARAMS = {"models": ["a", "b"], "k": 2, "n": [2, 3], "superclasses": SUPERCLASSES, "bootstrap": BOOTSTRAP}
TABLE_PARTS = ("markdown", "csv", "latex")


def _logits(path: Path, signal: float, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    labels = np.arange(N) % C
    logits = rng.normal(size=(N, C)).astype(np.float32)
    logits[np.arange(N), labels] += signal
    save_logits(
        path, logits=logits, labels=labels, sample_ids=np.array([f"s{i}" for i in range(N)]),
        class_names=np.array([f"c{j}" for j in range(C)]), metadata={},
    )  # fmt: skip
    return path


def _job(rule: str, inputs: dict, outputs: dict, params: dict, log: Path) -> SimpleNamespace:
    """A stand-in of the ``snakemake`` object a rule's script reads (Snakemake's own Namedlist)."""
    from snakemake.iocontainers import Namedlist

    return SimpleNamespace(
        rule=rule,
        input=Namedlist(fromdict=inputs),
        output=Namedlist(fromdict={name: str(path) for name, path in outputs.items()}),
        params=Namedlist(fromdict=params),
        wildcards=Namedlist(fromdict={"dataset": "d", "labels": "original", "model": "a", "shift": "clean"}),
        log=[str(log)],
        threads=1,
    )


def _run(script: str, job: SimpleNamespace) -> None:
    runpy.run_path(str(REPO / "scripts" / script), init_globals={"snakemake": job})


# ---------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("settings", "params", "missing"),
    [
        (WorstClassSettings, WORST_CLASS_PARAMS, "metrics.worst_class.k"),
        (WorstClassSettings, WORST_CLASS_PARAMS, "metrics.worst_class.superclasses"),
        (DecisivenessSettings, DECISIVENESS_PARAMS, "metrics.decisiveness.gammas"),
        (DecisivenessSettings, DECISIVENESS_PARAMS, "metrics.decisiveness.bins"),
    ],
)
def test_a_missing_setting_is_named_as_its_block_and_key(settings, params, missing: str) -> None:
    key = missing.rsplit(".", 1)[1]
    with pytest.raises(InputError, match=f"field '{missing}': missing setting '{key}'"):
        settings.from_config({name: value for name, value in params.items() if name != key})


def test_the_settings_are_the_rules_params_whole() -> None:
    """Each field is a ``params`` key of its rule; the comparison's ``models`` are not a setting,
    and its intervals' confidence is the bootstrap's (the per-class one keeps its default)."""
    assert WorstClassSettings.from_config(WORST_CLASS_PARAMS) == WorstClassSettings(
        k=2, n=[2, 3], superclasses=SUPERCLASSES, confidence=0.9, bootstrap=BOOTSTRAP
    )
    assert DecisivenessSettings.from_config(DECISIVENESS_PARAMS) == DecisivenessSettings(
        gamma=0.01, gammas=[0.01, 0.1], bins=5, bootstrap=BOOTSTRAP
    )
    compared = WorstClassSettings.from_config(COMPARISON_PARAMS)
    assert compared.confidence == 0.95 and not hasattr(compared, "models")


def test_the_bootstrap_is_the_librarys_settings_checked_and_none_when_off() -> None:
    assert WorstClassSettings.from_config(WORST_CLASS_PARAMS).bootstrap_settings == BootstrapSettings(30, 0.9, 3)
    for off in (None, {**BOOTSTRAP, "replicates": 0}):
        assert DecisivenessSettings.from_config({**DECISIVENESS_PARAMS, "bootstrap": off}).bootstrap_settings is None
    settings = WorstClassSettings.from_config({**WORST_CLASS_PARAMS, "bootstrap": {**BOOTSTRAP, "confidence": 1.5}})
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        _ = settings.bootstrap_settings


# ---------------------------------------------------------------------------- the steps


def test_the_metric_scripts_write_what_their_steps_write_with_the_rules_params(tmp_path: Path) -> None:
    """The scripts as Snakemake runs them give, byte for byte, the steps' files under settings
    built by hand; the JSON records the rule's parameters and its bootstrap."""
    logits = _logits(tmp_path / "a.npz", 1.2, 0)
    names = {"metrics": "worst_class.json", "per_class": "per_class.csv", "confusion": "confusion.csv"}
    names["confusion_figure"] = "confusion.png"
    by_script = {name: tmp_path / "script" / file for name, file in names.items()}
    by_step = {name: tmp_path / "step" / file for name, file in names.items()}
    job = _job("compute_worst_class_metrics", {"logits": str(logits)}, by_script, WORST_CLASS_PARAMS, tmp_path / "w.log")
    _run("compute_worst_class_metrics.py", job)
    worst_class_step(
        logits_path=logits, label_view="original", view_labels_path=None,
        settings=WorstClassSettings(k=2, n=[2, 3], superclasses=SUPERCLASSES, confidence=0.9, bootstrap=BOOTSTRAP),
        metrics_path=by_step["metrics"], per_class_path=by_step["per_class"], confusion_path=by_step["confusion"],
        confusion_figure_path=by_step["confusion_figure"], title=title_of(job), workers=1,
    )  # fmt: skip
    for name in names:
        assert by_script[name].read_bytes() == by_step[name].read_bytes(), name
    document = json.loads(by_step["metrics"].read_text())
    assert document["parameters"] == {"k": 2, "n": [2, 3], "superclasses": SUPERCLASSES}
    assert document["bootstrap"]["replicates"] == 30 and "ci" in document["metrics"]["WCA"]

    outputs = {"metrics": tmp_path / "script" / "decisiveness.json", "figure": tmp_path / "script" / "reliability.png"}
    job = _job("compute_decisiveness_metrics", {"logits": str(logits)}, outputs, DECISIVENESS_PARAMS, tmp_path / "d.log")
    _run("compute_decisiveness_metrics.py", job)
    decisiveness_step(
        logits_path=logits, label_view="original", view_labels_path=None,
        settings=DecisivenessSettings(gamma=0.01, gammas=[0.01, 0.1], bins=5, bootstrap=BOOTSTRAP),
        metrics_path=tmp_path / "step" / "decisiveness.json", figure_path=tmp_path / "step" / "reliability.png",
        title="t", workers=1,
    )  # fmt: skip
    by_step_document = (tmp_path / "step" / "decisiveness.json").read_bytes()
    assert outputs["metrics"].read_bytes() == by_step_document
    document = json.loads(by_step_document)
    assert document["parameters"] == {"gamma": 0.01, "gammas": [0.01, 0.1], "bins": 5}
    assert document["bootstrap"]["confidence"] == 0.9 and "accuracy_ci" in document


def test_the_comparison_script_writes_what_its_step_writes_and_needs_the_bootstrap(tmp_path: Path) -> None:
    logits = {"a": _logits(tmp_path / "a.npz", 1.2, 0), "b": _logits(tmp_path / "b.npz", 0.8, 1)}
    parts = [*TABLE_PARTS, *(f"ranking_{part}" for part in TABLE_PARTS)]
    by_script = {part: tmp_path / "script" / f"{part}.out" for part in parts}
    job = _job("compare_models", {"logits": [str(p) for p in logits.values()]}, by_script, COMPARISON_PARAMS, tmp_path / "c.log")
    _run("compare_models.py", job)
    tables = {part: tmp_path / "step" / f"{part}.out" for part in TABLE_PARTS}
    ranking = {part: tmp_path / "step" / f"ranking_{part}.out" for part in TABLE_PARTS}
    settings = WorstClassSettings(k=2, n=[2, 3], superclasses=SUPERCLASSES, bootstrap=BOOTSTRAP)
    compare_models_step(
        logits_paths=logits, label_view="original", view_labels_path=None, settings=settings, caption=caption_of(job),
        table_paths=tables, workers=1, ranking_paths=ranking, ranking_caption=caption_of(job, "ranking"),
    )  # fmt: skip
    for part in TABLE_PARTS:
        assert by_script[part].read_bytes() == tables[part].read_bytes(), part
        assert by_script[f"ranking_{part}"].read_bytes() == ranking[part].read_bytes(), part
    assert "W2CR" in tables["markdown"].read_text()

    off = WorstClassSettings(k=2, n=[2, 3], superclasses=SUPERCLASSES, bootstrap={**BOOTSTRAP, "replicates": 0})
    with pytest.raises(InputError, match="field 'metrics.bootstrap.replicates': a model comparison needs the bootstrap"):
        compare_models_step(
            logits_paths=logits, label_view="original", view_labels_path=None, settings=off, caption="c",
            table_paths={part: tmp_path / "off" / part for part in TABLE_PARTS},
        )  # fmt: skip
    assert not (tmp_path / "off").exists()
