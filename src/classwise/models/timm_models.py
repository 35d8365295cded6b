"""timm models by name: where their pretrained weights live, downloading them, loading offline.

The weights are located exactly as timm itself would (``pretrained_cfg``: the Hugging Face Hub
repo ``hf_hub_id`` first, else ``url``), downloaded by :func:`download` into a directory, and
loaded later without network through
``timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=path))``, so timm's
own checkpoint filters (position-embedding resizing, old-key conversion) still apply.
"""

from __future__ import annotations

import difflib
import os
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from classwise.data.downloads import NetworkOptions
from classwise.errors import InputError
from classwise.models.data_config import DataConfig
from classwise.models.fetch import FetchedFile, fetch_file, hash_prefix_from_url, remote_sha256
from classwise.models.state_dicts import runtime_load_error

if TYPE_CHECKING:
    from classwise.models.spec import ModelSpec

__all__ = [
    "HF_ENDPOINT",
    "architecture_data_config",
    "build",
    "build_architecture",
    "check_architecture",
    "check_name",
    "data_config",
    "download",
    "pretrained_cfg",
    "resolved_name",
    "weight_urls",
]

HF_ENDPOINT = "https://huggingface.co"
"""Default Hub address; the ``HF_ENDPOINT`` environment variable (a mirror) overrides it."""
_HF_FILENAMES = ("model.safetensors", "pytorch_model.bin")
"""What timm's ``load_state_dict_from_hf`` looks for, in order, when the config names no file."""


def _timm() -> Any:
    import timm

    return timm


def check_name(name: str) -> None:
    """:class:`InputError` unless timm knows the architecture (and the pretrained tag, if any)."""
    pretrained_cfg(name)


def pretrained_cfg(name: str) -> dict[str, Any]:
    """timm's resolved ``pretrained_cfg`` of ``name`` (``arch`` or ``arch.tag``) as a dict.

    Unknown architectures, unknown tags and architectures without pretrained weights raise
    :class:`InputError` on field ``name`` with the closest known names.
    """
    timm = _timm()
    if not isinstance(name, str) or not timm.is_model(name):
        close = difflib.get_close_matches(str(name), timm.list_models(), n=5)
        raise InputError(f"timm has no model {name!r}; close matches: {close}", field="name")
    arch = name.split(".", 1)[0]
    try:
        cfg = timm.models.get_pretrained_cfg(name)
    except RuntimeError:
        tags = timm.list_pretrained(f"{arch}.*")
        raise InputError(f"timm has no pretrained tag {name!r}; known: {tags}", field="name") from None
    if cfg is None or not (cfg.hf_hub_id or cfg.url):
        raise InputError(f"timm has no pretrained weights for {name!r}", field="name")
    return cfg.to_dict()


def resolved_name(name: str) -> str:
    """``arch.tag`` of the weights that ``name`` means (timm picks a default tag for ``arch``)."""
    cfg = pretrained_cfg(name)
    return f"{cfg['architecture']}.{cfg['tag']}" if cfg.get("tag") else str(cfg["architecture"])


def weight_urls(spec: ModelSpec) -> tuple[list[str], bool]:
    """Candidate URLs of the weights file, in timm's order, and whether they are Hub URLs.

    ``spec.url`` (a mirror) wins; then the Hub (``$HF_ENDPOINT/<repo>/resolve/<rev>/<file>``,
    trying ``model.safetensors`` before ``pytorch_model.bin`` unless the config names the file);
    then the config's plain ``url``.
    """
    if spec.url:
        return [spec.url], False
    cfg = pretrained_cfg(str(spec.name))
    hub_id = cfg.get("hf_hub_id")
    if hub_id:
        repo, _, revision = str(hub_id).partition("@")
        endpoint = (os.environ.get("HF_ENDPOINT") or HF_ENDPOINT).rstrip("/")
        filenames = [cfg["hf_hub_filename"]] if cfg.get("hf_hub_filename") else list(_HF_FILENAMES)
        rev = urllib.parse.quote(revision or "main", safe="")
        return [f"{endpoint}/{repo}/resolve/{rev}/{filename}" for filename in filenames], True
    return [str(cfg["url"])], False


