"""Label views as files the workflow passes between rules: ``sample_id,label`` CSVs.

A view gives every sample of a dataset a label, ``-1`` meaning "removed from this view". It is
keyed by sample id (not by row), so a view built for all 50,000 ImageNet validation images
applies to logits of any subset of them (a fixture, or a run that skipped unreadable images).

Kinds (``datasets.<name>.label_views.<view>.kind``):

* ``imagenet_cleaned`` (``variant: paper | aligned``): see :mod:`classwise.labels.imagenet_cleaned`;
  ids are label-errors' file paths without the leading ``val/`` (``<wnid>/<file>``).
* ``cifar10_cleaned``: the same vote rule on label-errors' CIFAR-10 files; ids
  ``cifar10-test-%05d``.
* ``confident_learning``: confident learning on a reference model's clean softmax, flagged
  samples removed (:func:`classwise.labels.confident_learning.cleaned_cl_labels`).
* ``real``: ImageNet ReaL, several correct labels per image, written as ``sample_id,real``
  (:mod:`classwise.labels.real`); only the worst-class metrics read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.atomic import atomic_open
from classwise.errors import InputError
from classwise.sample_ids import sample_id_positions

VIEW_KINDS = ("imagenet_cleaned", "cifar10_cleaned", "confident_learning", "real")

_LABEL_ERRORS = "https://raw.githubusercontent.com/cleanlab/label-errors/{commit}/{path}"
_WORST_CLASSES = "https://raw.githubusercontent.com/j-cb/worst_classes/{commit}/{path}"

#: The public files the cleaned views are built from: name -> (url pinned to a commit, sha256).
#: The digests are those of the published files at the pinned commits.
LABEL_FILES: dict[str, tuple[str, str]] = {
    "imagenet_mturk.json": (
        _LABEL_ERRORS.format(commit="5457895eee26e49187de5c4d6617b9de6f172221", path="mturk/imagenet_mturk.json"),
        "79807852426782eb04ae9fcc38454a53eb744bba8ac3213a4d290cfa973995f2",
    ),
    "imagenet_val_set_index_to_filepath.json": (
        _LABEL_ERRORS.format(
            commit="a60d3d27c3040b8121ef5791fb2aef56c87700bf", path="resources/imagenet_val_set_index_to_filepath.json"
        ),
        "3289890d9df0484bacb4b519d460eb8dc2fbd009661f82ee8bbcce96e057f126",
    ),
    "imagenet_val_set_original_labels.npy": (
        _LABEL_ERRORS.format(
            commit="e3ea63914629b0481d0d58c301110cb6c043cc69",
            path="original_test_labels/imagenet_val_set_original_labels.npy",
        ),
        "02324a6ea2ebf9613c6bb5879aa945ae649fe3c422eb36164419c8ba3582df4d",
    ),
    "worst_classes_new_labels.csv": (
        _WORST_CLASSES.format(commit="48a7c49c4d7e487e7b81ddfda2f362d360d9ce4c", path="new_labels.csv"),
        "27dec78ed9e8cabdbef5621dd100d8bfec6e6018095cd0bdaf17b19cfb3808d2",
    ),
    "cifar10_mturk.json": (
        _LABEL_ERRORS.format(commit="5457895eee26e49187de5c4d6617b9de6f172221", path="mturk/cifar10_mturk.json"),
        "81b2c16c9eee060d6cc2390f6bbce1e0e7be0a050574be5177c9428f3596b5b5",
    ),
    "cifar10_test_set_original_labels.npy": (
        _LABEL_ERRORS.format(
            commit="e3ea63914629b0481d0d58c301110cb6c043cc69",
            path="original_test_labels/cifar10_test_set_original_labels.npy",
        ),
        "8fba587d5b11011df52b2a20eb4a272eeaf20c2d162554059f714d4b78d23aed",
    ),
}

_FILES_OF_KIND: dict[str, tuple[str, ...]] = {
    # imagenet_cleaned: the paper variant reads the published labels, the aligned one the votes
    "imagenet_cleaned/paper": ("imagenet_val_set_index_to_filepath.json", "worst_classes_new_labels.csv"),
    "imagenet_cleaned/aligned": (
        "imagenet_mturk.json",
        "imagenet_val_set_index_to_filepath.json",
        "imagenet_val_set_original_labels.npy",
    ),
    "cifar10_cleaned": ("cifar10_mturk.json", "cifar10_test_set_original_labels.npy"),
    "confident_learning": (),
    "real": (),  # real.json, read by its own rule (classwise.labels.real)
}


def required_files(view: Mapping[str, Any], *, field: str = "label_view") -> tuple[str, ...]:
    """The label-errors files a view is built from: those its kind (and ImageNet variant) reads,
    without the published label file when the view names its own ``paper_file``; none for
    confident learning and ReaL."""
    kind = view.get("kind")
    if kind not in VIEW_KINDS:
        raise InputError(f"unknown kind {kind!r}; expected one of {list(VIEW_KINDS)}", field=f"{field}.kind")
    if kind != "imagenet_cleaned":
        return _FILES_OF_KIND[kind]
    variant = view.get("variant")
    if variant not in ("paper", "aligned"):
        raise InputError(f"expected 'paper' or 'aligned', got {variant!r}", field=f"{field}.variant")
    files = _FILES_OF_KIND[f"{kind}/{variant}"]
    if view.get("paper_file"):
        files = tuple(name for name in files if name != "worst_classes_new_labels.csv")
    return files


def download_label_files(dest_dir: str | Path, names: tuple[str, ...] | list[str]) -> list[Path]:
    """Fetch the named :data:`LABEL_FILES` into ``dest_dir`` (verified, atomic, skipped if present)."""
    from classwise.data.downloads import download

    paths = []
    for name in names:
        if name not in LABEL_FILES:
            raise InputError(f"unknown label file {name!r}; expected one of {sorted(LABEL_FILES)}", field="files")
        url, sha256 = LABEL_FILES[name]
        paths.append(download(url, Path(dest_dir) / name, sha256=sha256))
    return paths


def build_view(
    view: Mapping[str, Any],
    *,
    label_errors_dir: str | Path | None = None,
    reference_logits: str | Path | None = None,
    field: str = "label_view",
) -> tuple[np.ndarray, np.ndarray]:
    """``(sample_ids, labels)`` of a configured view (``-1`` = removed)."""
    kind = view.get("kind")
    required_files(view, field=field)
    if kind == "real":
        raise InputError(
            "a ReaL view holds sets of labels, not one label per sample: build it with "
            "classwise.labels.real (read_real_json, write_real_view)",
            field=f"{field}.kind",
        )
    if kind == "imagenet_cleaned":
        from classwise.labels.imagenet_cleaned import IMAGENET_FILES, build_imagenet_view, read_index_to_filepath

        variant = view.get("variant")
        if variant not in ("paper", "aligned"):
            raise InputError(f"expected 'paper' or 'aligned', got {variant!r}", field=f"{field}.variant")
        directory = Path(_need(label_errors_dir, f"{field}.label_errors_dir"))
        labels = build_imagenet_view(directory, variant, paper_file=view.get("paper_file"))
        index_path = directory / IMAGENET_FILES["index_to_filepath"]
        paths = read_index_to_filepath(index_path)
        if len(paths) != labels.size:
            raise InputError(f"lists {len(paths)} images, the {variant} view has {labels.size} labels", path=index_path)
        ids = np.array([p[len("val/") :] if p.startswith("val/") else p for p in paths])
        return ids, labels
    if kind == "cifar10_cleaned":
        from classwise.labels.imagenet_cleaned import build_cifar10_view

        labels = build_cifar10_view(_need(label_errors_dir, f"{field}.label_errors_dir"))
        ids = np.char.add("cifar10-test-", np.char.zfill(np.arange(labels.size).astype(str), 5))
        return ids, labels
    from scipy.special import softmax

    from classwise.labels.confident_learning import cleaned_cl_labels
    from classwise.logits_io import load_scores

    scores = load_scores(_need(reference_logits, f"{field}.reference_model"))
    probs = scores.scores if scores.kind == "probs" else softmax(scores.scores.astype(np.float64), axis=1)
    labels = cleaned_cl_labels(
        scores.labels,
        probs,
        filter_by=view.get("filter_by", "prune_by_noise_rate"),
        min_examples_per_class=int(view.get("min_examples_per_class", 1)),
    )
    return scores.sample_ids.astype(str), labels


def _need(value: Any, field: str) -> Any:
    if value is None:
        raise InputError("is required for this kind of label view", field=field)
    return value


def write_view(path: str | Path, sample_ids: np.ndarray, labels: np.ndarray) -> None:
    """Write a view as ``sample_id,label`` CSV, atomically."""
    frame = pd.DataFrame({"sample_id": np.asarray(sample_ids).astype(str), "label": np.asarray(labels, np.int64)})
    with atomic_open(path, "w", encoding="utf-8", newline="") as handle:
        frame.to_csv(handle, index=False, lineterminator="\n")


def aligned_labels(path: str | Path, sample_ids: np.ndarray) -> np.ndarray:
    """The view's label of every id in ``sample_ids`` (in that order); an id the view lacks is an
    error naming the file and the first missing ids."""
    try:
        frame = pd.read_csv(path, dtype={"sample_id": str}, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"cannot read the label view ({exc})", path=path) from None
    if list(frame.columns) != ["sample_id", "label"]:
        raise InputError(f"expected the columns sample_id,label, got {list(frame.columns)}", path=path, field="columns")
    if not pd.api.types.is_integer_dtype(frame["label"]):
        raise InputError("labels must be integers (-1 = removed)", path=path, field="label")
    index = sample_id_positions(
        sample_ids,
        frame["sample_id"].to_numpy(),
        path=path,
        available_name="the label view",
        missing="{count} of {total} samples have no label in this view",
    )
    return frame["label"].to_numpy(dtype=np.int64)[index]
