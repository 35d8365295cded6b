"""``corruption``: the test images corrupted in the job by one corruption of the registry
(:mod:`classwise.shifts.corruptions`) at one severity, seeded per sample
(``params == {"corruption": str, "severity": int}``), named ``{corruption}_s{severity}``.
``shifts.corruptions`` lists them, each at every severity of ``shifts.severities`` (default ``[3]``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError, field_path
from classwise.shifts.kinds.base import Batch, Entry, Run, ShiftKind, ShiftSpec, as_list
from classwise.shifts.severity import DEFAULT_SEVERITIES, check_severity

if TYPE_CHECKING:
    import torch


def corruption_spec(corruption: str, severity: int) -> ShiftSpec:
    """The spec named ``{corruption}_s{severity}``; validates both."""
    from classwise.shifts.corruptions import CORRUPTIONS

    if corruption not in CORRUPTIONS:
        raise InputError(f"unknown corruption {corruption!r}; known: {sorted(CORRUPTIONS)}", field="shifts.corruptions")
    check_severity(severity, "shifts.severities")
    return ShiftSpec(
        name=f"{corruption}_s{int(severity)}",
        kind=KIND.name,
        params={"corruption": corruption, "severity": int(severity)},
    )


class Corruption(ShiftKind):
    name = "corruption"
    config_keys = ("corruptions", "severities")
    corrupted_on_the_fly = True

    def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
        from classwise.shifts.corruptions import CORRUPTIONS

        corruptions = as_list(section.get("corruptions", []) or [], "shifts.corruptions")
        severities = as_list(section.get("severities", list(DEFAULT_SEVERITIES)), "shifts.severities")
        for i, severity in enumerate(severities):
            check_severity(severity, field_path("shifts.severities", i))
        entries = []
        for i, corruption in enumerate(corruptions):
            where = field_path("shifts.corruptions", i)
            if not isinstance(corruption, str) or corruption not in CORRUPTIONS:
                raise InputError(f"unknown corruption {corruption!r}; known: {sorted(CORRUPTIONS)}", field=where)
            entries.append(Entry(where, {}, [corruption_spec(corruption, severity) for severity in severities]))
        return entries

    def severity_step(self, spec: ShiftSpec) -> tuple[str, int] | None:
        return spec.corruption, spec.severity

    def shifted_batch(self, spec: ShiftSpec, batch: Batch, run: Run) -> torch.Tensor:
        import torch

        # Imported here: albumentations (about 1 s) is needed by corruption shifts only.
        from classwise.shifts.corruptions import corrupt_batch
        from classwise.shifts.seeding import sample_seed

        seeds = [sample_seed(run.base_seed, spec.name, str(sid)) for sid in batch.sample_ids]
        return torch.from_numpy(corrupt_batch(batch.images, spec.corruption, spec.severity, seeds)).to(run.device)


KIND = Corruption()
