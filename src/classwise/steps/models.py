"""One function per workflow step; the Snakemake scripts only unpack their job and call these.

Every step reads its inputs, computes, and writes each output atomically, so an interrupted
job leaves nothing that Snakemake could mistake for a finished output.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

import classwise
from classwise.atomic import atomic_open, write_json, write_text
from classwise.data.sources import load_split
from classwise.label_views import apply_label_view
from classwise.logits_io import load_scores, save_logits
from classwise.metrics.stats import compute_stats
from classwise.metrics.suite import per_class_table, worst_class_family
from classwise.superclasses import validate_superclasses
from classwise import tables


def train_step(
    *,
    model_name: str,
    model_cfg: Mapping[str, Any],
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    checkpoint_path: str | Path,
    progress: TextIO | None = None,
) -> None:
    """Train a configured demo model on its dataset's train split and save the checkpoint."""
    from classwise.models.architectures import build_model
    from classwise.models.checkpoint import save_checkpoint
    from classwise.models.training import train_model

    train = load_split(dict(dataset_cfg), "train", name=dataset_name)
    input_shape = tuple(int(d) for d in train.images.shape[1:])
    options = dict(model_cfg.get("options", {}))
    model = build_model(model_cfg["architecture"], n_classes=len(train.class_names), input_shape=input_shape, **options)
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
) -> None:
    """Run one (dataset, model, shift) inference and cache its logits with a sidecar JSON."""
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


def _json_safe(value: Any) -> Any:
    """Keep only what JSON can hold (checkpoint metadata may carry tuples or numpy scalars)."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def worst_class_step(
    *,
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    superclasses: Mapping[str, Sequence[int]],
    k: int,
    ns: Sequence[int],
    metrics_path: str | Path,
    per_class_path: str | Path,
) -> None:
    """Worst-class metrics (JSON) and per-class recall/precision/CFPS (CSV) of one logits file."""
    scores_file = load_scores(logits_path)
    view_labels = None if view_labels_path is None else np.loadtxt(view_labels_path, dtype=np.int64, ndmin=1)
    view = apply_label_view(scores_file, label_view, view_labels, source=view_labels_path)
    groups = validate_superclasses(superclasses, scores_file.n_classes, path="config") if superclasses else None
    stats = compute_stats(view.scores, view.labels, n_classes=scores_file.n_classes)
    metrics = worst_class_family(stats, view.scores, superclasses=groups, k=k, ns=ns)
    document = {
        "n_samples": stats.n_samples,
        "n_classes": stats.n_classes,
        "label_view": label_view,
        "class_names": scores_file.class_names.tolist(),
        "parameters": {"k": k, "n": list(ns), "superclasses": groups or {}},
        "metrics": {name: result.to_json() for name, result in metrics.items()},
    }
    per_class = per_class_table(stats, k=k, class_names=scores_file.class_names)
    write_json(metrics_path, document)
    with atomic_open(per_class_path, "w", encoding="utf-8", newline="") as handle:
        per_class.to_csv(handle, index=False, float_format="%.6f", lineterminator="\n")


def worst_class_table_step(
    *,
    metrics_paths: Mapping[str, str | Path],
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """Table 1 of worst-class-metrics.txt for one (dataset, label view, shift)."""
    documents = {model: json.loads(Path(path).read_text(encoding="utf-8")) for model, path in metrics_paths.items()}
    first = next(iter(documents.values()))
    parameters = first["parameters"]
    ns = [n for n in parameters["n"] if n < int(first["n_classes"])]
    rows = tables.paper_rows(ns, int(parameters["k"]), superclasses=bool(parameters["superclasses"]))
    frame = tables.metric_table(documents, rows, source=str(next(iter(metrics_paths.values()))))
    write_text(markdown_path, tables.to_markdown(frame, caption=caption))
    write_text(csv_path, tables.to_csv(frame))
    write_text(latex_path, tables.to_latex(frame, caption=caption))
