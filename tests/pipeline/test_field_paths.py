"""One style of field path in every error message (classwise.errors.field_path): keys joined by
dots, list positions in brackets (``shifts.pgd[0].eps``), whether the JSON-schema check, the
shift parser or the plan names the field."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from paths import REPO

from classwise.errors import InputError, field_path
from classwise.pipeline.config_checks import check_schema, shift_shards
from classwise.pipeline.plan import check_runs
from classwise.shifts.spec import expand_shifts

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
BASE = {
    "datasets": {"digits": {"source": "sklearn_digits"}},
    "models": {"lin": {"source": "train", "architecture": "linear", "train_on": "digits"}},
}


def test_keys_are_joined_by_dots_and_positions_go_in_brackets() -> None:
    assert field_path("shifts", "pgd", 0, "eps") == "shifts.pgd[0].eps"
    assert field_path("datasets.c10.shift_sets.c", "severities", 1) == "datasets.c10.shift_sets.c.severities[1]"
    assert field_path("confusions", "clean", "net") == "confusions.clean.net"
    assert field_path(7) == "[7]"  # the eighth entry of a file's top-level list
    assert field_path("a", 0, 2) == "a[0][2]"
    assert field_path("flag", True) == "flag.True"  # a bool is a key, not a position


@pytest.mark.parametrize(
    ("shifts", "field"),
    [
        ({"pgd": [{"norm": "linf", "eps": "big"}]}, "shifts.pgd[0].eps"),  # a wrong type
        ({"pgd": [{"norm": "linf", "eps": 0.1}, {"norm": "linf", "eps": 0.1, "bogus": 1}]}, "shifts.pgd[1].bogus"),
        ({"pgd": [{"eps": 0.1}]}, "shifts.pgd[0].norm"),  # a missing key
        ({"pgd": [{"norm": "linf", "eps": 0.1, "shards": 0}]}, "shifts.pgd[0].shards"),  # a bound
        ({"corruptions": ["gaussian_noise", 3]}, "shifts.corruptions[1]"),
    ],
)
def test_the_schema_check_names_list_entries_in_brackets(shifts: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as error:
        check_schema({**BASE, "shifts": shifts}, SCHEMA, source="c.yaml")
    assert (error.value.path, error.value.field) == ("c.yaml", field)
    assert f"c.yaml: field '{field}': " in str(error.value)


@pytest.mark.parametrize(
    ("class_drops", "field", "message"),
    [
        ({"q": 1.5}, "robustness.class_drops.q", "expected a value < 1, got 1.5"),
        ({"adjustment": "bonferroni"}, "robustness.class_drops.adjustment", "expected one of ['bh', 'holm']"),
        ({"unpaired_test": "chi2"}, "robustness.class_drops.unpaired_test", "expected one of ['fisher', 'boschloo']"),
        ({"alpha": 0.05}, "robustness.class_drops.alpha", "unknown key 'alpha'"),
    ],
)
def test_a_section_checked_against_its_own_schema_names_the_field_from_the_top(
    class_drops: dict[str, Any], field: str, message: str
) -> None:
    from classwise.pipeline.config_checks import section_schema

    schema = section_schema("robustness", REPO / "workflow" / "schemas" / "robustness.schema.yaml")
    check_schema({"robustness": {"class_drops": {"q": 0.1, "adjustment": "holm"}}}, schema, source="c.yaml")
    with pytest.raises(InputError) as error:
        check_schema({"robustness": {"class_drops": class_drops}}, schema, source="c.yaml")
    assert (error.value.path, error.value.field) == ("c.yaml", field) and message in str(error.value)


def test_the_schema_and_the_library_name_the_same_field_alike() -> None:
    shifts = {"pgd": [{"norm": "linf", "eps": 0.1, "shards": 0}]}
    with pytest.raises(InputError) as schema:
        check_schema({**BASE, "shifts": shifts}, SCHEMA, source="c.yaml")
    with pytest.raises(InputError) as library:
        shift_shards({"shifts": shifts}, ["pgd_linf_eps0.1"], source="c.yaml")
    assert schema.value.field == library.value.field == "shifts.pgd[0].shards"
    with pytest.raises(InputError) as corruption:
        expand_shifts({"corruptions": ["gaussian_noise", "no_such_corruption"]})
    assert corruption.value.field == "shifts.corruptions[1]"


def test_the_plan_names_a_transfer_entry_in_brackets() -> None:
    config = {
        **BASE,
        "shifts": {"pgd": [{"norm": "linf", "eps": 0.1}], "transfer": [{"source": "gone", "attack": "pgd_linf_eps0.1"}]},
    }
    with pytest.raises(InputError, match=r"field 'shifts\.transfer\[0\]\.source': shift .* from model 'gone'") as error:
        check_runs(config, shifts=expand_shifts(config["shifts"]), source="c.yaml")
    assert error.value.path == "c.yaml"


def _fields_built_by_hand(path: Path) -> list[str]:
    """``field=`` arguments of ``path`` that spell a list position or join a path themselves,
    rather than through field_path: an f-string with a bracket, or a ``".".join``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg != "field":
                continue
            literal = "".join(p.value for p in getattr(value, "values", []) if isinstance(p, ast.Constant))
            joins = [
                n
                for n in ast.walk(value)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "join"
            ]
            if (isinstance(value, ast.JoinedStr) and ("[" in literal or "]" in literal)) or joins:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_field_spells_a_position_or_joins_a_path_by_hand() -> None:
    sources = sorted((REPO / "src" / "classwise").rglob("*.py"))
    assert len(sources) > 50
    assert [where for path in sources for where in _fields_built_by_hand(path)] == []
