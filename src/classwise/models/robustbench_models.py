"""RobustBench models by name, dataset and threat model, through the ``robustbench`` package.

``robustbench`` is imported lazily (it is an optional dependency with heavy pins of its own).
Downloading calls its own loader, ``robustbench.utils.load_model(name, model_dir=dest, ...)``,
which stores ``<dest>/<dataset>/<threat_model>/<name>.pt`` (ensembles: ``<name>.pt_m<i>.pt``);
loading calls it again on the same directory, where the files are found and nothing is fetched.
RobustBench's CIFAR models take ``[0, 1]`` images and normalise themselves, so the data config has
``mean = 0`` and ``std = 1`` and the wrapper's normalisation is the identity.

Only two of robustbench's modules are used: ``robustbench.model_zoo`` (the model tables) and
``robustbench.utils`` (the loader). robustbench 1.1.1's package ``__init__`` also imports
``robustbench.data``, whose loaders ``import pkg_resources`` (removed from setuptools 82, so
missing from a fresh virtual environment), and ``robustbench.eval``, which imports
``autoattack`` (not on PyPI; robustbench's ``pyautoattack`` dependency installs a module named
``pyautoattack``). When importing the package fails, the two modules are imported on their own
under a package object whose ``__init__`` is not run; they need neither.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from torch import nn

from classwise.data.downloads import NetworkOptions, sha256_file
from classwise.errors import InputError
from classwise.models.data_config import DataConfig
from classwise.models.fetch import FetchedFile
from classwise.models.spec import ROBUSTBENCH_DATASETS, ROBUSTBENCH_THREAT_MODELS
from classwise.models.state_dicts import runtime_load_error

if TYPE_CHECKING:
    from classwise.models.spec import ModelSpec

__all__ = ["DATASETS", "THREAT_MODELS", "build", "check_name", "data_config", "download", "installed", "model_files"]

DATASETS = ROBUSTBENCH_DATASETS
THREAT_MODELS = ROBUSTBENCH_THREAT_MODELS


class _Geometry(NamedTuple):
    """The input size, resize and crop of one named preprocessing."""

    input_size: tuple[int, int, int]
    resize_size: tuple[int, int] | None
    crop_mode: str
    interpolation: str


_IMAGENET_PREPROCESSING: dict[str | None, _Geometry] = {
    "Res256Crop224": _Geometry(input_size=(3, 224, 224), resize_size=(256, 256), crop_mode="center", interpolation="bilinear"),
    "BicubicRes256Crop224": _Geometry(
        input_size=(3, 224, 224), resize_size=(256, 256), crop_mode="center", interpolation="bicubic"
    ),
    "Res224": _Geometry(input_size=(3, 224, 224), resize_size=(224, 224), crop_mode="squash", interpolation="bilinear"),
    "Crop288": _Geometry(input_size=(3, 288, 288), resize_size=None, crop_mode="none", interpolation="bilinear"),
}
"""RobustBench's named ImageNet preprocessings (``robustbench.data.PREPROCESSINGS``), as data configs."""

#: RobustBench models take [0, 1] images and normalise them themselves.
_IDENTITY_MEAN = (0.0, 0.0, 0.0)
_IDENTITY_STD = (1.0, 1.0, 1.0)


#: The robustbench modules classwise uses.
_SUBMODULES = ("robustbench.model_zoo", "robustbench.utils")

INSTALL_HINT = (
    "install it beside timm 1.0.x with: pip install -e '.[robustbench]' && "
    "pip install --no-deps robustbench==1.1.1 (see docs/configs.md, RobustBench models)"
)


def _import_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def installed() -> bool:
    """Whether a ``robustbench`` package is there to import (not whether importing it works)."""
    if sys.modules.get("robustbench", False) is None:  # import blocked
        return False
    if "robustbench" in sys.modules:
        return True
    return importlib.util.find_spec("robustbench") is not None


def _robustbench() -> Any:
    """The ``robustbench`` package with ``model_zoo`` and ``utils`` imported, or
    :class:`InputError` naming the import error that prevents it."""
    before = set(sys.modules)
    try:
        import robustbench
        import robustbench.model_zoo
        import robustbench.utils
    except Exception as exc:  # an import runs third-party code: any error means "unusable"
        package_error = exc
    else:
        return robustbench
    try:
        spec = importlib.util.find_spec("robustbench")
    except ValueError:  # a module object without a spec stands in sys.modules
        spec = None
    if spec is None or spec.submodule_search_locations is None:
        raise InputError(
            f"models with source 'robustbench' need the robustbench package, which is not installed "
            f"({_import_error(package_error)}); {INSTALL_HINT}",
            field="source",
        ) from package_error
    # The package's __init__ failed (see the module docstring): import just the two modules
    # under a package object that has the package's path but has not run its __init__.
    package = importlib.util.module_from_spec(spec)
    sys.modules["robustbench"] = package
    try:
        for name in _SUBMODULES:
            # set by hand: a module left in sys.modules by the failed package import is returned
            # as it is, without becoming an attribute of the new package object
            setattr(package, name.rpartition(".")[2], importlib.import_module(name))
    except Exception as exc:
        for name in set(sys.modules) - before:  # leave no half-imported robustbench behind
            if name == "robustbench" or name.startswith("robustbench."):
                del sys.modules[name]
        raise InputError(
            f"models with source 'robustbench' need robustbench's model zoo and loader, whose import "
            f"failed: {_import_error(exc)} (importing the whole package failed with "
            f"{_import_error(package_error)}); {INSTALL_HINT}",
            field="source",
        ) from exc
    return package


