"""``source: train``: a demo architecture trained from scratch by the pipeline (rule
``train_model``) on a dataset's train split; its entry holds the training settings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError
from classwise.models.hyperparameters import Hyperparameters
from classwise.models.sources.base import Datasets, PipelineSource, json_safe
from classwise.models.sources.checkpoint import classwise_checkpoint
from classwise.models.spec import ModelSpec

if TYPE_CHECKING:
    from torch import nn

    from classwise.models.data_config import DataConfig


#: The training settings an entry may leave out (:class:`~classwise.models.hyperparameters.Hyperparameters`' defaults).
TRAINING_DEFAULTS: dict[str, Any] = Hyperparameters().to_dict()


class TrainSource(PipelineSource):
    name = "train"
    made_by: str | None = "train_model"
    optional_keys = frozenset({"train_on", "options", *TRAINING_DEFAULTS})

    def check_fit(self, model: str, spec: ModelSpec, dataset: str, datasets: Datasets, hint: str, config_path: str) -> None:
        """A demo model takes images of the shape it was trained on."""
        from classwise.data.sources import dataset_image_shape

        train_on = self.training_set(spec, datasets)
        trained, evaluated = dataset_image_shape(datasets[train_on]), dataset_image_shape(datasets[dataset])
        if train_on != dataset and (trained is None or trained != evaluated):
            raise InputError(
                f"model {model!r} was trained on {train_on!r} images of shape {trained}, dataset "
                f"{dataset!r} has images of shape {evaluated or 'of various sizes'}; {hint}",
                path=config_path,
                field=f"datasets.{dataset}.models",
            )

    def data_config(self, spec: ModelSpec) -> DataConfig:
        raise InputError("the data config of a demo model is stored in its checkpoint; use load_model", field="source")

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        (path,) = files
        return classwise_checkpoint(spec, path)

    def inference_model(
        self, model: str, spec: ModelSpec, weights: str | Path | None, device: str
    ) -> tuple[Any, dict[str, Any], Any]:
        from classwise.models.checkpoint import load_checkpoint

        loaded, meta = load_checkpoint(self.trained_weights(model, weights))
        return loaded, {"name": model, "checkpoint": str(weights), **json_safe(meta)}, None


SOURCE = TrainSource()
