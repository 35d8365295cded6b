"""``source: finetune``: a torchvision model fine-tuned by the pipeline (rule
``finetune_model``) on a dataset's train split (:mod:`classwise.models.finetune`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.models.finetune_spec import FINETUNE_OPTIONAL, FINETUNE_REQUIRED
from classwise.models.sources.base import PipelineSource, json_safe
from classwise.models.spec import ModelSpec

if TYPE_CHECKING:
    from torch import nn

    from classwise.models.data_config import DataConfig


class FinetuneSource(PipelineSource):
    name = "finetune"
    made_by: str | None = "finetune_model"
    required_keys = frozenset(FINETUNE_REQUIRED)
    optional_keys = frozenset(FINETUNE_OPTIONAL)

    def data_config(self, spec: ModelSpec) -> DataConfig:
        from classwise.models.finetune import parse_finetune_spec, resolve_data_config

        return resolve_data_config(parse_finetune_spec(spec.to_dict()))

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        from classwise.models.finetune import load_finetuned

        (path,) = files
        wrapped, _, config = load_finetuned(path)
        return wrapped.model, config

    def inference_model(
        self, model: str, spec: ModelSpec, weights: str | Path | None, device: str
    ) -> tuple[Any, dict[str, Any], Any]:
        from classwise.models.finetune import load_finetuned

        loaded, meta, data_config = load_finetuned(self.trained_weights(model, weights), device=device, key=model)
        return loaded, {"name": model, "checkpoint": str(weights), **json_safe(meta)}, data_config


SOURCE = FinetuneSource()
