"""A sampled matrix of small valid configs for the end-to-end tests (tests/workflow/test_config_matrix.py).

Each *row* is one dataset of a config with its own choice of every per-dataset option: the data
(image folders of 2 to 12 classes evaluated with checkpoint models, or the digits with models the
pipeline trains), which shift kinds are evaluated on it, one or two models, superclasses, a
confident-learning label view. The rows cover every pair of option values at least once
(pairwise coverage, chosen greedily and deterministically), and are packed as the datasets of a
few Snakemake runs, each run adding global options (``shifts.clean: false``, analyses off).

The run with analyses also holds an ImageNet validation folder (three classes of the 1,000, scored
by a 1,000-class checkpoint) with an ``imagenet_cleaned`` label view built from label-errors files
the tests write in the official format and an ImageNet ReaL view (``real``) from a ``real.json``
they write, so each view kind a tiny run can build is run end to end
(``cifar10_cleaned`` needs torchvision's CIFAR-10 files, whose md5s only the real archive matches).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

#: Option -> its values. ``data`` is a class count (an image folder, checkpoint models) or
#: "digits" (models trained by the pipeline).
FACTORS: dict[str, tuple[Any, ...]] = {
    "data": (2, 5, "digits"),
    "clean": (True, False),
    "corruption": (True, False),
    "pgd": (True, False),
    "targeted": (True, False),
    "two_models": (True, False),
    "superclasses": (True, False),
    "label_view": (True, False),
}
CORRUPTION = "contrast_decrease_s2"
PGD = "pgd_linf_eps0.1"
TARGETED = ["pgd_targeted_1"]
AUTOATTACK = "autoattack_linf_eps0.3"
"""Evaluated beside PGD on the digits rows (10 classes; AutoAttack's APGD-T needs 4 or more), one
test image per class, at an eps where APGD-CE fools them all: the wiring, not the attack's cost.
Its inference is split into two shards (infer_shard, merge_logit_shards) of whole batches of
:data:`AUTOATTACK_BATCH_SIZE`: 8 images and 2."""
AUTOATTACK_SHARDS = 2
AUTOATTACK_ENTRY = {"norm": "linf", "eps": 0.3, "per_class": 1, "shards": AUTOATTACK_SHARDS}
AUTOATTACK_BATCH_SIZE = 8


def valid(row: Mapping[str, Any]) -> bool:
    """A row a user could write: some untargeted shift; a confident-learning view needs clean."""
    if not (row["clean"] or row["corruption"] or row["pgd"]):
        return False
    return not (row["label_view"] and not row["clean"])


def pairs_of(row: Mapping[str, Any]) -> set[tuple[tuple[str, Any], tuple[str, Any]]]:
    return set(itertools.combinations(sorted(row.items(), key=lambda item: item[0]), 2))


def all_valid_rows() -> list[dict[str, Any]]:
    names = list(FACTORS)
    rows = [dict(zip(names, values)) for values in itertools.product(*FACTORS.values())]
    return [row for row in rows if valid(row)]


def jobs_of(row: Mapping[str, Any]) -> int:
    """About how many Snakemake jobs a row adds: per evaluated shift an inference and two metric
    jobs per model and three table jobs, the label view's tables, the per-dataset analyses."""
    models = 2 if row["two_models"] else 1
    shifts = int(row["clean"]) + int(row["corruption"]) + int(row["pgd"])  # AutoAttack and the transfer ride on PGD's rows
    return shifts * (3 * models + 3) + 2 * int(row["targeted"]) + int(row["label_view"]) * (2 * models + 4) + 4


def pairwise_rows() -> list[dict[str, Any]]:
    """Greedy covering: repeatedly take the valid row covering most still-uncovered pairs per
    job it adds (ties to the first in product order), until every pair is covered."""
    candidates = all_valid_rows()
    uncovered = set().union(*(pairs_of(row) for row in candidates))
    chosen: list[dict[str, Any]] = []
    while uncovered:
        best = max(candidates, key=lambda row: len(pairs_of(row) & uncovered) / jobs_of(row))
        chosen.append(best)
        uncovered -= pairs_of(best)
    return chosen


def write_image_folder(root: Path, n_classes: int, *, per_class: int, seed: int) -> None:
    """``root/<class>/<image>.png`` with images of a few sizes whose brightness tells the class
    (so the models are right on some classes and wrong on others), plus the stray files a real
    folder holds (``Thumbs.db``, ``README.txt``)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for label in range(n_classes):
        folder = root / f"class_{label:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(per_class):
            height, width = (12 + 4 * (index % 3), 16 - 2 * (index % 2))
            level = 30 + 200 * label / max(1, n_classes - 1)
            pixels = np.clip(rng.normal(level, 40, size=(height, width, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"img_{index}.png")
    (root / "Thumbs.db").write_bytes(b"\x00\x01not an image")
    (root / "README.txt").write_text("a stray file beside the class folders\n")
    (root / "class_00" / "Thumbs.db").write_bytes(b"\x00not an image")


def write_checkpoint(path: Path, n_classes: int, *, seed: int, favoured: int = 0) -> None:
    """A state dict of timm's tiny ``test_resnet`` (about 0.4 M parameters) for n_classes; with
    ``favoured`` the first that many classes get a large bias, so a model of a big label space
    predicts among the few classes a tiny fixture holds (and is right on some images)."""
    import timm
    import torch

    torch.manual_seed(seed)
    model = timm.create_model("test_resnet", num_classes=n_classes, pretrained=False)
    if favoured:
        with torch.no_grad():
            head = model.get_classifier()
            head.bias[:favoured] += 100.0
            head.weight[:favoured] *= 100.0  # their own scores differ from image to image
    torch.save(model.state_dict(), path)


def checkpoint_entry(path: Path, n_classes: int) -> dict[str, Any]:
    return {
        "source": "checkpoint",
        "path": str(path),
        "architecture": "test_resnet",
        "library": "timm",
        "num_classes": n_classes,
        "data_config": {"input_size": [3, 16, 16]},
    }


IMAGENET_VIEW_VOTES = {
    # file index (1-based, class order of imagenet_val_fixture) -> (guessed label, mturk votes)
    2: (1, {"given": 0, "guessed": 5, "neither": 0, "both": 0}),  # relabelled to class 1
    3: (0, {"given": 1, "guessed": 1, "neither": 3, "both": 0}),  # removed: no agreement
    5: (0, {"given": 5, "guessed": 0, "neither": 0, "both": 0}),  # kept
}


def write_imagenet_label_errors(directory: Path, image_root: Path) -> dict[str, int]:
    """label-errors' ImageNet files (index-to-filepath, original labels, MTurk votes) for the
    images below ``image_root/val``; returns the view's label of each image (``-1``: removed),
    worked out by hand from :data:`IMAGENET_VIEW_VOTES`."""
    import json

    paths = sorted(str(p.relative_to(image_root)) for p in (image_root / "val").glob("*/*.JPEG"))
    wnids = sorted({Path(p).parent.name for p in paths})
    original = [wnids.index(Path(p).parent.name) for p in paths]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "imagenet_val_set_index_to_filepath.json").write_text(json.dumps(paths))
    np.save(directory / "imagenet_val_set_original_labels.npy", np.array(original, dtype=np.int64))
    entries, expected = [], {}
    for row, path in enumerate(paths):
        number = int(Path(path).stem.rsplit("_", 1)[1])
        label = original[row]
        if number in IMAGENET_VIEW_VOTES:
            guessed, votes = IMAGENET_VIEW_VOTES[number]
            url = f"https://labelerrors.com//static/imagenet/{path}"
            entries.append({"id": row, "url": url, "given_original_label": label, "our_guessed_label": guessed, "mturk": votes})
            label = label if votes["given"] == sum(votes.values()) else guessed if votes["guessed"] == sum(votes.values()) else -1
        expected[path.removeprefix("val/")] = label
    (directory / "imagenet_mturk.json").write_text(json.dumps(entries))
    return expected


#: ImageNet ReaL sets of the fixture's images (file number -> set; the other 49,994 are empty).
REAL_VIEW_SETS = {1: [0], 2: [], 3: [0, 1], 4: [1], 5: [2], 6: [0, 2]}


def write_real_labels(path: Path) -> dict[str, list[int]]:
    """A real.json in the published format (50,000 lists, file-number order) with
    :data:`REAL_VIEW_SETS`; returns each fixture image's set by file name."""
    import json

    entries: list[list[int]] = [[] for _ in range(50_000)]
    for number, labels in REAL_VIEW_SETS.items():
        entries[number - 1] = labels
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries))
    return {f"ILSVRC2012_val_{number:08d}.JPEG": labels for number, labels in REAL_VIEW_SETS.items()}


