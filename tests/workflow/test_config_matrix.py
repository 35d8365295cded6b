"""Every valid config runs to the end: a pairwise-sampled matrix of small configs, run end to end
(tests/config_matrix.py builds them), and the regression tests of the failures a new user hit."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from config_matrix import (
    AUTOATTACK,
    AUTOATTACK_SHARDS,
    CORRUPTION,
    FACTORS,
    PGD,
    all_valid_rows,
    checkpoint_entry,
    pairs_of,
    pairwise_rows,
    runs,
    transfer_shift,
    write_checkpoint,
    write_image_folder,
    write_imagenet_label_errors,
    write_real_labels,
)
from snakemake_runner import run_snakemake

from classwise.logits_io import load_outputs, load_scores
from classwise.steps.robustness import NO_ATTACK_NOTE

pytestmark = pytest.mark.workflow
Run = tuple[Path, dict[str, Any], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    workdir = tmp_path_factory.mktemp("matrix")
    done: dict[str, Run] = {}
    for name, config in runs(workdir):
        run_dir = workdir / name
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        done[name] = (run_dir, config, run_snakemake(run_dir, path))
    return done


def test_the_sampled_rows_cover_every_pair_of_option_values() -> None:
    rows = pairwise_rows()
    candidates = all_valid_rows()
    assert all(row in candidates for row in rows)
    needed = set().union(*(pairs_of(row) for row in candidates))
    covered = set().union(*(pairs_of(row) for row in rows))
    assert covered == needed
    assert len(rows) < len(candidates) // 10  # a sample, not the product
    for (factor, values), (other, others) in itertools.combinations(FACTORS.items(), 2):
        for value, other_value in itertools.product(values, others):
            pair = tuple(sorted([(factor, value), (other, other_value)], key=lambda item: item[0]))
            assert pair in needed or not any(r[factor] == value and r[other] == other_value for r in candidates)


def _untargeted(dataset: dict[str, Any]) -> list[str]:
    return [shift for shift in dataset["shifts"] if not shift.startswith("pgd_targeted")]


@pytest.mark.parametrize("name", ["analyses_on", "clean_off"])
def test_every_sampled_config_runs_to_the_end_and_writes_its_worst_class_tables(matrix: dict[str, Run], name: str) -> None:
    run_dir, config, result = matrix[name]
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    results = run_dir / "results"
    bootstrap = config["metrics"]["bootstrap"]["replicates"] > 0
    for dataset, dataset_cfg in config["datasets"].items():
        for shift in _untargeted(dataset_cfg):
            tables = results / "tables" / dataset / "original" / shift
            header = (tables / "worst_class.csv").read_text().splitlines()[0]
            assert header == ",".join(["metric", *dataset_cfg["models"]])
            # intervals beside the paper table with the bootstrap on; a comparison where there are two models
            assert (tables / "worst_class_intervals.csv").is_file() == bootstrap
            assert (tables / "model_comparison.csv").is_file() == (bootstrap and len(dataset_cfg["models"]) == 2)
            per_class = results / "metrics" / dataset / "original" / dataset_cfg["models"][0] / shift / "per_class.csv"
            assert ("worst_recall_probability" in per_class.read_text().splitlines()[0]) == bootstrap
        _assert_robust_fairness(results, dataset, dataset_cfg)
        for view in dataset_cfg.get("label_views", {}):  # evaluated on clean images
            compared = results / "tables" / dataset / view / "clean" / "model_comparison.csv"
            assert compared.is_file() == (bootstrap and len(dataset_cfg["models"]) == 2)
            for model in dataset_cfg["models"]:
                scores = load_scores(results / "logits" / dataset / model / f"{shift}.npz")
                predicted = scores.scores.argmax(axis=1)
                recalls = [np.mean(predicted[scores.labels == c] == c) for c in np.unique(scores.labels)]
                document = json.loads(
                    (results / "metrics" / dataset / "original" / model / shift / "worst_class.json").read_text()
                )
                assert document["metrics"]["WCA"]["value"] == pytest.approx(min(recalls))
                label_space = {"sklearn_digits": 10, "imagenet_val": 1000}.get(dataset_cfg["source"], len(recalls))
                assert document["n_classes"] == label_space


@pytest.mark.parametrize("name", ["analyses_on", "clean_off"])
def test_every_number_of_every_sampled_config_has_one_value(matrix: dict[str, Run], name: str) -> None:
    """One number, one value (issue 39), in every sampled config: each file of numbers, paper
    table and the explorer hold the value of the run's table of every number."""
    from numbers_invariant import assert_one_value_per_number

    run_dir, config, result = matrix[name]
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    table = assert_one_value_per_number(run_dir / "results")
    assert set(table["dataset"]) == set(config["datasets"])


