"""Real models for inference: a :class:`ModelSpec` per ``models:`` config entry, a download step
(run where there is network) and an offline load step (run on compute nodes).

Config shapes (one entry of ``models:``)::

    {source: timm, name: vit_base_patch16_224}                 # optional: url, sha256
    {source: torchvision, name: resnet50, weights: IMAGENET1K_V1}   # weights: null = random
    {source: robustbench, name: Carmon2019Unlabeled, dataset: cifar10, threat_model: Linf}
    {source: checkpoint, path: ckpt.pth, architecture: resnet18, library: torchvision,
     num_classes: 43, data_config: {input_size: [3, 64, 64]}}
    {source: train, architecture: cnn, ...}                    # the demo; trained by the pipeline
    {source: finetune, architecture: resnet18, ...}            # fine-tuned by the pipeline

What each source does is its module's under :mod:`classwise.models.sources`; this module is
the manifest and the steps every source shares.

:func:`download_weights` writes the weights plus ``manifest.json`` (what was fetched from where,
each file's sha256 and how it was verified, and the resolved data config) into a directory such
as ``resources/models/<model>/``; :func:`load_model` reads that manifest, checks the files'
digests and returns a :class:`~classwise.models.wrapper.PixelSpaceModel` that takes ``[0, 1]``
images, together with the resolved :class:`~classwise.models.data_config.DataConfig`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from classwise.atomic import write_json
from classwise.data.downloads import sha256_file
from classwise.errors import InputError
from classwise.models.data_config import DataConfig
from classwise.models.fetch import DEFAULT_FETCH, FetchOptions
from classwise.models.sources import SOURCES, model_source, parse_model_spec
from classwise.models.spec import ModelSpec
from classwise.models.wrapper import PixelSpaceModel, wrap_pixel_space

__all__ = [
    "MANIFEST_NAME",
    "SOURCES",
    "FetchOptions",
    "ModelSpec",
    "download_weights",
    "load_model",
    "needs_download",
    "parse_model_spec",
    "read_manifest",
    "resolve_data_config",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "classwise-model-weights"
MANIFEST_VERSION = 1


def needs_download(spec: ModelSpec) -> bool:
    """Whether ``spec`` has weights to download (timm, robustbench, torchvision with weights)."""
    return model_source(spec).needs_download(spec)


def download_weights(
    spec: ModelSpec,
    dest_dir: str | Path,
    *,
    options: FetchOptions = DEFAULT_FETCH,
    verify: bool = True,
) -> Path:
    """Download ``spec``'s weights into ``dest_dir`` and write ``dest_dir/manifest.json`` last.

    Returns the manifest's path (a stable output for a Snakemake ``localrule``). Sources without
    a download (torchvision with ``weights: null``, ``checkpoint``) only get a manifest (for a
    checkpoint: its path and sha256). With ``verify`` the model is built from the files once, so
    weights that do not fit fail here (and the files fetched are removed) rather than on a compute
    node. ``train`` and ``finetune`` models are made by the pipeline and raise :class:`InputError`.
    """
    dest = Path(dest_dir)
    source = model_source(spec)
    if source.made_by is not None:
        raise InputError(f"models with source {spec.source!r} are trained by the pipeline, not downloaded", field="source")
    dest.mkdir(parents=True, exist_ok=True)
    files, resolved = source.download(spec, dest, options)
    paths = [f.path for f in files]
    try:
        if verify:
            _, config = source.build(spec, paths, dest)
        else:
            config = source.data_config(spec)
    except BaseException:
        if source.owns_downloads(spec):
            for path in paths:
                path.unlink(missing_ok=True)
        raise
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "spec": spec.to_dict(),
        "resolved": resolved,
        "files": [
            {
                "path": _relative(f.path, dest),
                "url": f.url,
                "sha256": f.sha256,
                "size": f.size,
                "check": f.check,
            }
            for f in files
        ],
        "data_config": config.to_dict(),
    }
    target = dest / MANIFEST_NAME
    write_json(target, manifest)
    return target


def _relative(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest at ``path`` (a manifest file or the directory holding ``manifest.json``)."""
    source = Path(path)
    if source.is_dir():
        source = source / MANIFEST_NAME
    if not source.is_file():
        raise InputError(f"no model manifest here (expected {MANIFEST_NAME}; run the download first)", path=source)
    try:
        manifest = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the model manifest ({exc})", path=source) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InputError(f"not a model manifest (format is not {MANIFEST_FORMAT!r})", path=source, field="format")
    if manifest.get("version") != MANIFEST_VERSION:
        raise InputError(
            f"unsupported manifest version {manifest.get('version')!r}; expected {MANIFEST_VERSION}",
            path=source,
            field="version",
        )
    manifest["_path"] = str(source)
    return manifest


def resolve_data_config(spec: ModelSpec) -> DataConfig:
    """``spec``'s preprocessing without loading weights (timm ``pretrained_cfg``, torchvision
    ``weights.transforms()``, RobustBench's zoo entry; for checkpoints the architecture's default
    plus the entry's ``data_config`` overrides; demo checkpoints need :func:`load_model`)."""
    return model_source(spec).data_config(spec)


def load_model(
    spec: ModelSpec,
    weights: str | Path | None = None,
    *,
    device: str | torch.device = "cpu",
    verify_sha256: bool = True,
) -> tuple[PixelSpaceModel, DataConfig]:
    """``spec``'s model, offline, as a :class:`PixelSpaceModel` (``[0, 1]`` ``NCHW`` images in,
    logits out; eval mode, on ``device``) and its resolved :class:`DataConfig`.

    ``weights`` is the directory :func:`download_weights` wrote (or its ``manifest.json``); the
    manifest must have been written for the same config entry, and with ``verify_sha256`` each
    file's digest is checked against it. Also accepted: a plain weights file for ``timm``,
    ``checkpoint``, ``train`` and ``finetune`` (the checkpoint the pipeline trained); ``None`` for
    ``checkpoint`` (its ``path``) and torchvision with ``weights: null``. ``device`` may be
    ``"auto"`` (CUDA when available).
    """
    files, base = _weight_files(spec, weights, verify_sha256)
    model, config = model_source(spec).build(spec, files, base)
    wrapped = wrap_pixel_space(model, config)
    if device == "auto":
        from classwise.inference import resolve_device

        device = resolve_device("auto")
    wrapped.to(device)
    return wrapped, config


def _weight_files(spec: ModelSpec, weights: str | Path | None, verify_sha256: bool) -> tuple[list[Path], Path]:
    """The weight files to load and the directory they belong to."""
    source = model_source(spec)
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
