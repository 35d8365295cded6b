"""The path real datasets and models take: paper configs build their DAGs on fixtures, label
views travel as id-keyed files, and inference streams an ImageFolder through a torchvision model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from cifar_fixtures import write_cifar100
from paths import REPO, SHARED_DATA
from snakemake_runner import job_counts, run_snakemake

from classwise.bench.fixtures import IMAGENET_WNIDS, dry_run_fixtures, imagenet_val_fixture
from classwise.errors import InputError
from classwise.labels.views import aligned_labels, build_view, write_view
from classwise.logits_io import load_scores, save_logits
from classwise.steps.metrics import load_view
from classwise.steps.models import InferenceSettings, InferTarget, infer_step

SHARED_IMAGENET_LABELS = SHARED_DATA / "imagenet-labels"


#: The shifts of the configs with published shift sets: CIFAR-10: clean, PGD, AutoAttack and
#: CIFAR-10-C's 19 corruptions x 5 severities; ImageNet: clean, V2's 3 variants, R, A, Sketch and
#: ImageNet-C's 19 x 5.
PUBLISHED_SHIFTS = {"classwise_robustness_cifar10": 3 + 19 * 5, "shift_happens_imagenet": 1 + 3 + 3 + 19 * 5}


@pytest.mark.parametrize(
    ("config", "expected_jobs"),
    [
        ("worst_classes_imagenet", ["download_model", "download_label_file", "build_label_view", "infer"]),
        ("decisiveness_imagenet", ["download_model", "compute_decisiveness_metrics"]),
        ("classwise_robustness_cifar10", ["prepare_dataset", "prepare_shift_set", "download_model", "infer"]),
        ("shift_happens_imagenet", ["prepare_shift_set", "download_model", "infer", "run_transformation_tests"]),
    ],
)
def test_paper_configs_build_their_dag_on_fixtures(tmp_path: Path, config: str, expected_jobs: list[str]) -> None:
    shipped = yaml.safe_load((REPO / "config" / f"{config}.yaml").read_text())
    derived, fixtures = dry_run_fixtures(shipped, tmp_path)
    assert derived == shipped  # relative paths: fixtures at those paths, the config runs as shipped
    for name, dataset in shipped["datasets"].items():
        if dataset["source"] == "imagenet_val":
            assert f"datasets.{name}.root" in fixtures
            assert sorted(p.name for p in (tmp_path / dataset["root"] / "val").iterdir()) == list(IMAGENET_WNIDS)
    result = run_snakemake(tmp_path, REPO / "config" / f"{config}.yaml", "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    for job in expected_jobs:
        assert job in result.stdout, job
    assert not (tmp_path / "results").exists()
    if config in PUBLISHED_SHIFTS:  # one inference job per (model, shift), published shifts included
        jobs = job_counts(result.stdout)
        assert jobs["infer"] == len(shipped["models"]) * PUBLISHED_SHIFTS[config]
        assert jobs["run_transformation_tests"] == len(shipped["models"])  # CIFAR-10-C / ImageNet-C against clean


def test_the_cifar100_extrapolation_config_schedules_prototypes_then_the_paper_s_protocol(tmp_path: Path) -> None:
    """Figure 3 of Slavutsky and Benjamini, 2021 on CIFAR-100: with a tiny CIFAR-100 where the
    config looks for it, a dry run lists the download of the backbone, the prototypes, one
    inference and the extrapolation (both k1 in one job), and nothing the config turns off."""
    shipped = yaml.safe_load((REPO / "config" / "extrapolation_cifar100.yaml").read_text())
    extrapolation = shipped["analyses"]["extrapolation"]
    assert extrapolation["k1"] == [10, 20] and extrapolation["k2"] == 100 and extrapolation["repetitions"] == 50
    assert sorted(extrapolation["methods"]) == ["cleanex", "kde", "naive", "regression"]
    write_cifar100(tmp_path / shipped["datasets"]["cifar100"]["root"])
    result = run_snakemake(tmp_path, REPO / "config" / "extrapolation_cifar100.yaml", "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    counts = job_counts(result.stdout)
    for rule in (
        "prepare_dataset",
        "download_prototype_backbone",
        "compute_prototypes",
        "infer",
        "evaluate_extrapolation",
        "summarise_extrapolation",
    ):
        assert counts.get(rule) == 1, (rule, counts)
    for rule in ("download_model", "train_model", "finetune_model", "run_subset_tests", "run_reference_tests"):
        assert rule not in counts, rule
    out = shipped["output_dir"]
    assert "output: resources/models/resnet50_prototypes/backbone/manifest.json" in result.stdout
    assert f"input: {out}/models/resnet50_prototypes.pt" in result.stdout  # infer reads the prototypes
    assert not (tmp_path / "results").exists()


def test_absolute_input_paths_get_fixtures_below_the_working_directory(tmp_path: Path) -> None:
    config = {
        "datasets": {
            "imagenet": {"source": "imagenet_val", "root": "/nowhere/imagenet", "devkit": "/nowhere/devkit"},
            "folder": {"source": "image_folder", "root": "data/folder", "classes": ["b", "a"]},
            "cifar": {"source": "torchvision", "name": "cifar10", "root": "/nowhere/cifar"},
        },
        "models": {"local": {"source": "checkpoint", "path": "/nowhere/model.pth", "architecture": "resnet18"}},
        "analyses": {"features": {"metadata": {"folder": "meta/folder.csv"}}},
    }
    derived, fixtures = dry_run_fixtures(config, tmp_path / "work")
    assert config["datasets"]["imagenet"]["root"] == "/nowhere/imagenet"  # the input is not modified
    imagenet = Path(derived["datasets"]["imagenet"]["root"])
    assert imagenet.is_absolute() and imagenet.is_relative_to(tmp_path / "work")
    assert len(list(imagenet.glob("val/n*/ILSVRC2012_val_*.JPEG"))) == 2 * len(IMAGENET_WNIDS)
    assert Path(derived["datasets"]["imagenet"]["devkit"]).is_dir()
    assert derived["datasets"]["folder"]["root"] == "data/folder"  # relative: built in place, unchanged
    assert sorted(p.name for p in (tmp_path / "work" / "data" / "folder").iterdir()) == ["a", "b"]
    assert derived["datasets"]["cifar"] == config["datasets"]["cifar"]  # downloaded by a rule: untouched
    assert Path(derived["models"]["local"]["path"]).is_file()
    assert (tmp_path / "work" / "meta" / "folder.csv").is_file()
    assert sorted(fixtures) == sorted([
        "datasets.imagenet.root", "datasets.imagenet.devkit", "datasets.folder.root", "models.local.path",
        "analyses.features.metadata.folder",
    ])  # fmt: skip


def test_a_missing_dataset_directory_stops_before_any_job(tmp_path: Path) -> None:
    result = run_snakemake(tmp_path, REPO / "config" / "worst_classes_imagenet.yaml", "--dry-run")
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "datasets.imagenet.root" in message and "data/imagenet" in message


def _scores_file(tmp_path: Path, ids: list[str], labels: list[int], n_classes: int = 3) -> Path:
    logits = np.eye(n_classes, dtype=np.float32)[labels] * 3
    path = tmp_path / "scores.npz"
    save_logits(
        path, logits=logits, labels=np.array(labels), sample_ids=np.array(ids),
        class_names=np.array([f"c{i}" for i in range(n_classes)]), metadata={},
    )  # fmt: skip
    return path


def test_label_views_are_matched_by_sample_id_not_by_row(tmp_path: Path) -> None:
    scores = _scores_file(tmp_path, ["b", "a", "c"], [1, 0, 2])
    view = tmp_path / "view.csv"
    write_view(view, np.array(["a", "z", "b", "c"]), np.array([2, 0, -1, 2]))  # extra id z, other order
    labelled = load_view(scores, "cleaned", view)
    np.testing.assert_array_equal(labelled.sample_ids, ["a", "c"])  # b removed
    np.testing.assert_array_equal(labelled.labels, [2, 2])
    write_view(view, np.array(["a", "b"]), np.array([0, 1]))
    with pytest.raises(InputError, match=r"1 of 3 samples have no label.*'c'") as error:
        aligned_labels(view, load_scores(scores).sample_ids)
    assert str(view) in str(error.value)


def test_confident_learning_view_flags_the_mislabelled_samples(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    labels = np.repeat(np.arange(3), 40)
    logits = np.full((120, 3), -2.0, dtype=np.float32)
    logits[np.arange(120), labels] = 3.0 + rng.random(120).astype(np.float32)
    flipped = np.array([5, 50, 90])
    noisy = labels.copy()
    noisy[flipped] = (labels[flipped] + 1) % 3  # the model confidently disagrees with these labels
    path = tmp_path / "ref.npz"
    ids = np.array([f"s{i:03d}" for i in range(120)])
    save_logits(path, logits=logits, labels=noisy, sample_ids=ids, class_names=np.array(["a", "b", "c"]), metadata={})
    view_ids, view = build_view({"kind": "confident_learning", "reference_model": "m"}, reference_logits=path)
    np.testing.assert_array_equal(view_ids, ids)
    np.testing.assert_array_equal(np.flatnonzero(view < 0), flipped)


@pytest.mark.skipif(not SHARED_IMAGENET_LABELS.is_dir(), reason="../shared/data/imagenet-labels is not present")
@pytest.mark.parametrize("variant", ["paper", "aligned"])
def test_imagenet_views_key_every_validation_image_by_its_folder_path(variant: str) -> None:
    ids, labels = build_view({"kind": "imagenet_cleaned", "variant": variant}, label_errors_dir=SHARED_IMAGENET_LABELS)
    assert ids.shape == labels.shape == (50_000,)
    assert int(np.sum(labels >= 0)) == 46_044
    assert ids[0].startswith("n01440764/ILSVRC2012_val_") and not ids[0].startswith("val/")
    assert len(set(ids.tolist())) == 50_000


def test_infer_streams_an_image_folder_through_a_torchvision_model(tmp_path: Path) -> None:
    root = imagenet_val_fixture(tmp_path / "imagenet", per_class=2)
    model_cfg = {"source": "torchvision", "name": "resnet18", "weights": None}
    dataset_cfg = {"source": "imagenet_val", "root": str(root), "label_space": "imagenet1k"}
    shift = {"name": "clean", "kind": "clean", "params": {}}
    outputs = []
    for batch_size in (4, 3):  # batching must not change the logits
        out = tmp_path / f"logits_{batch_size}.npz"
        torch.manual_seed(0)  # weights: null builds randomly initialised weights
        settings = InferenceSettings(
            dataset_name="imagenet", dataset=dataset_cfg, shift=shift, seed=0, batch_size=batch_size, device="cpu"
        )
        infer_step(model=InferTarget("resnet18", model_cfg, None, out), settings=settings, threads=1)
        outputs.append(load_scores(out))
    first, second = outputs
    assert first.scores.shape == (6, 1000)
    np.testing.assert_array_equal(first.sample_ids, second.sample_ids)
    assert first.sample_ids[0] == "n01440764/ILSVRC2012_val_00000001.JPEG"
    np.testing.assert_array_equal(first.labels, [0, 0, 1, 1, 2, 2])
    np.testing.assert_allclose(first.scores, second.scores, rtol=1e-4, atol=1e-4)
    metadata = json.loads((tmp_path / "logits_4.json").read_text())
    assert metadata["preprocessing"]["data_config"]["input_size"][-1] == 224
    assert metadata["preprocessing"]["input_shape"] == [3, 224, 224]
