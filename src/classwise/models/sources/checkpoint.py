"""``source: checkpoint``: a local weights file of a demo, timm or torchvision ``architecture``
(``library``), with ``num_classes`` and ``data_config`` overrides, optionally pinned by ``sha256``."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError, check_count
from classwise.models.sources.base import Datasets, ZooSource
from classwise.models.spec import DATA_CONFIG_KEYS, DEMO_ARCHITECTURES, LIBRARIES, ModelSpec, check_keys, common_fields

if TYPE_CHECKING:
    from torch import nn

    from classwise.data.downloads import NetworkOptions
    from classwise.models.data_config import DataConfig
    from classwise.models.fetch import FetchedFile
    from classwise.models.weight_shapes import ClassifierHead


class CheckpointSource(ZooSource):
    name = "checkpoint"
    plain_file = True
    user_files: tuple[str, ...] = ("path",)  # as the protocol declares it (a bare tuple is tuple[str])

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        check_keys(
            self.name,
            given,
            frozenset({"path", "architecture"}),
            frozenset({"library", "num_classes", "data_config", "sha256"}),
            where,
            config_path,
        )
        values = common_fields(given, where, config_path)
        library = given.get("library")
        if library is None:
            library = "classwise" if values["architecture"] in DEMO_ARCHITECTURES else None
        if library not in LIBRARIES:
            raise InputError(
                f"expected one of {list(LIBRARIES)} (required unless the architecture is one of "
                f"{sorted(DEMO_ARCHITECTURES)}), got {library!r}",
                path=config_path,
                field=f"{where}.library",
            )
        values["library"] = library
        num_classes = given.get("num_classes")
        if num_classes is not None:
            num_classes = check_count(num_classes, f"{where}.num_classes", path=config_path)
        values["num_classes"] = num_classes
        overrides = given.get("data_config")
        if overrides is not None:
            if not isinstance(overrides, Mapping):
                raise InputError("expected a mapping", path=config_path, field=f"{where}.data_config")
            unknown = sorted(set(overrides) - set(DATA_CONFIG_KEYS))
            if unknown:
                raise InputError(
                    f"unknown key; known: {list(DATA_CONFIG_KEYS)}",
                    path=config_path,
                    field=f"{where}.data_config.{unknown[0]}",
                )
            values["data_config"] = dict(overrides)
        return ModelSpec(source=self.name, label=f"checkpoint:{values['architecture']}", **values)

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        return None if spec.library == "classwise" else (str(spec.library),)

    def check_names(self, spec: ModelSpec) -> None:
        if spec.library == "timm":
            from classwise.models import timm_models

            timm_models.check_architecture(str(spec.architecture))
        elif spec.library == "torchvision":
            from classwise.models import torchvision_models

            torchvision_models.check_architecture(str(spec.architecture), field="architecture")
        elif spec.architecture not in DEMO_ARCHITECTURES:
            raise InputError(f"unknown architecture; known: {sorted(DEMO_ARCHITECTURES)}", field="architecture")

    def weights_input(self, model: str, spec: ModelSpec, *, models_dir: str, resources: str) -> str | None:
        return str(spec.path)

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        return spec.num_classes

    def check_run(
        self,
        model: str,
        spec: ModelSpec,
        datasets: Datasets,
        config_path: str,
        *,
        shifts: Collection[str] | None = None,
    ) -> None:
        """The file exists, holds weights rather than a pickled model, and its classifier head
        scores ``num_classes`` classes when the entry sets it (read without torch)."""
        from classwise.models.pickled import pickled_model_class

        path = Path(str(spec.path))
        if not path.is_file():
            raise InputError(f"checkpoint file {str(path)!r} does not exist", path=config_path, field=f"models.{model}.path")
        model_class = pickled_model_class(path)
        if model_class is not None:
            raise InputError(
                f"{path} holds a whole model saved with torch.save(model) ({model_class}), not a state dict; "
                "save it with torch.save(model.state_dict(), path) and set architecture (and library)",
                path=config_path,
                field=f"models.{model}.path",
            )
        num_classes = spec.num_classes
        head = _head(path)
        if head is not None and num_classes is not None and head.classes != int(num_classes):
            raise InputError(
                f"checkpoint {path}: tensor {head.key!r} has shape {head.shape}, but num_classes {num_classes} "
                f"expects {head.shape_for(num_classes)}; set num_classes to {head.classes} (the classes the "
                f"checkpoint's head scores), or point path at a checkpoint of {num_classes} classes",
                path=config_path,
                field=f"models.{model}.num_classes",
            )

    def check_fit(self, model: str, spec: ModelSpec, dataset: str, datasets: Datasets, hint: str, config_path: str) -> None:
        """Without ``num_classes`` (then :meth:`classes_scored` cannot tell), the checkpoint's
        classifier head scores as many classes as ``dataset`` has."""
        from classwise.data.sources import dataset_classes

        if spec.num_classes is not None:
            return  # the plan compares num_classes with the dataset, check_run the head with num_classes
        path = Path(str(spec.path))
        head, classes = _head(path), dataset_classes(dataset, datasets[dataset])
        if head is not None and classes is not None and head.classes != classes:
            raise InputError(
                f"model {model!r}: checkpoint {path}: tensor {head.key!r} has shape {head.shape}, so the model scores "
                f"{head.classes} classes; dataset {dataset!r} has {classes}, which expects {head.shape_for(classes)}; {hint}",
                path=config_path,
                field=f"datasets.{dataset}.models",
            )

    def needs_download(self, spec: ModelSpec) -> bool:
        return False

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        """Nothing to fetch: record the file that will be loaded (its sha256 checked when pinned)."""
        from classwise.data.downloads import sha256_file
        from classwise.models.fetch import FetchedFile

        ckpt = Path(str(spec.path))
        if not ckpt.is_file():
            raise InputError("checkpoint file does not exist", path=ckpt, field="path")
        digest = sha256_file(ckpt)
        if spec.sha256 is not None and digest != spec.sha256:
            raise InputError(f"checksum mismatch: expected sha256 {spec.sha256}, got sha256 {digest}", path=ckpt, field="sha256")
        check = "config" if spec.sha256 else "recorded"
        return [FetchedFile(ckpt.resolve(), str(ckpt), digest, ckpt.stat().st_size, check)], spec.label

    def owns_downloads(self, spec: ModelSpec) -> bool:
        return False  # the user's file: never removed

    def data_config(self, spec: ModelSpec) -> DataConfig:
        if spec.library in ("timm", "torchvision"):
            return architecture(spec)[1]
        raise InputError("the data config of a demo model is stored in its checkpoint; use load_model", field="source")

    def local_weights(self, spec: ModelSpec) -> tuple[list[Path], Path] | None:
        return [Path(str(spec.path))], Path(str(spec.path)).parent

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        (path,) = files
        if spec.library == "classwise":
            return classwise_checkpoint(spec, path)
        from classwise.models.state_dicts import load_into

        model, config = architecture(spec)
        load_into(
            model,
            path,
            what=f"{spec.library} architecture {spec.architecture!r} (num_classes={spec.num_classes or 'default'})",
        )
        model.eval()
        return model, config


def _head(path: Path) -> ClassifierHead | None:
    """The classifier head's weight in the checkpoint (None: not told apart without torch)."""
    from classwise.models.weight_shapes import classifier_head, tensor_shapes

    return classifier_head(tensor_shapes(path))


