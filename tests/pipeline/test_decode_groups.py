"""Which inference jobs share a decode (classwise.pipeline.decode_groups): the groups the plan
makes (tests/inference/test_shared_decode.py: what a group's job keeps and holds together)."""

from __future__ import annotations

from typing import Any

from classwise.pipeline.config_checks import check_models
from classwise.pipeline.decode_groups import DecodeGroup, decode_groups
from classwise.shifts.spec import expand_shifts

# --------------------------------------------------------------------------- the groups of a plan


def _groups(models_per_decode: int, **overrides: Any) -> dict[str, DecodeGroup]:
    config: dict[str, Any] = {
        "datasets": {"digits": {"source": "sklearn_digits"}, "other": {"source": "sklearn_digits"}},
        "models": {
            "lin": {"source": "train", "architecture": "linear", "train_on": "digits"},
            "mlp": {"source": "train", "architecture": "mlp", "train_on": "digits"},
            "preds": {"source": "predictions", "files": {"clean": "p.csv"}},
        },
    }
    shifts = expand_shifts(
        {"clean": True, "corruptions": ["gaussian_noise", "snow"], "severities": [3], "pgd": [{"norm": "linf", "eps": 0.1}]}
    )
    names = list(shifts)
    arguments: dict[str, Any] = {
        "specs": check_models(config, check_names=False),
        "shift_specs": shifts,
        "shards": {name: 1 for name in names},
        "models_per_decode": models_per_decode,
    }
    arguments.update(overrides)
    return decode_groups(
        {"digits": ["lin", "mlp", "preds"], "other": ["lin", "preds"]}, {"digits": names, "other": names}, **arguments
    )


def test_a_group_holds_the_models_the_pipeline_runs_on_the_shifts_that_run_no_model() -> None:
    groups = _groups(2)
    # "other" runs one model (predictions are read, not run): nothing to share
    assert list(groups) == ["digits"]
    group = groups["digits"]
    assert group.models == ("lin", "mlp")
    assert group.shifts == ("clean", "gaussian_noise_s3", "snow_s3")  # not the PGD attack
    assert group.rule == "infer_models_digits"


def test_no_group_by_default_and_a_sharded_shift_keeps_its_per_model_jobs() -> None:
    assert _groups(1) == {}
    shards = {"clean": 1, "gaussian_noise_s3": 4, "snow_s3": 1, "pgd_linf_eps0.1": 1}
    assert _groups(2, shards=shards)["digits"].shifts == ("clean", "snow_s3")
