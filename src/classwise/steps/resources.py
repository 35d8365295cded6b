"""Workflow steps that fetch what inference needs (local rules: they need the network) and
build label views."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.errors import InputError


def download_model_step(*, model_name: str, model_cfg: Mapping[str, Any], dest_dir: str | Path) -> None:
    """Fetch a timm / torchvision / RobustBench model's weights (verified) into ``dest_dir``;
    ``dest_dir/manifest.json`` is written last."""
    from classwise.models.zoo import download_weights, parse_model_spec

    download_weights(parse_model_spec(model_cfg, key=model_name), dest_dir)


def prepare_dataset_step(*, dataset_name: str, dataset_cfg: Mapping[str, Any], marker_path: str | Path) -> None:
    """Download and verify a dataset's archives (torchvision sets, CIFAR-10-C); the marker
    (what was prepared, and where) is written last."""
    from classwise.atomic import write_json
    from classwise.data.sources import prepare_dataset

    prepared = prepare_dataset(dataset_cfg, name=dataset_name)
    write_json(marker_path, {"dataset": dataset_name, "prepared": str(prepared), "config": dict(dataset_cfg)})


def prepare_shift_set_step(
    *, dataset_name: str, key: str, archive: str, entry: Mapping[str, Any], marker_path: str | Path
) -> None:
    """Download, verify and unpack one file of a published shift set
    (``datasets.<dataset>.shift_sets.<key>``); the marker (its url and sha256, where it went) is
    written last."""
    from classwise.atomic import write_json
    from classwise.data.shift_sets import prepare_shift_set

    records = prepare_shift_set(entry, dataset=dataset_name, key=key, files=[archive])
    write_json(marker_path, {"dataset": dataset_name, "shift_set": key, "files": records})


def download_label_files_step(*, names: list[str], dest_dir: str | Path) -> None:
    """Fetch the public label-errors files the cleaned views are built from."""
    from classwise.labels.views import download_label_files

    download_label_files(dest_dir, names)


def download_real_step(*, dest: str | Path, url: str, sha256: str | None) -> None:
    """Fetch ImageNet ReaL's real.json (verified against ``sha256``, or its digest recorded on
    first download) and check its content."""
    from classwise.labels.real import download_real

    download_real(dest, url=url, sha256=sha256)


def build_label_view_step(
    *,
    dataset_name: str,
    view_name: str,
    view_cfg: Mapping[str, Any],
    label_errors_dir: str | Path | None,
    reference_logits: str | Path | None,
    view_path: str | Path,
    real_file: str | Path | None = None,
) -> None:
    """Write one label view as ``sample_id,label`` (``-1`` = removed), or a ReaL view (kind
    ``real``, from ``real_file``) as ``sample_id,real``, and log its summary."""
    import numpy as np

    from classwise.labels.views import build_view, write_view

    if view_cfg.get("kind") == "real":
        from classwise.labels.real import read_real_json, write_real_view

        if real_file is None:
            raise InputError("a ReaL view needs its real.json", field=f"datasets.{dataset_name}.label_views.{view_name}.file")
        sets = read_real_json(real_file)
        kept = int(np.count_nonzero(sets.sizes))
        print(f"{dataset_name}/{view_name}: {kept} of {len(sets)} images have a ReaL label (the others are removed)")
        write_real_view(view_path, sets)
        return

    ids, labels = build_view(
        view_cfg,
        label_errors_dir=label_errors_dir,
        reference_logits=reference_logits,
        field=f"datasets.{dataset_name}.label_views.{view_name}",
    )
    print(f"{dataset_name}/{view_name}: {int(np.sum(labels >= 0))} of {labels.size} samples kept")
    write_view(view_path, ids, labels)
