"""A ``finetune`` entry of ``models:`` checked without torch (:func:`parse_finetune_entry`).

The workflow checks every entry while it builds the DAG, which must stay fast and must not
import torch or torchvision; the check of torchvision's names is remembered per library version
like the zoo sources' checks (:func:`classwise.models.spec.remembered_check`). The preprocessing
overrides (``data_config``) need torchvision's transforms and are checked by
:func:`classwise.models.finetune.parse_finetune_spec` in the jobs that use them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from classwise.errors import InputError, check_count
from classwise.models.hyperparameters import Hyperparameters

__all__ = [
    "DATA_CONFIG_KEYS",
    "FINETUNE_DEFAULTS",
    "FINETUNE_OPTIONAL",
    "FINETUNE_REQUIRED",
    "FinetuneSpec",
    "base_model_config",
    "check_finetune_names",
    "check_finetune_values",
    "parse_finetune_entry",
]

FINETUNE_DEFAULTS: dict[str, Any] = {
    "optimizer": "sgd",
    "epochs": 5,
    "lr": 0.001,
    "momentum": 0.9,
    "batch_size": 64,
    "weight_decay": 0.0001,
    "seed": 0,
}
"""Settings a ``finetune`` entry may leave out (documented in the config schema)."""
FINETUNE_REQUIRED = ("architecture", "weights", "train_on")
FINETUNE_OPTIONAL = (*FINETUNE_DEFAULTS, "data_config")
"""The keys a ``finetune`` entry must give and may give (besides ``source``), checked by
:func:`classwise.models.spec.check_keys` here and in its source's parse."""
DATA_CONFIG_KEYS = ("input_size", "interpolation", "crop_pct", "crop_mode", "mean", "std", "resize_size")
_OPTIMIZERS = ("sgd", "adam")
_AUX_OUTPUTS = ("inception_v3", "googlenet")
"""torchvision models that return auxiliary outputs in training mode (not supported)."""


