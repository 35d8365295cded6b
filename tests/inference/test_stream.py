"""predict_logits: shapes, determinism, batch-size and order independence, restored state."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from classwise.data import ImageSet, load_digits_split
from classwise.errors import InputError
from classwise.inference.execution import Execution
from classwise.inference.stream import predict_logits, resolve_device, shifted_images
from classwise.models import Hyperparameters, build_model, train_model
from classwise.shifts import expand_shifts

SHIFTS = expand_shifts(
    {
        "clean": True,
        "corruptions": ["gaussian_blur", "gaussian_noise", "rain"],
        "severities": [3],
        "pgd": [
            {"norm": "linf", "eps": 0.1, "steps": 5, "step_size": 0.025, "random_start": True},
            {"norm": "l2", "eps": 0.75, "steps": 5, "step_size": 0.2, "random_start": True},
        ],
    }
)


@pytest.fixture(scope="module")
def setup() -> tuple[torch.nn.Module, ImageSet]:
    train, test = load_digits_split(test_fraction=0.3, seed=0)
    model = build_model("linear", n_classes=10, input_shape=(1, 8, 8), seed=0)
    train_model(model, train, hyperparameters=Hyperparameters(epochs=5, lr=0.01, batch_size=64, seed=0))
    return model, test.subset(np.arange(90))


def test_clean_logits_equal_a_plain_forward_pass(setup) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    logits = predict_logits(model, test, SHIFTS["clean"], base_seed=0, execution=Execution("cpu"))
    assert logits.shape == (len(test), 10) and logits.dtype == np.float32
    with torch.no_grad():
        expected = model(torch.from_numpy(test.images)).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    assert (logits.argmax(1) == test.labels).mean() > 0.85


@pytest.mark.parametrize("name", list(SHIFTS))
def test_every_shift_is_deterministic_and_batch_size_independent(setup, name) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    spec = SHIFTS[name]
    a = predict_logits(model, test, spec, base_seed=7, batch_size=256)
    b = predict_logits(model, test, spec, base_seed=7, batch_size=256)
    c = predict_logits(model, test, spec, base_seed=7, batch_size=7)
    assert np.array_equal(a, b)
    np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-5)
    images_a = shifted_images(model, test, spec, base_seed=7, batch_size=256)
    images_c = shifted_images(model, test, spec, base_seed=7, batch_size=7)
    if spec.kind == "pgd":
        np.testing.assert_allclose(images_a, images_c, atol=1e-5)
    else:
        assert np.array_equal(images_a, images_c)
    if spec.kind != "clean":
        clean = predict_logits(model, test, SHIFTS["clean"], base_seed=7)
        assert not np.allclose(a, clean)


@pytest.mark.parametrize("name", ["gaussian_noise_s3", "pgd_linf_eps0.1"])
def test_results_follow_the_sample_not_its_position(setup, name) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    spec = SHIFTS[name]
    order = np.random.default_rng(0).permutation(len(test))
    base = shifted_images(model, test, spec, base_seed=3, batch_size=16)
    permuted = shifted_images(model, test.subset(order), spec, base_seed=3, batch_size=16)
    np.testing.assert_allclose(permuted, base[order], atol=1e-5)
    other_seed = shifted_images(model, test, spec, base_seed=4, batch_size=16)
    assert not np.allclose(other_seed, base)


def test_pgd_lowers_accuracy_and_stays_in_the_ball(setup) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    spec = SHIFTS["pgd_linf_eps0.1"]
    adv = shifted_images(model, test, spec, base_seed=0)
    assert np.abs(adv - test.images).max() <= 0.1 + 1e-6
    assert adv.min() >= 0 and adv.max() <= 1
    clean_acc = (predict_logits(model, test, SHIFTS["clean"], base_seed=0).argmax(1) == test.labels).mean()
    adv_acc = (predict_logits(model, test, spec, base_seed=0).argmax(1) == test.labels).mean()
    assert adv_acc < clean_acc - 0.15


def test_model_state_is_restored_and_progress_is_written(setup) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    model.train()
    stream = io.StringIO()
    try:
        predict_logits(model, test, SHIFTS["rain_s3"], base_seed=0, batch_size=32, progress=stream)
        assert model.training
    finally:
        model.eval()
    assert next(model.parameters()).device.type == "cpu"
    assert "rain_s3" in stream.getvalue()
    assert all(p.grad is None for p in model.parameters())


def test_resolve_device() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(InputError, match="device"):
        resolve_device("tpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA"):
            resolve_device("cuda")


def test_bad_batch_size(setup) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    with pytest.raises(InputError, match="batch_size"):
        predict_logits(model, test, SHIFTS["clean"], base_seed=0, batch_size=0)


# ----------------------------------------------------------------------------- targeted PGD


def _targeted(target, eps: float = 0.3):  # type: ignore[no-untyped-def]
    from classwise.shifts import ShiftSpec

    params = {"norm": "linf", "eps": eps, "steps": 10, "step_size": eps / 4, "random_start": True, "target": target}
    return ShiftSpec(name=f"pgd_targeted_{target}", kind="pgd", params=params)


def test_targeted_pgd_moves_samples_into_the_target_class(setup) -> None:  # type: ignore[no-untyped-def]
    from classwise.inference.stream import pgd_target
    from classwise.metrics.cfps import targeted_success_rate

    model, test = setup
    spec = _targeted(3)
    assert pgd_target(spec, test.n_classes) == 3
    assert pgd_target(SHIFTS["pgd_linf_eps0.1"], test.n_classes) is None
    logits = predict_logits(model, test, spec, base_seed=0, batch_size=32)
    assert logits.shape == (len(test), 10)
    predicted = logits.argmax(1)
    targets = np.full(len(test), 3)
    rate = targeted_success_rate(predicted, targets, test.labels)
    clean = predict_logits(model, test, SHIFTS["clean"], base_seed=0).argmax(1)
    assert rate > 0.8 > targeted_success_rate(clean, targets, test.labels)
    # samples of the target class are kept and stay in it
    own = test.labels == 3
    assert own.any() and (predicted[own] == 3).all()
    # per-sample seeding: batch size does not matter
    again = predict_logits(model, test, spec, base_seed=0, batch_size=256)
    np.testing.assert_allclose(logits, again, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", [10, -1, True, 2.0, "3"])
def test_bad_targets_are_rejected(setup, target) -> None:  # type: ignore[no-untyped-def]
    model, test = setup
    with pytest.raises(InputError) as info:
        predict_logits(model, test, _targeted(target), base_seed=0)
    assert info.value.field == "target"
