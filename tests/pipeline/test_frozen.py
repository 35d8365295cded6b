"""The plan is read-only once built (classwise.pipeline.frozen): every change refused at every
depth, while every reader (a rule's parameter as Snakemake records it, JSON, a job's script after
pickling) sees the plain list or dict it was."""

from __future__ import annotations

import copy
import json
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from paths import REPO
from snakemake.utils import validate

from classwise.data.shift_sets import expand_shift_sets, merge_shifts
from classwise.pipeline import plan as planning
from classwise.pipeline.config_checks import check_models, configured_shifts
from classwise.pipeline.frozen import ReadOnlyDict, ReadOnlyList, frozen

SCHEMAS = REPO / "workflow" / "schemas"


@dataclass(frozen=True)
class _Runs:
    shifts: list[str]
    pairs: list[tuple[str, list[int]]] = field(default_factory=list)


NESTED = {"models": {"digits": ["linear", "mlp"]}, "notes": ["a"], "runs": [("clean", [1, 2])], "k": 3, "none": None}

LIST_CHANGES = [
    lambda x: x.append(1),
    lambda x: x.extend([1]),
    lambda x: x.insert(0, 1),
    lambda x: x.pop(),
    lambda x: x.remove(x[0]),
    lambda x: x.clear(),
    lambda x: x.sort(),
    lambda x: x.reverse(),
    lambda x: x.__setitem__(0, 1),
    lambda x: x.__delitem__(0),
    lambda x: x.__iadd__([1]),
    lambda x: x.__imul__(2),
]
DICT_CHANGES = [
    lambda x: x.__setitem__("new", 1),
    lambda x: x.__delitem__(next(iter(x))),
    lambda x: x.update(new=1),
    lambda x: x.setdefault("new", 1),
    lambda x: x.pop(next(iter(x))),
    lambda x: x.popitem(),
    lambda x: x.clear(),
    lambda x: x.__ior__({"new": 1}),
]


@pytest.mark.parametrize("change", LIST_CHANGES)
def test_a_read_only_list_refuses_every_change(change: Any) -> None:
    values = frozen(["b", "a"])
    with pytest.raises(TypeError, match="read-only"):
        change(values)
    assert values == ["b", "a"]


@pytest.mark.parametrize("change", DICT_CHANGES)
def test_a_read_only_dict_refuses_every_change(change: Any) -> None:
    values = frozen({"a": 1, "b": 2})
    with pytest.raises(TypeError, match="read-only"):
        change(values)
    assert values == {"a": 1, "b": 2}


def test_frozen_reaches_every_depth_and_reads_as_the_plain_value() -> None:
    value = frozen(NESTED)
    assert isinstance(value["models"], ReadOnlyDict) and isinstance(value["models"]["digits"], ReadOnlyList)
    assert isinstance(value["runs"][0], tuple) and isinstance(value["runs"][0][1], ReadOnlyList)
    # what Snakemake records of a parameter (its repr), JSON and equality: the plain value's
    assert repr(value) == repr(NESTED) and json.dumps(value) == json.dumps(NESTED) and value == NESTED
    assert frozen({"a", "b"}) == frozenset({"a", "b"})
    runs = frozen(_Runs(["clean"], [("s", [1])]))
    assert isinstance(runs.shifts, ReadOnlyList) and isinstance(runs.pairs[0][1], ReadOnlyList)
    assert runs == _Runs(["clean"], [("s", [1])])


def test_pickled_as_a_job_s_parameters_it_is_plain_again() -> None:
    """Snakemake hands a script its parameters pickled: the script gets plain lists and dicts
    (it needs nothing of classwise.pipeline), as before the plan was read-only."""
    for thawed in (pickle.loads(pickle.dumps(frozen(NESTED))), copy.deepcopy(frozen(NESTED))):
        assert thawed == NESTED and type(thawed) is dict and type(thawed["models"]["digits"]) is list
        thawed["notes"].append("b")  # a plain list again
    assert b"classwise" not in pickle.dumps(frozen(NESTED))


def test_the_demo_plan_is_read_only_once_built() -> None:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    user = copy.deepcopy(config)
    validate(config, str(SCHEMAS / "config.schema.yaml"))
    validate(config["analyses"], str(SCHEMAS / "analyses.schema.yaml"))
    validate(config["robustness"], str(SCHEMAS / "robustness.schema.yaml"))
    shifts = merge_shifts(configured_shifts(config), expand_shift_sets(config["datasets"]))
    plan = planning.build_plan(config, user, shifts=shifts, shift_sets={}, specs=check_models(config), source="demo.yaml")
    dataset = next(iter(plan.models))
    refused = [
        lambda: plan.models[dataset].append("another"),
        lambda: plan.models.__setitem__("another", []),
        lambda: plan.notes.append("a note"),
        lambda: plan.shifts[dataset].remove(plan.shifts[dataset][0]),
        lambda: plan.view_shifts[(dataset, "original")].append("x"),
        lambda: next(settings for settings in plan.analyses[dataset].values() if settings).update(x=1),
        lambda: plan.robustness[dataset].corruptions.append("x"),
        lambda: plan.compared.append("x"),
    ]
    for change in refused:
        with pytest.raises(TypeError, match="read-only"):
            change()
    with pytest.raises(AttributeError):
        plan.hard_predictions.add(("x", "y", "z"))  # type: ignore[attr-defined]
