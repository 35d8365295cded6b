"""Loading a model offline from its weights, given its source: the weight files (from the
download's manifest, digests checked, or a plain file), the source's build, and the wrapper that
takes ``[0, 1]`` images. Sources call this for themselves; :func:`classwise.models.zoo.load_model`
calls it with the source of a spec."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from classwise.data.downloads import sha256_file
from classwise.errors import InputError
from classwise.models.manifest import MANIFEST_NAME, read_manifest
from classwise.models.spec import ModelSpec

if TYPE_CHECKING:
    import torch
    from torch import nn

    from classwise.models.data_config import DataConfig
    from classwise.models.wrapper import PixelSpaceModel

__all__ = ["BuildsFromWeights", "load_with_source", "weight_files"]


class BuildsFromWeights(Protocol):
    """What loading asks of a model source (every
    :class:`~classwise.models.sources.base.ModelSource` answers it). Declared here, not imported,
    so that the sources, which load through this module, and this module import in one direction."""

    #: Whether a plain weights file (not a download manifest) may be loaded.
    plain_file: bool

    def local_weights(self, spec: ModelSpec) -> tuple[list[Path], Path] | None: ...

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]: ...


def load_with_source(
    source: BuildsFromWeights,
    spec: ModelSpec,
    weights: str | Path | None = None,
    *,
    device: str | torch.device = "cpu",
    verify_sha256: bool = True,
) -> tuple[PixelSpaceModel, DataConfig]:
    """``spec``'s model built by ``source`` (see :func:`classwise.models.zoo.load_model`)."""
    from classwise.models.wrapper import wrap_pixel_space

    files, base = weight_files(source, spec, weights, verify_sha256)
    model, config = source.build(spec, files, base)
    wrapped = wrap_pixel_space(model, config)
    if device == "auto":
        from classwise.inference.stream import resolve_device

        device = resolve_device("auto")
    wrapped.to(device)
    return wrapped, config


def weight_files(
    source: BuildsFromWeights, spec: ModelSpec, weights: str | Path | None, verify_sha256: bool
) -> tuple[list[Path], Path]:
    """The weight files to load and the directory they belong to."""
    if weights is None:
        local = source.local_weights(spec)
        if local is not None:
            return local
        raise InputError(f"model {spec.label} needs its downloaded weights (the directory with {MANIFEST_NAME})", field="weights")
    location = Path(weights)
    is_manifest = location.is_dir() or location.name == MANIFEST_NAME
    if not is_manifest:
        if not location.is_file():
            raise InputError("weights file does not exist", path=location)
        if source.plain_file:
            return [location], location.parent
        raise InputError(f"expected the download directory or its {MANIFEST_NAME} for source {spec.source!r}", path=location)
    manifest = read_manifest(location)
    where = Path(manifest["_path"])
    if manifest.get("spec") != spec.to_dict():
        raise InputError(
            f"these weights were downloaded for {manifest.get('spec')}, but the config entry is {spec.to_dict()}; download again",
            path=where,
            field="spec",
        )
    base = where.parent
    files = []
    for record in manifest.get("files", []):
        path = Path(record["path"])
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise InputError("a file listed in the model manifest is missing; download again", path=path)
        if verify_sha256:
            actual = sha256_file(path)
            if actual != record["sha256"]:
                raise InputError(
                    f"checksum mismatch: the manifest {where} records sha256 {record['sha256']}, the file has "
                    f"sha256 {actual}; download again",
                    path=path,
                    field="sha256",
                )
        files.append(path)
    return files, base