def _by_value(table: Mapping[Any, Any]) -> dict[str, Any]:
    """RobustBench keys its tables by enums; index them by the enums' string values."""
    return {str(getattr(key, "value", key)): value for key, value in table.items()}


def _entry(spec: ModelSpec) -> Mapping[str, Any]:
    rb = _robustbench()
    datasets = _by_value(rb.model_zoo.model_dicts)
    dataset = str(spec.dataset)
    if dataset not in datasets:
        raise InputError(f"RobustBench has no dataset {dataset!r}; known: {sorted(datasets)}", field="dataset")
    threats = _by_value(datasets[dataset])
    threat = str(spec.threat_model)
    if threat not in threats:
        raise InputError(
            f"RobustBench has no threat model {threat!r} for {dataset}; known: {sorted(threats)}", field="threat_model"
        )
    models = threats[threat]
    if spec.name not in models:
        close = difflib.get_close_matches(str(spec.name), list(models), n=5)
        raise InputError(f"RobustBench has no {dataset} {threat} model {spec.name!r}; close matches: {close}", field="name")
    return models[spec.name]


def check_name(spec: ModelSpec) -> None:
    """:class:`InputError` for an unknown dataset, threat model or model name (needs robustbench)."""
    _entry(spec)


def model_files(spec: ModelSpec, model_dir: Path) -> list[Path]:
    """The files RobustBench keeps for ``spec`` under ``model_dir``."""
    folder = model_dir / str(spec.dataset) / str(spec.threat_model)
    name = str(spec.name)
    return sorted(p for p in folder.glob(f"{name}.pt*") if p.name == f"{name}.pt" or p.name.startswith(f"{name}.pt_m"))


def _load(spec: ModelSpec, model_dir: Path) -> nn.Module:
    rb = _robustbench()
    try:
        model = rb.utils.load_model(
            model_name=str(spec.name),
            model_dir=str(model_dir),
            dataset=str(spec.dataset),
            threat_model=str(spec.threat_model),
        )
    except RuntimeError as exc:
        raise runtime_load_error(exc, model_dir, what=f"RobustBench model {spec.name!r}") from None
    return model.eval()


def download(spec: ModelSpec, dest_dir: Path, network: NetworkOptions) -> list[FetchedFile]:
    """Download with RobustBench's own loader (it fetches from its own hosts; ``network`` does not
    apply) and record each file's sha256. A model that RobustBench loads without a file under
    ``dest_dir`` (one it would fetch at load time) is refused: compute nodes have no network."""
    _entry(spec)
    _load(spec, dest_dir)
    files = model_files(spec, dest_dir)
    if not files:
        raise InputError(
            f"RobustBench loaded {spec.name!r} without storing a file under {dest_dir}; it would need "
            "network at inference time, which this pipeline does not allow",
            field="name",
        )
    source = f"robustbench:{spec.dataset}/{spec.threat_model}/{spec.name}"
    return [FetchedFile(path, source, sha256_file(path), path.stat().st_size, "recorded") for path in files]


def data_config(spec: ModelSpec) -> DataConfig:
    """``[0, 1]`` input at the dataset's resolution with identity normalisation; ImageNet models
    use the resize/crop RobustBench names in its model zoo entry."""
    entry = _entry(spec)
    origin = f"robustbench {spec.dataset} {spec.threat_model} {spec.name} (the model normalises itself)"
    if spec.dataset == "imagenet":
        name = entry.get("preprocessing", "Res256Crop224") if isinstance(entry, Mapping) else "Res256Crop224"
        if name not in _IMAGENET_PREPROCESSING:
            raise InputError(
                f"RobustBench preprocessing {name!r} of {spec.name!r} is not supported; known: "
                f"{sorted(k for k in _IMAGENET_PREPROCESSING if k)}",
                field="name",
            )
        geometry = _IMAGENET_PREPROCESSING[name]
        crop = geometry.input_size[1]
        resize = geometry.resize_size
        return DataConfig(
            input_size=geometry.input_size,
            interpolation=geometry.interpolation,
            crop_pct=crop / resize[0] if resize else 1.0,
            crop_mode=geometry.crop_mode,
            mean=_IDENTITY_MEAN,
            std=_IDENTITY_STD,
            resize_size=geometry.resize_size,
            origin=f"{origin}; preprocessing {name}",
        )
    return DataConfig(
        input_size=(3, 32, 32),
        interpolation="bilinear",
        crop_pct=1.0,
        crop_mode="none",
        mean=_IDENTITY_MEAN,
        std=_IDENTITY_STD,
        resize_size=None,
        origin=origin,
    )


def build(spec: ModelSpec, files: list[Path], model_dir: Path) -> tuple[nn.Module, DataConfig]:
    """The model loaded by RobustBench from ``model_dir`` (which holds ``files``)."""
    missing = [path for path in files if not path.is_file()]
    if missing or not files:
        raise InputError("RobustBench weights are missing (run the download first)", path=missing[0] if missing else model_dir)
    return _load(spec, model_dir), data_config(spec)
