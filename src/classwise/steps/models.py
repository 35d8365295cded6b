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
from classwise.data.sources import load_split
from classwise.logits_io import save_logits


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
    _limit_threads(threads)
    from classwise.models.architectures import build_model
    from classwise.models.checkpoint import save_checkpoint
    from classwise.models.training import train_model

    train = load_split(dict(dataset_cfg), "train", name=dataset_name)
    input_shape = tuple(int(d) for d in train.images.shape[1:])
    options = dict(model_cfg.get("options", {}))
    model = build_model(
        model_cfg["architecture"],
        n_classes=len(train.class_names),
        input_shape=input_shape,
        seed=int(model_cfg["seed"]),
        **options,
    )
    summary = train_model(
        model,
        train,
        epochs=int(model_cfg["epochs"]),
        lr=float(model_cfg["lr"]),
        batch_size=int(model_cfg["batch_size"]),
        weight_decay=float(model_cfg.get("weight_decay", 0.0)),
        seed=int(model_cfg["seed"]),
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


def infer_step(
    *,
    model_name: str,
    checkpoint_path: str | Path,
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    shift: Mapping[str, Any],
    seed: int,
    batch_size: int,
    device: str,
    logits_path: str | Path,
    progress: TextIO | None = None,
    threads: int | None = None,
) -> None:
    """Run one (dataset, model, shift) inference and cache its logits with a sidecar JSON.

    ``threads`` caps torch's intra-op threads (the job's Snakemake threads)."""
    _limit_threads(threads)
    from classwise.inference import predict_logits, resolve_device
    from classwise.models.checkpoint import load_checkpoint
    from classwise.shifts.spec import ShiftSpec

    evaluation = load_split(dict(dataset_cfg), "test", name=dataset_name)
    model, checkpoint_meta = load_checkpoint(checkpoint_path)
    spec = ShiftSpec(name=shift["name"], kind=shift["kind"], params=dict(shift["params"]))
    resolved_device = resolve_device(device)
    logits = predict_logits(
        model, evaluation, spec, base_seed=seed, batch_size=batch_size, device=device, progress=progress
    )
    metadata = {
        "dataset": {"name": dataset_name, **dict(dataset_cfg)},
        "model": {"name": model_name, "checkpoint": str(checkpoint_path), **_json_safe(checkpoint_meta)},
        "preprocessing": {
            "input": "float32 in [0, 1], channels first",
            "normalisation": "inside the model",
            "input_shape": list(evaluation.images.shape[1:]),
        },
        "shift": spec.to_json(),
        "seed": seed,
        "device": resolved_device.type,
        "code_version": {"classwise": classwise.__version__, "python": platform.python_version()},
    }
    save_logits(
        logits_path,
        logits=logits,
        labels=evaluation.labels,
        sample_ids=evaluation.sample_ids,
        class_names=np.asarray(evaluation.class_names),
        metadata=metadata,
    )


def _limit_threads(threads: int | None) -> None:
    """Use exactly the job's threads: torch's default (all cores) oversubscribes the machine
    when Snakemake runs jobs side by side."""
    if threads is not None:
        import torch

        torch.set_num_threads(max(1, int(threads)))


def _json_safe(value: Any) -> Any:
    """Keep only what JSON can hold (checkpoint metadata may carry tuples or numpy scalars)."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))
