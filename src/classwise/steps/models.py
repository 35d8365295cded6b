"""Workflow steps that train models and run inference (rules train_model and infer).

Every step reads its inputs, computes, and writes each output atomically, so an interrupted
job leaves nothing that Snakemake could mistake for a finished output.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

import classwise
from classwise.errors import InputError
from classwise.models.hyperparameters import Hyperparameters
from classwise.models.spec import ModelSpec
from classwise.settings import Settings
from classwise.steps.threads import limit_threads

# numpy and the datasets are imported by the steps that use them: merging shards and importing
# predictions import this module too, before their step starts (python -m classwise.bench.demo).
if TYPE_CHECKING:
    import numpy as np

    from classwise.inference.sharding import ShardPosition


@dataclass(frozen=True, kw_only=True)
class FitSettings(Settings):
    """What a step that makes a model from a dataset's train split reads of the config (rules
    finetune_model and compute_prototypes): the model (``model_name`` and its ``models:``
    entry ``model``), the dataset it learns from (``dataset_name`` and its entry ``dataset``), and
    for the steps that run a model on the images the ``device`` and (class prototypes) the
    ``batch_size`` of ``inference``."""

    block: ClassVar[str] = "models"
    model_name: str
    model: Mapping[str, Any]
    dataset_name: str
    dataset: Mapping[str, Any]
    device: str = "auto"
    batch_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class InferenceSettings(Settings):
    """What one inference job evaluates and how (rules infer, infer_shard and
    ``infer_models_<dataset>``): the dataset (``dataset_name`` and its entry ``dataset``), the
    ``shift`` (its JSON form), the run's ``seed``, and ``inference``'s ``batch_size`` and
    ``device`` (the device, or with a precision or layout other than the defaults the mapping of
    :meth:`classwise.inference.execution.Execution.parameter`). A shift crafted on another model
    (:attr:`~classwise.shifts.spec.ShiftSpec.source_model`) carries that model's entry as
    ``source_model``."""

    block: ClassVar[str] = "inference"
    dataset_name: str
    dataset: Mapping[str, Any]
    shift: Mapping[str, Any]
    seed: int
    batch_size: int
    device: str | Mapping[str, Any]
    source_model: Mapping[str, Any] | None = None

    @classmethod
    def from_config(cls, values: Mapping[str, Any], **given: Any) -> InferenceSettings:
        """As :meth:`Settings.from_config`, the rule's ``shift`` parameter unpacked: it carries a
        transfer shift's source model inside (:func:`classwise.shifts.spec.infer_parameter` says
        why it stays one parameter)."""
        values = dict(values)
        if "shift" in values and "source_model" not in given:
            shift = dict(values["shift"])
            values["shift"], given["source_model"] = shift, shift.pop("source_model", None)
        return super().from_config(values, **given)

    def made_from(self, target: InferTarget) -> dict[str, Any]:
        """What ``target``'s logits are made from, for a decode group's record
        (:func:`classwise.outputs.kept.fingerprint`)."""
        return {
            "model": target.config,
            "weights": None if target.weights is None else str(target.weights),
            "dataset": {"name": self.dataset_name, **dict(self.dataset)},
            "shift": self.shift,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "device": self.device,
        }


def train_step(
    *,
    model_name: str,
    model_cfg: Mapping[str, Any],
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    checkpoint_path: str | Path,
    progress: TextIO | None = None,
    threads: int | None = None,
) -> None:
    """Train a configured demo model on its dataset's train split and save the checkpoint.

    ``threads`` caps torch's intra-op threads (the job's Snakemake threads). It takes the model
    and dataset by name and entry, as its script has since the first release, rather than a
    :class:`FitSettings`: a changed script reruns every ``train_model`` job of a finished run
    (Snakemake's code trigger), and with it everything after."""
    limit_threads(threads)
    from classwise.data.sources import load_split
    from classwise.models.architectures import build_model
    from classwise.models.checkpoint import save_checkpoint
    from classwise.models.training import train_model

    train = load_split(dict(dataset_cfg), "train", name=dataset_name)
    _, channels, height, width = train.images.shape  # an ImageSet's images are (N, C, H, W)
    input_shape = (int(channels), int(height), int(width))
    options = dict(model_cfg.get("options", {}))
    hyperparameters = Hyperparameters.from_entry(model_cfg)
    model = build_model(
        model_cfg["architecture"], n_classes=len(train.class_names), input_shape=input_shape, seed=hyperparameters.seed, **options
    )
    summary = train_model(model, train, hyperparameters=hyperparameters, progress=progress)
    save_checkpoint(
        checkpoint_path,
        model,
        architecture=model_cfg["architecture"],
        n_classes=len(train.class_names),
        input_shape=input_shape,
        options=options,
        class_names=list(train.class_names),
        extra={"model": model_name, "train_on": dataset_name, "config": dict(model_cfg), "training": summary},
    )


def finetune_step(
    *,
    settings: FitSettings,
    base_weights: str | Path | None,
    checkpoint_path: str | Path,
    progress: TextIO | None = None,
    threads: int | None = None,
) -> None:
    """Fine-tune a ``source: finetune`` model on its dataset's train split and save the
    checkpoint (:mod:`classwise.models.finetune`).

    ``base_weights`` is the download manifest of the starting weights (``None`` for
    ``weights: null``); ``threads`` caps torch's intra-op threads and the image decoders."""
    limit_threads(threads)
    from classwise.data.sources import open_split
    from classwise.models.finetune import finetune, load_base_state, parse_finetune_spec, save_finetuned

    spec = parse_finetune_spec(settings.model, key=settings.model_name)
    train = open_split(dict(settings.dataset), "train", name=settings.dataset_name)
    pretrained = load_base_state(settings.model, base_weights or None, key=settings.model_name)
    model, data_config, summary = finetune(
        spec, train, pretrained=pretrained, progress=progress, device=settings.device, workers=max(1, int(threads or 1))
    )
    base = {"architecture": spec.architecture, "weights": spec.weights, "manifest": str(base_weights or "")}
    if base_weights:
        from classwise.models.zoo import read_manifest

        manifest = read_manifest(base_weights)
        base.update(resolved=manifest.get("resolved"), files=manifest.get("files"))
    save_finetuned(
        checkpoint_path,
        model,
        spec=spec,
        class_names=list(train.class_names),
        data_config=data_config,
        base=base,
        training={"model": settings.model_name, "train_on": settings.dataset_name, **summary},
    )


def prototypes_step(
    *,
    settings: FitSettings,
    backbone_weights: str | Path | None,
    prototypes_path: str | Path,
    progress: TextIO | None = None,
    threads: int | None = None,
) -> None:
    """Compute the class prototypes of a ``source: prototype`` model on its dataset's train split
    and save the classifier file (:mod:`classwise.models.prototypes`).

    ``backbone_weights`` is the backbone's download manifest, checkpoint file, or None (random
    torchvision weights). The train images go through exactly the path inference takes (the
    backbone's resize and crop for image files, in-memory sets as stored, then ``resize``), in
    batches, so the features of the whole split are never held at once."""
    limit_threads(threads)
    if settings.batch_size is None:
        raise InputError("the class prototypes need a batch size", field="inference.batch_size")
    model_name, model_cfg, batch_size = settings.model_name, settings.model, settings.batch_size
    import numpy as np
    from tqdm import tqdm

    from classwise.data.sources import open_split
    from classwise.inference.execution import Execution
    from classwise.inference.stream import predict_logits
    from classwise.models.prototypes import (
        BackboneArchitecture,
        FeatureExtractor,
        add_class_sums,
        class_prototypes,
        save_prototypes,
    )
    from classwise.models.sources.prototype import load_backbone
    from classwise.models.wrapper import wrap_pixel_space
    from classwise.shifts.spec import clean_spec

    spec = model_spec(model_name, model_cfg)
    resize = spec.options.get("resize")
    backbone, data_config, record = load_backbone(spec, backbone_weights or None, key=model_name)
    extractor = wrap_pixel_space(FeatureExtractor(backbone, resize), data_config)
    train = open_split(dict(settings.dataset), "train", name=settings.dataset_name)
    n_classes = len(train.class_names)
    clean, execution = clean_spec(), Execution(device=settings.device)
    batches, total = _batches(train, data_config, batch_size, workers=max(1, int(threads or 1)), chunk=64 * batch_size)
    sums: np.ndarray | None = None
    counts = np.zeros(n_classes, dtype=np.int64)
    bar = tqdm(total=total, desc=f"{model_name} prototypes", unit="img", file=progress, disable=progress is None)
    for batch in batches:
        features = predict_logits(extractor, batch, clean, base_seed=0, batch_size=batch_size, execution=execution, progress=None)
        if sums is None:
            sums = np.zeros((n_classes, features.shape[1]), dtype=np.float64)
        add_class_sums(sums, counts, features, batch.labels)
        bar.update(len(batch))
    bar.close()
    if sums is None:
        raise InputError("the train split has no readable images", field=f"datasets.{settings.dataset_name}")
    save_prototypes(
        prototypes_path,
        backbone=backbone,
        architecture=BackboneArchitecture(str(spec.library), str(spec.architecture)),
        prototypes=class_prototypes(sums, counts, train.class_names),
        counts=counts,
        class_names=list(train.class_names),
        resize=resize,
        data_config=data_config,
        backbone_record=record,
        config={"model": model_name, "train_on": settings.dataset_name, **dict(model_cfg)},
    )


def model_spec(model_name: str, model_cfg: Mapping[str, Any] | None) -> ModelSpec:
    """The :class:`ModelSpec` of a job's ``models:`` entry (its rule's parameter, checked with
    every entry before any job, so its names are not looked up again); none (``None`` or empty):
    a checkpoint the pipeline trained (``source: train``), which describes itself."""
    from classwise.models.sources import parse_model_spec

    if not model_cfg:
        return ModelSpec(source="train", label="train", verbatim=True)
    return parse_model_spec(model_cfg, key=model_name, check_names=False)


def load_inference_model(
    model_name: str, spec: ModelSpec, weights_path: str | Path | None, device: str
) -> tuple[Any, dict[str, Any], Any]:
    """The model (``[0, 1]`` images in, logits out), its metadata, and its resolved data config
    (``None`` for demo models, which take the dataset's images as they are).

    ``spec``: the model's entry, parsed (:func:`model_spec`). ``weights_path``: the demo
    checkpoint the pipeline trained, or the directory (manifest) that the ``download_model`` rule
    filled; a ``checkpoint`` source may give its own path; None where the source reads no file
    (torchvision's random weights).
    """
    from classwise.models.sources import model_source

    return model_source(spec).inference_model(model_name, spec, weights_path, device)


def _batches(evaluation: Any, data_config: Any, batch_size: int, workers: int, *, chunk: int | None = None) -> tuple[Any, int]:
    """Image batches of the evaluation set (decoded lazily for image-file sets) and its size; an
    in-memory set comes whole, or in slices of ``chunk`` images when given."""
    import numpy as np

    from classwise.data.imageset import ImageSet

    if isinstance(evaluation, ImageSet):
        if chunk is None:
            return [evaluation], len(evaluation)
        n = len(evaluation)
        return (evaluation.subset(np.arange(i, min(i + chunk, n))) for i in range(0, n, chunk)), n
    if data_config is None:
        raise InputError(
            "image-file datasets need a model with a data config (timm, torchvision, robustbench or "
            "checkpoint source) to know the input size",
            field="models",
        )
    from classwise.models.data_config import preprocess_image

    def transform(image: Any) -> np.ndarray:
        return preprocess_image(image, data_config).numpy()

    return evaluation.iter_batches(batch_size, transform, workers=workers), len(evaluation)


@dataclass(frozen=True)
class InferTarget:
    """One model of an inference job and the logits file it writes: its name, its config (the
    ``models:`` entry; None for a checkpoint the pipeline trained, which describes itself), the
    weights it loads (:func:`load_inference_model`'s ``weights_path``)."""

    name: str
    config: Mapping[str, Any] | None
    weights: str | Path | None
    logits_path: str | Path


def infer_step(
    *,
    model: InferTarget,
    settings: InferenceSettings,
    source_weights: str | Path | None = None,
    progress: TextIO | None = None,
    threads: int | None = None,
    shard: tuple[int, int] | None = None,
) -> None:
    """Run one (dataset, model, shift) inference and cache its logits with a sidecar JSON.

    ``model`` is the model and the logits file it writes; ``settings`` the dataset, the shift (its
    JSON form) and how the job runs. A shift crafted on another model
    (:attr:`~classwise.shifts.spec.ShiftSpec.source_model`) loads it too, from the settings'
    ``source_model`` and ``source_weights`` (as ``model`` does its own). The shift's kind says which images are evaluated (the
    dataset's test split, or a published shift set's own files with the dataset's labels, whose
    logits keep only a class subset's columns when it is restricted: :mod:`classwise.class_subsets`)
    and makes each batch (:mod:`classwise.shifts.kinds`). Image-file datasets are decoded batch
    by batch with the model's own resize, crop and interpolation (its resolved data config,
    recorded in the sidecar), ahead of the model on a background thread
    (:func:`classwise.inference.stream.stream_logits`); the perturbation of each sample is seeded by its
    id, so batching never changes the logits. ``threads`` caps torch's intra-op threads and the
    decoding threads (the job's Snakemake threads). A precision or layout other than the defaults
    (the settings' ``device``) is recorded under ``inference`` in the sidecar. An adversarial shift with ``per_class`` attacks only a class-stratified subset of
    the samples, drawn from ``sample_seed(seed, "per_class")`` (the same for every shift and
    model), recorded under ``attacked_subset`` in the sidecar; the logits' ``sample_ids`` say
    which. A transfer shift's source model must take the same input as ``model``.

    Faults stop the job with an :class:`InputError` and write nothing: in-memory images of another
    shape than a classwise checkpoint takes, a model with another number of outputs than the
    dataset has classes (checked on the first batch), NaN or infinite logits (naming the first
    sample ids). Unreadable images follow the dataset's ``on_bad_image``: an error naming the
    file, or ``skip``, which lists them under ``skipped_images`` in the sidecar. A CUDA
    out-of-memory error halves the batch size and goes on (:mod:`classwise.inference.stream`).

    ``shard=(k, S)`` runs only shard ``k`` of ``S`` (1-based) of the set, whole batches
    (:func:`classwise.inference.sharding.shard_range`, on the set after its ``per_class`` subset), and
    writes a shard file to the model's ``logits_path`` instead (:func:`classwise.inference.sharding.save_shard`);
    :func:`merge_shards_step` makes the cached file of the ``S`` shards, byte for byte this
    step's unsharded output. A shard with no batch (fewer batches than shards) writes no rows."""
    _infer([model], settings=settings, progress=progress, threads=threads, source_weights=source_weights, shard=shard)


def infer_group_step(
    *,
    models: Sequence[InferTarget],
    group_dir: str | Path,
    models_per_decode: int,
    settings: InferenceSettings,
    data_inputs: Sequence[str | Path] = (),
    progress: TextIO | None = None,
    threads: int | None = None,
) -> None:
    """The inference job of a decode group (rule ``infer_models_<dataset>``,
    :mod:`classwise.pipeline.decode_groups`): every model of ``models`` on one shift that runs no
    model, each batch decoded and shifted once for up to ``models_per_decode`` models of one
    decoding held together (:func:`classwise.inference.shared_decode.take_batches`), each logits file and
    sidecar byte for byte its own :func:`infer_step`'s.

    The group keeps its own copy of every file it made, a folder per model in ``group_dir``
    (:class:`classwise.outputs.kept.KeptFiles`: hard links where the file system allows, with a
    record of what they were made from). Snakemake removes a job's outputs before it runs; the
    models whose copies are up to date (by the record, and by the mtimes of the model's weights
    and of ``data_inputs``) get them back, and only the others are run, so adding a model to a
    finished run computes that model only. A model's record is written once its batch is done:
    a job that fails or is killed computes again, when rerun, only what it had not finished."""
    from classwise.inference.execution import Execution
    from classwise.inference.shared_decode import take_batches
    from classwise.logits_io import sidecar_path
    from classwise.outputs.kept import KeptFiles, fingerprint, prune

    targets = list(models)
    name = str(settings.shift.get("name", ""))
    made_from = {target.name: fingerprint(settings.made_from(target)) for target in targets}
    kept = {
        target.name: KeptFiles.of(Path(group_dir) / target.name, [target.logits_path, sidecar_path(Path(target.logits_path))])
        for target in targets
    }
    stale: dict[str, str] = {}
    for target in targets:
        why = kept[target.name].why_stale(
            made_from[target.name], [*([] if target.weights is None else [target.weights]), *data_inputs]
        )
        if why is not None:
            stale[target.name] = why
    done = [target.name for target in targets if target.name not in stale]
    if progress is not None:
        print(f"{name}: {len(done)} of {len(targets)} models up to date, kept ({', '.join(done) or 'none'})", file=progress)
        for model, why in stale.items():
            print(f"{name}: computing {model} ({why})", file=progress)
    for model in done:
        kept[model].take_back()
    execution = Execution.from_parameter(settings.device)
    limit_threads(threads)
    pending = ((target, _load(target, execution.device)) for target in targets if target.name in stale)
    for batch in take_batches(pending, key=lambda pair: _decoding(pair[1][2]), size=max(1, models_per_decode)):
        _infer(
            [target for target, _ in batch],
            settings=settings,
            progress=progress,
            threads=threads,
            loaded=[loaded for _, loaded in batch],
        )
        for target, _ in batch:
            kept[target.name].keep(made_from[target.name])
        batch.clear()  # the models of this batch leave memory before the next batch is loaded
    prune(group_dir, [target.name for target in targets])


def _infer(
    targets: list[InferTarget],
    *,
    settings: InferenceSettings,
    progress: TextIO | None,
    threads: int | None,
    source_weights: str | Path | None = None,
    shard: tuple[int, int] | None = None,
    loaded: list[Any] | None = None,
) -> None:
    """The inference of ``targets`` (one model, or several of one decoding) on one shift;
    ``loaded``: their models, loaded already (:func:`_load`)."""
    dataset_name, dataset_cfg, seed, batch_size = settings.dataset_name, settings.dataset, settings.seed, settings.batch_size
    limit_threads(threads)
    import numpy as np
    from tqdm import tqdm

    from classwise.inference.execution import Execution
    from classwise.inference.stream import resolve_device, stream_logits
    from classwise.shifts.spec import ShiftSpec

    execution = Execution.from_parameter(settings.device)
    spec = ShiftSpec.from_json(settings.shift)
    if not targets:
        raise InputError("expected at least one model", field="models")
    if len(targets) > 1 and spec.uses_a_model:
        raise InputError(
            f"shift {spec.name!r} runs a model to make its images (an attack): each model needs its own inference",
            field="shift",
        )
    evaluation, subset = spec.shift_kind.evaluation_images(spec, _DatasetImages(dataset_name, dataset_cfg))
    evaluation, attacked_subset = _attacked_samples(evaluation, spec, seed)
    loaded = _loaded_models(targets, evaluation, dataset_name, execution.device, loaded)
    data_config = loaded[0][2]
    source_model = _source_model(spec, settings.source_model, source_weights, data_config, targets[0].name, execution.device)
    weights = [None if target.weights is None else str(target.weights) for target in targets]
    position: ShardPosition | None = None
    if shard is not None:  # whole batches of the set (after its per_class subset): classwise.inference.sharding
        from classwise.inference.sharding import ShardPosition

        position = ShardPosition.of(shard, len(evaluation), batch_size)
        evaluation = evaluation.subset(np.arange(position.start, position.stop))
    chunks, total = _batches(evaluation, data_config, batch_size, workers=max(1, int(threads or 1)))
    chunk_sizes: list[int] = []
    outputs = [_Outputs(evaluation, t.name, w, dataset_name) for t, w in zip(targets, weights, strict=True)]
    names = ", ".join(target.name for target in targets)
    bar = tqdm(total=total, desc=f"{names} {spec.name}", unit="img", file=progress, disable=progress is None)
    with stream_logits(
        {target.name: model for target, (model, _, _) in zip(targets, loaded, strict=True)},
        _recorded(chunks, chunk_sizes),
        spec,
        n_classes=len(evaluation.class_names),
        base_seed=seed,
        batch_size=batch_size,
        execution=execution,
        attack_log=progress,
        source_model=source_model,
    ) as batches:
        for chunk, logits in _per_chunk(batches, chunk_sizes, bar):
            for gathered, model_logits in zip(outputs, logits, strict=True):
                gathered.add(model_logits, chunk)
    bar.close()
    for target, gathered, (_, model_meta, model_data_config) in zip(targets, outputs, loaded, strict=True):
        arrays, input_shape = gathered.arrays(subset, sharded=position is not None)
        metadata = {
            "dataset": {"name": dataset_name, **_json_safe(dict(dataset_cfg))},
            "model": model_meta,
            "preprocessing": _preprocessing(input_shape, model_data_config),
            "shift": spec.to_json(),
            **({} if subset is None else {"class_subset": {"class_indices": subset.tolist(), "of": len(evaluation.class_names)}}),
            **({} if attacked_subset is None else {"attacked_subset": attacked_subset}),
            "seed": seed,
            "device": resolve_device(execution.device).type,
            **execution.sidecar(),
            "skipped_images": gathered.skipped(),
            "code_version": {"classwise": classwise.__version__, "python": platform.python_version()},
        }
        _write_logits(target.logits_path, arrays, metadata, subset, position, progress)


def _loaded_models(
    targets: list[InferTarget], evaluation: Any, dataset_name: str, device: str, loaded: list[Any] | None = None
) -> list[tuple[Any, dict[str, Any], Any]]:
    """Each target's model, sidecar metadata and data config (``loaded``: those, loaded already),
    checked: one decoding for all (one decode feeds them) and each model's input shape against the
    images."""
    if loaded is None:
        loaded = [_load(target, device) for target in targets]
    decoding = _decoding(loaded[0][2])
    for target, (_, _, other) in zip(targets[1:], loaded[1:], strict=True):
        if _decoding(other) != decoding:
            raise InputError(
                f"model {target.name!r} preprocesses images otherwise than {targets[0].name!r} (data config): "
                "one decode feeds only models that decode images alike (the same resize and crop)",
                field="models",
            )
    for target, (_, model_meta, model_data_config) in zip(targets, loaded, strict=True):
        path = None if target.weights is None else str(target.weights)
        _check_input_shape(evaluation, target.name, model_meta, model_data_config, path, dataset_name)
    return loaded


def _load(target: InferTarget, device: str) -> tuple[Any, dict[str, Any], Any]:
    return load_inference_model(target.name, model_spec(target.name, target.config), target.weights, device)


def _decoding(data_config: Any) -> Any:
    """What decoding reads of a data config (None: a demo model, which takes the images as they are)."""
    return None if data_config is None else data_config.decoding


def _preprocessing(input_shape: Any, data_config: Any) -> dict[str, Any]:
    """The sidecar's ``preprocessing``: what the model was fed (normalisation is the model's)."""
    return {
        "input": "float32 in [0, 1], channels first",
        "normalisation": "inside the model",
        "input_shape": input_shape,
        "data_config": None if data_config is None else data_config.to_dict(),
    }


def _recorded(chunks: Iterable[Any], sizes: list[int]) -> Iterator[Any]:
    """``chunks``, each one's size appended to ``sizes`` before its batches are made."""
    for chunk in chunks:
        sizes.append(len(chunk))
        yield chunk


def _per_chunk(
    batches: Iterable[tuple[Any, list[np.ndarray]]], sizes: list[int], bar: Any
) -> Iterator[tuple[Any, list[np.ndarray]]]:
    """The streamed batches put back together into the chunks they were cut from (an in-memory
    set is one chunk, an image-file set one per batch), with each model's logits on them: the
    outputs are checked per chunk, so an error counts a whole in-memory set's bad samples."""
    import numpy as np

    from classwise.shifts.kinds import Batch

    done, pending, count = 0, [], 0
    for batch, logits in batches:
        pending.append((batch, logits))
        count += len(batch.labels)
        bar.update(len(batch.labels))
        while sizes[done] == 0:  # a chunk with no image (a shard's empty share) has no batch
            done += 1
        if count < sizes[done]:
            continue
        parts = [b for b, _ in pending]
        chunk = Batch(
            parts[0].images[:0],  # read for the image shape only: the images are not copied together
            np.concatenate([b.labels for b in parts]),
            np.concatenate([np.asarray(b.sample_ids) for b in parts]),
        )
        yield chunk, [np.concatenate(per_model, axis=0) for per_model in zip(*(out for _, out in pending), strict=True)]
        done, pending, count = done + 1, [], 0


def _write_logits(
    path: str | Path,
    arrays: dict[str, Any],
    metadata: dict[str, Any],
    subset: np.ndarray | None,
    position: ShardPosition | None,
    progress: TextIO | None,
) -> None:
    """The cached logits file and sidecar, or a shard file (``position``)."""
    if position is None:
        from classwise.logits_io import save_logits

        save_logits(path, **arrays, metadata=metadata, class_indices=subset)
        return
    from classwise.inference.sharding import save_shard

    save_shard(path, position=position, **arrays, metadata=metadata, class_indices=subset)
    if progress is not None:
        print(
            f"shard {position.shard.name}: samples [{position.start}, {position.stop}) of {position.samples}, "
            f"{len(arrays['labels'])} rows",
            file=progress,
        )


class _DatasetImages:
    """Where a shift's kind finds its images (:class:`classwise.shifts.kinds.ImageSources`): the
    dataset's test split, or one of its published shift sets."""

    def __init__(self, name: str, config: Mapping[str, Any]) -> None:
        self.name, self.config = name, dict(config)

    def test_split(self) -> Any:
        from classwise.data.sources import open_split

        return open_split(self.config, "test", name=self.name)

    def shift_set(self, spec: Any) -> tuple[Any, np.ndarray | None]:
        from classwise.data.shift_sets import open_shift

        opened = open_shift(spec, self.config, dataset=self.name)
        return opened.images, opened.classes

    def labelled_samples(self, path: str) -> Any:
        from classwise.data.sources.labels import shift_samples

        return shift_samples(self.config, self.name, path)


def _attacked_samples(evaluation: Any, spec: Any, seed: int) -> tuple[Any, dict[str, int] | None]:
    """The samples an expensive shift attacks (``per_class`` of each class, :func:`stratified_subset`)
    and what the sidecar records of them; the whole set and None when it attacks all."""
    if spec.per_class is None:
        return evaluation, None
    from classwise.shifts.seeding import sample_seed
    from classwise.shifts.spec import stratified_subset

    of = len(evaluation)
    evaluation = evaluation.subset(stratified_subset(evaluation.labels, spec.per_class, sample_seed(seed, "per_class")))
    return evaluation, {"per_class": spec.per_class, "samples": len(evaluation), "of": of}


def _source_model(
    spec: Any,
    source_cfg: Mapping[str, Any] | None,
    source_weights: str | Path | None,
    data_config: Any,
    model_name: str,
    device: str,
) -> Any:
    """The model a shift crafts its attack on (:attr:`ShiftSpec.source_model`), None for the
    others; it must preprocess images as ``model_name`` does, else its images cannot be fed to it."""
    source_name = spec.source_model
    if source_name is None:
        return None
    source_model, _, source_data_config = load_inference_model(
        source_name, model_spec(source_name, source_cfg), source_weights, device
    )
    if source_data_config != data_config:  # frozen dataclasses (or None): compared field by field
        raise InputError(
            f"shift {spec.name!r}: model {source_name!r} preprocesses images otherwise than {model_name!r} "
            "(data config), so its adversarial images cannot be fed to it; transfer between models of the same input",
            field="shifts.transfer",
        )
    return source_model


class _Outputs:
    """The logits, labels and sample ids of an inference, gathered batch by batch, each batch checked."""

    def __init__(self, evaluation: Any, model_name: str, weights: str | None, dataset: str) -> None:
        self.evaluation, self.model_name, self.weights, self.dataset = evaluation, model_name, weights, dataset
        self.logits: list[np.ndarray] = []
        self.labels: list[np.ndarray] = []
        self.sample_ids: list[np.ndarray] = []
        self.input_shape: list[int] | None = None

    def add(self, logits: np.ndarray, batch: Any) -> None:
        _check_outputs(logits, batch, self.model_name, self.weights, self.dataset, len(self.evaluation.class_names))
        self.logits.append(logits)
        self.labels.append(batch.labels)
        self.sample_ids.append(batch.sample_ids)
        self.input_shape = list(batch.images.shape[1:])

    def arrays(self, subset: np.ndarray | None, *, sharded: bool) -> tuple[dict[str, Any], list[int] | None]:
        """What the logits file holds (restricted to ``subset``'s classes when given, before any
        argmax: :mod:`classwise.class_subsets`) and the input shape; a shard without a readable
        image has no rows, an unsharded set without one is an error."""
        import numpy as np

        evaluation = self.evaluation
        if not self.logits:
            if not sharded:
                raise InputError("the evaluation set has no readable images", field=f"datasets.{self.dataset}")
            # a shard without a readable image: no rows, in the dtypes the set's batches have
            self.logits.append(np.zeros((0, len(evaluation.class_names)), dtype=np.float32))
            self.labels.append(np.asarray(evaluation.labels[:0], dtype=np.int64))
            self.sample_ids.append(np.asarray(evaluation.sample_ids[:0]))
        scores, labels, class_names = np.concatenate(self.logits), np.concatenate(self.labels), np.asarray(evaluation.class_names)
        if subset is not None:
            from classwise.class_subsets import restrict_to_classes

            scores, labels = restrict_to_classes(scores, labels, subset)
            class_names = class_names[subset]
        arrays = {"logits": scores, "labels": labels, "sample_ids": np.concatenate(self.sample_ids), "class_names": class_names}
        return arrays, self.input_shape

    def skipped(self) -> list[dict[str, str]]:
        """The images skipped as unreadable (``on_bad_image: skip``)."""
        return [
            {"sample_id": s.sample_id, "path": str(s.path), "reason": s.reason} for s in getattr(self.evaluation, "skipped", [])
        ]


def merge_shards_step(*, shard_paths: list[str | Path], logits_path: str | Path, progress: TextIO | None = None) -> None:
    """Merge the shard files of one (dataset, model, shift) inference into its cached logits file
    and sidecar, byte for byte those of the unsharded :func:`infer_step`
    (:func:`classwise.inference.sharding.merge_shards`, which refuses missing, repeated or mismatched
    shards)."""
    from classwise.inference.sharding import merge_shards

    rows = merge_shards(shard_paths, logits_path)
    if progress is not None:
        print(f"merged {len(shard_paths)} shards: {rows} rows -> {logits_path}", file=progress)


def import_predictions_step(
    *,
    model_name: str,
    model_cfg: Mapping[str, Any],
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    shift: Mapping[str, Any],
    outputs_path: str | Path,
    logits_path: str | Path,
) -> None:
    """Cache the outputs of a model the pipeline does not run (``source: predictions``) on one
    (dataset, shift): the user's file, matched to the shift's samples by id (the dataset's test
    samples, a published set's images, a labels shift's own file: the shift's kind says which)
    and checked against their labels and class count (:func:`classwise.predictions_io.import_outputs`;
    a set restricted to a class subset keeps its classes' columns, as inference does), written
    where inference would write it, with a sidecar JSON naming the file and its sha256."""
    import numpy as np

    from classwise.predictions_io import import_outputs
    from classwise.shifts.spec import ShiftSpec

    spec = ShiftSpec.from_json(shift)
    evaluation, subset = spec.shift_kind.evaluation_images(spec, _DatasetImages(dataset_name, dataset_cfg))
    metadata = {
        "dataset": {"name": dataset_name, **_json_safe(dict(dataset_cfg))},
        "model": {"name": model_name, **_json_safe(dict(model_cfg))},
        "shift": dict(shift),
        "code_version": {"classwise": classwise.__version__, "python": platform.python_version()},
    }
    import_outputs(
        outputs_path,
        sample_ids=np.asarray(evaluation.sample_ids),
        labels=np.asarray(evaluation.labels),
        class_names=np.asarray(evaluation.class_names),
        dataset=dataset_name if spec.name == "clean" else f"{dataset_name}, shift {spec.name}",
        cache_path=logits_path,
        metadata=metadata,
        abstain=model_cfg.get("abstain"),
        class_subset=subset,
    )


def _check_input_shape(
    evaluation: Any, model_name: str, model_meta: Mapping[str, Any], data_config: Any, weights: str | None, dataset: str
) -> None:
    """In-memory images must have the shape a classwise checkpoint was built for (image-file sets
    are resized to the model's data config instead)."""
    from classwise.data.imageset import ImageSet

    expected = model_meta.get("input_shape")
    if expected is None and model_meta.get("library") == "classwise" and data_config is not None:
        expected = data_config.input_size
    if not isinstance(evaluation, ImageSet) or expected is None:
        return
    got = tuple(int(d) for d in evaluation.images.shape[1:])
    if got != tuple(int(d) for d in expected):
        raise InputError(
            f"model '{model_name}' takes images of shape {tuple(expected)}, dataset '{dataset}' has {got}",
            path=weights,
            field="input_shape",
        )


def _check_outputs(logits: np.ndarray, batch: Any, model_name: str, weights: str | None, dataset: str, n_classes: int) -> None:
    """One logit per class of the dataset, all finite; else an :class:`InputError` naming the model
    (and its weights file) and, for non-finite logits, the first samples."""
    import numpy as np

    if logits.ndim != 2 or logits.shape[1] != n_classes:
        raise InputError(
            f"model '{model_name}' gives {logits.shape[1:]} outputs per image, dataset '{dataset}' has "
            f"{n_classes} classes (weights for another label set? set num_classes or pick another model)",
            path=weights,
            field="num_classes",
        )
    finite = np.isfinite(logits).all(axis=1)
    if not finite.all():
        bad = np.asarray(batch.sample_ids)[~finite]
        raise InputError(
            f"model '{model_name}' gives NaN or infinite logits on {bad.size} of {finite.size} images of "
            f"dataset '{dataset}' in this batch, e.g. sample ids {bad[:5].tolist()}; nothing was written",
            path=weights,
            field="logits",
        )


def _json_safe(value: Any) -> Any:
    """Keep only what JSON can hold (a dataset's config may carry tuples)."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