def _assert_robust_fairness(results: Path, dataset: str, dataset_cfg: dict[str, Any]) -> None:
    """With PGD and clean images: the robust-fairness table and figure, its robust A the accuracy
    of the PGD cached logits; without clean images: neither, and the README says why."""
    if PGD not in dataset_cfg["shifts"]:
        return
    table = results / "tables" / dataset / "robustness" / f"robust_fairness_{PGD}.csv"
    if "clean" not in dataset_cfg["shifts"]:
        assert not table.exists()
        assert f"robust fairness on {dataset}: skipped" in (results / "README.md").read_text()
        return
    data = pd.read_csv(table, index_col="model")
    assert list(data.index) == dataset_cfg["models"]
    for model in dataset_cfg["models"]:
        attacked = load_outputs(results / "logits" / dataset / model / f"{PGD}.npz")
        robust_accuracy = np.mean(attacked.scores.argmax(axis=1) == attacked.labels)
        assert data.loc[model, "robust_accuracy"] == pytest.approx(robust_accuracy)
    assert (results / "figures" / dataset / "robustness" / f"robust_fairness_{PGD}.png").is_file()


def test_an_imagenet_cleaned_view_runs_end_to_end_with_the_labels_worked_out_by_hand(
    matrix: dict[str, Run], tmp_path: Path
) -> None:
    """Three of ImageNet's 1,000 classes, one image relabelled and one removed by the votes."""
    run_dir, config, _ = matrix["analyses_on"]
    expected = write_imagenet_label_errors(tmp_path, Path(config["datasets"]["imagenet"]["root"]))
    assert sorted(expected.values()) == [-1, 0, 1, 1, 2, 2]  # the votes did relabel and remove
    view = (run_dir / "results" / "labels" / "imagenet" / "cleaned.csv").read_text().splitlines()
    assert dict(line.rsplit(",", 1) for line in view[1:]) == {key: str(label) for key, label in expected.items()}
    scores = load_scores(run_dir / "results" / "logits" / "imagenet" / "in1k" / "clean.npz")
    labels = np.array([expected[str(sample)] for sample in scores.sample_ids])
    kept = labels >= 0
    predicted = scores.scores.argmax(axis=1)[kept]
    recalls = [np.mean(predicted[labels[kept] == c] == c) for c in np.unique(labels[kept])]
    document = json.loads(
        (run_dir / "results" / "metrics" / "imagenet" / "cleaned" / "in1k" / "clean" / "worst_class.json").read_text()
    )
    assert document["n_samples"] == int(kept.sum()) and document["n_classes"] == 1000
    assert document["metrics"]["WCA"]["value"] == pytest.approx(min(recalls))
    assert "W2CR" in document["metrics"]  # n = 2 of the 3 classes that hold samples


def test_a_real_view_counts_a_prediction_in_the_image_set_as_correct(matrix: dict[str, Run], tmp_path: Path) -> None:
    """ImageNet ReaL: correct = the prediction is in the image's set, an empty set removes the
    image, per-class recall groups by the original label; the pair metrics and decisiveness are
    left out and results/README.md says so."""
    run_dir, _, _ = matrix["analyses_on"]
    sets = write_real_labels(tmp_path / "real.json")
    scores = load_scores(run_dir / "results" / "logits" / "imagenet" / "in1k" / "clean.npz")
    image_sets = [sets[str(sample).rsplit("/", 1)[1]] for sample in scores.sample_ids]
    kept = np.array([bool(s) for s in image_sets])
    predicted = scores.scores.argmax(axis=1)
    correct = np.array([int(p) in s for p, s in zip(predicted, image_sets)])[kept]
    labels = scores.labels[kept]
    recalls = [correct[labels == c].mean() for c in np.unique(labels)]
    metrics = run_dir / "results" / "metrics" / "imagenet" / "real" / "in1k" / "clean"
    document = json.loads((metrics / "worst_class.json").read_text())
    assert document["n_samples"] == int(kept.sum()) == 5
    assert document["metrics"]["A"]["value"] == pytest.approx(correct.mean())
    assert document["metrics"]["WCA"]["value"] == pytest.approx(min(recalls))
    assert "W2CA" not in document["metrics"] and "W2CA" in document["skipped"]
    tables = run_dir / "results" / "tables" / "imagenet" / "real" / "clean"
    assert (tables / "worst_class.csv").is_file() and not (tables / "decisiveness.csv").exists()
    assert (run_dir / "results" / "figures" / "imagenet" / "real" / "clean" / "per_class_recall.png").is_file()
    assert "label view real of imagenet (ImageNet ReaL" in (run_dir / "results" / "README.md").read_text()


