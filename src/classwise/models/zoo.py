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
    {source: prototype, backbone: {...}, train_on: cifar100}   # class prototypes, by the pipeline

What each source does is its module's under :mod:`classwise.models.sources`; this module is
the manifest and the steps every source shares.

:func:`download_weights` writes the weights plus ``manifest.json`` (what was fetched from where,
each file's sha256 and how it was verified, and the resolved data config) into a directory such
as ``resources/models/<model>/``; :func:`load_model` reads that manifest, checks the files'
digests and returns a :class:`~classwise.models.wrapper.PixelSpaceModel` that takes ``[0, 1]``
images, together with the resolved :class:`~classwise.models.data_config.DataConfig`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from classwise.atomic import write_json
from classwise.data.downloads import DEFAULT_NETWORK, NetworkOptions
from classwise.errors import InputError
from classwise.models.data_config import DataConfig
from classwise.models.loading import load_with_source
from classwise.models.manifest import MANIFEST_FORMAT, MANIFEST_NAME, MANIFEST_VERSION, read_manifest, relative_to
from classwise.models.sources import SOURCES, model_source, parse_model_spec
from classwise.models.spec import ModelSpec
from classwise.models.wrapper import PixelSpaceModel

__all__ = [
    "MANIFEST_NAME",
    "SOURCES",
    "ModelSpec",
    "NetworkOptions",
    "download_weights",
    "load_model",
    "needs_download",
    "parse_model_spec",
    "read_manifest",
    "resolve_data_config",
]


def needs_download(spec: ModelSpec) -> bool:
    """Whether ``spec`` has weights to download (timm, robustbench, torchvision with weights)."""
    return model_source(spec).needs_download(spec)


def download_weights(
    spec: ModelSpec,
    dest_dir: str | Path,
    *,
    network: NetworkOptions = DEFAULT_NETWORK,
    verify: bool = True,
) -> Path:
    """Download ``spec``'s weights into ``dest_dir`` and write ``dest_dir/manifest.json`` last.

    Returns the manifest's path (a stable output for a Snakemake ``localrule``). Sources without
    a download (torchvision with ``weights: null``, ``checkpoint``) only get a manifest (for a
    checkpoint: its path and sha256). With ``verify`` the model is built from the files once, so
    weights that do not fit fail here (and the files fetched are removed) rather than on a compute
    node. ``train``, ``finetune`` and ``prototype`` models are made by the pipeline and raise
    :class:`InputError`. ``network`` sets the retries, backoff and socket timeout of the
    downloads (not of RobustBench's own loader).
    """
    dest = Path(dest_dir)
    source = model_source(spec)
    if source.made_by is not None:
        raise InputError(f"models with source {spec.source!r} are trained by the pipeline, not downloaded", field="source")
    dest.mkdir(parents=True, exist_ok=True)
    files, resolved = source.download(spec, dest, network)
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
                "path": relative_to(f.path, dest),
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
    return load_with_source(model_source(spec), spec, weights, device=device, verify_sha256=verify_sha256)
