"""Model entries parse without torch, and the names a library must know are checked once per
library version (classwise.models.spec, classwise.models.sources)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from classwise.errors import InputError
from classwise.models import spec as spec_module
from classwise.models.sources import parse_model_spec
from classwise.models.sources import timm as timm_source
from classwise.models.spec import DEMO_ARCHITECTURES


def test_the_demo_architecture_names_are_the_architectures_module_s() -> None:
    from classwise.models.architectures import ARCHITECTURES

    assert set(DEMO_ARCHITECTURES) == set(ARCHITECTURES)


def test_parsing_every_source_imports_no_model_library() -> None:
    code = (
        "import sys; from classwise.models.sources import parse_model_spec\n"
        "for entry in ({'source': 'timm', 'name': 'resnet18'}, {'source': 'torchvision', 'name': 'resnet18', 'weights': None},\n"
        "              {'source': 'checkpoint', 'path': 'x.pt', 'architecture': 'cnn'}, {'source': 'train', 'architecture': 'mlp'},\n"
        "              {'source': 'finetune', 'architecture': 'resnet18', 'weights': None, 'train_on': 'd'}):\n"
        "    parse_model_spec(entry, check_names=False)\n"
        "print(sorted(m for m in ('torch', 'timm', 'torchvision', 'albumentations') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_name_check_is_remembered_per_library_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[str] = []

    def check_now(spec: spec_module.ModelSpec) -> None:
        calls.append(str(spec.name))
        if spec.name == "resnet5":
            raise InputError("timm has no model 'resnet5'; close matches: ['resnet50']", field="name")

    monkeypatch.setattr(timm_source.SOURCE, "check_names", check_now)
    monkeypatch.setattr(spec_module, "_versions", lambda libraries: "timm==1.0")
    for _ in range(2):
        parse_model_spec({"source": "timm", "name": "resnet18"}, key="a")
        with pytest.raises(InputError, match=r"field 'models.b.name': timm has no model 'resnet5'") as error:
            parse_model_spec({"source": "timm", "name": "resnet5"}, key="b", config_path="my.yaml")
        assert error.value.path == "my.yaml"
    assert calls == ["resnet18", "resnet5"]  # the second round read the remembered answers
    assert len(json.loads((tmp_path / "classwise" / "model-names.json").read_text())) == 2
    monkeypatch.setattr(spec_module, "_versions", lambda libraries: "timm==2.0")
    parse_model_spec({"source": "timm", "name": "resnet18"}, key="a")
    assert calls == ["resnet18", "resnet5", "resnet18"]  # another version: checked again
