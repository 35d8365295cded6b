"""The shift kinds' registry (classwise.shifts.kinds): every kind answers the whole protocol, the
JSON form of every kind's shifts is what the logits sidecars and rule parameters held before the
kinds were modules, each kind says what its shifts are, and PGD's and AutoAttack's eps is checked
by one function on the config side and the job side."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import torch
from paths import REPO

from classwise.errors import InputError
from classwise.shifts.kinds import KINDS, Batch, Run, ShiftKind, ShiftSpec
from classwise.shifts.spec import expand_shifts, infer_parameter

SECTION = {
    "corruptions": ["snow"],
    "severities": [2],
    "pgd": [{"norm": "linf", "eps": 0.1, "per_class": 3}],
    "pgd_targeted": {"norm": "l2", "eps": 0.5, "steps": 4, "targets": [1]},
    "autoattack": [{"norm": "linf", "eps": 0.03, "version": "rand"}],
    "transfer": [{"source": "lin", "attack": "pgd_linf_eps0.1"}, {"source": "mlp", "attack": {"norm": "l2", "eps": 0.2}}],
}
#: A published shift set's spec, as classwise.data.shift_sets writes it (CIFAR-10-C's fog at 3).
PUBLISHED = ShiftSpec(
    name="c_fog_s3",
    kind="dataset",
    params={
        "family": "cifar10c",
        "set": "c",
        "root": "r",
        "corruption": "fog",
        "severity": 3,
        "paired": True,
        "restricted": False,
    },
)
#: ImageNet-R's, restricted to its 200 classes, with samples of its own.
RESTRICTED = ShiftSpec(
    name="r", kind="dataset", params={"family": "imagenet_r", "set": "r", "root": "r", "paired": False, "restricted": True}
)


def test_every_kind_answers_the_whole_protocol_and_the_registry_is_the_expansion_order() -> None:
    questions = {name for name, _ in inspect.getmembers(ShiftKind) if not name.startswith("_")}
    assert {"expand", "paired", "adversarial", "source_model", "evaluation_images", "shifted_batch"} <= questions
    for name, kind in KINDS.items():
        assert isinstance(kind, ShiftKind) and kind.name == name
        assert all(hasattr(kind, question) for question in questions), name
    keys = [key for kind in KINDS.values() for key in kind.config_keys]
    assert len(keys) == len(set(keys))  # each key of `shifts:` is one kind's
    expanded = expand_shifts(SECTION)
    order = [spec.kind for spec in expanded.values()]
    assert order == sorted(order, key=list(KINDS).index)  # kinds expand in the registry's order
    assert {"clean", "corruption", "pgd", "autoattack", "transfer"} <= set(order)


def test_the_json_form_of_every_kind_is_unchanged() -> None:
    """Key for key and in order: the sidecars and the rule parameters (reprs of these dicts) of
    cached results must not change, or Snakemake reruns them."""
    expanded = expand_shifts(SECTION)
    pgd = '{"name": "pgd_linf_eps0.1", "kind": "pgd", "params": {"norm": "linf", "eps": 0.1, "steps": 10, "step_size": 0.025, "random_start": true, "per_class": 3}}'  # noqa: E501
    expected = {
        "clean": '{"name": "clean", "kind": "clean", "params": {}}',
        "snow_s2": '{"name": "snow_s2", "kind": "corruption", "params": {"corruption": "snow", "severity": 2}}',
        "pgd_linf_eps0.1": pgd,
        "pgd_targeted_1": '{"name": "pgd_targeted_1", "kind": "pgd", "params": {"norm": "l2", "eps": 0.5, "steps": 4, "step_size": 0.3125, "random_start": true, "target": 1}}',  # noqa: E501
        "autoattack_rand_linf_eps0.03": '{"name": "autoattack_rand_linf_eps0.03", "kind": "autoattack", "params": {"norm": "linf", "eps": 0.03, "version": "rand"}}',  # noqa: E501
        "transfer_lin_pgd_linf_eps0.1": f'{{"name": "transfer_lin_pgd_linf_eps0.1", "kind": "transfer", "params": {{"source": "lin", "attack": {pgd}, "per_class": 3}}}}',  # noqa: E501
        "transfer_mlp_pgd_l2_eps0.2": '{"name": "transfer_mlp_pgd_l2_eps0.2", "kind": "transfer", "params": {"source": "mlp", "attack": {"name": "pgd_l2_eps0.2", "kind": "pgd", "params": {"norm": "l2", "eps": 0.2, "steps": 10, "step_size": 0.05, "random_start": true}}}}',  # noqa: E501
    }
    assert {name: json.dumps(spec.to_json()) for name, spec in expanded.items()} == expected
    for spec in [*expanded.values(), PUBLISHED]:
        assert ShiftSpec.from_json(spec.to_json()) == spec
    # rule infer's parameter: the spec, and a transfer's source model config after it
    transfer = expanded["transfer_lin_pgd_linf_eps0.1"]
    assert infer_parameter(transfer, {"source": "train"}) == {**transfer.to_json(), "source_model": {"source": "train"}}
    assert list(infer_parameter(transfer, {"source": "train"})) == ["name", "kind", "params", "source_model"]
    assert infer_parameter(expanded["clean"], None) == expanded["clean"].to_json()


def test_each_kind_says_what_its_shifts_are() -> None:
    """The answers the old string branches gave (classwise 4aae80d: ShiftSpec's properties, the
    plan's kind tuples, the robustness plan's lists), shift by shift."""
    shifts = {**expand_shifts(SECTION), PUBLISHED.name: PUBLISHED, RESTRICTED.name: RESTRICTED}
    columns = ("paired", "restricted", "adversarial", "adversarial_images", "target", "source_model", "shift_set")
    answers = {name: tuple(getattr(spec, column) for column in columns) for name, spec in shifts.items()}
    assert answers == {
        "clean": (True, False, False, False, None, None, None),
        "snow_s2": (True, False, False, False, None, None, None),
        "pgd_linf_eps0.1": (True, False, True, True, None, None, None),
        "pgd_targeted_1": (True, False, False, False, 1, None, None),
        "autoattack_rand_linf_eps0.03": (True, False, True, True, None, None, None),
        "transfer_lin_pgd_linf_eps0.1": (True, False, False, True, None, "lin", None),
        "transfer_mlp_pgd_l2_eps0.2": (True, False, False, True, None, "mlp", None),
        "c_fog_s3": (True, False, False, False, None, None, "c"),
        "r": (False, True, False, False, None, None, "r"),
    }
    assert [name for name, spec in shifts.items() if not spec.needs_images] == ["clean"]
    assert [name for name, spec in shifts.items() if spec.corrupted_on_the_fly] == ["snow_s2"]
    assert [name for name, spec in shifts.items() if spec.transformed] == ["snow_s2", "c_fog_s3"]
    assert shifts["transfer_lin_pgd_linf_eps0.1"].attack == shifts["pgd_linf_eps0.1"]
    with pytest.raises(InputError, match="'pgd_linf_eps0.1' \\(pgd\\) is not a transfer attack"):
        _ = shifts["pgd_linf_eps0.1"].attack


def test_a_shift_that_does_not_fit_a_dataset_s_classes_says_why() -> None:
    shifts = expand_shifts(
        {
            "pgd_targeted": {"norm": "linf", "eps": 0.1, "targets": [4]},
            "autoattack": [{"norm": "linf", "eps": 0.1}],
            "transfer": [{"source": "lin", "attack": "autoattack_linf_eps0.1"}],
        }
    )
    assert shifts["clean"].misfit("d", 2) is None
    assert shifts["pgd_targeted_4"].misfit("d", 5) is None
    assert shifts["pgd_targeted_4"].misfit("d", 4) == (
        "target class 4 is not a class of dataset 'd' (4 classes, 0..3)",
        "shifts.pgd_targeted.targets",
    )
    assert shifts["autoattack_linf_eps0.1"].misfit("d", 4) is None
    message, field = shifts["transfer_lin_autoattack_linf_eps0.1"].misfit("d", 3)  # type: ignore[misc]
    assert message.startswith("shift 'transfer_lin_autoattack_linf_eps0.1': AutoAttack standard needs at least 4 classes")
    assert field == "shifts.autoattack"


@pytest.mark.parametrize("eps", [-0.1, math.nan, math.inf, True, "0.1"])
def test_one_eps_check_on_the_config_side_and_the_job_side(eps: object) -> None:
    """The attacks' records as the config's entries make them (PgdSettings.from_entry,
    AutoAttackSettings.from_entry) and as the jobs take them (pgd_attack, autoattack) refuse the
    same radii with the same message."""
    from classwise.shifts.attack_settings import AutoAttackSettings, PgdSettings
    from classwise.shifts.autoattack import check_autoattack_arguments
    from classwise.shifts.pgd import pgd_attack

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3))
    images, labels = torch.rand(2, 1, 2, 2), torch.zeros(2, dtype=torch.long)
    calls = {
        "shifts.pgd.eps": lambda: PgdSettings.from_entry({"norm": "linf", "eps": eps}, "shifts.pgd"),
        "shifts.autoattack.eps": lambda: AutoAttackSettings.from_entry({"norm": "linf", "eps": eps}, "shifts.autoattack"),
        "eps": lambda: pgd_attack(model, images, labels, attack=PgdSettings("linf", eps, steps=1, step_size=0.1)),  # type: ignore[arg-type]
        "shifts.autoattack[0].eps": lambda: check_autoattack_arguments(
            norm="linf", eps=eps, version="standard", seed=0, field_prefix="shifts.autoattack[0]."
        ),
    }
    for field, call in calls.items():
        with pytest.raises(InputError) as error:
            call()
        assert error.value.field == field
        assert f"expected a finite number >= 0, got {eps!r}" in str(error.value)


def test_a_new_kind_is_its_module_and_one_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A kind with a `shifts:` key of its own that the schema does not type: no schema edit.
    import yaml

    from classwise.pipeline.config_checks import check_schema, configured_shifts
    from classwise.shifts.kinds import Entry

    class Invert(ShiftKind):
        name = "invert"
        config_keys = ("invert",)

        def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
            if not section.get("invert", False):
                return []
            return [Entry("shifts.invert", {}, [ShiftSpec(name="invert", kind=self.name, params={})])]

        def shifted_batch(self, spec: ShiftSpec, batch: Batch, run: Run) -> torch.Tensor:
            return 1 - torch.from_numpy(batch.images)

    monkeypatch.setitem(KINDS, "invert", Invert())
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text(encoding="utf-8"))
    config["shifts"] = {"clean": True, "invert": True}
    check_schema(config, REPO / "workflow" / "schemas" / "config.schema.yaml", source="c.yaml")
    shifts = configured_shifts(config, source="c.yaml")
    assert list(shifts) == ["clean", "invert"] and shifts["invert"].shift_kind is KINDS["invert"]
    images = np.full((1, 1, 2, 2), 0.25, dtype=np.float32)
    inverted = shifts["invert"].shift_kind.shifted_batch(shifts["invert"], Batch(images, np.zeros(1), np.array(["a"])), None)  # type: ignore[arg-type]
    assert torch.equal(inverted, torch.full((1, 1, 2, 2), 0.75))
    # The schema no longer closes the section: the registry names an unknown key, with the file.
    config["shifts"] = {"clean": True, "inverted": True}
    check_schema(config, REPO / "workflow" / "schemas" / "config.schema.yaml", source="c.yaml")
    with pytest.raises(
        InputError, match=r"c.yaml: field 'shifts.inverted': unknown key\(s\) \['inverted'\]; expected some of .*'invert'"
    ):
        configured_shifts(config, source="c.yaml")


def test_the_attack_records_check_themselves_and_name_a_config_entry_s_field() -> None:
    from classwise.shifts.attack_settings import AutoAttackSettings, PgdSettings

    bad = {
        "norm": lambda: PgdSettings("l1", 0.1),  # type: ignore[arg-type]
        "steps": lambda: PgdSettings("linf", 0.1, steps=-1),
        "step_size": lambda: PgdSettings("linf", 0.1, step_size=-0.1),
        "random_start": lambda: PgdSettings("linf", 0.1, random_start=1),  # type: ignore[arg-type]
        "version": lambda: AutoAttackSettings("linf", 0.1, "plus"),  # type: ignore[arg-type]
    }
    for field, make in bad.items():
        with pytest.raises(InputError) as error:
            make()
        assert error.value.field == field
    with pytest.raises(InputError) as error:
        PgdSettings.from_entry({"norm": "linf", "eps": 0.1, "steps": 1.5}, "shifts.pgd[0]")
    assert error.value.field == "shifts.pgd[0].steps" and "expected an integer >= 0, got 1.5" in str(error.value)
    with pytest.raises(InputError) as error:
        AutoAttackSettings.from_entry({"norm": "l1", "eps": 0.1}, "shifts.autoattack[1]")
    assert error.value.field == "shifts.autoattack[1].norm"
    # the step size: given, or 2.5 * eps / steps (none without steps)
    assert PgdSettings("l2", 0.5, step_size=0.2).alpha == 0.2
    assert PgdSettings("linf", 0.1, steps=4).alpha == 2.5 * 0.1 / 4 and PgdSettings("linf", 0.1, steps=0).alpha == 0.0
