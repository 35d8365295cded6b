"""Real models for inference: a :class:`ModelSpec` per ``models:`` config entry, a download step
(run where there is network) and an offline load step (run on compute nodes).

Config shapes (one entry of ``models:``)::

    {source: timm, name: vit_base_patch16_224}                 # optional: url, sha256
    {source: torchvision, name: resnet50, weights: IMAGENET1K_V1}   # weights: null = random
    {source: robustbench, name: Carmon2019Unlabeled, dataset: cifar10, threat_model: Linf}
    {source: checkpoint, path: ckpt.pth, architecture: resnet18, library: torchvision,
     num_classes: 43, data_config: {input_size: [3, 64, 64]}}
    {source: train, architecture: cnn, ...}                    # the demo; trained by the pipeline

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
from torch import nn

from classwise.atomic import write_json
from classwise.data.downloads import sha256_file
from classwise.errors import InputError
from classwise.models import robustbench_models, timm_models, torchvision_models
from classwise.models.checkpoint import load_checkpoint
from classwise.models.data_config import DataConfig
from classwise.models.fetch import DEFAULT_FETCH, FetchedFile, FetchOptions
from classwise.models.spec import SOURCES, ModelSpec, parse_model_spec
from classwise.models.state_dicts import load_into
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
    return spec.source in ("timm", "robustbench") or (spec.source == "torchvision" and spec.weights is not None)


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
    node. ``train`` models are made by the pipeline and raise :class:`InputError`.
    """
    dest = Path(dest_dir)
    if spec.source == "train":
        raise InputError("models with source 'train' are trained by the pipeline, not downloaded", field="source")
    dest.mkdir(parents=True, exist_ok=True)
    files: list[FetchedFile] = []
    if spec.source == "timm":
        files = timm_models.download(spec, dest, options)
        resolved = timm_models.resolved_name(str(spec.name))
    elif spec.source == "torchvision":
        files = torchvision_models.download(spec, dest, options)
        weights = torchvision_models.resolve_weights(str(spec.name), spec.weights)
        resolved = (
            f"{spec.name}:{type(weights).__name__}.{weights.name}" if weights is not None else f"{spec.name}:random"
        )
    elif spec.source == "robustbench":
        files = robustbench_models.download(spec, dest, options)
        resolved = spec.label
    else:  # checkpoint: nothing to fetch, record what will be loaded
        ckpt = Path(str(spec.path))
        if not ckpt.is_file():
            raise InputError("checkpoint file does not exist", path=ckpt, field="path")
        digest = sha256_file(ckpt)
        if spec.sha256 is not None and digest != spec.sha256:
            raise InputError(
                f"checksum mismatch: expected sha256 {spec.sha256}, got sha256 {digest}", path=ckpt, field="sha256"
            )
        files = [
            FetchedFile(ckpt.resolve(), str(ckpt), digest, ckpt.stat().st_size, "config" if spec.sha256 else "recorded")
        ]
        resolved = spec.label
    paths = [f.path for f in files]
    try:
        if verify:
            _, config = _build(spec, paths, dest)
        else:
            config = resolve_data_config(spec)
    except BaseException:
        if spec.source != "checkpoint":
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
    if spec.source == "timm":
        return timm_models.data_config(spec)
    if spec.source == "torchvision":
        return torchvision_models.data_config(
            str(spec.name), torchvision_models.resolve_weights(str(spec.name), spec.weights)
        )
    if spec.source == "robustbench":
        return robustbench_models.data_config(spec)
    if spec.source == "checkpoint" and spec.library in ("timm", "torchvision"):
        return _checkpoint_architecture(spec)[1]
    raise InputError("the data config of a demo model is stored in its checkpoint; use load_model", field="source")


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
    ``checkpoint`` and ``train`` (the checkpoint the pipeline trained); ``None`` for
    ``checkpoint`` (its ``path``) and torchvision with ``weights: null``. ``device`` may be
    ``"auto"`` (CUDA when available).
    """
    files, base = _weight_files(spec, weights, verify_sha256)
    model, config = _build(spec, files, base)
    wrapped = wrap_pixel_space(model, config)
    if device == "auto":
        from classwise.inference import resolve_device

        device = resolve_device("auto")
    wrapped.to(device)
    return wrapped, config


def _weight_files(spec: ModelSpec, weights: str | Path | None, verify_sha256: bool) -> tuple[list[Path], Path]:
    """The weight files to load and the directory they belong to."""
    if weights is None:
        if spec.source == "checkpoint":
            return [Path(str(spec.path))], Path(str(spec.path)).parent
        if spec.source == "torchvision" and spec.weights is None:
            return [], Path(".")
        raise InputError(
            f"model {spec.label} needs its downloaded weights (the directory with {MANIFEST_NAME})", field="weights"
        )
    location = Path(weights)
    is_manifest = location.is_dir() or location.name == MANIFEST_NAME
    if not is_manifest:
        if not location.is_file():
            raise InputError("weights file does not exist", path=location)
        if spec.source in ("timm", "train", "checkpoint"):
            return [location], location.parent
        raise InputError(
            f"expected the download directory or its {MANIFEST_NAME} for source {spec.source!r}", path=location
        )
    manifest = read_manifest(location)
    where = Path(manifest["_path"])
    if manifest.get("spec") != spec.to_dict():
        raise InputError(
            f"these weights were downloaded for {manifest.get('spec')}, but the config entry is {spec.to_dict()}; "
            "download again",
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


def _checkpoint_architecture(spec: ModelSpec) -> tuple[nn.Module, DataConfig]:
    """A fresh timm/torchvision architecture for a checkpoint, and its data config (the
    architecture's default, with the entry's ``data_config`` overrides)."""
    architecture = str(spec.architecture)
    if spec.library == "timm":
        model = timm_models.build_architecture(architecture, spec.num_classes)
        config = timm_models.architecture_data_config(model, architecture)
    else:
        model = torchvision_models.build_architecture(architecture, spec.num_classes)
        config = torchvision_models.data_config(architecture, None)
    if spec.data_config:
        config = config.replace(**dict(spec.data_config), origin=f"{config.origin} + config overrides")
    return model, config


def _classwise_checkpoint(spec: ModelSpec, path: Path) -> tuple[nn.Module, DataConfig]:
    model, meta = load_checkpoint(path)
    expected = spec.architecture or spec.options.get("architecture")
    if expected is not None and meta["architecture"] != expected:
        raise InputError(
            f"checkpoint holds architecture {meta['architecture']!r}, the config says {expected!r}",
            path=path,
            field="architecture",
        )
    channels = int(meta["input_shape"][0])
    config = DataConfig(
        input_size=tuple(meta["input_shape"]),  # type: ignore[arg-type]
        interpolation="bilinear",
        crop_pct=1.0,
        crop_mode="none",
        mean=(0.0,) * channels,
        std=(1.0,) * channels,
        resize_size=None,
        origin=f"classwise checkpoint {path.name} (the model normalises itself)",
    )
    if spec.data_config:
        config = config.replace(**dict(spec.data_config))
    return model, config


def _build(spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
    """The unwrapped model and its data config from the weight ``files``."""
    if spec.source == "timm":
        return timm_models.build(spec, files)
    if spec.source == "torchvision":
        return torchvision_models.build(spec, files)
    if spec.source == "robustbench":
        return robustbench_models.build(spec, files, base)
    (path,) = files
    if spec.source == "train" or spec.library == "classwise":
        return _classwise_checkpoint(spec, path)
    model, config = _checkpoint_architecture(spec)
    load_into(
        model,
        path,
        what=f"{spec.library} architecture {spec.architecture!r} (num_classes={spec.num_classes or 'default'})",
    )
    model.eval()
    return model, config