def test_every_attack_has_a_mean_confusion_and_without_one_the_directory_holds_a_note(matrix: dict[str, Run]) -> None:
    """Figure 4 under PGD, AutoAttack and a transfer of PGD (not under a targeted attack). Regression:
    analyse_classwise_robustness declared the directory and did not create it."""
    checked, autoattacked, transferred = 0, 0, 0
    for run_dir, config, _ in matrix.values():
        for dataset, dataset_cfg in config["datasets"].items():
            directory = run_dir / "results" / "figures" / dataset / "robustness" / "mean_confusion"
            attacks = [s for s in dataset_cfg["shifts"] if s in (PGD, AUTOATTACK) or s.startswith("transfer_")]
            if attacks:
                assert sorted(p.name for p in directory.glob("*.png")) == sorted(f"{s}.png" for s in attacks)
                autoattacked += AUTOATTACK in attacks
                transferred += any(s.startswith("transfer_") for s in attacks)
            else:
                assert (directory / "README.txt").read_text() == NO_ATTACK_NOTE
                checked += 1
    assert checked and autoattacked and transferred


def test_autoattack_attacks_one_image_per_class_of_the_digits(matrix: dict[str, Run]) -> None:
    checked = 0
    for run_dir, config, _ in matrix.values():
        for name, dataset_cfg in config["datasets"].items():
            if AUTOATTACK not in dataset_cfg["shifts"]:
                continue
            for model in dataset_cfg["models"]:
                logits = run_dir / "results" / "logits" / name / model / f"{AUTOATTACK}.npz"
                scores = load_scores(logits)
                assert np.bincount(scores.labels).tolist() == [1] * 10
                sidecar = json.loads(logits.with_suffix(".json").read_text())
                subset = sidecar["attacked_subset"]
                assert (subset["per_class"], subset["samples"]) == (1, 10) and subset["of"] > 10
                assert sidecar["shift"]["kind"] == "autoattack"
                # two shards (whole batches of 8: 8 images and 2), each its own job and log
                logs = run_dir / "results" / "logs" / "infer_shard" / name / model / AUTOATTACK
                texts = [(logs / f"{k}-of-{AUTOATTACK_SHARDS}.log").read_text() for k in (1, 2)]
                assert ["apgd-ce: 8 attacked" in texts[0], "apgd-ce: 2 attacked" in texts[1]] == [True, True]
                assert not (run_dir / "results" / "logs" / "infer" / name / model / f"{AUTOATTACK}.log").exists()
                checked += 1
    assert checked


