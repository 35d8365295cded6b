"""Architectures, deterministic training and checkpoints."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from classwise.data import ImageSet, load_digits_split
from classwise.errors import InputError
from classwise.models import Hyperparameters, build_model, load_checkpoint, save_checkpoint, train_model


@pytest.fixture(scope="module")
def small_train() -> ImageSet:
    train, _ = load_digits_split(test_fraction=0.3, seed=0)
    return train.subset(np.arange(400))


@pytest.mark.parametrize("architecture", ["linear", "mlp", "cnn"])
@pytest.mark.parametrize("shape", [(1, 8, 8), (3, 32, 32), (1, 5, 7)])
def test_models_map_images_to_logits(architecture: str, shape: tuple[int, int, int]) -> None:
    model = build_model(architecture, n_classes=7, input_shape=shape, seed=0)
    out = model(torch.rand(4, *shape))
    assert out.shape == (4, 7)
    assert torch.isfinite(out).all()


def test_unknown_architecture_lists_known_ones() -> None:
    with pytest.raises(InputError) as info:
        build_model("resnet999", n_classes=10, input_shape=(1, 8, 8))
    message = str(info.value)
    assert "resnet999" in message and all(name in message for name in ("linear", "mlp", "cnn"))


def test_unknown_option_and_bad_values() -> None:
    with pytest.raises(InputError, match="widht"):
        build_model("mlp", n_classes=10, input_shape=(1, 8, 8), widht=3)
    with pytest.raises(InputError, match="hidden"):
        build_model("mlp", n_classes=10, input_shape=(1, 8, 8), hidden=[0])
    with pytest.raises(InputError, match="input_shape"):
        build_model("cnn", n_classes=10, input_shape=(8, 8))  # type: ignore[arg-type]


def test_mlp_hidden_sizes_are_used() -> None:
    model = build_model("mlp", n_classes=10, input_shape=(1, 8, 8), hidden=[20, 30])
    shapes = [tuple(p.shape) for p in model.parameters() if p.dim() == 2]
    assert shapes == [(20, 64), (30, 20), (10, 30)]


def test_seeded_init_is_reproducible_and_leaves_global_rng_alone() -> None:
    state = torch.get_rng_state()
    a = build_model("cnn", n_classes=10, input_shape=(1, 8, 8), seed=3)
    b = build_model("cnn", n_classes=10, input_shape=(1, 8, 8), seed=3)
    c = build_model("cnn", n_classes=10, input_shape=(1, 8, 8), seed=4)
    assert torch.equal(torch.get_rng_state(), state)
    for (ka, va), (_, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(va, vb), ka
    assert any(not torch.equal(va, vc) for va, vc in zip(a.state_dict().values(), c.state_dict().values()))


def test_default_init_is_reproducible_too() -> None:
    a = build_model("mlp", n_classes=10, input_shape=(1, 8, 8))
    b = build_model("mlp", n_classes=10, input_shape=(1, 8, 8))
    assert all(torch.equal(va, vb) for va, vb in zip(a.state_dict().values(), b.state_dict().values()))


def _train(train: ImageSet, seed: int, **kwargs: object) -> tuple[torch.nn.Module, dict]:
    model = build_model("mlp", n_classes=10, input_shape=(1, 8, 8), seed=0, hidden=[32], dropout=0.1)
    summary = train_model(model, train, hyperparameters=Hyperparameters(epochs=3, lr=0.01, batch_size=32, seed=seed), **kwargs)  # type: ignore[arg-type]
    return model, summary


def test_training_is_deterministic_and_learns(small_train: ImageSet) -> None:
    rng_before = torch.get_rng_state()
    stream = io.StringIO()
    m1, s1 = _train(small_train, seed=5, progress=stream)
    m2, s2 = _train(small_train, seed=5)
    m3, _ = _train(small_train, seed=6)
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert s1 == s2
    for key, value in m1.state_dict().items():
        assert torch.equal(value, m2.state_dict()[key]), key
    assert any(not torch.equal(v, m3.state_dict()[k]) for k, v in m1.state_dict().items())
    assert [h["epoch"] for h in s1["history"]] == [1, 2, 3]
    assert s1["history"][-1]["loss"] < s1["history"][0]["loss"]
    assert s1["final_accuracy"] > 0.8
    assert "train" in stream.getvalue()
    assert not m1.training
    assert all(p.grad is None for p in m1.parameters())


def test_training_rejects_bad_arguments(small_train: ImageSet) -> None:
    model = build_model("linear", n_classes=10, input_shape=(1, 8, 8))
    with pytest.raises(InputError, match="batch_size"):
        train_model(model, small_train, hyperparameters=Hyperparameters(epochs=1, lr=0.01, batch_size=0, seed=0))
    with pytest.raises(InputError, match="epochs"):
        train_model(model, small_train, hyperparameters=Hyperparameters(epochs=-1, lr=0.01, batch_size=8, seed=0))


def _save(path, model, options, **overrides):  # type: ignore[no-untyped-def]
    kwargs = dict(
        architecture="mlp",
        n_classes=10,
        input_shape=(1, 8, 8),
        options=options,
        class_names=[str(d) for d in range(10)],
        extra={"train": {"final_accuracy": 0.9, "history": [1, 2]}, "seed": 0},
    )
    kwargs.update(overrides)
    save_checkpoint(path, model, **kwargs)  # type: ignore[arg-type]


def test_checkpoint_round_trip_gives_identical_logits(tmp_path, small_train: ImageSet) -> None:  # type: ignore[no-untyped-def]
    model, _ = _train(small_train, seed=0)
    path = tmp_path / "models" / "mlp.pt"
    _save(path, model, {"hidden": (32,), "dropout": 0.1})
    assert [p.name for p in path.parent.iterdir()] == ["mlp.pt"]  # no temporary files left
    loaded, meta = load_checkpoint(path)
    assert not loaded.training
    x = torch.from_numpy(small_train.images[:50])
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(x), loaded(x))
    assert meta["architecture"] == "mlp"
    assert meta["input_shape"] == (1, 8, 8)
    assert meta["class_names"] == tuple(str(d) for d in range(10))
    assert meta["options"] == {"hidden": [32], "dropout": 0.1}
    assert meta["extra"]["train"]["final_accuracy"] == 0.9


def test_checkpoint_with_mismatching_shapes_names_file_and_parameter(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = build_model("mlp", n_classes=10, input_shape=(1, 8, 8), hidden=[32])
    path = tmp_path / "bad.pt"
    _save(path, model, {"hidden": [64]})  # metadata says 64 hidden units, weights have 32
    with pytest.raises(InputError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert str(path) in message
    assert "1.weight" in message or "2.weight" in message
    assert "(32, 64)" in message and "(64, 64)" in message


def test_missing_and_unreadable_checkpoints(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "nope.pt"
    with pytest.raises(InputError, match="nope.pt"):
        load_checkpoint(missing)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"this is not a checkpoint")
    with pytest.raises(InputError, match="garbage.pt"):
        load_checkpoint(garbage)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    with pytest.raises(InputError, match="foreign.pt"):
        load_checkpoint(foreign)


def test_hyperparameters_check_themselves_and_fill_in_a_train_entry_s_defaults() -> None:
    from classwise.models.sources.train import TRAINING_DEFAULTS

    bad = [({"epochs": -1}, "epochs"), ({"epochs": 1.5}, "epochs"), ({"batch_size": 0}, "batch_size")]
    bad += [({"lr": -0.1}, "lr"), ({"weight_decay": True}, "weight_decay")]
    for values, field in bad:
        with pytest.raises(InputError) as error:
            Hyperparameters(**values)  # type: ignore[arg-type]
        assert error.value.field == field
    assert Hyperparameters.from_entry({"architecture": "mlp", "epochs": 3, "lr": 1}) == Hyperparameters(epochs=3, lr=1.0)
    assert (
        Hyperparameters().to_dict()
        == TRAINING_DEFAULTS
        == {"epochs": 10, "lr": 0.01, "batch_size": 64, "weight_decay": 0.0, "seed": 0}
    )
