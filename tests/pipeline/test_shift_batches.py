"""Shift batches (``jobs.batch_shifts``): which datasets and rules are batched, over which shifts,
and a batch's run of a rule's script once per shift, in one process, each with its own job."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from classwise.models.spec import ModelSpec
from classwise.outputs.record import Planned
from classwise.pipeline.shift_batches import JobValues, ShiftBatch, batched_datasets, run_items, shift_batches

RULES = {"metrics": "compute_worst_class_metrics", "decisiveness": "compute_decisiveness_metrics", "table": "compare_models"}


def _planned(name: str, **wildcards: str) -> Planned:
    return Planned(name, {"dataset": "d", "labels": "original", **wildcards})


def test_only_datasets_evaluated_on_files_of_predictions_alone_are_batched() -> None:
    specs = {"files": ModelSpec(source="predictions"), "other": ModelSpec(source="predictions"), "net": ModelSpec(source="timm")}
    models = {"labels_only": ["files", "other"], "images": ["files", "net"], "empty": [], "clean_only": ["files"]}
    shifts = {"labels_only": ["clean", "c50"], "images": ["clean", "c50"], "empty": ["clean", "c50"], "clean_only": ["clean"]}
    assert batched_datasets(models, shifts, specs, "auto") == ["labels_only"]
    assert batched_datasets(models, shifts, specs, "never") == []
    with pytest.raises(ValueError, match="batch_shifts"):
        batched_datasets(models, shifts, specs, "always")


def test_a_batch_covers_the_shifts_its_rule_is_planned_at_one_batch_per_model() -> None:
    shifts = ["clean", "s1", "s2"]
    planned = [
        *(_planned("metrics", shift=s, model=m) for s in shifts for m in ("a", "b")),
        # decisiveness where a model has scores: b on two shifts only
        *(_planned("decisiveness", shift=s, model="a") for s in shifts),
        *(_planned("decisiveness", shift=s, model="b") for s in shifts[:2]),
        *(_planned("table", shift=s) for s in shifts),
        # another dataset: not batched
        Planned("metrics", {"dataset": "other", "labels": "original", "shift": "clean", "model": "a"}),
    ]
    batches = shift_batches(planned, rule_of=RULES.__getitem__, datasets=["d"], imported={"d": {"a": shifts, "b": shifts[:1]}})
    by_name = {batch.name: batch for batch in batches}
    assert by_name["compute_worst_class_metrics_batch_d_a"] == ShiftBatch(
        "compute_worst_class_metrics", "d", "original", ("clean", "s1", "s2"), "a"
    )
    assert by_name["compute_decisiveness_metrics_batch_d_b"].shifts == ("clean", "s1")
    assert by_name["compare_models_batch_d"].model is None and by_name["compare_models_batch_d"].shifts == tuple(shifts)
    # every job of a batched dataset is in a batch, one shift or more: the per-shift rules
    # do not take the dataset
    assert by_name["import_predictions_batch_d_b"].shifts == ("clean",)
    assert sorted(by_name) == sorted(
        [
            *(f"{rule}_batch_d_{model}" for rule in RULES.values() if rule != "compare_models" for model in "ab"),
            *(f"import_predictions_batch_d_{model}" for model in "ab"),
            "compare_models_batch_d",
        ]
    )
    assert by_name["compare_models_batch_d"].item_wildcards("s1") == {"dataset": "d", "labels": "original", "shift": "s1"}
    assert by_name["import_predictions_batch_d_a"].item_wildcards("s1") == {"dataset": "d", "shift": "s1", "model": "a"}


def test_job_values_read_as_snakemake_s_named_lists() -> None:
    values = JobValues(["m.json", "a.csv", "b.csv", "c.png"], {"metrics": [0, None], "per_class": [1, 3], "figure": [3, None]})
    assert values.metrics == "m.json" and values.per_class == ["a.csv", "b.csv"]
    assert values.get("figure") == "c.png" and values.get("missing") is None
    assert list(values) == ["m.json", "a.csv", "b.csv", "c.png"] and dict(values.items())["per_class"] == ["a.csv", "b.csv"]
    with pytest.raises(AttributeError, match="missing"):
        values.missing  # noqa: B018


SCRIPT = """
import json
from classwise.pipeline.scripting import job_log

with job_log(snakemake, exit_when_done=True):
    print("shift", snakemake.wildcards.shift)
    with open(snakemake.output.result + ".runs", "a") as runs:
        runs.write("ran\\n")
    with open(snakemake.output.result, "w") as stream:
        json.dump({"input": snakemake.input.get("data"), "k": snakemake.params.k, "rule": snakemake.rule}, stream)
    if snakemake.params.k < 0:
        raise ValueError("k below zero")
