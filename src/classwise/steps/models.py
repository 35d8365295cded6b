"""Workflow steps that train models and run inference (rules train_model and infer).

Every step reads its inputs, computes, and writes each output atomically, so an interrupted
job leaves nothing that Snakemake could mistake for a finished output.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import numpy as np

import classwise
from classwise.data.sources import load_split, open_split
from classwise.errors import InputError
from classwise.logits_io import save_logits
from classwise.steps.threads import limit_threads

#: Training settings of ``source: train`` models that the config leaves out (documented in the
#: config schema; kept here because they apply to one source only).
TRAINING_DEFAULTS: dict[str, Any] = {"epochs": 10, "lr": 0.01, "batch_size": 64, "weight_decay": 0.0, "seed": 0}


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

    ``threads`` caps torch's intra-op threads (the job's Snakemake threads)."""
    limit_threads(threads)
    from classwise.models.architectures import build_model
    from classwise.models.checkpoint import save_checkpoint
    from classwise.models.training import train_model

    train = load_split(dict(dataset_cfg), "train", name=dataset_name)
    _, channels, height, width = train.images.shape  # an ImageSet's images are (N, C, H, W)
    input_shape = (int(channels), int(height), int(width))
    options = dict(model_cfg.get("options", {}))
    model = build_model(
        model_cfg["architecture"],
        n_classes=len(train.class_names),
        input_shape=input_shape,
        seed=int(model_cfg.get("seed", TRAINING_DEFAULTS["seed"])),
        **options,
    )
    summary = train_model(
        model,
        train,
        epochs=int(model_cfg.get("epochs", TRAINING_DEFAULTS["epochs"])),
        lr=float(model_cfg.get("lr", TRAINING_DEFAULTS["lr"])),
        batch_size=int(model_cfg.get("batch_size", TRAINING_DEFAULTS["batch_size"])),
        weight_decay=float(model_cfg.get("weight_decay", TRAINING_DEFAULTS["weight_decay"])),
        seed=int(model_cfg.get("seed", TRAINING_DEFAULTS["seed"])),
        progress=progress,
    )
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
    model_name: str,
    model_cfg: Mapping[str, Any],
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    base_weights: str | Path | None,
    checkpoint_path: str | Path,
    device: str = "auto",
    progress: TextIO | None = None,
    threads: int | None = None,
) -> None:
    """Fine-tune a ``source: finetune`` model on its dataset's train split and save the
    checkpoint (:mod:`classwise.models.finetune`).

    ``base_weights`` is the download manifest of the starting weights (``None`` for
    ``weights: null``); ``threads`` caps torch's intra-op threads and the image decoders."""
    limit_threads(threads)
    from classwise.models.finetune import finetune, load_base_state, parse_finetune_spec, save_finetuned

    spec = parse_finetune_spec(model_cfg, key=model_name)
    train = open_split(dict(dataset_cfg), "train", name=dataset_name)
    pretrained = load_base_state(model_cfg, base_weights or None, key=model_name)
    model, data_config, summary = finetune(
        spec, train, pretrained=pretrained, progress=progress, device=device, workers=max(1, int(threads or 1))
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
        training={"model": model_name, "train_on": dataset_name, **summary},
    )