def download(spec: ModelSpec, dest_dir: Path, network: NetworkOptions) -> list[FetchedFile]:
    """Fetch the weights file of ``spec`` into ``dest_dir`` (keeping its file name).

    Hub files are checked against the sha256 the Hub publishes (``X-Linked-Etag``); plain URLs
    against the hash prefix in their file name; ``spec.sha256`` overrides both.
    """
    urls, from_hub = weight_urls(spec)
    tried: list[str] = []
    for url in urls:
        expected, check = spec.sha256, "config"
        if from_hub:
            try:
                published = remote_sha256(url, network)
            except InputError:  # 404: this repo has the other file name
                tried.append(url)
                continue
            if expected is None and published is not None:
                expected, check = published, "hub-etag"
        prefix = None if expected else hash_prefix_from_url(url)
        name = Path(urllib.parse.urlparse(url).path).name
        return [
            fetch_file(
                url,
                dest_dir / name,
                sha256=expected,
                sha256_prefix=prefix,
                check=check if expected else None,
                network=network,
            )
        ]
    raise InputError(f"none of the weight files exists on the server: {tried}", field="name")


USE_TEST_SIZE = True
"""As timm's ``validate.py`` does by default: evaluate at ``test_input_size``/``test_crop_pct``
when the pretrained config has them (e.g. ``resnet50.a1_in1k``: 288 px, crop 1.0)."""


def data_config(spec: ModelSpec, model: nn.Module | None = None) -> DataConfig:
    """The evaluation preprocessing from timm's ``resolve_data_config`` (never hard-coded)."""
    timm = _timm()
    name = str(spec.name)
    if model is not None:
        resolved = timm.data.resolve_data_config(model=model, use_test_size=USE_TEST_SIZE)
    else:
        resolved = timm.data.resolve_data_config(pretrained_cfg=pretrained_cfg(name), use_test_size=USE_TEST_SIZE)
    origin = f"timm pretrained_cfg of {resolved_name(name)} (use_test_size={USE_TEST_SIZE})"
    return DataConfig.from_timm(resolved, origin=origin)


def build(spec: ModelSpec, files: list[Path]) -> tuple[nn.Module, DataConfig]:
    """The timm model with the downloaded weights (offline), and its data config."""
    timm = _timm()
    (path,) = files
    name = str(spec.name)
    try:
        model = timm.create_model(name, pretrained=True, pretrained_cfg_overlay=dict(file=str(path)))
    except RuntimeError as exc:
        raise runtime_load_error(exc, path, what=f"timm model {name!r}") from None
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise InputError(f"cannot load weights into timm model {name!r} ({type(exc).__name__}: {first})", path=path) from None
    model.eval()
    return model, data_config(spec, model)


def check_architecture(architecture: str) -> None:
    """:class:`InputError` (field ``architecture``) unless timm knows ``architecture``."""
    timm = _timm()
    if not isinstance(architecture, str) or not timm.is_model(architecture):
        close = difflib.get_close_matches(str(architecture), timm.list_models(), n=5)
        raise InputError(f"timm has no model {architecture!r}; close matches: {close}", field="architecture")


def build_architecture(architecture: str, num_classes: int | None) -> nn.Module:
    """A randomly initialised timm ``architecture`` (for a local checkpoint to be loaded into)."""
    timm = _timm()
    check_architecture(architecture)
    kwargs = {} if num_classes is None else {"num_classes": int(num_classes)}
    return timm.create_model(architecture, pretrained=False, **kwargs)


def architecture_data_config(model: nn.Module, architecture: str) -> DataConfig:
    """The data config of ``architecture``'s default pretrained weights (resolved by timm)."""
    timm = _timm()
    resolved = timm.data.resolve_data_config(model=model, use_test_size=USE_TEST_SIZE)
    return DataConfig.from_timm(resolved, origin=f"timm default pretrained_cfg of {architecture}")
