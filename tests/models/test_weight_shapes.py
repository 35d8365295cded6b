"""Tensor shapes of a weights file read without torch (classwise.models.weight_shapes), checked
against torch's own loading, and the classifier head told apart in timm's, torchvision's and the
demo's models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from classwise.models.architectures import build_model
from classwise.models.checkpoint import save_checkpoint
from classwise.models.finetune import head_keys
from classwise.models.state_dicts import read_state_dict
from classwise.models.weight_shapes import ClassifierHead, classifier_head, tensor_shapes


class _Net(nn.Module):
    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3)
        self.bn1 = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, classes)


def _torch_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    return {key: tuple(value.shape) for key, value in read_state_dict(path).items()}


@pytest.mark.parametrize(
    "save",
    [
        lambda state, path: torch.save(state, path),
        lambda state, path: torch.save(state, path, _use_new_zipfile_serialization=False),
        lambda state, path: torch.save({"epoch": 3, "state_dict": {f"module.{k}": v for k, v in state.items()}}, path),
        lambda state, path: torch.save({k: nn.Parameter(v, requires_grad=False) for k, v in state.items()}, path),
    ],
    ids=["zip", "legacy", "nested-and-prefixed", "parameters"],
)
def test_the_shapes_are_those_torch_loads(tmp_path: Path, save) -> None:
    path = tmp_path / "net.pt"
    save(_Net().state_dict(), path)
    shapes = tensor_shapes(path)
    assert shapes == _torch_shapes(path)
    assert shapes is not None and shapes["fc.weight"] == (5, 4) and shapes["bn1.num_batches_tracked"] == ()


def test_a_safetensors_header_and_a_classwise_checkpoint(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    save_file(_Net().state_dict(), str(tmp_path / "net.safetensors"))
    assert tensor_shapes(tmp_path / "net.safetensors") == _torch_shapes(tmp_path / "net.safetensors")
    model = build_model("cnn", n_classes=7, input_shape=(1, 8, 8))
    path = tmp_path / "cnn.pt"
    save_checkpoint(
        path, model, architecture="cnn", n_classes=7, input_shape=(1, 8, 8), options={}, class_names="abcdefg", extra={}
    )
    assert tensor_shapes(path) == {key: tuple(value.shape) for key, value in model.state_dict().items()}
    assert classifier_head(tensor_shapes(path)) == ClassifierHead("10.weight", (7, 64))


def test_what_is_no_state_dict_reads_as_none(tmp_path: Path) -> None:
    (tmp_path / "text.pt").write_text("not a checkpoint")
    torch.save(_Net(), tmp_path / "module.pt")  # a whole pickled model: its classes are never imported
    torch.save({"step": 1, "note": "no tensors"}, tmp_path / "meta.pt")
    for name in ("text.pt", "module.pt", "meta.pt", "absent.pt"):
        assert tensor_shapes(tmp_path / name) is None, name


def test_reading_the_shapes_imports_no_torch(tmp_path: Path) -> None:
    torch.save(_Net().state_dict(), tmp_path / "net.pt")
    code = (
        "import sys\n"
        "from classwise.models.weight_shapes import classifier_head, tensor_shapes\n"
        f"print(classifier_head(tensor_shapes({str(tmp_path / 'net.pt')!r})).shape, 'torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "(5, 4) False"


def _meta_shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    return {key: tuple(value.shape) for key, value in model.state_dict().items()}


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("resnet18", "fc.weight"),
        ("vgg11", "classifier.6.weight"),
        ("mobilenet_v3_small", "classifier.3.weight"),
        ("densenet121", "classifier.weight"),
        ("squeezenet1_0", "classifier.1.weight"),  # a 1x1 convolution: (C, 512, 1, 1)
        ("vit_b_16", "heads.head.weight"),
        ("swin_t", "head.weight"),
        ("convnext_tiny", "classifier.2.weight"),
        ("inception_v3", "fc.weight"),  # AuxLogits.fc is no root-level head
    ],
)
@pytest.mark.filterwarnings("ignore:The default weight initialization")
def test_the_head_of_torchvision_models(name: str, head: str) -> None:
    import torchvision

    with torch.device("meta"):
        shapes = _meta_shapes(torchvision.models.get_model(name, weights=None, num_classes=7))
    for order in (shapes, dict(sorted(shapes.items()))):  # a safetensors header sorts its keys
        found = classifier_head(order)
        assert found is not None and (found.key, found.classes) == (head, 7)
    assert head in head_keys(name)  # fine-tuning's head: the tensors whose shape follows num_classes


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("resnet18", "fc.weight"),
        ("efficientnet_b0", "classifier.weight"),
        ("vit_tiny_patch16_224", "head.weight"),
        ("convnext_atto", "head.fc.weight"),
        ("levit_128s", "head.linear.weight"),
    ],
)
def test_the_head_of_timm_models(name: str, head: str) -> None:
    import timm

    with torch.device("meta"):
        model = timm.create_model(name, pretrained=False, num_classes=7)
    found = classifier_head(_meta_shapes(model))
    assert found is not None and (found.key, found.classes) == (head, 7)
    declared = model.default_cfg["classifier"]  # timm's own name of the head
    assert found.key.removesuffix(".weight") in (declared if isinstance(declared, tuple) else (declared,))


def test_heads_that_disagree_are_no_head() -> None:
    assert classifier_head({"fc.weight": (5, 8), "head.weight": (7, 8)}) is None
    assert classifier_head({"weight": (3, 2), "bias": (3,)}) is None  # a bare nn.Linear: no module name
    assert classifier_head({"fc.weight": (5, 8), "classifier.0.weight": (5, 8)}) == ClassifierHead("fc.weight", (5, 8))
    assert ClassifierHead("fc.weight", (5, 512)).shape_for(4) == (4, 512)
