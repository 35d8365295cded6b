"""A ``models:`` config entry, parsed and checked: :class:`ModelSpec`.

This module imports neither torch nor any model library, so the workflow can parse every entry
at DAG-build time. The names a library must know (a timm model, a torchvision weights enum) are
checked by importing that library once per library version and remembering each answer in
``$XDG_CACHE_HOME/classwise/model-names.json`` (default ``~/.cache``); a later dry run of the
same config reads the answers instead of importing timm and torch.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from classwise.atomic import write_json
from classwise.data.downloads import check_sha256
from classwise.errors import InputError

DEMO_ARCHITECTURES = ("linear", "mlp", "cnn")
"""The demo architectures of :mod:`classwise.models.architectures` (a test keeps them equal)."""
ROBUSTBENCH_DATASETS = ("cifar10", "cifar100", "imagenet")
ROBUSTBENCH_THREAT_MODELS = ("Linf", "L2", "corruptions")

SOURCES = ("timm", "torchvision", "robustbench", "checkpoint", "train")
LIBRARIES = ("classwise", "timm", "torchvision")
"""What a ``checkpoint``'s ``architecture`` names: a demo architecture, a timm or a torchvision model."""

_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "timm": (frozenset({"name"}), frozenset({"url", "sha256"})),
    "torchvision": (frozenset({"name", "weights"}), frozenset({"url", "sha256"})),
    "robustbench": (frozenset({"name"}), frozenset({"dataset", "threat_model"})),
    "checkpoint": (frozenset({"path", "architecture"}), frozenset({"library", "num_classes", "data_config", "sha256"})),
}
"""Required and optional keys per source (besides ``source``); ``train`` keeps all its keys."""
_DATA_CONFIG_KEYS = ("input_size", "interpolation", "crop_pct", "crop_mode", "mean", "std", "resize_size")


