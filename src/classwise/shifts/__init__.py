"""Distribution shifts: specifications, seeding, common corruptions and PGD attacks."""

from classwise.shifts.corruptions import (
    CORRUPTIONS,
    Corruption,
    corrupt_batch,
    corrupt_image,
    register_corruption,
)
from classwise.shifts.pgd import pgd_attack, random_start_delta
from classwise.shifts.seeding import sample_seed
from classwise.shifts.spec import ShiftSpec, expand_shifts

__all__ = [
    "CORRUPTIONS",
    "Corruption",
    "ShiftSpec",
    "corrupt_batch",
    "corrupt_image",
    "expand_shifts",
    "pgd_attack",
    "random_start_delta",
    "register_corruption",
    "sample_seed",
]