@dataclass(frozen=True)
class FinetuneSpec:
    """One validated ``finetune`` entry of ``models:`` (defaults filled in)."""

    architecture: str
    weights: str | None
    train_on: str
    optimizer: str = FINETUNE_DEFAULTS["optimizer"]
    epochs: int = FINETUNE_DEFAULTS["epochs"]
    lr: float = FINETUNE_DEFAULTS["lr"]
    momentum: float = FINETUNE_DEFAULTS["momentum"]
    batch_size: int = FINETUNE_DEFAULTS["batch_size"]
    weight_decay: float = FINETUNE_DEFAULTS["weight_decay"]
    seed: int = FINETUNE_DEFAULTS["seed"]
    data_config: Mapping[str, Any] | None = field(default=None)

    @property
    def hyperparameters(self) -> Hyperparameters:
        """Its epochs, learning rate, batch size, weight decay and seed as one record."""
        return Hyperparameters(
            epochs=self.epochs, lr=self.lr, batch_size=self.batch_size, weight_decay=self.weight_decay, seed=self.seed
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry with every default filled in (``source: finetune`` first)."""
        out: dict[str, Any] = {"source": "finetune", **asdict(self)}
        if self.data_config is None:
            del out["data_config"]
        else:
            out["data_config"] = dict(self.data_config)
        return out


def parse_finetune_entry(entry: Mapping[str, Any], *, key: str = "model", config_path: str | Path | None = None) -> FinetuneSpec:
    """Validate one ``finetune`` entry (named ``key``) but its ``data_config`` values, and return
    its :class:`FinetuneSpec`.

    The keys and values are checked by :func:`check_finetune_values`, the architecture and
    weights looked up in torchvision by :func:`check_finetune_names` (the answer remembered per
    torchvision version). Errors are :class:`InputError` naming ``config_path`` and
    ``models.<key>.<field>``.
    """
    where = f"models.{key}"
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {type(entry).__name__}", path=config_path, field=where)
    if entry.get("source") != "finetune":
        raise InputError(f"expected 'finetune', got {entry.get('source')!r}", path=config_path, field=f"{where}.source")
    from classwise.models.spec import check_keys

    given = {k: v for k, v in entry.items() if k != "source"}
    check_keys("finetune", given, frozenset(FINETUNE_REQUIRED), frozenset(FINETUNE_OPTIONAL), where, config_path)
    values = check_finetune_values(given, where, config_path)
    try:
        check_finetune_names(values["architecture"], values["weights"])
    except InputError as exc:
        raise InputError(exc.message, path=config_path, field=f"{where}.{exc.field}") from None
    overrides = values.get("data_config")
    return FinetuneSpec(
        architecture=values["architecture"].strip(),
        weights=None if values["weights"] is None else values["weights"].strip(),
        train_on=values["train_on"],
        optimizer=values["optimizer"],
        epochs=int(values["epochs"]),
        lr=float(values["lr"]),
        momentum=float(values["momentum"]),
        batch_size=int(values["batch_size"]),
        weight_decay=float(values["weight_decay"]),
        seed=int(values["seed"]),
        data_config=None if overrides is None else dict(overrides),
    )


def check_finetune_values(given: Mapping[str, Any], where: str, config_path: str | Path | None) -> dict[str, Any]:
    """The values of a ``finetune`` entry at ``where`` (``models.<key>``; its keys checked
    already), checked without torchvision, with the defaults filled in; an :class:`InputError`
    naming ``config_path`` and the field otherwise."""

    def fail(message: str, name: str) -> InputError:
        return InputError(message, path=config_path, field=f"{where}.{name}")

    values = {**FINETUNE_DEFAULTS, **given}
    for name in ("architecture", "train_on"):
        if not isinstance(values[name], str) or not values[name].strip():
            raise fail(f"expected a non-empty string, got {values[name]!r}", name)
    if values["weights"] is not None and (not isinstance(values["weights"], str) or not values["weights"].strip()):
        raise fail(f"expected a torchvision weights name (e.g. IMAGENET1K_V1) or null, got {values['weights']!r}", "weights")
    if values["optimizer"] not in _OPTIMIZERS:
        raise fail(f"expected one of {list(_OPTIMIZERS)}, got {values['optimizer']!r}", "optimizer")
    for name, minimum in (("epochs", 1), ("batch_size", 1), ("seed", 0)):
        values[name] = check_count(values[name], f"{where}.{name}", minimum=minimum, path=config_path)
    for name, low_open in (("lr", True), ("weight_decay", False), ("momentum", False)):
        value = values[name]
        bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        if bad or value < 0 or (low_open and value == 0) or (name == "momentum" and value >= 1):
            expected = {"lr": "a number > 0", "weight_decay": "a number >= 0", "momentum": "a number in [0, 1)"}
            raise fail(f"expected {expected[name]}, got {value!r}", name)
    overrides = values.get("data_config")
    if overrides is not None:
        if not isinstance(overrides, Mapping):
            raise fail("expected a mapping", "data_config")
        bad_keys = sorted(set(overrides) - set(DATA_CONFIG_KEYS))
        if bad_keys:
            raise fail(f"unknown key; known: {list(DATA_CONFIG_KEYS)}", f"data_config.{bad_keys[0]}")
    if values["architecture"].strip() in _AUX_OUTPUTS:
        raise fail(f"{values['architecture'].strip()} returns auxiliary outputs in training mode; not supported", "architecture")
    return values


def check_finetune_names(architecture: str, weights: str | None) -> None:
    """An :class:`InputError` (field ``architecture`` or ``weights``, relative to the entry)
    unless torchvision knows the architecture and its weights; the answer is remembered per
    torchvision version, so a later check imports no torch."""
    from classwise.models.sources.torchvision import SOURCE as TORCHVISION
    from classwise.models.spec import remembered_check

    base = TORCHVISION.parse({"name": architecture.strip(), "weights": weights}, "models", None)
    try:
        remembered_check(base, TORCHVISION.name_check_libraries(base), TORCHVISION.check_names)
    except InputError as exc:
        name = "architecture" if exc.field == "name" else "weights"
        raise InputError(exc.message, field=name) from None


def base_model_config(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The ``torchvision`` model entry of a ``finetune`` entry's starting weights (what the
    download rule fetches; its manifest is what :func:`load_base_state` reads)."""
    return {"source": "torchvision", "name": entry["architecture"], "weights": entry.get("weights")}