def prototypes_step(
    *,
    model_name: str,
    model_cfg: Mapping[str, Any],
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    backbone_weights: str | Path | None,
    prototypes_path: str | Path,
    batch_size: int,
    device: str = "auto",
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
    from tqdm import tqdm

    from classwise.inference import predict_logits
    from classwise.models.prototypes import FeatureExtractor, add_class_sums, class_prototypes, save_prototypes
    from classwise.models.sources import parse_model_spec
    from classwise.models.sources.prototype import load_backbone
    from classwise.models.wrapper import wrap_pixel_space
    from classwise.shifts.spec import ShiftSpec

    spec = parse_model_spec(model_cfg, key=model_name, check_names=False)
    resize = model_cfg.get("resize")
    backbone, data_config, record = load_backbone(model_cfg, backbone_weights or None, key=model_name)
    extractor = wrap_pixel_space(FeatureExtractor(backbone, resize), data_config)
    train = open_split(dict(dataset_cfg), "train", name=dataset_name)
    n_classes = len(train.class_names)
    clean = ShiftSpec(name="clean", kind="clean", params={})
    batches, total = _batches(train, data_config, batch_size, workers=max(1, int(threads or 1)), chunk=64 * batch_size)
    sums: np.ndarray | None = None
    counts = np.zeros(n_classes, dtype=np.int64)
    bar = tqdm(total=total, desc=f"{model_name} prototypes", unit="img", file=progress, disable=progress is None)
    for batch in batches:
        features = predict_logits(extractor, batch, clean, base_seed=0, batch_size=batch_size, device=device, progress=None)
        if sums is None:
            sums = np.zeros((n_classes, features.shape[1]), dtype=np.float64)
        add_class_sums(sums, counts, features, batch.labels)
        bar.update(len(batch))
    bar.close()
    if sums is None:
        raise InputError("the train split has no readable images", field=f"datasets.{dataset_name}")
    save_prototypes(
        prototypes_path,
        backbone=backbone,
        library=str(spec.library),
        architecture=str(spec.architecture),
        prototypes=class_prototypes(sums, counts, train.class_names),
        counts=counts,
        class_names=list(train.class_names),
        resize=resize,
        data_config=data_config,
        backbone_record=record,
        config={"model": model_name, "train_on": dataset_name, **dict(model_cfg)},
    )


def load_inference_model(
    model_name: str, model_cfg: Mapping[str, Any], weights_path: str | Path | None, device: str
) -> tuple[Any, dict[str, Any], Any]:
    """The model (``[0, 1]`` images in, logits out), its metadata, and its resolved data config
    (``None`` for demo models, which take the dataset's images as they are).

    ``weights_path``: the demo checkpoint the pipeline trained, or the directory (manifest) that
    the ``download_model`` rule filled; a ``checkpoint`` source may give its own path; None
    where the source reads no file (torchvision's random weights).
    """
    from classwise.models.sources import model_source

    return model_source(model_cfg).inference_model(model_name, model_cfg, weights_path, device)


def _batches(evaluation: Any, data_config: Any, batch_size: int, workers: int, *, chunk: int | None = None) -> tuple[Any, int]:
    """Image batches of the evaluation set (decoded lazily for image-file sets) and its size; an
    in-memory set comes whole, or in slices of ``chunk`` images when given."""
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


def infer_step(
    *,
    model_name: str,
    model_cfg: Mapping[str, Any] | None = None,
    checkpoint_path: str | Path | None,
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    shift: Mapping[str, Any],
    seed: int,
    batch_size: int,
    device: str,
    logits_path: str | Path,
    progress: TextIO | None = None,
    threads: int | None = None,
    source_cfg: Mapping[str, Any] | None = None,
    source_weights: str | Path | None = None,
    shard: tuple[int, int] | None = None,
) -> None:
    """Run one (dataset, model, shift) inference and cache its logits with a sidecar JSON.

    Image-file datasets are decoded batch by batch with the model's own resize, crop and
    interpolation (its resolved data config, recorded in the sidecar); the perturbation of each
    sample is seeded by its id, so batching never changes the logits. ``threads`` caps torch's
    intra-op threads (the job's Snakemake threads). A published shift set (``kind="dataset"``,
    :mod:`classwise.data.shift_sets`) is read from its own files with the dataset's labels; one
    restricted to a class subset keeps only the subset's logits (:mod:`classwise.class_subsets`).
    An adversarial shift with ``per_class`` attacks only a class-stratified subset of the samples,
    drawn from ``sample_seed(seed, "per_class")`` (the same for every shift and model), recorded
    under ``attacked_subset`` in the sidecar; the logits' ``sample_ids`` say which. A transfer
    shift loads its source model too (``source_cfg``, ``source_weights``: as ``model_cfg`` and
    ``checkpoint_path``), crafts the attack on it and evaluates ``model_name``
    (:func:`classwise.inference.transferred_images`); both must take the same input.

    Faults stop the job with an :class:`InputError` and write nothing: in-memory images of another
    shape than a classwise checkpoint takes, a model with another number of outputs than the
    dataset has classes (checked on the first batch), NaN or infinite logits (naming the first
    sample ids). Unreadable images follow the dataset's ``on_bad_image``: an error naming the
    file, or ``skip``, which lists them under ``skipped_images`` in the sidecar.

    ``shard=(k, S)`` runs only shard ``k`` of ``S`` (1-based) of the set, whole batches
    (:func:`classwise.sharding.shard_range`, on the set after its ``per_class`` subset), and
    writes a shard file to ``logits_path`` instead (:func:`classwise.sharding.save_shard`);
    :func:`merge_shards_step` makes the cached file of the ``S`` shards, byte for byte this
    step's unsharded output. A shard with no batch (fewer batches than shards) writes no rows."""
    limit_threads(threads)
    from tqdm import tqdm

    from classwise.inference import predict_logits, resolve_device
    from classwise.shifts.spec import ShiftSpec

    spec = ShiftSpec(name=shift["name"], kind=shift["kind"], params=dict(shift["params"]))
    subset = None
    if spec.kind == "dataset":  # a published shift set of this dataset: its own images
        from classwise.data.shift_sets import open_shift

        opened = open_shift(spec, dict(dataset_cfg), dataset=dataset_name)
        evaluation, subset = opened.images, opened.classes
    else:
        evaluation = open_split(dict(dataset_cfg), "test", name=dataset_name)
    attacked_subset = None
    if spec.per_class is not None:  # an expensive shift on a class-stratified subset (classwise.shifts.spec)
        from classwise.shifts.seeding import sample_seed
        from classwise.shifts.spec import stratified_subset

        of = len(evaluation)
        evaluation = evaluation.subset(stratified_subset(evaluation.labels, spec.per_class, sample_seed(seed, "per_class")))
        attacked_subset = {"per_class": spec.per_class, "samples": len(evaluation), "of": of}
    model, model_meta, data_config = load_inference_model(model_name, model_cfg or {"source": "train"}, checkpoint_path, device)
    resolved_device = resolve_device(device)
    weights = None if checkpoint_path is None else str(checkpoint_path)
    source_model = None
    if spec.kind == "transfer":
        source_name = spec.params["source"]
        source_model, _, source_data_config = load_inference_model(
            source_name, source_cfg or {"source": "train"}, source_weights, device
        )
        if source_data_config != data_config:  # frozen dataclasses (or None): compared field by field
            raise InputError(
                f"shift {spec.name!r}: model {source_name!r} preprocesses images otherwise than {model_name!r} "
                "(data config), so its adversarial images cannot be fed to it; transfer between models of the same input",
                field="shifts.transfer",
            )
    _check_input_shape(evaluation, model_name, model_meta, data_config, weights, dataset_name)
    position = None
    if shard is not None:  # whole batches of the set (after its per_class subset): classwise.sharding
        from classwise.sharding import Shard, shard_range

        position = (Shard.of(shard), len(evaluation), *shard_range(len(evaluation), batch_size, shard))
        evaluation = evaluation.subset(np.arange(position[2], position[3]))
    batches, total = _batches(evaluation, data_config, batch_size, workers=max(1, int(threads or 1)))
    logits, labels, sample_ids, input_shape = [], [], [], None
    bar = tqdm(total=total, desc=f"{model_name} {spec.name}", unit="img", file=progress, disable=progress is None)
    for batch in batches:
        logits.append(
            predict_logits(
                model,
                batch,
                spec,
                base_seed=seed,
                batch_size=batch_size,
                device=device,
                progress=None,
                attack_log=progress,
                source_model=source_model,
            )
        )
        _check_outputs(logits[-1], batch, model_name, weights, dataset_name, len(evaluation.class_names))
        labels.append(batch.labels)
        sample_ids.append(batch.sample_ids)
        input_shape = list(batch.images.shape[1:])
        bar.update(len(batch))
    bar.close()
    if not logits:
        if position is None:
            raise InputError("the evaluation set has no readable images", field=f"datasets.{dataset_name}")
        # a shard without a readable image: no rows, in the dtypes the set's batches have
        logits.append(np.zeros((0, len(evaluation.class_names)), dtype=np.float32))
        labels.append(np.asarray(evaluation.labels[:0], dtype=np.int64))
        sample_ids.append(np.asarray(evaluation.sample_ids[:0]))
    skipped = [{"sample_id": s.sample_id, "path": str(s.path), "reason": s.reason} for s in getattr(evaluation, "skipped", [])]
    scores, label_array, class_names = np.concatenate(logits), np.concatenate(labels), np.asarray(evaluation.class_names)
    if subset is not None:  # restricted to the set's classes before any argmax (classwise.class_subsets)
        from classwise.class_subsets import restrict_to_classes

        scores, label_array = restrict_to_classes(scores, label_array, subset)
        class_names = class_names[subset]
    metadata = {
        "dataset": {"name": dataset_name, **_json_safe(dict(dataset_cfg))},
        "model": model_meta,
        "preprocessing": {
            "input": "float32 in [0, 1], channels first",
            "normalisation": "inside the model",
            "input_shape": input_shape,
            "data_config": None if data_config is None else data_config.to_dict(),
        },
        "shift": spec.to_json(),
        **({} if subset is None else {"class_subset": {"class_indices": subset.tolist(), "of": len(evaluation.class_names)}}),
        **({} if attacked_subset is None else {"attacked_subset": attacked_subset}),
        "seed": seed,
        "device": resolved_device.type,
        "skipped_images": skipped,
        "code_version": {"classwise": classwise.__version__, "python": platform.python_version()},
    }
    arrays = {"logits": scores, "labels": label_array, "sample_ids": np.concatenate(sample_ids), "class_names": class_names}
    if position is None:
        save_logits(logits_path, **arrays, metadata=metadata, class_indices=subset)
        return
    from classwise.sharding import save_shard

    which, samples, start, stop = position
    save_shard(
        logits_path,
        shard=which,
        start=start,
        stop=stop,
        samples=samples,
        batch_size=batch_size,
        **arrays,
        metadata=metadata,
        class_indices=subset,
    )
    if progress is not None:
        print(f"shard {which.name}: samples [{start}, {stop}) of {samples}, {len(label_array)} rows", file=progress)


def merge_shards_step(*, shard_paths: list[str | Path], logits_path: str | Path, progress: TextIO | None = None) -> None:
    """Merge the shard files of one (dataset, model, shift) inference into its cached logits file
    and sidecar, byte for byte those of the unsharded :func:`infer_step`
    (:func:`classwise.sharding.merge_shards`, which refuses missing, repeated or mismatched
    shards)."""
    from classwise.sharding import merge_shards

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
    (dataset, shift): the user's file, matched to the dataset's test samples by id and checked
    against their labels and class count (:func:`classwise.predictions_io.import_outputs`),
    written where inference would write it, with a sidecar JSON naming the file and its sha256."""
    from classwise.predictions_io import import_outputs

    evaluation = open_split(dict(dataset_cfg), "test", name=dataset_name)
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
        dataset=dataset_name,
        cache_path=logits_path,
        metadata=metadata,
        abstain=model_cfg.get("abstain"),
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
