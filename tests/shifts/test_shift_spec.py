"""Shift names and validation of the `shifts:` config section, targeted PGD included."""

from __future__ import annotations

import pytest

from classwise.errors import InputError
from classwise.shifts.spec import expand_shifts


def test_targeted_pgd_expands_to_one_shift_per_target_after_the_untargeted_ones() -> None:
    shifts = expand_shifts(
        {
            "pgd": [{"norm": "l2", "eps": 0.5}],
            "pgd_targeted": {"norm": "linf", "eps": 0.2, "steps": 4, "targets": [3, 0]},
        }
    )
    assert list(shifts) == ["clean", "pgd_l2_eps0.5", "pgd_targeted_3", "pgd_targeted_0"]
    targeted = shifts["pgd_targeted_3"]
    assert targeted.kind == "pgd"
    assert targeted.params == {"norm": "linf", "eps": 0.2, "steps": 4, "step_size": 0.125, "random_start": True, "target": 3}
    assert "target" not in shifts["pgd_l2_eps0.5"].params


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"pgd_targeted": {"norm": "linf", "eps": 0.1}}, "shifts.pgd_targeted.targets"),
        ({"pgd_targeted": {"norm": "linf", "eps": 0.1, "targets": [-1]}}, "shifts.pgd_targeted.targets"),
        ({"pgd_targeted": {"norm": "linf", "eps": 0.1, "targets": [1], "target": 2}}, "shifts.pgd_targeted.target"),
        ({"pgd": [{"norm": "linf", "eps": 0.1, "targets": [1]}]}, "shifts.pgd[0].targets"),
        ({"pgd_targeted": {"norm": "linf", "eps": 0.1, "targets": [1, 1]}}, "shifts"),
    ],
)
def test_bad_targeted_entries_name_the_field(section: dict, field: str) -> None:
    with pytest.raises(InputError) as error:
        expand_shifts(section)
    assert f"field '{field}'" in str(error.value)
