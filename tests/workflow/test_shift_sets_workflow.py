"""Published shift sets end to end: one small Snakemake run over tiny copies of ImageNet-C,
ImageNet-V2 (downloaded through the workflow's local rule), ImageNet-R (already unpacked) and
ImageNet-Sketch as shifts of a three-class ImageNet validation set, with a small checkpoint model.
Class-wise accuracies and flip rates are recomputed here from the files the test itself built."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from config_matrix import checkpoint_entry, write_checkpoint
from PIL import Image
from snakemake_runner import job_counts, run_snakemake

from classwise.data.stand_ins import IMAGENET_WNIDS, imagenet_val_fixture
from classwise.logits_io import load_scores

pytestmark = pytest.mark.workflow

SHIFTS = ["clean", "imagenet_c_fog_s1", "imagenet_c_fog_s3", "imagenet_v2_matched_frequency", "imagenet_r", "imagenet_sketch"]
R_CLASSES = [0, 2]  # the tiny ImageNet-R holds the first and third class
Run = tuple[Path, dict[str, Any], subprocess.CompletedProcess[str]]


def _images(folder: Path, names: list[str], seed: int, size: tuple[int, int] = (40, 52)) -> None:
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        Image.fromarray(rng.integers(0, 256, size=(*size, 3), dtype=np.uint8)).save(folder / name)


def _v2_archive(path: Path) -> str:
    """imagenetv2-matched-frequency.tar.gz in its official layout (folders = class indices)."""
    buffer = io.BytesIO()
    rng = np.random.default_rng(5)
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for index in ("0", "1", "2"):
            for k in range(2):
                image = io.BytesIO()
                Image.fromarray(rng.integers(0, 256, size=(30, 30, 3), dtype=np.uint8)).save(image, format="JPEG")
                info = tarfile.TarInfo(f"imagenetv2-matched-frequency-format-val/{index}/{k:02d}.jpeg")
                info.size = image.getbuffer().nbytes
                tar.addfile(info, io.BytesIO(image.getvalue()))
    path.write_bytes(buffer.getvalue())
    return hashlib.sha256(buffer.getvalue()).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    work = tmp_path_factory.mktemp("shift_sets")
    val = imagenet_val_fixture(work / "data" / "imagenet", per_class=3)
    files = sorted(p.relative_to(val / "val").as_posix() for p in (val / "val").glob("*/*.JPEG"))
    for severity in (1, 3):  # ImageNet-C: the validation file names under <corruption>/<severity>/<wnid>/
        for wnid in IMAGENET_WNIDS:
            names = [f.split("/")[1] for f in files if f.startswith(wnid)]
            _images(work / "data" / "imagenet-c" / "fog" / str(severity) / wnid, names, seed=severity)
    for c in R_CLASSES:  # ImageNet-R: copies of the validation images of two classes
        wnid = IMAGENET_WNIDS[c]
        target = work / "data" / "unpacked" / "imagenet-r" / wnid
        target.mkdir(parents=True)
        for source in sorted((val / "val" / wnid).iterdir()):
            (target / source.name).write_bytes(source.read_bytes())
    for c, wnid in enumerate(IMAGENET_WNIDS):
        _images(work / "data" / "sketch" / "sketch" / wnid, [f"sketch_{i}.JPEG" for i in range(2)], seed=10 + c)
    sha = _v2_archive(work / "served-v2.tar.gz")
    write_checkpoint(work / "net.pth", 3, seed=0)
    config = {
        "datasets": {
            "imagenet": {
                "source": "imagenet_val",
                "root": "data/imagenet",
                "shift_sets": {
                    "imagenet_c": {"root": "data/imagenet-c", "corruptions": ["fog"], "severities": [1, 3]},
                    "imagenet_v2": {
                        "root": "data/downloads",
                        "variants": ["matched-frequency"],
                        "downloads": {
                            "imagenetv2-matched-frequency.tar.gz": {"url": (work / "served-v2.tar.gz").as_uri(), "sha256": sha}
                        },
                    },
                    "imagenet_r": {"root": "data/unpacked"},
                    "imagenet_sketch": {"root": "data/sketch"},
                },
            }
        },
        "models": {"net": checkpoint_entry(work / "net.pth", 3)},
        "shifts": {"clean": True},
        "inference": {"batch_size": 4, "device": "cpu"},
    }
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    metrics = [f"results/metrics/imagenet/original/net/{shift}/per_class.csv" for shift in SHIFTS]
    targets = [*metrics, "results/tables/imagenet/robustness/transformation_tests_net.csv"]
    return work, config, run_snakemake(work, path, *targets)


def _logits(work: Path, shift: str) -> Any:
    return load_scores(work / "results" / "logits" / "imagenet" / "net" / f"{shift}.npz")


def _recall(predicted: np.ndarray, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """A naive loop: the share of each class's samples predicted as that class."""
    return np.array([np.mean(predicted[labels == c] == c) for c in range(n_classes)])