def imagenet_dataset(workdir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ImageNet dataset entry (with its label view) and its model entry."""
    from PIL import Image

    from classwise.data.stand_ins import IMAGENET_WNIDS

    root = workdir / "data" / "imagenet"
    rng = np.random.default_rng(3)
    for c, wnid in enumerate(IMAGENET_WNIDS):  # val/<wnid>/ILSVRC2012_val_<k>.JPEG, k = 1.. in class order
        (root / "val" / wnid).mkdir(parents=True, exist_ok=True)
        for i in range(2):
            level = 40 + 80 * c + 30 * i  # brightness tells the class, so predictions differ
            pixels = np.clip(rng.normal(level, 20, size=(20, 24, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / "val" / wnid / f"ILSVRC2012_val_{2 * c + i + 1:08d}.JPEG")
    write_imagenet_label_errors(workdir / "label-errors", root)
    write_real_labels(workdir / "real" / "real.json")
    checkpoint = workdir / "in1k.pth"
    write_checkpoint(checkpoint, 1000, seed=0, favoured=3)
    dataset = {
        "source": "imagenet_val",
        "root": str(root),
        "label_space": "imagenet1k",
        "models": ["in1k"],
        "shifts": ["clean"],
        "label_views": {
            "cleaned": {"kind": "imagenet_cleaned", "variant": "aligned", "label_errors_dir": str(workdir / "label-errors")},
            "real": {"kind": "real", "file": str(workdir / "real" / "real.json")},
        },
    }
    return dataset, checkpoint_entry(checkpoint, 1000)


def trained_entry(architecture: str, train_on: str) -> dict[str, Any]:
    return {"source": "train", "train_on": train_on, "architecture": architecture, "epochs": 1, "seed": 0}


def dataset_name(row: Mapping[str, Any], index: int) -> str:
    return f"r{index}_{'digits' if row['data'] == 'digits' else str(row['data']) + 'c'}"


def row_shifts(row: Mapping[str, Any]) -> list[str]:
    shifts = ["clean"] if row["clean"] else []
    shifts += [CORRUPTION] if row["corruption"] else []
    shifts += [PGD] if row["pgd"] else []
    shifts += TARGETED if row["targeted"] else []
    shifts += [AUTOATTACK] if has_autoattack(row) else []
    return shifts


def has_autoattack(row: Mapping[str, Any]) -> bool:
    """The digits rows with PGD also evaluate AutoAttack (no new row, a few jobs more)."""
    return bool(row["pgd"]) and row["data"] == "digits"


def transfer_shift(source: str) -> str:
    """The transfer of :data:`PGD` crafted on model ``source``."""
    return f"transfer_{source}_{PGD}"


def has_transfer(row: Mapping[str, Any]) -> bool:
    """The rows with PGD and two models also evaluate PGD transferred from their first model to
    both (no new row, a few jobs more; on the source itself it is the white-box attack)."""
    return bool(row["pgd"]) and bool(row["two_models"])


def build_config(
    rows: list[tuple[int, dict[str, Any]]],
    workdir: Path,
    *,
    clean: bool = True,
    analyses: bool = True,
    imagenet: bool = False,
    bootstrap: bool = True,
    models_per_decode: int = 1,
) -> dict[str, Any]:
    """One config whose datasets are ``rows`` (index, row); data and checkpoints go to workdir.
    ``bootstrap``: a small bootstrap (intervals, model comparisons) or none; ``models_per_decode``:
    inference.models_per_decode (2: a dataset's two models share each decode)."""
    datasets: dict[str, Any] = {}
    models: dict[str, Any] = {}
    targeted_models: list[str] = []
    transfers: list[dict[str, str]] = []
    for index, row in rows:
        name = dataset_name(row, index)
        if row["data"] == "digits":
            chosen = ["lin", "mlp"] if row["two_models"] else ["lin"]
            for model in chosen:
                # Every digits dataset of a run evaluates the models trained on its first one.
                models.setdefault(model, trained_entry({"lin": "linear", "mlp": "mlp"}[model], name))
            dataset: dict[str, Any] = {"source": "sklearn_digits"}
            n_classes = 10
        else:
            n_classes = int(row["data"])
            root = workdir / "data" / name
            write_image_folder(root, n_classes, per_class=4, seed=index)
            chosen = []
            for suffix in ("a", "b")[: 2 if row["two_models"] else 1]:
                model = f"net{n_classes}{suffix}"
                checkpoint = workdir / f"{model}.pth"
                checkpoint.parent.mkdir(parents=True, exist_ok=True)
                if not checkpoint.exists():
                    write_checkpoint(checkpoint, n_classes, seed=len(models))
                models[model] = checkpoint_entry(checkpoint, n_classes)
                chosen.append(model)
            dataset = {"source": "image_folder", "root": str(root)}
        dataset["models"] = chosen
        dataset["shifts"] = row_shifts(row)
        if has_transfer(row):
            transfers.append({"source": chosen[0], "attack": PGD})
            dataset["shifts"].append(transfer_shift(chosen[0]))
        if row["superclasses"]:
            dataset["superclasses"] = {"low": [0], "high": list(range(1, n_classes))}
        if row["label_view"]:
            dataset["label_views"] = {"cl": {"kind": "confident_learning", "reference_model": chosen[0]}}
        if row["targeted"]:
            targeted_models.append(chosen[0])
        datasets[name] = dataset
    if imagenet:
        datasets["imagenet"], models["in1k"] = imagenet_dataset(workdir)
    config: dict[str, Any] = {
        "datasets": datasets,
        "models": models,
        "shifts": {
            "clean": clean,
            "corruptions": ["contrast_decrease"],
            "severities": [2],
            "pgd": [{"norm": "linf", "eps": 0.1, "steps": 2, "step_size": 0.05}],
            "pgd_targeted": {"norm": "linf", "eps": 0.2, "steps": 2, "step_size": 0.1, "targets": [1]},
        },
        "metrics": {"worst_class": {"k": 3, "n": [2]}, "bootstrap": {"replicates": 20 if bootstrap else 0}},
        "robustness": {"targeted_models": sorted(set(targeted_models)), "corruption_grid": {"severities": [2]}},
        "analyses": {
            "label_views": ["original"],
            "subset_tests": {"n_resamples": 19},
            "extrapolation": {"repetitions": 1, "methods": ["naive"]},
        },
    }
    if any(has_autoattack(row) for _, row in rows):
        config["shifts"]["autoattack"] = [AUTOATTACK_ENTRY]
        config["inference"] = {"batch_size": AUTOATTACK_BATCH_SIZE}
    if models_per_decode > 1:
        config.setdefault("inference", {})["models_per_decode"] = models_per_decode
    if transfers:
        config["shifts"]["transfer"] = transfers
    if not analyses:
        config["analyses"] = {section: {"enabled": False} for section in ("subset_tests", "reference_tests", "extrapolation")}
    return config


def runs(workdir: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, config) of each run; the rows are split between a run with every analysis, clean
    images available and the bootstrap on, and one with ``shifts.clean: false``, the analyses and
    the bootstrap off. In both, a dataset's models share their decodes
    (``inference.models_per_decode: 2``); the per-model path is the tiny workflow run's."""
    rows = list(enumerate(pairwise_rows()))
    with_clean = [(i, row) for i, row in rows if row["clean"] or i % 2 == 0]
    without_clean = [(i, row) for i, row in rows if (i, row) not in with_clean]
    yield "analyses_on", build_config(with_clean, workdir / "analyses_on", imagenet=True, models_per_decode=2)
    yield (
        "clean_off",
        build_config(without_clean, workdir / "clean_off", clean=False, analyses=False, bootstrap=False, models_per_decode=2),
    )