def test_a_sharded_autoattack_is_the_file_an_unsharded_job_writes(
    matrix: dict[str, Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The merge of the run's two AutoAttack shards, byte for byte the cached file and sidecar the
    unsharded infer step writes from the same model, data and seed."""
    from classwise.shifts.spec import expand_shifts
    from classwise.steps.models import InferenceSettings, InferTarget, infer_step

    run_dir, config, _ = matrix["analyses_on"]
    name = next(name for name, cfg in config["datasets"].items() if AUTOATTACK in cfg["shifts"])
    model = config["datasets"][name]["models"][0]
    cached = run_dir / "results" / "logits" / name / model / f"{AUTOATTACK}.npz"
    sidecar = json.loads(cached.with_suffix(".json").read_text())
    dataset_cfg = {key: value for key, value in sidecar["dataset"].items() if key != "name"}  # as the rule passed it
    out = tmp_path / "unsharded.npz"
    monkeypatch.chdir(run_dir)  # the sidecar records the weights' path as the job saw it
    settings = InferenceSettings(
        dataset_name=name, dataset=dataset_cfg, shift=expand_shifts(config["shifts"])[AUTOATTACK].to_json(),
        seed=sidecar["seed"], batch_size=config["inference"]["batch_size"], device="cpu",
    )  # fmt: skip
    infer_step(model=InferTarget(model, config["models"][model], f"results/models/{model}.pt", out), settings=settings, threads=1)
    assert out.read_bytes() == cached.read_bytes()
    assert out.with_suffix(".json").read_bytes() == cached.with_suffix(".json").read_bytes()


def test_models_sharing_a_decode_get_the_files_their_own_infer_jobs_would_write(
    matrix: dict[str, Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inference.models_per_decode 2: each dataset of two models decodes each clean or corrupted
    batch once (one infer_models_<dataset> job per shift that runs no model, no per-model infer
    job; an image folder and the in-memory digits), and every file it writes is byte for byte the
    infer step's of that model alone."""
    from classwise.shifts.spec import expand_shifts
    from classwise.steps.models import InferenceSettings, InferTarget, infer_step

    checked: set[str] = set()
    for run_dir, config, _ in matrix.values():
        assert config["inference"]["models_per_decode"] == 2
        monkeypatch.chdir(run_dir)  # the sidecar records the weights' path as the job saw it
        shifts = expand_shifts(config["shifts"])
        for name, dataset_cfg in config["datasets"].items():
            shared = [shift for shift in dataset_cfg["shifts"] if shift in ("clean", CORRUPTION)]
            if len(dataset_cfg["models"]) < 2 or not shared:
                continue
            logs = Path("results", "logs")
            for shift in shared:
                assert (logs / "infer_models" / name / f"{shift}.log").is_file()
                for model in dataset_cfg["models"]:
                    assert not (logs / "infer" / name / model / f"{shift}.log").exists()
                    cached = Path("results", "logits", name, model, f"{shift}.npz")
                    sidecar = json.loads(cached.with_suffix(".json").read_text())
                    entry = config["models"][model]
                    weights = entry["path"] if entry["source"] == "checkpoint" else f"results/models/{model}.pt"
                    out = tmp_path / name / model / f"{shift}.npz"
                    settings = InferenceSettings(
                        dataset_name=name, dataset={key: value for key, value in sidecar["dataset"].items() if key != "name"},
                        shift=shifts[shift].to_json(), seed=sidecar["seed"],
                        batch_size=config["inference"].get("batch_size", 256), device="cpu",
                    )  # fmt: skip
                    infer_step(model=InferTarget(model, entry, weights, out), settings=settings, threads=1)
                    assert out.read_bytes() == cached.read_bytes(), (name, model, shift)
                    assert out.with_suffix(".json").read_bytes() == cached.with_suffix(".json").read_bytes(), (name, model)
                    checked.add(entry["source"])
    assert checked == {"checkpoint", "train"}  # decoded image files and in-memory images


def test_pgd_transferred_to_its_own_source_is_the_white_box_attack(matrix: dict[str, Run]) -> None:
    """A row with PGD and two models also evaluates PGD crafted on its first model: on that model
    its logits are those of the PGD shift, bit for bit; without clean images the transfer matrix
    is skipped and the README says why."""
    checked = 0
    for run_dir, config, _ in matrix.values():
        for name, cfg in config["datasets"].items():
            source = cfg["models"][0]
            if transfer_shift(source) not in cfg["shifts"]:
                continue
            logits = run_dir / "results" / "logits" / name
            transferred = load_scores(logits / source / f"{transfer_shift(source)}.npz")
            white_box = load_scores(logits / source / f"{PGD}.npz")
            assert np.array_equal(transferred.scores, white_box.scores)
            assert np.array_equal(transferred.sample_ids, white_box.sample_ids)
            for target in cfg["models"]:
                assert (logits / target / f"{transfer_shift(source)}.npz").is_file()
            matrix_table = run_dir / "results" / "tables" / name / "robustness" / "transfer_matrix.csv"
            if "clean" in cfg["shifts"]:
                assert matrix_table.is_file()
            else:
                assert not matrix_table.exists()
                assert f"transfer matrix on {name}: skipped" in (run_dir / "results" / "README.md").read_text()
            checked += 1
    assert checked


def test_a_default_k1_adapts_to_a_small_dataset_and_the_readme_says_so(matrix: dict[str, Run]) -> None:
    """Regression: the default k1 = 5 stopped the run on a dataset of fewer than 6 classes."""
    run_dir, config, _ = matrix["analyses_on"]
    readme = (run_dir / "results" / "README.md").read_text()
    assert "## Skipped or adapted" in readme
    small = {name: cfg for name, cfg in config["datasets"].items() if name.endswith(("_2c", "_5c"))}
    assert small
    for name, cfg in small.items():
        has_clean = "clean" in cfg["shifts"]
        extrapolation = run_dir / "results" / "analyses" / name / "original" / "extrapolation_summary.md"
        if name.endswith("_5c") and has_clean:
            assert f"extrapolation on {name}: k1 = 4 instead of the default 5" in readme
            assert "from 4 sampled classes" in extrapolation.read_text()
        elif name.endswith("_2c") and has_clean:
            assert f"extrapolation on {name}: skipped, it needs 3 or more classes" in readme
            assert not extrapolation.exists()
        else:
            assert f"extrapolation on {name}: skipped, the shift 'clean' (the default) is not evaluated on it" in readme


def test_a_k1_the_user_set_that_cannot_apply_stops_before_any_job(tmp_path: Path) -> None:
    write_image_folder(tmp_path / "data" / "pets", 4, per_class=2, seed=0)
    write_checkpoint(tmp_path / "net.pth", 4, seed=0)
    config = {
        "datasets": {"pets": {"source": "image_folder", "root": "data/pets"}},
        "models": {"net": checkpoint_entry(tmp_path / "net.pth", 4)},
        "shifts": {"clean": True},
        "analyses": {"extrapolation": {"k1": 5}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, path, "--dry-run")
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert (
        f"{path}: field 'analyses.extrapolation.k1': expected 2 <= k1 < C, the 4 classes of dataset 'pets' that hold images; got 5"
        in message
    )
    assert not (tmp_path / "results").exists()
