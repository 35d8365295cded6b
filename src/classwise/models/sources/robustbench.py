"""``source: robustbench``: a RobustBench model zoo entry by name, dataset and threat model."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError
from classwise.models.sources.base import Datasets, ZooSource
from classwise.models.spec import (
    ROBUSTBENCH_DATASETS,
    ROBUSTBENCH_THREAT_MODELS,
    ModelSpec,
    check_keys,
    common_fields,
    string_field,
)

if TYPE_CHECKING:
    from torch import nn

    from classwise.data.downloads import NetworkOptions
    from classwise.models.data_config import DataConfig
    from classwise.models.fetch import FetchedFile

_CLASSES = {"cifar10": 10, "cifar100": 100, "imagenet": 1000}


class RobustbenchSource(ZooSource):
    name = "robustbench"

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        check_keys(self.name, given, frozenset({"name"}), frozenset({"dataset", "threat_model"}), where, config_path)
        values = common_fields(given, where, config_path)
        values["dataset"] = string_field(given, "dataset", where, config_path, allow_none=True) or "cifar10"
        values["threat_model"] = string_field(given, "threat_model", where, config_path, allow_none=True) or "Linf"
        for key, known in (("dataset", ROBUSTBENCH_DATASETS), ("threat_model", ROBUSTBENCH_THREAT_MODELS)):
            if values[key] not in known:
                raise InputError(f"expected one of {list(known)}, got {values[key]!r}", path=config_path, field=f"{where}.{key}")
        label = f"robustbench:{values['dataset']}/{values['threat_model']}/{values['name']}"
        return ModelSpec(source=self.name, label=label, **values)

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        return ("robustbench", "timm")

    def check_names(self, spec: ModelSpec) -> None:
        if "robustbench" not in sys.modules and importlib.util.find_spec("robustbench") is None:
            return  # the download says how to install it
        from classwise.models import robustbench_models

        if robustbench_models.installed():
            robustbench_models.check_name(spec)

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        return _CLASSES.get(str(spec.dataset))

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        from classwise.models import robustbench_models

        return robustbench_models.download(spec, dest, network), spec.label

    def data_config(self, spec: ModelSpec) -> DataConfig:
        from classwise.models import robustbench_models

        return robustbench_models.data_config(spec)

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        from classwise.models import robustbench_models

        return robustbench_models.build(spec, files, base)


SOURCE = RobustbenchSource()