def test_the_run_succeeds_with_one_inference_job_per_shift(run: Run) -> None:
    work, _, result = run
    assert result.returncode == 0, result.stderr[-4000:]
    logged = sorted(p.stem for p in (work / "results" / "logs" / "infer" / "imagenet" / "net").glob("*.log"))
    assert logged == sorted(SHIFTS)
    marker_path = (
        work / "resources" / "shift_sets" / "imagenet" / "imagenet_v2" / "imagenetv2-matched-frequency.tar.gz.prepared.json"
    )
    marker = json.loads(marker_path.read_text())
    assert marker["files"][0]["unpacked"] == "imagenetv2-matched-frequency-format-val"
    assert (work / "data" / "downloads" / "imagenetv2-matched-frequency-format-val" / "2").is_dir()


def test_labels_and_class_wise_accuracies_follow_the_official_layouts(run: Run) -> None:
    work, _, result = run
    assert result.returncode == 0, result.stderr[-4000:]
    clean = _logits(work, "clean")
    expected_labels = {
        "clean": np.repeat([0, 1, 2], 3),
        "imagenet_c_fog_s1": np.repeat([0, 1, 2], 3),
        "imagenet_c_fog_s3": np.repeat([0, 1, 2], 3),
        "imagenet_v2_matched_frequency": np.repeat([0, 1, 2], 2),  # folder "i" is class index i
        "imagenet_r": np.repeat([0, 1], 3),  # renumbered into the subset's two columns
        "imagenet_sketch": np.repeat([0, 1, 2], 2),
    }
    for shift in SHIFTS:
        scores = _logits(work, shift)
        np.testing.assert_array_equal(scores.labels, expected_labels[shift], err_msg=shift)
        per_class = pd.read_csv(work / "results" / "metrics" / "imagenet" / "original" / "net" / shift / "per_class.csv")
        recall = _recall(scores.scores.argmax(axis=1), expected_labels[shift], scores.n_classes)
        np.testing.assert_allclose(per_class["recall"].to_numpy(), recall, err_msg=shift)
        assert list(scores.class_names) == (
            [clean.class_names[c] for c in R_CLASSES] if shift == "imagenet_r" else list(clean.class_names)
        )
    np.testing.assert_array_equal(_logits(work, "imagenet_c_fog_s3").sample_ids, clean.sample_ids)  # paired
    assert _logits(work, "imagenet_sketch").sample_ids[0] == f"imagenet-sketch/{IMAGENET_WNIDS[0]}/sketch_0.JPEG"


def test_imagenet_r_is_the_clean_logits_restricted_to_its_classes(run: Run) -> None:
    work, _, result = run
    assert result.returncode == 0, result.stderr[-4000:]
    clean, r = _logits(work, "clean"), _logits(work, "imagenet_r")
    assert r.extra["class_indices"].tolist() == R_CLASSES
    rows = [clean.sample_ids.tolist().index(sid.removeprefix("imagenet-r/")) for sid in r.sample_ids]
    full = clean.scores[rows]  # the same image files, model and preprocessing
    np.testing.assert_allclose(r.scores, full[:, R_CLASSES], rtol=1e-5, atol=1e-5)
    restricted = np.array(R_CLASSES)[full[:, R_CLASSES].argmax(axis=1)]  # argmax among the subset's classes
    truth = clean.labels[rows]
    document = json.loads(
        (work / "results" / "metrics" / "imagenet" / "original" / "net" / "imagenet_r" / "worst_class.json").read_text()
    )
    assert document["n_classes"] == 2
    wca = min(np.mean(restricted[truth == c] == c) for c in R_CLASSES)
    assert document["metrics"]["WCA"]["value"] == pytest.approx(wca)


def test_corrupted_copies_get_transformation_tests_against_clean(run: Run) -> None:
    work, _, result = run
    assert result.returncode == 0, result.stderr[-4000:]
    table = pd.read_csv(work / "results" / "tables" / "imagenet" / "robustness" / "transformation_tests_net.csv", index_col=0)
    assert list(table.index) == ["imagenet_c_fog_s1", "imagenet_c_fog_s3"]  # natural sets have other samples
    clean = _logits(work, "clean").scores.argmax(axis=1)
    for shift in table.index:
        shifted = _logits(work, shift).scores.argmax(axis=1)
        assert table.loc[shift, "flip_rate"] == pytest.approx(np.mean(clean != shifted))


def test_adding_a_shift_set_or_a_variant_schedules_only_its_own_jobs(run: Run) -> None:
    work, config, result = run
    assert result.returncode == 0, result.stderr[-4000:]
    added = json.loads(json.dumps(config))
    sets = added["datasets"]["imagenet"]["shift_sets"]
    sets["mine"] = {"family": "imagenet_folder", "root": "data/sketch/sketch", "classes": [IMAGENET_WNIDS[1]]}
    sets["imagenet_v2"]["variants"].append("top-images")  # another file of a downloaded set
    path = work / "added.yaml"
    path.write_text(yaml.safe_dump(added))
    new = ["mine", "imagenet_v2_top_images"]
    targets = [f"results/metrics/imagenet/original/net/{shift}/per_class.csv" for shift in [*SHIFTS, *new]]
    dry_run = run_snakemake(work, path, "--dry-run", *targets)
    assert dry_run.returncode == 0, dry_run.stderr[-4000:]
    # the new shifts' jobs and the new file's download; nothing of the other shifts
    assert job_counts(dry_run.stdout) == {"prepare_shift_set": 1, "infer": 2, "compute_worst_class_metrics": 2}