"""


def _item(tmp_path: Path, shift: str, k: int) -> dict:
    def entries(**named: str) -> dict:
        return {"values": list(named.values()), "names": {name: [i, None] for i, name in enumerate(named)}}

    return {
        "rule": "some_rule",
        "wildcards": entries(shift=shift),
        "input": entries(data=f"{shift}.npz"),
        "output": entries(result=str(tmp_path / f"{shift}.json")),
        "params": {"values": [k], "names": {"k": [0, None]}},
        "log": entries(log=str(tmp_path / "logs" / f"{shift}.log")),
    }


def test_a_batch_runs_the_script_once_per_shift_with_that_shift_s_job(tmp_path: Path) -> None:
    script = tmp_path / "some_rule.py"
    script.write_text(SCRIPT)
    batch = SimpleNamespace(threads=1, resources={}, config={}, scriptdir=str(tmp_path))
    run_items([_item(tmp_path, "clean", 1), _item(tmp_path, "s1", 2)], script, batch)
    # the in-process job returns (exit_when_done ends only a job's own process): both ran
    assert json.loads((tmp_path / "s1.json").read_text()) == {"input": "s1.npz", "k": 2, "rule": "some_rule"}
    assert json.loads((tmp_path / "clean.json").read_text())["k"] == 1
    assert (tmp_path / "logs/clean.log").read_text().startswith("shift clean\n")
    # a shift that fails stops the batch, its log saying why, and the shifts after it do not run
    with pytest.raises(ValueError, match="k below zero"):
        run_items([_item(tmp_path, "s2", -1), _item(tmp_path, "s3", 3)], script, batch)
    assert "k below zero" in (tmp_path / "logs/s2.log").read_text().splitlines()[0]
    assert not (tmp_path / "s3.json").exists()


def test_many_shifts_are_split_into_batches_of_at_most_shifts_per_batch_in_order() -> None:
    shifts = [f"s{i}" for i in range(7)]
    planned = [_planned("table", shift=s) for s in shifts]
    batches = shift_batches(planned, rule_of=RULES.__getitem__, datasets=["d"], imported={}, shifts_per_batch=3)
    assert [batch.shifts for batch in batches] == [("s0", "s1", "s2"), ("s3", "s4", "s5"), ("s6",)]
    assert [batch.name for batch in batches] == ["compare_models_batch_d", "compare_models_batch_d_1", "compare_models_batch_d_2"]
    with pytest.raises(ValueError, match="at least 1"):
        shift_batches(planned, rule_of=RULES.__getitem__, datasets=["d"], imported={}, shifts_per_batch=0)


def test_a_batch_takes_back_the_files_of_shifts_made_from_the_same_inputs_and_parameters(tmp_path: Path) -> None:
    script = tmp_path / "some_rule.py"
    script.write_text(SCRIPT)
    (tmp_path / "clean.npz").write_bytes(b"clean logits")
    (tmp_path / "s1.npz").write_bytes(b"s1 logits")
    batch = SimpleNamespace(threads=1, resources={}, config={}, scriptdir=str(tmp_path))
    keep = tmp_path / "keep"

    def items(k_of_s1: int) -> list[dict]:
        made = [_item(tmp_path, "clean", 1), _item(tmp_path, "s1", k_of_s1)]
        for item in made:
            item["input"]["values"] = [str(tmp_path / item["input"]["values"][0])]
        return made

    def run(k_of_s1: int) -> dict[str, int]:
        """How often each shift's script has run, after one more batch."""
        for shift in ("clean", "s1"):  # Snakemake removes a job's outputs before it runs
            (tmp_path / f"{shift}.json").unlink(missing_ok=True)
        run_items(items(k_of_s1), script, batch, keep=keep)
        return {shift: len((tmp_path / f"{shift}.json.runs").read_text().splitlines()) for shift in ("clean", "s1")}

    assert run(2) == {"clean": 1, "s1": 1}
    assert run(2) == {"clean": 1, "s1": 1}  # nothing ran: both taken back
    assert json.loads((tmp_path / "s1.json").read_text())["k"] == 2
    assert run(5) == {"clean": 1, "s1": 2}  # s1's parameters changed: s1 runs, clean is taken back
    assert json.loads((tmp_path / "s1.json").read_text())["k"] == 5
    (tmp_path / "clean.npz").write_bytes(b"other logits")  # an input's bytes changed: clean runs
    assert run(5) == {"clean": 2, "s1": 2}
