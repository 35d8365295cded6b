"""What every model source answers (:class:`ModelSource`), and the defaults of the sources
fetched from a model zoo (:class:`ZooSource`).

An entry is parsed once into a :class:`ModelSpec` (:meth:`~ModelSource.parse`), and every other
question takes that spec, never the raw entry: the workflow parses each ``models:`` entry once
while it builds the DAG, a job once from its rule's parameter. The questions fall in two groups.
The workflow asks the first at DAG-build time, so their answers import neither torch nor a model
library: parse and validate an entry, which file inference reads (:meth:`~ModelSource.weights_input`),
how many classes the model scores (:meth:`~ModelSource.classes_scored`), whether it can run
where the config sends it (:meth:`~ModelSource.check_run`, :meth:`~ModelSource.check_fit`). The
jobs ask the rest, which import torch and the model library when called: check the names
against the library (:meth:`~ModelSource.check_names`), download, resolve the data config,
build from weight files, load for inference.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from classwise.errors import InputError
from classwise.models import spec as _spec
from classwise.models.spec import ModelSpec

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

    from classwise.data.downloads import NetworkOptions
    from classwise.models.data_config import DataConfig
    from classwise.models.fetch import FetchedFile

Datasets = Mapping[str, Mapping[str, Any]]


class ModelSource(Protocol):
    """One ``source:`` of a ``models:`` entry."""

    #: The ``source:`` value.
    name: str
    #: The rule that makes this source's weights file in the pipeline (None: fetched or given).
    made_by: str | None
    #: Whether a plain weights file (not a download manifest) may be loaded.
    plain_file: bool
    #: The entry's keys that name a file the user provides (dry-run fixtures build stand-ins).
    user_files: tuple[str, ...]
    #: The rule that writes the model's cached outputs ``logits/{dataset}/{model}/{shift}.npz``:
    #: ``infer`` runs it on the dataset's images; ``import_predictions`` reads the outputs from
    #: files the user gives (no images needed).
    cached_by: str

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        """The entry's keys (all but ``source``) validated, as a :class:`ModelSpec`; errors name
        ``config_path`` and ``<where>.<key>``. Imports no model library."""
        ...

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        """The libraries whose versions decide :meth:`check_names` (its answer is remembered per
        version); None when the check needs no library."""
        ...

    def check_names(self, spec: ModelSpec) -> None:
        """:class:`InputError` (field relative to the entry) unless the library knows the names."""
        ...

    def weights_input(self, model: str, spec: ModelSpec, *, models_dir: str, resources: str) -> str | None:
        """The file rule infer reads for model ``model`` (None: nothing to read)."""
        ...

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        """How many classes the model scores (None: only building it would tell); ``classes`` is
        each dataset's class count."""
        ...

    def check_run(
        self,
        model: str,
        spec: ModelSpec,
        datasets: Datasets,
        config_path: str,
        *,
        shifts: Collection[str] | None = None,
    ) -> None:
        """:class:`InputError` when the entry cannot run at all (a missing checkpoint, a training
        set without a train split, a file for a shift the config does not have); ``shifts``: the
        name of every shift of the config (None: not checked)."""
        ...

    def check_fit(self, model: str, spec: ModelSpec, dataset: str, datasets: Datasets, hint: str, config_path: str) -> None:
        """:class:`InputError` when the model cannot run on ``dataset`` for a reason besides its
        class count (which :meth:`classes_scored` tells)."""
        ...

    def has_scores(self, model: str, spec: ModelSpec, dataset: str, shift: str, config_path: str) -> bool:
        """Whether the model's cached outputs on ``(dataset, shift)`` hold scores (False: hard
        predictions only, so the metrics that need scores are skipped); :class:`InputError`
        when the entry gives nothing for that pair."""
        ...

    def check_outputs(
        self,
        model: str,
        spec: ModelSpec,
        dataset: str,
        datasets: Datasets,
        shifts: Mapping[str, np.ndarray | None],
        classes: int | None,
        config_path: str,
    ) -> None:
        """:class:`InputError` when the model's outputs on ``dataset`` under ``shifts`` cannot
        match the dataset (``classes``: its class count, None where unknown), as far as can be
        told before any job: the files of a model given by its outputs. ``shifts`` maps each
        shift to the sample ids of its samples (None where only a job can tell). Nothing for a
        model the pipeline runs (its job checks its outputs)."""
        ...

    def needs_download(self, spec: ModelSpec) -> bool:
        """Whether the model has weights to download."""
        ...

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        """Fetch the weights into ``dest``: the files and the resolved identity for the manifest."""
        ...

    def owns_downloads(self, spec: ModelSpec) -> bool:
        """Whether the files :meth:`download` returns were fetched (removed when they do not fit)."""
        ...

    def data_config(self, spec: ModelSpec) -> DataConfig:
        """The preprocessing, without loading weights."""
        ...

    def local_weights(self, spec: ModelSpec) -> tuple[list[Path], Path] | None:
        """The weight files and their directory when none are given (None: they must be)."""
        ...

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        """The unwrapped model (eval mode) and its data config from the weight ``files``."""
        ...

    def inference_model(
        self, model: str, spec: ModelSpec, weights: str | Path | None, device: str
    ) -> tuple[Any, dict[str, Any], Any]:
        """The model (``[0, 1]`` images in, logits out), its metadata for the logits sidecar, and
        its data config (None: it takes the dataset's images as they are)."""
        ...


