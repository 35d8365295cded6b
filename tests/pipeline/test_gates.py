"""The config's gates: checked before any job (classwise.pipeline.gates), checked on the metrics
(classwise.steps.gates), and the run failed only by enforce_gates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from classwise.errors import InputError
from classwise.pipeline.gates import gate_runs
from classwise.pipeline.plan import Plan
from classwise.steps.gates import check_gates_step, enforce_gates_step


def _plan() -> Plan:
    return Plan(
        models={"d1": ["net", "hard"], "d2": ["other"]},
        classes={"d1": 3, "d2": 3},
        view_shifts={("d1", "original"): ["clean", "noise"], ("d1", "clean_labels"): ["clean"], ("d2", "original"): ["clean"]},
        hard_predictions={("d1", "hard", "clean"), ("d1", "hard", "noise")},
    )


def _runs(gates: dict[str, Any]) -> list[dict[str, str]]:
    views = {"d1": ["original", "clean_labels"], "d2": ["original"]}
    return gate_runs(gates, _plan(), views=views, k=5, ns=[10], source="my.yaml")


def test_a_gate_applies_to_every_run_unless_scoped() -> None:
    every = _runs({"WCA": {"min": 0.5}})
    assert len(every) == 2 * 2 + 2 + 1  # d1: 2 models x (2 shifts + 1 of the view), d2: 1
    assert {run["scored"] for run in every if run["model"] == "hard"} == {"no"}
    assert {run["scored"] for run in every if run["model"] != "hard"} == {"yes"}
    scoped = _runs({"W2CA": {"min": 0.5, "models": ["net"], "shifts": ["clean"], "label_views": ["original"]}})
    assert scoped == [{"dataset": "d1", "labels": "original", "model": "net", "shift": "clean", "scored": "yes"}]


@pytest.mark.parametrize(
    ("gates", "field", "text"),
    [
        ({"WAC": {"min": 0.5}}, "gates.WAC", "unknown metric; expected one of ['A', 'WCA'"),
        ({"W5CR": {"min": 0.5}}, "gates.W5CR", "unknown metric"),  # n is [10] here
        ({"WCA": {"min": 0.6, "max": 0.4}}, "gates.WCA", "min 0.6 is above max 0.4"),
        (
            {"WCA": {"min": 0.5, "models": ["nett"]}},
            "gates.WCA.models",
            "names ['nett'], expected some of ['hard', 'net', 'other']",
        ),
        ({"WCA": {"min": 0.5, "datasets": ["d1"], "models": ["other"]}}, "gates.WCA", "keeps no (dataset, label view, model"),
        ({"W2CA": {"min": 0.5}}, "gates.W2CA", "W2CA needs scores, and model 'hard' has hard predictions only on d1/clean"),
        ({"decisiveness": {"min": 0.5, "datasets": ["d1"]}}, "gates.decisiveness", "needs scores"),
    ],
)
def test_a_gate_that_cannot_apply_stops_the_run_naming_the_field(gates: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(InputError) as error:
        _runs(gates)
    assert error.value.field == field
    assert text in str(error.value) and "my.yaml" in str(error.value)


def _write(path: Path, document: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return str(path)


def _run(tmp_path: Path, model: str, wca: float, *, decisiveness: float | None) -> dict[str, str]:
    base = tmp_path / model
    worst = {"metrics": {"WCA": {"value": wca, "classes": [1]}}, "skipped": {"W10CR": "n = 10 >= 3 classes"}}
    run = {"dataset": "d1", "labels": "original", "model": model, "shift": "clean"}
    run["worst_class"] = _write(base / "worst_class.json", worst)
    run["decisiveness"] = (
        "" if decisiveness is None else _write(base / "d.json", {"metrics": {"decisiveness": {"value": decisiveness}}})
    )
    return run


def test_every_check_is_reported_and_a_failure_fails_only_the_enforcing_step(tmp_path: Path) -> None:
    runs = [_run(tmp_path, "net", 0.7, decisiveness=0.9), _run(tmp_path, "hard", 0.4, decisiveness=None)]
    gates = {"WCA": {"min": 0.5}, "decisiveness": {"min": 0.8, "models": ["net"]}, "W10CR": {"min": 0.1, "models": ["net"]}}
    out = {"markdown_path": tmp_path / "gates.md", "json_path": tmp_path / "gates.json"}
    results = check_gates_step(gates=gates, runs=runs, **out)
    assert [(r.where["model"], r.gate.metric, r.passed) for r in results] == [
        ("net", "WCA", True),
        ("net", "decisiveness", True),
        ("net", "W10CR", False),
        ("hard", "WCA", False),
    ]
    report = out["markdown_path"].read_text()
    assert report.startswith("Gates of the config (values are fractions, as in the metrics JSON): 2 of 4 failed.")
    assert "| d1 | original | hard | clean | WCA >= 0.5 | 0.4000 | FAIL |" in report
    assert "| d1 | original | net | clean | W10CR >= 0.1 |  | FAIL (not computed: n = 10 >= 3 classes) |" in report
    summary = json.loads(out["json_path"].read_text())
    assert summary["passed"] is False and summary["checks"] == 4
    message = enforce_gates_step(summary_path=out["json_path"], report_path=out["markdown_path"], passed_path=tmp_path / "ok")
    assert message is not None and message.startswith(
        f"2 of 4 gates failed ({out['markdown_path']}): W10CR >= 0.1 on d1/original/net/clean"
    )
    assert "WCA >= 0.5 on d1/original/hard/clean: 0.4000" in message
    assert not (tmp_path / "ok").exists()


def test_when_every_gate_passes_the_marker_is_written(tmp_path: Path) -> None:
    out = {"markdown_path": tmp_path / "gates.md", "json_path": tmp_path / "gates.json"}
    check_gates_step(gates={"WCA": {"min": 0.5}}, runs=[_run(tmp_path, "net", 0.5, decisiveness=0.9)], **out)
    assert (
        enforce_gates_step(summary_path=out["json_path"], report_path=out["markdown_path"], passed_path=tmp_path / "ok") is None
    )
    assert (tmp_path / "ok").read_text() == "all 1 gates passed\n"
