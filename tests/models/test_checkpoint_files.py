"""What ``source: checkpoint`` accepts, as docs/configs.md documents it: a state dict for timm and
torchvision architectures, a classwise checkpoint for the demo ones, and a one-line error (file,
field, what to save instead) for a whole model saved with ``torch.save(model)``."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch
import torchvision

from classwise.errors import InputError
from classwise.models.architectures import build_model
from classwise.models.checkpoint import load_checkpoint, save_checkpoint
from classwise.models.pickled import pickled_model_class
from classwise.models.state_dicts import read_state_dict
from classwise.models.zoo import download_weights, load_model, parse_model_spec, resolve_data_config

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _resnet18(num_classes: int = 5) -> torch.nn.Module:
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=num_classes).eval()


def _assert_one_clean_line(error: InputError) -> None:
    text = str(error)
    assert "\n" not in text and "\x1b" not in text, repr(text)


def test_a_pickled_torchvision_model_gets_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "whole.pt"
    torch.save(_resnet18(), path)  # the whole nn.Module, not its state dict
    entry = {"source": "checkpoint", "path": str(path), "architecture": "resnet18", "library": "torchvision", "num_classes": 5}
    spec = parse_model_spec(entry)
    for attempt in (lambda: load_model(spec), lambda: download_weights(spec, tmp_path / "res")):
        with pytest.raises(InputError) as info:
            attempt()
        _assert_one_clean_line(info.value)
        assert info.value.path == str(path) and info.value.field == "path"
        assert "model.state_dict()" in str(info.value)
        assert "torchvision.models.resnet.ResNet" in str(info.value)
    assert not (tmp_path / "res" / "manifest.json").exists()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol 4")
def test_a_pickled_demo_model_gets_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "cnn.pt"
    torch.save(build_model("cnn", n_classes=3, input_shape=(1, 8, 8), seed=0), path, pickle_protocol=4)
    spec = parse_model_spec({"source": "checkpoint", "path": str(path), "architecture": "cnn"})
    assert spec.library == "classwise"  # implied by a demo architecture
    with pytest.raises(InputError) as info:
        load_model(spec)
    _assert_one_clean_line(info.value)
    assert info.value.path == str(path) and info.value.field == "path"
    assert "save_checkpoint" in str(info.value) and "model.state_dict()" in str(info.value)


def test_only_whole_models_count_as_pickled_models(tmp_path: Path) -> None:
    model = _resnet18()
    torch.save(model, tmp_path / "whole.pt")
    torch.save(model.state_dict(), tmp_path / "state.pt")
    torch.save({"epoch": 1, "state_dict": model.state_dict()}, tmp_path / "nested.pt")
    save_checkpoint(
        tmp_path / "classwise.pt",
        model,
        architecture="x",
        n_classes=5,
        input_shape=(3, 8, 8),
        options={},
        class_names="abcde",
        extra={},
    )
    (tmp_path / "text.pt").write_text("not a torch file")
    assert pickled_model_class(tmp_path / "whole.pt") == "torchvision.models.resnet.ResNet"
    for name in ("state.pt", "nested.pt", "classwise.pt", "text.pt"):
        assert pickled_model_class(tmp_path / name) is None, name


def test_other_unreadable_files_keep_torchs_reason_without_colour_codes(tmp_path: Path) -> None:
    path = tmp_path / "odd.pt"
    torch.save({"state_dict": _resnet18().state_dict(), "args": argparse.Namespace(lr=0.1)}, path)
    with pytest.raises(InputError) as info:
        read_state_dict(path)
    _assert_one_clean_line(info.value)
    assert "UnpicklingError" in str(info.value) and info.value.path == str(path)
    with pytest.raises(InputError) as info:
        load_checkpoint(path)
    _assert_one_clean_line(info.value)


def test_state_dict_files_load_as_documented(tmp_path: Path) -> None:
    reference = _resnet18()
    plain, nested = tmp_path / "plain.pt", tmp_path / "nested.pth"
    torch.save(reference.state_dict(), plain)
    # DataParallel prefix under a training script's key
    torch.save({"epoch": 9, "model": {f"module.{k}": v for k, v in reference.state_dict().items()}}, nested)
    x = torch.rand(2, 3, 40, 40)
    for path in (plain, nested):
        entry = {
            "source": "checkpoint",
            "path": str(path),
            "architecture": "resnet18",
            "library": "torchvision",
            "num_classes": 5,
        }
        model, config = load_model(parse_model_spec(entry))
        with torch.no_grad():
            expected = reference((x - torch.tensor(IMAGENET_MEAN)[:, None, None]) / torch.tensor(IMAGENET_STD)[:, None, None])
            torch.testing.assert_close(model(x), expected)
    assert config.input_size == (3, 224, 224) and config.resize_size == (256, 256)


def test_data_config_defaults_and_overrides_as_documented() -> None:
    base = {"source": "checkpoint", "path": "unused.pt", "architecture": "resnet18", "library": "torchvision"}
    # a 32 px input: resized to floor(32 / 0.875) = 36, centre-cropped to 32, ImageNet mean/std
    small = resolve_data_config(parse_model_spec({**base, "data_config": {"input_size": [3, 32, 32]}}))
    assert (small.input_size, small.resize_size, small.crop_mode) == ((3, 32, 32), (36, 36), "center")
    assert (small.mean, small.std, small.interpolation) == (IMAGENET_MEAN, IMAGENET_STD, "bilinear")
    as_is = resolve_data_config(parse_model_spec({**base, "data_config": {"input_size": [3, 32, 32], "crop_mode": "none"}}))
    assert as_is.resize_size is None
    no_crop = resolve_data_config(parse_model_spec({**base, "data_config": {"input_size": [3, 32, 32], "crop_pct": 1.0}}))
    assert no_crop.resize_size == (32, 32)
    with pytest.raises(InputError) as info:
        parse_model_spec({**base, "data_config": {"size": 32}}, key="m")
    assert info.value.field == "models.m.data_config.size"
    with pytest.raises(InputError) as info:
        parse_model_spec({k: v for k, v in base.items() if k != "library"}, key="m")
    assert info.value.field == "models.m.library"


def test_every_marked_payload_reader_names_a_pickled_whole_model(tmp_path: Path) -> None:
    """The demo checkpoint, the fine-tuned checkpoint and the prototype file share one reader
    (state_dicts.read_marked_payload): a whole model saved in their place gets the same one line."""
    from classwise.models.finetune import read_finetuned
    from classwise.models.prototypes import read_prototypes

    path = tmp_path / "whole.pt"
    torch.save(_resnet18(), path)
    for read in (load_checkpoint, read_finetuned, read_prototypes):
        with pytest.raises(InputError) as info:
            read(path)
        _assert_one_clean_line(info.value)
        assert info.value.path == str(path) and info.value.field == "path", read.__name__
        assert "torchvision.models.resnet.ResNet" in str(info.value), read.__name__
