"""torchvision classifiers by name and weights enum: download, then load offline.

The weights file is stored as ``<dest>/checkpoints/<file name of weights.url>`` -- torch.hub's
cache layout -- so that loading can go through torchvision's own builder
(``get_model(name, weights=...)``, including its key remapping for old checkpoints such as
DenseNet's) with the hub directory pointed at ``<dest>``: the file is found and nothing is fetched.
"""

from __future__ import annotations

import contextlib
import difflib
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from classwise.data.downloads import NetworkOptions
from classwise.errors import InputError
from classwise.models.data_config import DataConfig
from classwise.models.fetch import FetchedFile, fetch_file, hash_prefix_from_url
from classwise.models.state_dicts import runtime_load_error

if TYPE_CHECKING:
    from classwise.models.spec import ModelSpec

__all__ = ["build", "build_architecture", "check_name", "data_config", "download", "resolve_weights"]

HUB_SUBDIR = "checkpoints"
"""torch.hub keeps downloaded state dicts in ``<hub dir>/checkpoints/``."""


def _models() -> Any:
    import torchvision.models

    return torchvision.models


def check_architecture(name: str, *, field: str = "name") -> None:
    """:class:`InputError` unless ``name`` is one of torchvision's classification models."""
    tvm = _models()
    known = tvm.list_models(module=tvm)
    if name not in known:
        close = difflib.get_close_matches(str(name), known, n=5)
        raise InputError(f"torchvision has no classification model {name!r}; close matches: {close}", field=field)


def resolve_weights(name: str, weights: str | None) -> Any:
    """The weights enum member (``"IMAGENET1K_V1"``, ``"DEFAULT"`` or ``"ResNet50_Weights.IMAGENET1K_V1"``)
    of model ``name``, or ``None`` for random initialisation."""
    check_architecture(name)
    if weights is None:
        return None
    enum = _models().get_model_weights(name)
    key = str(weights).removeprefix(f"{enum.__name__}.")
    try:
        return enum[key]
    except KeyError:
        raise InputError(
            f"torchvision model {name!r} has no weights {weights!r}; known: {[m.name for m in enum]} (or DEFAULT)",
            field="weights",
        ) from None


def check_name(spec: ModelSpec) -> None:
    """:class:`InputError` for an unknown model name or weights enum."""
    resolve_weights(str(spec.name), spec.weights)


def _file_name(weights: Any) -> str:
    return Path(urllib.parse.urlparse(weights.url).path).name


def download(spec: ModelSpec, dest_dir: Path, network: NetworkOptions) -> list[FetchedFile]:
    """Fetch the weights into ``dest_dir/checkpoints/``, checked against the sha256 prefix in the
    official file name (torch.hub's convention) or ``spec.sha256`` when given. ``spec.url`` (a
    mirror) replaces the download address, not the file name."""
    weights = resolve_weights(str(spec.name), spec.weights)
    if weights is None:
        return []
    url = spec.url or weights.url
    prefix = None if spec.sha256 else hash_prefix_from_url(weights.url)
    target = dest_dir / HUB_SUBDIR / _file_name(weights)
    return [fetch_file(url, target, sha256=spec.sha256, sha256_prefix=prefix, network=network)]


@contextlib.contextmanager
def _hub_dir(path: Path) -> Iterator[None]:
    """Point torch.hub's cache at ``path`` for the duration (process-wide; not thread-safe)."""
    previous = torch.hub.get_dir()
    torch.hub.set_dir(str(path))
    try:
        yield
    finally:
        torch.hub.set_dir(previous)


def data_config(name: str, weights: Any) -> DataConfig:
    """Preprocessing from ``weights.transforms()``; for random weights, that of the model's
    ``DEFAULT`` weights (the architecture's standard evaluation preprocessing)."""
    tvm = _models()
    source = weights if weights is not None else tvm.get_model_weights(name).DEFAULT
    label = f"torchvision {type(source).__name__}.{source.name}.transforms()"
    return DataConfig.from_torchvision(source.transforms(), origin=label)


def build(spec: ModelSpec, files: list[Path]) -> tuple[nn.Module, DataConfig]:
    """The model with the downloaded weights (or random ones when ``weights`` is null)."""
    tvm = _models()
    name = str(spec.name)
    weights = resolve_weights(name, spec.weights)
    if weights is None:
        model = tvm.get_model(name, weights=None)
    else:
        (path,) = files
        expected = path.parent.name == HUB_SUBDIR and path.name == _file_name(weights)
        if not path.is_file() or not expected:
            raise InputError(
                f"expected the weights at <dir>/{HUB_SUBDIR}/{_file_name(weights)} (run the download first)",
                path=path,
            )
        with _hub_dir(path.parent.parent):
            try:
                model = tvm.get_model(name, weights=weights, progress=False)
            except RuntimeError as exc:
                raise runtime_load_error(exc, path, what=f"torchvision model {name!r}") from None
    model.eval()
    return model, data_config(name, weights)


def build_architecture(architecture: str, num_classes: int | None) -> nn.Module:
    """A randomly initialised torchvision ``architecture`` (for a local checkpoint)."""
    check_architecture(architecture, field="architecture")
    kwargs = {} if num_classes is None else {"num_classes": int(num_classes)}
    return _models().get_model(architecture, weights=None, **kwargs)
