"""The settings of the model and inference steps, parsed from their rules' parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from classwise.errors import InputError
from classwise.shifts import expand_shifts
from classwise.shifts.spec import infer_parameter
from classwise.steps.models import FitSettings, InferenceSettings, prototypes_step

SOURCE = {"source": "train", "architecture": "linear"}
DIGITS = {"source": "sklearn_digits"}


SHIFTS = expand_shifts(
    {
        "corruptions": ["gaussian_noise"],
        "severities": [1],
        "transfer": [{"source": "src", "attack": {"norm": "linf", "eps": 0.1, "steps": 2}}],
    }
)


def _infer_params(shift: str) -> dict[str, object]:
    """Rule infer's parameters for ``shift`` of a config with a transfer attack crafted on model ``src``."""
    spec = SHIFTS[shift]
    packed = infer_parameter(spec, SOURCE if spec.source_model else None)
    return {"model": {"source": "train"}, "dataset": DIGITS, "shift": packed, "seed": 3, "batch_size": 8, "device": "cpu"}


def test_the_rule_parameter_of_a_transfer_shift_unpacks_into_the_shift_and_its_source_model() -> None:
    transfer = [name for name, spec in SHIFTS.items() if spec.source_model == "src"]
    assert len(transfer) == 1, SHIFTS.keys()
    params = _infer_params(transfer[0])
    settings = InferenceSettings.from_config(params, dataset_name="digits")
    assert settings.source_model == SOURCE
    assert "source_model" not in settings.shift and {**settings.shift, "source_model": SOURCE} == params["shift"]
    assert "source_model" in params["shift"], "the rule's own parameter is left as it was"


def test_a_shift_crafted_on_no_model_has_no_source_model() -> None:
    params = _infer_params("gaussian_noise_s1")
    settings = InferenceSettings.from_config(params, dataset_name="digits")
    assert settings.source_model is None and settings.shift == params["shift"]
    assert (settings.seed, settings.batch_size, settings.device) == (3, 8, "cpu")


def test_a_missing_inference_setting_is_named_with_its_block() -> None:
    params = _infer_params("clean")
    del params["batch_size"]
    with pytest.raises(InputError) as info:
        InferenceSettings.from_config(params, dataset_name="digits")
    assert info.value.field == "inference.batch_size"


def test_the_training_rules_parameters_give_the_fit_settings() -> None:
    params = {"model": SOURCE, "dataset_name": "digits", "dataset": DIGITS}
    settings = FitSettings.from_config(params, model_name="lin")
    assert (settings.model_name, settings.model, settings.dataset_name, settings.dataset) == ("lin", SOURCE, "digits", DIGITS)
    assert (settings.device, settings.batch_size) == ("auto", None)


def test_class_prototypes_without_a_batch_size_stop_before_any_work(tmp_path: Path) -> None:
    settings = FitSettings(model_name="proto", model={"source": "prototype"}, dataset_name="digits", dataset=DIGITS)
    with pytest.raises(InputError) as info:
        prototypes_step(settings=settings, backbone_weights=None, prototypes_path=tmp_path / "proto.pt")
    assert info.value.field == "inference.batch_size" and not list(tmp_path.iterdir())
