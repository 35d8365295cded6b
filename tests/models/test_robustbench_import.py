"""Importing robustbench: only its model zoo and loader, so that a package ``__init__`` that
cannot be imported (robustbench 1.1.1's needs ``pkg_resources``, gone from setuptools 82, and
``autoattack``, which no PyPI package provides) does not stop RobustBench models; and an error
that does stop them is named, not hidden behind an install hint.

The packages here are tiny stand-ins written to ``tmp_path`` with robustbench 1.1.1's layout and
import graph; the last test runs against a real robustbench when one is installed.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from classwise.errors import InputError
from classwise.models import robustbench_models
from classwise.models.zoo import download_weights, load_model, parse_model_spec

ENTRY = {"source": "robustbench", "name": "Tiny2024Net", "dataset": "cifar10", "threat_model": "Linf"}

# robustbench 1.1.1: __init__ imports .data (-> .loaders -> pkg_resources) and .eval (-> autoattack);
# .utils and .model_zoo import neither
PACKAGE = {
    "__init__.py": "from .data import load_cifar10\nfrom .utils import load_model\nfrom .eval import benchmark\n",
    "data.py": "from robustbench.model_zoo import model_dicts\nfrom robustbench.loaders import folder\n"
    "def load_cifar10():\n    pass\n",
    "loaders.py": "import pkg_resources\nfolder = None\n",
    "eval.py": "from autoattack import AutoAttack\ndef benchmark():\n    pass\n",
    "model_zoo/__init__.py": "from .models import model_dicts\n",
    "model_zoo/enums.py": textwrap.dedent(
        """
        from enum import Enum
        class BenchmarkDataset(Enum):
            cifar_10 = "cifar10"
        class ThreatModel(Enum):
            Linf = "Linf"
        """
    ),
    "model_zoo/models.py": textwrap.dedent(
        """
        import torch
        from torch import nn
        from robustbench.model_zoo.enums import BenchmarkDataset, ThreatModel
        def tiny():
            torch.manual_seed(3)
            return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))
        model_dicts = {BenchmarkDataset.cifar_10: {ThreatModel.Linf: {"Tiny2024Net": {"model": tiny}}}}
        """
    ),
    "utils.py": textwrap.dedent(
        """
        from pathlib import Path
        import torch
        from robustbench.model_zoo import model_dicts
        from robustbench.model_zoo.enums import BenchmarkDataset, ThreatModel
        def load_model(model_name, model_dir, dataset, threat_model):
            entry = model_dicts[BenchmarkDataset(dataset)][ThreatModel(threat_model)][model_name]
            model = entry["model"]()
            path = Path(model_dir) / dataset / threat_model / f"{model_name}.pt"
            if not path.is_file():  # "download"
                path.parent.mkdir(parents=True, exist_ok=True)
                torch.save({"state_dict": model.state_dict()}, path)
            model.load_state_dict(torch.load(path, weights_only=True)["state_dict"])
            return model.eval()
        """
    ),
}


def _robustbench_modules() -> list[str]:
    return [name for name in sys.modules if name == "robustbench" or name.startswith("robustbench.")]


@pytest.fixture
def fresh_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No robustbench in sys.modules before or after the test; the real one (if any) restored."""
    saved = {name: sys.modules.pop(name) for name in _robustbench_modules()}
    yield
    for name in _robustbench_modules():
        del sys.modules[name]
    sys.modules.update(saved)
    importlib.invalidate_caches()


def _write_package(root: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for relative, text in files.items():
        path = root / "robustbench" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()


def _block(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``import <module>`` fail as if it were not installed."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_models_load_when_the_package_init_needs_pkg_resources_and_autoattack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_imports: None
) -> None:
    _write_package(tmp_path / "site", PACKAGE, monkeypatch)
    _block(monkeypatch, "pkg_resources", "autoattack")
    with pytest.raises(ImportError, match="pkg_resources"):
        importlib.import_module("robustbench")  # the defect: the package as a whole cannot be imported
    spec = parse_model_spec(ENTRY)
    download_weights(spec, tmp_path / "models")
    model, config = load_model(spec, tmp_path / "models")
    assert config.input_size == (3, 32, 32)
    reference = sys.modules["robustbench.model_zoo.models"].tiny().eval()
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference(x))
    assert sys.modules["pkg_resources"] is None  # nothing was put in its place
    assert "robustbench.loaders" not in sys.modules and "robustbench.eval" not in sys.modules


def test_an_importable_package_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_imports: None) -> None:
    files = {**PACKAGE, "__init__.py": "MARK = 'imported through __init__'\n"}
    _write_package(tmp_path / "site", files, monkeypatch)
    package = robustbench_models._robustbench()
    assert package.MARK == "imported through __init__"
    assert package.utils.load_model is sys.modules["robustbench.utils"].load_model


def test_the_error_names_the_import_that_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_imports: None) -> None:
    files = {**PACKAGE, "utils.py": "import gdown_not_installed_here\n" + PACKAGE["utils.py"]}
    _write_package(tmp_path / "site", files, monkeypatch)
    _block(monkeypatch, "pkg_resources", "autoattack")
    with pytest.raises(InputError) as info:  # already when the config is read
        parse_model_spec(ENTRY, key="rb")
    assert info.value.field == "models.rb.source"
    spec = parse_model_spec(ENTRY, check_names=False)
    with pytest.raises(InputError) as info:
        download_weights(spec, tmp_path / "models")
    for error in (info.value, info.value.__cause__):
        assert "No module named 'gdown_not_installed_here'" in str(error)  # the real cause
    message = str(info.value)
    assert "pkg_resources" in message  # and why the package itself was not imported
    assert "not installed" not in message  # robustbench IS installed
    assert info.value.field == "source"
    assert not _robustbench_modules()  # nothing half-imported left behind
    with pytest.raises(InputError, match="gdown_not_installed_here"):  # the same answer again
        robustbench_models._robustbench()


def test_a_missing_package_says_it_is_not_installed_and_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, fresh_imports: None
) -> None:
    _block(monkeypatch, "robustbench")
    with pytest.raises(InputError) as info:
        robustbench_models._robustbench()
    message = str(info.value)
    assert "not installed" in message
    assert "pip install --no-deps robustbench==1.1.1" in message and ".[robustbench]" in message


def _robustbench_installed() -> bool:
    try:
        importlib.metadata.version("robustbench")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _robustbench_installed(), reason="robustbench is not installed")
def test_the_real_robustbench_without_pkg_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_imports: None) -> None:
    _block(monkeypatch, "pkg_resources", "autoattack")
    package = robustbench_models._robustbench()
    by_value = robustbench_models._by_value
    entry = by_value(by_value(package.model_zoo.model_dicts)["cifar10"])["Linf"]["Wong2020Fast"]
    torch.manual_seed(0)
    reference = entry["model"]().eval()
    path = tmp_path / "cifar10" / "Linf" / "Wong2020Fast.pt"
    path.parent.mkdir(parents=True)
    torch.save({"state_dict": reference.state_dict()}, path)  # no network: the file is "downloaded"
    spec = parse_model_spec({**ENTRY, "name": "Wong2020Fast"})
    download_weights(spec, tmp_path)  # finds the file, records it in the manifest
    model, _ = load_model(spec, tmp_path)
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference(x))
