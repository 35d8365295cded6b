"""``source: torchvision``: a torchvision model by name and weights enum (``weights: null``:
random weights, nothing to download); ``url`` a mirror, ``sha256`` a pin."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.models.sources.base import Datasets, ZooSource
from classwise.models.spec import ModelSpec, check_keys, common_fields, string_field

if TYPE_CHECKING:
    from torch import nn

    from classwise.data.downloads import NetworkOptions
    from classwise.models.data_config import DataConfig
    from classwise.models.fetch import FetchedFile


class TorchvisionSource(ZooSource):
    name = "torchvision"

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        check_keys(self.name, given, frozenset({"name", "weights"}), frozenset({"url", "sha256"}), where, config_path)
        values = common_fields(given, where, config_path)
        values["weights"] = string_field(given, "weights", where, config_path, allow_none=True)
        return ModelSpec(
            source=self.name, label=f"torchvision:{values['name']}:{values['weights']}", null_keys=("weights",), **values
        )

    def check_names(self, spec: ModelSpec) -> None:
        from classwise.models import torchvision_models

        torchvision_models.check_name(spec)

    def weights_input(self, model: str, spec: ModelSpec, *, models_dir: str, resources: str) -> str | None:
        if spec.weights is None:
            return None  # random weights: nothing to read
        return super().weights_input(model, spec, models_dir=models_dir, resources=resources)

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        return 1000  # every torchvision classification model is an ImageNet-1k model

    def needs_download(self, spec: ModelSpec) -> bool:
        return spec.weights is not None

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        from classwise.models import torchvision_models

        files = torchvision_models.download(spec, dest, network)
        weights = torchvision_models.resolve_weights(str(spec.name), spec.weights)
        resolved = f"{spec.name}:{type(weights).__name__}.{weights.name}" if weights is not None else f"{spec.name}:random"
        return files, resolved

    def data_config(self, spec: ModelSpec) -> DataConfig:
        from classwise.models import torchvision_models

        return torchvision_models.data_config(str(spec.name), torchvision_models.resolve_weights(str(spec.name), spec.weights))

    def local_weights(self, spec: ModelSpec) -> tuple[list[Path], Path] | None:
        return ([], Path(".")) if spec.weights is None else None

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        from classwise.models import torchvision_models

        return torchvision_models.build(spec, files)


SOURCE = TorchvisionSource()
