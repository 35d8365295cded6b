"""The model sources: one module per ``source:`` of a ``models:`` entry, one dictionary of them.

Every source answers the questions of :class:`~classwise.models.sources.base.ModelSource` (parse
and validate, which file inference reads, how many classes it scores, download, data config,
build, load for inference); nothing outside this package branches on a model's source. Adding a
source is one module here, one line in :data:`MODEL_SOURCES` and its tests.

Importing this package imports no torch and no model library (the workflow parses entries at
DAG-build time); a source imports them when a job calls it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from classwise.errors import InputError
from classwise.models.sources import checkpoint, finetune, predictions, prototype, robustbench, timm, torchvision, train
from classwise.models.sources.base import ModelSource, parse_entry
from classwise.models.spec import ModelSpec

__all__ = ["MODEL_SOURCES", "SOURCES", "ModelSource", "model_source", "parse_model_spec"]

MODEL_SOURCES: dict[str, ModelSource] = {
    "timm": timm.SOURCE,
    "torchvision": torchvision.SOURCE,
    "robustbench": robustbench.SOURCE,
    "checkpoint": checkpoint.SOURCE,
    "train": train.SOURCE,
    "finetune": finetune.SOURCE,
    "prototype": prototype.SOURCE,
    "predictions": predictions.SOURCE,
}
SOURCES = tuple(MODEL_SOURCES)


def model_source(entry: Mapping[str, Any] | ModelSpec) -> ModelSource:
    """The source of a :class:`ModelSpec` or of a raw ``models:`` entry (one without ``source``,
    as a job of the pipeline's own checkpoints may hold, is a ``train`` entry)."""
    name = entry.source if isinstance(entry, ModelSpec) else entry.get("source", "train")
    if name not in MODEL_SOURCES:
        raise InputError(f"expected one of {list(SOURCES)}, got {name!r}", field="source")
    return MODEL_SOURCES[name]


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
    RobustBench (when that package is installed), so a typo fails before any job runs; the
    answer is remembered per library version. Keys in ``ignore`` (e.g. a display label the
    caller uses) are allowed and skipped.
    """
    where = f"models.{key}"
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {type(entry).__name__}", path=config_path, field=where)
    name = entry.get("source")
    if name not in MODEL_SOURCES:
        raise InputError(f"expected one of {list(SOURCES)}, got {name!r}", path=config_path, field=f"{where}.source")
    return parse_entry(MODEL_SOURCES[name], entry, key=key, config_path=config_path, check_names=check_names, ignore=ignore)