class ZooSource:
    """Defaults of a source whose weights a local rule downloads into
    ``resources/models/<model>/`` and whose model :func:`classwise.models.zoo.load_model` builds."""

    name = ""
    made_by: str | None = None
    plain_file = False
    user_files: tuple[str, ...] = ()
    cached_by = "infer"

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        return (self.name,)

    def weights_input(self, model: str, spec: ModelSpec, *, models_dir: str, resources: str) -> str | None:
        return f"{resources}/models/{model}/manifest.json"

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        return None

    def check_run(
        self,
        model: str,
        spec: ModelSpec,
        datasets: Datasets,
        config_path: str,
        *,
        shifts: Collection[str] | None = None,
    ) -> None:
        return None

    def check_fit(self, model: str, spec: ModelSpec, dataset: str, datasets: Datasets, hint: str, config_path: str) -> None:
        return None

    def has_scores(self, model: str, spec: ModelSpec, dataset: str, shift: str, config_path: str) -> bool:
        return True

    def check_outputs(
        self,
        model: str,
        spec: ModelSpec,
        dataset: str,
        datasets: Datasets,
        shifts: Mapping[str, np.ndarray | None],
        classes: int | None,
        config_path: str,
    ) -> None:
        return None

    def needs_download(self, spec: ModelSpec) -> bool:
        return True

    def owns_downloads(self, spec: ModelSpec) -> bool:
        return True

    def local_weights(self, spec: ModelSpec) -> tuple[list[Path], Path] | None:
        return None

    def inference_model(
        # a mixin: the concrete source that inherits this is the ModelSource
        self: ModelSource,
        model: str,
        spec: ModelSpec,
        weights: str | Path | None,
        device: str,
    ) -> tuple[Any, dict[str, Any], Any]:
        from classwise.models.loading import load_with_source

        loaded, data_config = load_with_source(self, spec, weights, device=device)
        return loaded, {"name": model, "weights": str(weights), **json_safe(spec.to_dict())}, data_config


class PipelineSource(ZooSource):
    """Defaults of a source the pipeline trains into ``results/models/<model>.pt`` (its entry
    kept verbatim: its rule validates the values; its keys are checked here)."""

    plain_file = True
    #: The keys an entry must give and may give (besides ``source``).
    required_keys: frozenset[str] = frozenset({"architecture"})
    optional_keys: frozenset[str] = frozenset()

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        _spec.check_keys(self.name, given, self.required_keys, self.optional_keys, where, config_path)
        architecture = given.get("architecture")
        return ModelSpec(
            source=self.name,
            architecture=architecture,
            options=dict(given),
            label=f"{self.name}:{architecture}",
            verbatim=True,
        )

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        return None

    def check_names(self, spec: ModelSpec) -> None:
        return None

    def weights_input(self, model: str, spec: ModelSpec, *, models_dir: str, resources: str) -> str | None:
        return f"{models_dir}/{model}.pt"

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        return classes.get(self.training_set(spec, datasets))

    def check_run(
        self,
        model: str,
        spec: ModelSpec,
        datasets: Datasets,
        config_path: str,
        *,
        shifts: Collection[str] | None = None,
    ) -> None:
        from classwise.data.sources import TRAIN_SPLIT_SOURCES

        train_on = self.training_set(spec, datasets)
        dataset_source = datasets[train_on]["source"]
        if dataset_source not in TRAIN_SPLIT_SOURCES:
            raise InputError(
                f"dataset {train_on!r} (source {dataset_source}) is an evaluation set without a train split; "
                f"train on a dataset of source {' or '.join(TRAIN_SPLIT_SOURCES)}, or evaluate a model you "
                "trained elsewhere with source: checkpoint",
                path=config_path,
                field=f"models.{model}.train_on",
            )

    @staticmethod
    def training_set(spec: ModelSpec, datasets: Datasets) -> str:
        """The dataset whose train split makes the model (``train_on``, default the first dataset)."""
        return str(spec.options.get("train_on", next(iter(datasets))))

    def needs_download(self, spec: ModelSpec) -> bool:
        return False

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        raise InputError(f"models with source {self.name!r} are trained by the pipeline, not downloaded", field="source")

    def trained_weights(self, model: str, weights: str | Path | None) -> str | Path:
        """The weights file infer was given: the pipeline's trained model (see :meth:`weights_input`)."""
        if weights is None:
            raise InputError(f"model {model!r} (source {self.name!r}) has no trained weights file", field=f"models.{model}")
        return weights


def parse_entry(
    source: ModelSource,
    entry: Mapping[str, Any],
    *,
    key: str = "model",
    config_path: str | Path | None = None,
    check_names: bool = True,
    ignore: Collection[str] = (),
) -> ModelSpec:
    """``entry`` (a ``models:`` entry named ``key``) parsed by ``source``, its names checked
    against the model library when ``check_names`` (see
    :func:`classwise.models.sources.parse_model_spec`, which picks the source by ``source:``)."""
    where = f"models.{key}"
    given = {k: v for k, v in entry.items() if k != "source" and k not in ignore}
    spec = source.parse(given, where, config_path)
    if check_names:
        try:
            _spec.remembered_check(spec, source.name_check_libraries(spec), source.check_names)
        except InputError as exc:
            message = str(exc).split(": ", 1)[-1] if exc.field else str(exc)
            raise InputError(message, path=config_path, field=f"{where}.{exc.field or 'name'}") from None
    return spec


def json_safe(value: Any) -> Any:
    """Keep only what JSON can hold (checkpoint metadata may carry tuples or numpy scalars)."""
    import json

    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