@dataclass(frozen=True)
class ModelSpec:
    """One validated ``models:`` entry. Fields a source does not use are ``None``.

    ``options`` holds the keys of a ``train`` entry (the demo's training settings) verbatim.
    """

    source: str
    name: str | None = None
    weights: str | None = None
    url: str | None = None
    sha256: str | None = None
    dataset: str | None = None
    threat_model: str | None = None
    path: str | None = None
    architecture: str | None = None
    library: str | None = None
    num_classes: int | None = None
    data_config: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The canonical config entry (``source`` plus the fields that are set)."""
        if self.source == "train":
            return {"source": "train", **dict(self.options)}
        out: dict[str, Any] = {"source": self.source}
        for key in (
            "name",
            "weights",
            "url",
            "sha256",
            "dataset",
            "threat_model",
            "path",
            "architecture",
            "library",
            "num_classes",
        ):
            value = getattr(self, key)
            if value is not None or (key == "weights" and self.source == "torchvision"):
                out[key] = value
        if self.data_config is not None:
            out["data_config"] = dict(self.data_config)
        return out

    @property
    def label(self) -> str:
        """A short human-readable identity, e.g. ``timm:vit_base_patch16_224``."""
        if self.source == "robustbench":
            return f"robustbench:{self.dataset}/{self.threat_model}/{self.name}"
        if self.source == "torchvision":
            return f"torchvision:{self.name}:{self.weights}"
        if self.source in ("checkpoint", "train"):
            return f"{self.source}:{self.architecture or self.options.get('architecture')}"
        return f"{self.source}:{self.name}"


def _string(
    entry: Mapping[str, Any], key: str, where: str, path: str | Path | None, *, allow_none: bool = False
) -> str | None:
    value = entry.get(key)
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected a non-empty string, got {value!r}", path=path, field=f"{where}.{key}")
    return value.strip()


def parse_model_spec(
    entry: Mapping[str, Any],
    *,
    key: str = "model",
    config_path: str | Path | None = None,
    check_names: bool = True,
    ignore: Collection[str] = (),
) -> ModelSpec:
    """Validate one ``models:`` entry (named ``key``) and return its :class:`ModelSpec`.

    Errors name ``config_path`` and the field (``models.<key>.<field>``) and say what was
    expected. With ``check_names`` the model name is looked up in timm / torchvision /
    RobustBench (when that package is installed), so a typo fails before any job runs. Keys in
    ``ignore`` (e.g. a display label the caller uses) are allowed and skipped.
    """
    where = f"models.{key}"
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {type(entry).__name__}", path=config_path, field=where)
    source = entry.get("source")
    if source not in SOURCES:
        raise InputError(f"expected one of {list(SOURCES)}, got {source!r}", path=config_path, field=f"{where}.source")
    given = {k: v for k, v in entry.items() if k != "source" and k not in ignore}
    if source == "train":
        return ModelSpec(source="train", architecture=given.get("architecture"), options=dict(given))
    required, optional = _KEYS[source]
    missing = sorted(required - set(given))
    if missing:
        raise InputError(f"source {source!r} needs this key", path=config_path, field=f"{where}.{missing[0]}")
    unknown = sorted(set(given) - required - optional)
    if unknown:
        raise InputError(
            f"unknown key for source {source!r}; known: {sorted(required | optional)}",
            path=config_path,
            field=f"{where}.{unknown[0]}",
        )
    values: dict[str, Any] = {"source": source}
    for name in ("name", "url", "path", "architecture"):
        if name in given:
            values[name] = _string(given, name, where, config_path)
    if source == "torchvision":
        values["weights"] = _string(given, "weights", where, config_path, allow_none=True)
    if "sha256" in given:
        try:
            values["sha256"] = check_sha256(given["sha256"], field=f"{where}.sha256")
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], path=config_path, field=f"{where}.sha256") from None
    if source == "robustbench":
        values["dataset"] = _string(given, "dataset", where, config_path, allow_none=True) or "cifar10"
        values["threat_model"] = _string(given, "threat_model", where, config_path, allow_none=True) or "Linf"
        if values["dataset"] not in ROBUSTBENCH_DATASETS:
            raise InputError(
                f"expected one of {list(ROBUSTBENCH_DATASETS)}, got {values['dataset']!r}",
                path=config_path,
                field=f"{where}.dataset",
            )
        if values["threat_model"] not in ROBUSTBENCH_THREAT_MODELS:
            raise InputError(
                f"expected one of {list(ROBUSTBENCH_THREAT_MODELS)}, got {values['threat_model']!r}",
                path=config_path,
                field=f"{where}.threat_model",
            )
    if source == "checkpoint":
        _parse_checkpoint_fields(given, values, where, config_path)
    spec = ModelSpec(**values)
    if check_names:
        try:
            _check_names(spec)
        except InputError as exc:
            message = str(exc).split(": ", 1)[-1] if exc.field else str(exc)
            raise InputError(message, path=config_path, field=f"{where}.{exc.field or 'name'}") from None
    return spec


def _parse_checkpoint_fields(
    given: Mapping[str, Any], values: dict[str, Any], where: str, path: str | Path | None
) -> None:
    library = given.get("library")
    if library is None:
        library = "classwise" if values["architecture"] in DEMO_ARCHITECTURES else None
    if library not in LIBRARIES:
        raise InputError(
            f"expected one of {list(LIBRARIES)} (required unless the architecture is one of {sorted(DEMO_ARCHITECTURES)}), "
            f"got {library!r}",
            path=path,
            field=f"{where}.library",
        )
    values["library"] = library
    num_classes = given.get("num_classes")
    if num_classes is not None and (
        isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1
    ):
        raise InputError(f"expected a positive integer, got {num_classes!r}", path=path, field=f"{where}.num_classes")
    values["num_classes"] = num_classes
    overrides = given.get("data_config")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise InputError("expected a mapping", path=path, field=f"{where}.data_config")
        unknown = sorted(set(overrides) - set(_DATA_CONFIG_KEYS))
        if unknown:
            raise InputError(
                f"unknown key; known: {list(_DATA_CONFIG_KEYS)}", path=path, field=f"{where}.data_config.{unknown[0]}"
            )
        values["data_config"] = dict(overrides)


#: The libraries whose versions decide each source's name check.
_CHECKED_BY = {"timm": ("timm",), "torchvision": ("torchvision",), "robustbench": ("robustbench", "timm")}


def _versions(libraries: tuple[str, ...]) -> str | None:
    """The libraries' versions, found without importing them; a module installed without
    distribution metadata (torchattacks bundles a copy of robustbench) by its file's mtime;
    None when one is missing (nothing to key a remembered answer on)."""
    found = []
    for name in libraries:
        try:
            found.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            if name in sys.modules:
                return None  # imported already (perhaps a stand-in): check it now
            module = importlib.util.find_spec(name)
            if module is None or module.origin is None:
                return None
            found.append(f"{name}@{module.origin}:{os.stat(module.origin).st_mtime_ns}")
    return ",".join(found)


def _cache_file() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "classwise" / "model-names.json"


def _check_names(spec: ModelSpec) -> None:
    """:class:`InputError` unless the model library knows the names ``spec`` uses, from the
    remembered answer for this library version when there is one."""
    library = spec.library if spec.source == "checkpoint" else spec.source
    if library not in _CHECKED_BY or (spec.source == "checkpoint" and library == "classwise"):
        _check_names_now(spec)
        return
    versions = _versions(_CHECKED_BY[str(library)])
    key = json.dumps([spec.source, spec.name, spec.weights, spec.dataset, spec.threat_model, spec.architecture, versions])
    path = _cache_file()
    try:
        answers = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        answers = {}
    if key in answers and versions is not None:
        answer = answers[key]
        if answer is not None:
            raise InputError(answer["message"], field=answer["field"])
        return
    try:
        _check_names_now(spec)
        answer = None
    except InputError as error:
        answer = {"message": str(error).split(": ", 1)[-1] if error.field else str(error), "field": error.field}
        raise
    finally:
        if versions is not None:
            try:
                write_json(path, {**answers, key: answer})
            except OSError:
                pass  # a read-only home: the check still ran


def _check_names_now(spec: ModelSpec) -> None:
    if spec.source == "timm" or (spec.source == "checkpoint" and spec.library == "timm"):
        from classwise.models import timm_models

        if spec.source == "timm":
            timm_models.check_name(str(spec.name))
        else:
            timm_models.check_architecture(str(spec.architecture))
    elif spec.source == "torchvision" or (spec.source == "checkpoint" and spec.library == "torchvision"):
        from classwise.models import torchvision_models

        if spec.source == "torchvision":
            torchvision_models.check_name(spec)
        else:
            torchvision_models.check_architecture(str(spec.architecture), field="architecture")
    elif spec.source == "robustbench":
        if "robustbench" not in sys.modules and importlib.util.find_spec("robustbench") is None:
            return  # the download says how to install it
        from classwise.models import robustbench_models

        if robustbench_models.installed():
            robustbench_models.check_name(spec)
    elif spec.source == "checkpoint":
        if spec.architecture not in DEMO_ARCHITECTURES:
            raise InputError(f"unknown architecture; known: {sorted(DEMO_ARCHITECTURES)}", field="architecture")
