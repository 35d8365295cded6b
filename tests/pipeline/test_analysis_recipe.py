"""The recipe of docs/architecture.md for a new analysis, worked on the demo config: an entry in
the catalogue of analyses and its records are all the plan needs to schedule it, skip it with a
note where its shift is not evaluated, and plan its files per label view and model (its step,
script and rule follow the existing ones and are not needed to plan it)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from paths import REPO
from snakemake.utils import validate

from classwise import outputs
from classwise.data.shift_sets import expand_shift_sets, merge_shifts
from classwise.outputs import Output, plan_scopes
from classwise.outputs import record as records
from classwise.outputs.catalogue import ANALYSES, Analysis
from classwise.pipeline import plan as planning
from classwise.pipeline.config_checks import check_models, configured_shifts

SCHEMAS = REPO / "workflow" / "schemas"
#: The worked example: how far each class's recall falls from clean to one shift, per model.
TOY = Analysis("class_recall_drop", "shift", "the class recall drop runs")


def _toy_record() -> Output:
    """Its record (classwise.outputs.analyses), once its condition is known."""
    return Output(
        name="class_recall_drop",
        rule="run_class_recall_drop",
        when=("class_recall_drop",),
        path="analyses/{dataset}/{labels}/{model}/class_recall_drop",
        files={"csv": ".csv"},
        mirrors=(None, "each class's recall on clean and on the analysis's shift, and the drop"),
    )


def _demo_config(**toy: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The demo config with the toy's block (as analyses.schema.yaml would fill its defaults), as
    the workflow validates it, and as the user wrote it."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["analyses"] = {**(config.get("analyses") or {}), "class_recall_drop": toy}
    user = copy.deepcopy(config)
    validate(config, str(SCHEMAS / "config.schema.yaml"))
    toy_block = config["analyses"].pop("class_recall_drop")
    validate(config["analyses"], str(SCHEMAS / "analyses.schema.yaml"))
    validate(config["robustness"], str(SCHEMAS / "robustness.schema.yaml"))
    config["analyses"]["class_recall_drop"] = {"enabled": True, "shift": "clean", **toy_block}
    config["analyses"]["simulation"].setdefault("enabled", False)
    return config, user


def _plan(config: dict[str, Any], user: dict[str, Any]) -> planning.Plan:
    shifts = merge_shifts(configured_shifts(config), expand_shift_sets(config["datasets"]))
    return planning.build_plan(config, user, shifts=shifts, shift_sets={}, specs=check_models(config), source="demo.yaml")


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy analysis's catalogue entry and record, as its files would add them."""
    monkeypatch.setattr(planning, "ANALYSES", (*ANALYSES, TOY))
    monkeypatch.setitem(records.CONDITIONS, TOY.name, TOY.condition)
    monkeypatch.setitem(outputs.STAGES, "analyses", (*outputs.STAGES["analyses"], _toy_record()))


def _toy_files(plan: planning.Plan) -> list[tuple[str, ...]]:
    planned = plan_scopes("analyses", planning.analysis_scopes(plan, simulation=False))
    return [(p.wildcards["dataset"], p.wildcards["labels"], p.wildcards["model"]) for p in planned if p.name == TOY.name]


@pytest.mark.usefixtures("registered")
def test_a_catalogue_entry_and_its_record_plan_the_new_analysis_per_view_and_model() -> None:
    config, user = _demo_config(shift="gaussian_noise_s3")
    plan = _plan(config, user)
    assert plan.analyses["digits"][TOY.name] == {"enabled": True, "shift": "gaussian_noise_s3"}
    views = plan.analysis_views[("digits", TOY.name)]
    assert views == [v for v in config["analyses"]["label_views"] if "gaussian_noise_s3" in plan.view_shifts[("digits", v)]]
    assert views, "the demo evaluates the shift on some view"
    expected = [("digits", view, model) for view in views for model in plan.models["digits"]]
    assert _toy_files(plan) == expected
    # the analyses that were there are planned as before, beside it
    assert plan.analysis_views[("digits", "extrapolation")]


@pytest.mark.usefixtures("registered")
def test_the_new_analysis_is_skipped_with_a_note_where_its_default_shift_is_not_evaluated() -> None:
    config, user = _demo_config()
    config["analyses"]["class_recall_drop"]["shift"] = "fog_s5"  # a default the demo does not evaluate
    plan = _plan(config, user)
    assert plan.analyses["digits"][TOY.name] is None and not _toy_files(plan)
    assert any(note.startswith("class recall drop on digits: skipped, the shift 'fog_s5'") for note in plan.notes)


@pytest.mark.usefixtures("registered")
def test_a_shift_the_user_names_for_the_new_analysis_must_exist() -> None:
    config, user = _demo_config(shift="fog_s5")
    with pytest.raises(Exception, match="names shift 'fog_s5'") as info:
        _plan(config, user)
    assert getattr(info.value, "field", None) == "analyses.class_recall_drop.shift"
