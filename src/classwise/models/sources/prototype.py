"""``source: prototype``: a marginal classifier the pipeline builds (rule ``compute_prototypes``)
from the frozen features of a pretrained ``backbone``: per class the cosine similarity between
an image's features and the class prototype, the mean feature of the class's train images
(:mod:`classwise.models.prototypes`).

Config shape (one entry of ``models:``)::

    {source: prototype, backbone: {source: torchvision, name: resnet50, weights: IMAGENET1K_V2},
     train_on: cifar100, resize: 224}

``backbone`` is a ``timm``, ``torchvision`` or ``checkpoint`` (library timm or torchvision)
entry; its weights are downloaded by the local rule ``download_prototype_backbone`` into
``resources/models/<model>/backbone/`` (a checkpoint is read where it is; torchvision's
``weights: null`` reads nothing). ``train_on`` (default the first dataset) names the dataset
whose train split gives the prototypes; ``resize`` (default null: images as the dataset stores
them) resizes every image to ``resize x resize`` pixels inside the model, so that a 32-pixel
CIFAR image reaches an ImageNet backbone at the size it was trained on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError, check_count
from classwise.models import spec as _spec
from classwise.models.sources.base import ModelSource, PipelineSource, json_safe
from classwise.models.sources.checkpoint import SOURCE as CHECKPOINT
from classwise.models.sources.timm import SOURCE as TIMM
from classwise.models.sources.torchvision import SOURCE as TORCHVISION
from classwise.models.spec import ModelSpec, check_keys

if TYPE_CHECKING:
    from torch import nn

    from classwise.models.data_config import DataConfig

#: The sources a backbone may come from (each gives an architecture that can be rebuilt from
#: its name alone, so the prototype file holds everything inference needs).
BACKBONE_SOURCES: dict[str, ModelSource] = {"timm": TIMM, "torchvision": TORCHVISION, "checkpoint": CHECKPOINT}


def parse_backbone(entry: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
    """The ``backbone`` of a prototype entry (``where`` = ``models.<key>``) as a :class:`ModelSpec`;
    errors name ``<where>.backbone.<field>``."""
    here = f"{where}.backbone"
    backbone = entry.get("backbone")
    if not isinstance(backbone, Mapping):
        raise InputError(
            f"expected a mapping (a timm, torchvision or checkpoint model entry), got {backbone!r}", path=config_path, field=here
        )
    source = backbone.get("source")
    if source not in BACKBONE_SOURCES:
        raise InputError(f"expected one of {sorted(BACKBONE_SOURCES)}, got {source!r}", path=config_path, field=f"{here}.source")
    spec = BACKBONE_SOURCES[source].parse({k: v for k, v in backbone.items() if k != "source"}, here, config_path)
    if BACKBONE_SOURCES[source] is CHECKPOINT and spec.library not in ("timm", "torchvision"):
        raise InputError(
            f"a backbone checkpoint must hold a timm or torchvision architecture, got library {spec.library!r}",
            path=config_path,
            field=f"{here}.library",
        )
    return spec


def backbone_identity(spec: ModelSpec) -> tuple[str, str]:
    """``(library, architecture)`` that rebuilds the backbone without its weights."""
    if BACKBONE_SOURCES[spec.source] is CHECKPOINT:
        return str(spec.library), str(spec.architecture)
    return spec.source, str(spec.name)


def backbone_input(model: str, spec: ModelSpec, *, resources: str) -> str | None:
    """The file rule ``compute_prototypes`` reads the backbone of prototype ``spec`` from: the
    download manifest in ``<resources>/models/<model>/backbone/``, a checkpoint's own path, or
    nothing (torchvision's random weights)."""
    backbone = parse_backbone(spec.options, f"models.{model}", None)
    source = BACKBONE_SOURCES[backbone.source]
    if source is CHECKPOINT:
        return str(backbone.path)
    if source is TORCHVISION and backbone.weights is None:
        return None
    return f"{resources}/models/{model}/backbone/manifest.json"


def load_backbone(
    spec: ModelSpec, weights: str | Path | None, *, key: str = "model"
) -> tuple[nn.Module, DataConfig, dict[str, Any]]:
    """The headless backbone of a prototype ``spec`` (:func:`classwise.models.prototypes.strip_head`;
    eval mode, on CPU) read offline from ``weights`` (its download manifest, sha256-checked; a
    checkpoint's file; None for random torchvision weights, drawn under seed 0), its data config
    and a record of what was read."""
    import torch

    from classwise.models.loading import load_with_source
    from classwise.models.manifest import MANIFEST_NAME, read_manifest
    from classwise.models.prototypes import strip_head

    backbone_spec = parse_backbone(spec.options, f"models.{key}", None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)  # torchvision's random weights (weights: null), the same every run
        wrapped, config = load_with_source(BACKBONE_SOURCES[backbone_spec.source], backbone_spec, weights, device="cpu")
    record: dict[str, Any] = {"entry": backbone_spec.to_dict(), "weights": None if weights is None else str(weights)}
    if weights is not None and Path(weights).name == MANIFEST_NAME:
        manifest = read_manifest(weights)
        record.update(resolved=manifest.get("resolved"), files=manifest.get("files"))
    backbone = strip_head(wrapped.model)
    backbone.eval()
    return backbone, config, record


def _resize(given: Mapping[str, Any], where: str, config_path: str | Path | None) -> int | None:
    value = given.get("resize")
    if value is None:
        return None
    return check_count(value, f"{where}.resize", meaning="pixels, or null", path=config_path)


class PrototypeSource(PipelineSource):
    name = "prototype"
    made_by: str | None = "compute_prototypes"

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        check_keys(self.name, given, frozenset({"backbone"}), frozenset({"train_on", "resize"}), where, config_path)
        backbone = parse_backbone(given, where, config_path)
        _resize(given, where, config_path)
        train_on = given.get("train_on")
        if train_on is not None and (not isinstance(train_on, str) or not train_on.strip()):
            raise InputError(f"expected a dataset name, got {train_on!r}", path=config_path, field=f"{where}.train_on")
        library, architecture = backbone_identity(backbone)
        return ModelSpec(
            source=self.name,
            architecture=architecture,
            library=library,
            options=dict(given),
            label=f"prototype:{backbone.label}",
            verbatim=True,
        )

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        return None  # check_names remembers the backbone's own check

    def check_names(self, spec: ModelSpec) -> None:
        backbone = parse_backbone(spec.options, "models.m", None)
        source = BACKBONE_SOURCES[backbone.source]
        try:
            _spec.remembered_check(backbone, source.name_check_libraries(backbone), source.check_names)
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], field=f"backbone.{exc.field or 'name'}") from None

    def data_config(self, spec: ModelSpec) -> DataConfig:
        backbone = parse_backbone(spec.options, "models.m", None)
        return BACKBONE_SOURCES[backbone.source].data_config(backbone)

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        from classwise.models.prototypes import load_prototype_classifier

        (path,) = files
        classifier, config, _ = load_prototype_classifier(path)
        return classifier, config

    def inference_model(
        self, model: str, spec: ModelSpec, weights: str | Path | None, device: str
    ) -> tuple[Any, dict[str, Any], Any]:
        from classwise.models.prototypes import load_prototype_model

        loaded, meta, data_config = load_prototype_model(weights, device=device)  # type: ignore[arg-type]
        return loaded, {"name": model, "checkpoint": str(weights), **json_safe(meta)}, data_config


SOURCE = PrototypeSource()
