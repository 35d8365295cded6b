"""``source: finetune``: a torchvision model fine-tuned by the pipeline (rule
``finetune_model``) on a dataset's train split (:mod:`classwise.models.finetune`). Its keys and
values are checked when it is parsed, its architecture and weights looked up in torchvision
(remembered per version) with the other models' names, all before any job."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.models.finetune_spec import FINETUNE_OPTIONAL, FINETUNE_REQUIRED, check_finetune_names, check_finetune_values
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

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        # the keys (PipelineSource), then the values: a bad one stops the run before any job
        spec = super().parse(given, where, config_path)
        check_finetune_values(given, where, config_path)
        return spec

    def check_names(self, spec: ModelSpec) -> None:
        check_finetune_names(spec.options["architecture"], spec.options["weights"])

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