def architecture(spec: ModelSpec) -> tuple[nn.Module, DataConfig]:
    """A fresh timm/torchvision architecture for a checkpoint, and its data config (the
    architecture's default, with the entry's ``data_config`` overrides)."""
    name = str(spec.architecture)
    if spec.library == "timm":
        from classwise.models import timm_models

        model = timm_models.build_architecture(name, spec.num_classes)
        config = timm_models.architecture_data_config(model, name)
    else:
        from classwise.models import torchvision_models

        model = torchvision_models.build_architecture(name, spec.num_classes)
        config = torchvision_models.data_config(name, None)
    if spec.data_config:
        config = config.replace(**dict(spec.data_config), origin=f"{config.origin} + config overrides")
    return model, config


def classwise_checkpoint(spec: ModelSpec, path: Path) -> tuple[nn.Module, DataConfig]:
    """A demo model saved by :func:`classwise.models.checkpoint.save_checkpoint`, and a data
    config that passes its images through (the model normalises itself)."""
    from classwise.models.checkpoint import load_checkpoint
    from classwise.models.data_config import DataConfig

    model, meta = load_checkpoint(path)
    expected = spec.architecture or spec.options.get("architecture")
    if expected is not None and meta["architecture"] != expected:
        raise InputError(
            f"checkpoint holds architecture {meta['architecture']!r}, the config says {expected!r}",
            path=path,
            field="architecture",
        )
    channels = int(meta["input_shape"][0])
    config = DataConfig(
        input_size=tuple(meta["input_shape"]),  # DataConfig checks it holds (C, H, W)
        interpolation="bilinear",
        crop_pct=1.0,
        crop_mode="none",
        mean=(0.0,) * channels,
        std=(1.0,) * channels,
        resize_size=None,
        origin=f"classwise checkpoint {path.name} (the model normalises itself)",
    )
    if spec.data_config:
        config = config.replace(**dict(spec.data_config))
    return model, config


SOURCE = CheckpointSource()
