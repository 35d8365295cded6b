"""PGD invariants, determinism and agreement with torchattacks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from classwise.data import load_digits_split
from classwise.errors import InputError
from classwise.models import Hyperparameters, build_model, train_model
from classwise.shifts.attack_settings import PgdSettings
from classwise.shifts.pgd import pgd_attack

N_EVAL = 200


@pytest.fixture(scope="module")
def data() -> tuple[torch.Tensor, torch.Tensor, object]:
    train, test = load_digits_split(test_fraction=0.3, seed=0)
    sub = test.subset(np.arange(N_EVAL))
    return torch.from_numpy(sub.images), torch.from_numpy(sub.labels), train


@pytest.fixture(scope="module")
def models(data) -> dict[str, torch.nn.Module]:  # type: ignore[no-untyped-def]
    _, _, train = data
    out = {}
    for arch, options in (("linear", {}), ("mlp", {"hidden": [32]})):
        model = build_model(arch, n_classes=10, input_shape=(1, 8, 8), seed=0, **options)
        train_model(model, train, hyperparameters=Hyperparameters(epochs=5, lr=0.01, batch_size=64, seed=0))
        out[arch] = model
    return out


def _accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


@pytest.mark.parametrize("norm,eps,alpha", [("linf", 0.1, 0.025), ("l2", 0.75, 0.2)])
@pytest.mark.parametrize("random_start", [False, True])
def test_stays_in_ball_and_range_and_hurts(models, data, norm, eps, alpha, random_start) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["mlp"]
    gen = torch.Generator().manual_seed(0)
    adv = pgd_attack(
        model, x, y, attack=PgdSettings(norm, eps, steps=10, step_size=alpha, random_start=random_start), generator=gen
    )
    assert adv.shape == x.shape and adv.dtype == torch.float32
    assert adv.min() >= 0.0 and adv.max() <= 1.0
    delta = (adv - x).flatten(1)
    if norm == "linf":
        assert delta.abs().max() <= eps + 1e-6
    else:
        assert delta.norm(dim=1).max() <= eps * (1 + 1e-5)
    clean_acc, adv_acc = _accuracy(model, x, y), _accuracy(model, adv, y)
    assert clean_acc > 0.85
    assert adv_acc < clean_acc - 0.15, (clean_acc, adv_acc)


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_eps_zero_is_the_identity(models, data, norm) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["linear"]
    adv = pgd_attack(model, x, y, attack=PgdSettings(norm, 0.0, steps=5, step_size=0.1, random_start=True))
    assert torch.equal(adv, x)
    assert _accuracy(model, adv, y) == _accuracy(model, x, y)


def test_targeted_attack_succeeds_on_a_linear_model(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["linear"]
    targets = (y + 1) % 10
    adv = pgd_attack(model, x, y, attack=PgdSettings("linf", 0.5, steps=20, step_size=0.05, random_start=False), targets=targets)
    with torch.no_grad():
        hit = (model(adv).argmax(1) == targets).float().mean()
    assert hit > 0.95
    assert (adv - x).abs().max() <= 0.5 + 1e-6


def test_random_start_is_reproducible_from_the_generator(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["mlp"]
    attack = PgdSettings("linf", 0.1, steps=3, step_size=0.025, random_start=True)
    a = pgd_attack(model, x, y, attack=attack, generator=torch.Generator().manual_seed(1))
    b = pgd_attack(model, x, y, attack=attack, generator=torch.Generator().manual_seed(1))
    c = pgd_attack(model, x, y, attack=attack, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    # the start can also be given explicitly
    delta = torch.full_like(x, 0.05)
    d = pgd_attack(model, x, y, attack=dataclasses.replace(attack, steps=0), init_delta=delta)
    assert torch.allclose(d, torch.clamp(x + 0.05, 0, 1))


def test_model_mode_and_parameters_are_untouched(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["mlp"]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.zero_grad(set_to_none=True)
    model.train()
    try:
        pgd_attack(model, x[:20], y[:20], attack=PgdSettings("l2", 0.5, steps=3, step_size=0.1, random_start=False))
        assert model.training
    finally:
        model.eval()
    pgd_attack(model, x[:20], y[:20], attack=PgdSettings("linf", 0.1, steps=3, step_size=0.1, random_start=False))
    assert not model.training
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_works_inside_inference_mode(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    with torch.inference_mode():
        adv = pgd_attack(
            models["mlp"], x[:20], y[:20], attack=PgdSettings("linf", 0.1, steps=3, step_size=0.05, random_start=False)
        )
    assert not torch.equal(adv, x[:20])


def test_zero_gradients_do_not_break_l2() -> None:
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    torch.nn.init.zeros_(model[1].weight)
    torch.nn.init.zeros_(model[1].bias)
    x = torch.rand(5, 1, 8, 8)
    adv = pgd_attack(
        model, x, torch.zeros(5, dtype=torch.long), attack=PgdSettings("l2", 1.0, steps=3, step_size=0.5, random_start=False)
    )
    assert torch.isfinite(adv).all()
    assert torch.equal(adv, x)


def test_bad_arguments(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    with pytest.raises(InputError, match="norm"):
        pgd_attack(models["linear"], x, y, attack=PgdSettings("l1", 0.1, steps=1, step_size=0.1, random_start=False))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="eps"):
        pgd_attack(models["linear"], x, y, attack=PgdSettings("linf", -1.0, steps=1, step_size=0.1, random_start=False))


@pytest.mark.parametrize("norm,eps,alpha", [("linf", 0.1, 0.025), ("linf", 0.05, 0.0125), ("l2", 0.75, 0.2)])
def test_matches_torchattacks(models, data, norm, eps, alpha) -> None:  # type: ignore[no-untyped-def]
    torchattacks = pytest.importorskip("torchattacks")
    x, y, _ = data
    model = models["mlp"]
    ours = pgd_attack(model, x, y, attack=PgdSettings(norm, eps, steps=10, step_size=alpha, random_start=False))
    cls = torchattacks.PGD if norm == "linf" else torchattacks.PGDL2
    reference = cls(model, eps=eps, alpha=alpha, steps=10, random_start=False)(x, y)
    ours_acc, ref_acc = _accuracy(model, ours, y), _accuracy(model, reference, y)
    assert abs(ours_acc - ref_acc) <= 2.0 / N_EVAL + 1e-9, (ours_acc, ref_acc)
    # L-inf sign steps agree exactly; L2 steps differ in float rounding (we sum the loss over
    # the batch, torchattacks averages it), which a ReLU net can amplify on a few images
    atol, share = (1e-6, 0.98) if norm == "linf" else (1e-3, 0.95)
    close = torch.isclose(ours, reference, atol=atol).flatten(1).all(dim=1)
    assert close.float().mean() >= share


# ----------------------------------------------------------------------------- more torchattacks agreement


@pytest.fixture(scope="module")
def demo_cnn(data):  # type: ignore[no-untyped-def]
    """The demo CNN (untrained) on 64 digits, with its own predictions as labels: every sample
    starts correctly classified."""
    x, _, _ = data
    model = build_model("cnn", n_classes=10, input_shape=(1, 8, 8), seed=0).eval()
    with torch.no_grad():
        labels = model(x[:64]).argmax(1)
    return model, x[:64], labels


@pytest.mark.parametrize("norm,eps,alpha", [("linf", 0.03, 0.01), ("l2", 0.3, 0.1)])
def test_matches_torchattacks_on_the_demo_cnn(demo_cnn, norm, eps, alpha) -> None:  # type: ignore[no-untyped-def]
    torchattacks = pytest.importorskip("torchattacks")
    model, x, y = demo_cnn
    ours = pgd_attack(model, x, y, attack=PgdSettings(norm, eps, steps=10, step_size=alpha, random_start=False))
    cls = torchattacks.PGD if norm == "linf" else torchattacks.PGDL2
    reference = cls(model, eps=eps, alpha=alpha, steps=10, random_start=False)(x, y)
    ours_acc, ref_acc = _accuracy(model, ours, y), _accuracy(model, reference, y)
    assert ours_acc < 0.9  # the attack does something
    assert abs(ours_acc - ref_acc) <= 2.0 / len(y) + 1e-9, (ours_acc, ref_acc)
    close = torch.isclose(ours, reference, atol=1e-6 if norm == "linf" else 1e-3).flatten(1).all(dim=1)
    assert close.float().mean() >= 0.95


@pytest.mark.parametrize("norm,eps,alpha", [("linf", 0.2, 0.05), ("l2", 1.0, 0.25)])
def test_targeted_matches_torchattacks_targeted_by_label(models, data, norm, eps, alpha) -> None:  # type: ignore[no-untyped-def]
    torchattacks = pytest.importorskip("torchattacks")
    x, y, _ = data
    model = models["mlp"]
    targets = (y + 3) % 10
    ours = pgd_attack(model, x, y, attack=PgdSettings(norm, eps, steps=10, step_size=alpha, random_start=False), targets=targets)
    cls = torchattacks.PGD if norm == "linf" else torchattacks.PGDL2
    attack = cls(model, eps=eps, alpha=alpha, steps=10, random_start=False)
    attack.set_mode_targeted_by_label(quiet=True)
    reference = attack(x, targets)  # in this mode torchattacks takes the targets as "labels"
    with torch.no_grad():
        ours_hit = float((model(ours).argmax(1) == targets).float().mean())
        ref_hit = float((model(reference).argmax(1) == targets).float().mean())
    assert ours_hit > 0.3  # the targeted attack moves samples into the target class
    assert abs(ours_hit - ref_hit) <= 2.0 / N_EVAL + 1e-9, (ours_hit, ref_hit)
    assert abs(_accuracy(model, ours, y) - _accuracy(model, reference, y)) <= 2.0 / N_EVAL + 1e-9
    close = torch.isclose(ours, reference, atol=1e-6 if norm == "linf" else 1e-3).flatten(1).all(dim=1)
    assert close.float().mean() >= 0.95


def test_targets_equal_to_labels_keep_samples_in_their_class(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["mlp"]
    adv = pgd_attack(model, x, y, attack=PgdSettings("linf", 0.1, steps=10, step_size=0.025, random_start=False), targets=y)
    assert _accuracy(model, adv, y) >= _accuracy(model, x, y)


# ----------------------------------------------------------------------------- definition checks


@pytest.mark.parametrize("norm,eps", [("linf", 0.2), ("l2", 2.0)])
def test_large_steps_still_respect_ball_and_range(models, data, norm, eps) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    adv = pgd_attack(
        models["mlp"],
        x,
        y,
        attack=PgdSettings(norm, eps, steps=3, step_size=10 * eps, random_start=True),
        generator=torch.Generator().manual_seed(0),
        targets=(y + 1) % 10,
    )
    assert adv.min() >= 0.0 and adv.max() <= 1.0
    delta = (adv - x).flatten(1)
    size = delta.abs().max(dim=1).values if norm == "linf" else delta.norm(dim=1)
    assert size.max() <= eps * (1 + 1e-5) + 1e-6


def test_runs_on_the_model_device_and_returns_on_the_input_device(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["mlp"]
    adv = pgd_attack(model, x[:8], y[:8], attack=PgdSettings("linf", 0.1, steps=2, step_size=0.05, random_start=False))
    assert adv.device == x.device and adv.dtype == torch.float32
    if torch.cuda.is_available():  # pragma: no cover - only with a GPU
        model.cuda()
        try:
            on_gpu = pgd_attack(model, x[:8], y[:8], attack=PgdSettings("linf", 0.1, steps=2, step_size=0.05, random_start=False))
        finally:
            model.cpu()
        assert on_gpu.device == x.device
        torch.testing.assert_close(on_gpu, adv, atol=1e-5, rtol=0)


def test_bad_images_and_targets(models, data) -> None:  # type: ignore[no-untyped-def]
    x, y, _ = data
    model = models["linear"]
    kwargs = dict(attack=PgdSettings("linf", 0.1, steps=1, step_size=0.1, random_start=False))
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        pgd_attack(model, x * 2, y, **kwargs)
    with pytest.raises(InputError, match="floating"):
        pgd_attack(model, (x * 255).to(torch.uint8), y, **kwargs)
    with pytest.raises(InputError, match="targets"):
        pgd_attack(model, x, y, targets=torch.full_like(y, 10), **kwargs)
    with pytest.raises(InputError, match="targets"):
        pgd_attack(model, x, y, targets=y[:5], **kwargs)
