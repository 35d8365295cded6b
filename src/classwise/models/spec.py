"""A ``models:`` config entry, parsed and checked: :class:`ModelSpec`, the fields every source
shares, and the remembered name checks.

Each source parses its own keys (:mod:`classwise.models.sources`, where
:func:`~classwise.models.sources.parse_model_spec` lives); this module is what they share. It
imports neither torch nor any model library, nor the sources, so the workflow can parse every
entry at DAG-build time. The names a library must know (a timm model, a torchvision weights enum)
are checked by importing that library once per library version and remembering each answer in
``$XDG_CACHE_HOME/classwise/model-names.json`` (default ``~/.cache``); a later dry run of the
same config reads the answers instead of importing timm and torch.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Mapping
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
LIBRARIES = ("classwise", "timm", "torchvision")
"""What a ``checkpoint``'s ``architecture`` names: a demo architecture, a timm or a torchvision model."""
DATA_CONFIG_KEYS = ("input_size", "interpolation", "crop_pct", "crop_mode", "mean", "std", "resize_size")


@dataclass(frozen=True)
class ModelSpec:
    """One validated ``models:`` entry. Fields a source does not use are ``None``.

    ``options`` holds the keys of an entry kept verbatim (``verbatim``: the sources the pipeline
    trains, ``train``, ``finetune`` and ``prototype``, and ``predictions``), where their sources
    read them (``train_on``, ``files``, ...). The workflow parses each entry once and asks its
    source with the spec; a job parses its rule's parameter once.
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

    label: str = field(default="", compare=False)
    """A short human-readable identity, e.g. ``timm:vit_base_patch16_224`` (the source's)."""
    verbatim: bool = field(default=False, compare=False, repr=False)
    """The entry is kept as written (``options``): the sources the pipeline trains and
    ``predictions``."""
    null_keys: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Keys written by :meth:`to_dict` even when ``None`` (torchvision's ``weights: null``)."""

    def to_dict(self) -> dict[str, Any]:
        """The canonical config entry (``source`` plus the fields that are set)."""
        if self.verbatim:
            return {"source": self.source, **dict(self.options)}
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
            if value is not None or key in self.null_keys:
                out[key] = value
        if self.data_config is not None:
            out["data_config"] = dict(self.data_config)
        return out


def string_field(
    entry: Mapping[str, Any], key: str, where: str, path: str | Path | None, *, allow_none: bool = False
) -> str | None:
    """``entry[key]`` stripped; :class:`InputError` unless it is a non-empty string (or, with
    ``allow_none``, missing or null)."""
    value = entry.get(key)
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected a non-empty string, got {value!r}", path=path, field=f"{where}.{key}")
    return value.strip()


def check_keys(
    source: str,
    given: Mapping[str, Any],
    required: frozenset[str],
    optional: frozenset[str],
    where: str,
    path: str | Path | None,
) -> None:
    """:class:`InputError` naming the first required key missing or the first unknown key."""
    missing = sorted(required - set(given))
    if missing:
        raise InputError(f"source {source!r} needs this key", path=path, field=f"{where}.{missing[0]}")
    unknown = sorted(set(given) - required - optional)
    if unknown:
        raise InputError(
            f"unknown key for source {source!r}; known: {sorted(required | optional)}",
            path=path,
            field=f"{where}.{unknown[0]}",
        )


def common_fields(given: Mapping[str, Any], where: str, path: str | Path | None) -> dict[str, Any]:
    """The string fields (``name``, ``url``, ``path``, ``architecture``) and ``sha256`` given."""
    values: dict[str, Any] = {}
    for name in ("name", "url", "path", "architecture"):
        if name in given:
            values[name] = string_field(given, name, where, path)
    if "sha256" in given:
        try:
            values["sha256"] = check_sha256(given["sha256"], field=f"{where}.sha256")
        except InputError as exc:
            raise InputError(str(exc).split(": ", 1)[-1], path=path, field=f"{where}.sha256") from None
    return values


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


def remembered_check(spec: ModelSpec, libraries: tuple[str, ...] | None, check_now: Callable[[ModelSpec], None]) -> None:
    """Run ``check_now(spec)`` (an :class:`InputError` when the library does not know a name
    ``spec`` uses), or read its remembered answer for these ``libraries``' versions; ``None``
    libraries: nothing to remember (the check needs no library)."""
    if libraries is None:
        check_now(spec)
        return
    versions = _versions(libraries)
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
        check_now(spec)
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
