"""``source: timm``: a timm model by name, its pretrained weights fetched from the Hugging Face
Hub (or ``url``), optionally pinned by ``sha256``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.models.sources.base import ZooSource
from classwise.models.spec import ModelSpec, check_keys, common_fields

if TYPE_CHECKING:
    from torch import nn

    from classwise.data.downloads import NetworkOptions
    from classwise.models.data_config import DataConfig
    from classwise.models.fetch import FetchedFile


class TimmSource(ZooSource):
    name = "timm"
    plain_file = True

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        check_keys(self.name, given, frozenset({"name"}), frozenset({"url", "sha256"}), where, config_path)
        values = common_fields(given, where, config_path)
        return ModelSpec(source=self.name, label=f"timm:{values['name']}", **values)

    def check_names(self, spec: ModelSpec) -> None:
        from classwise.models import timm_models

        timm_models.check_name(str(spec.name))

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        from classwise.models import timm_models

        return timm_models.download(spec, dest, network), timm_models.resolved_name(str(spec.name))

    def data_config(self, spec: ModelSpec) -> DataConfig:
        from classwise.models import timm_models

        return timm_models.data_config(spec)

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        from classwise.models import timm_models

        return timm_models.build(spec, files)


SOURCE = TimmSource()
