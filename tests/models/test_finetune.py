"""Fine-tuning torchvision models (source: finetune) on a generated copy of torchvision's GTSRB
layout: the head swap, determinism, the checkpoint through the inference path, the config checks
and the GTSRB config's DAG (rule finetune_model)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
import yaml
from paths import REPO
from PIL import Image
from snakemake_runner import job_counts, run_snakemake

from classwise.atomic import write_json
from classwise.data.downloads import sha256_file
from classwise.data.torchvision_sets import GTSRB_CLASSES
from classwise.errors import InputError
from classwise.logits_io import load_scores
from classwise.models import zoo
from classwise.models.data_config import DataConfig, preprocess_batch
from classwise.models.finetune import (
    base_model_config,
    build_finetune_model,
    head_keys,
    load_base_state,
    parse_finetune_spec,
    read_finetuned,
)
from classwise.steps.models import FitSettings, InferenceSettings, InferTarget, finetune_step, infer_step

ARCH = "squeezenet1_1"
"""Small (1.2 M parameters) and happy with 32 x 32 inputs."""
HEAD = {"classifier.1.weight", "classifier.1.bias"}
TRAIN_CLASSES = 3
TINY_INPUT = {"input_size": [3, 32, 32]}


def _ppm(path: Path, size: tuple[int, int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)).save(path, format="PPM")


@pytest.fixture(scope="module")
def gtsrb_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """torchvision's GTSRB layout (root/gtsrb/GTSRB/Training/<class>/*.ppm, Final_Test/Images and
    GT-final_test.csv), with the first 3 of the 43 classes, 4 training images each, 5 test images."""
    root = tmp_path_factory.mktemp("gtsrb")
    base = root / "gtsrb"
    for k in range(TRAIN_CLASSES):
        for i in range(4):
            _ppm(base / "GTSRB" / "Training" / f"{k:05d}" / f"00000_{i:05d}.ppm", (20 + i, 24 + k), 10 * k + i)
    rows = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
    for i, label in enumerate([0, 1, 2, 1, 0]):
        _ppm(base / "GTSRB" / "Final_Test" / "Images" / f"{i:05d}.ppm", (30, 25 + i), 100 + i)
        rows.append(f"{i:05d}.ppm;30;{25 + i};1;1;20;20;{label}")
    (base / "GT-final_test.csv").write_text("\n".join(rows) + "\n")
    return root


def _entry(**overrides: object) -> dict[str, object]:
    entry = {
        "source": "finetune",
        "architecture": ARCH,
        "weights": "IMAGENET1K_V1",
        "train_on": "gtsrb",
        "epochs": 1,
        "batch_size": 4,
        "lr": 0.01,
        "data_config": TINY_INPUT,
    }
    return {**entry, **overrides}


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, torch.Tensor]]:
    """Stand-in ImageNet weights (a random 1000-class model) where the download rule leaves them:
    torch.hub's file name under checkpoints/, and a manifest with the file's sha256."""
    dest = tmp_path_factory.mktemp("base")
    weights = torchvision.models.SqueezeNet1_1_Weights.IMAGENET1K_V1
    torch.manual_seed(123)
    state = torchvision.models.squeezenet1_1().state_dict()
    path = dest / "checkpoints" / Path(weights.url).name
    path.parent.mkdir()
    torch.save(state, path)
    spec = zoo.parse_model_spec(base_model_config(_entry()))
    write_json(
        dest / zoo.MANIFEST_NAME,
        {
            "format": zoo.MANIFEST_FORMAT,
            "version": zoo.MANIFEST_VERSION,
            "spec": spec.to_dict(),
            "resolved": f"{ARCH}:{type(weights).__name__}.{weights.name}",
            "files": [
                {"path": f"checkpoints/{path.name}", "url": weights.url, "sha256": sha256_file(path), "size": 0, "check": "test"}
            ],
            "data_config": zoo.resolve_data_config(spec).to_dict(),
        },
    )
    return dest / zoo.MANIFEST_NAME, state


def test_the_head_is_fresh_and_everything_else_comes_from_the_starting_weights(
    pretrained: tuple[Path, dict[str, torch.Tensor]],
) -> None:
    manifest, reference = pretrained
    assert head_keys(ARCH) == HEAD
    assert head_keys("alexnet") == {"classifier.6.weight", "classifier.6.bias"}
    assert head_keys("densenet121") == {"classifier.weight", "classifier.bias"}

    state = load_base_state(_entry(), manifest)
    assert state is not None and state.keys() == reference.keys()
    assert all(torch.equal(state[k], reference[k]) for k in reference)

    model, transfer = build_finetune_model(ARCH, 43, state, seed=0)
    weights = model.state_dict()
    torch.manual_seed(0)
    fresh = torchvision.models.squeezenet1_1(num_classes=43).state_dict()
    for key, value in weights.items():
        expected = fresh[key] if key in HEAD else reference[key]
        assert torch.equal(value, expected), key
    assert weights["classifier.1.weight"].shape == (43, 512, 1, 1)
    assert transfer == {"head": sorted(HEAD), "copied": len(weights) - len(HEAD)}

    broken = {k: v for k, v in state.items() if k != "features.0.weight"}
    with pytest.raises(InputError, match="features.0.weight"):
        build_finetune_model(ARCH, 43, broken, seed=0)


def _finetune(tmp_path: Path, gtsrb_root: Path, manifest: Path | None, name: str, **overrides: object) -> Path:
    checkpoint = tmp_path / f"{name}.pt"
    entry = _entry(**overrides)
    gtsrb = {"source": "torchvision", "name": "gtsrb", "root": str(gtsrb_root)}
    finetune_step(
        settings=FitSettings(model_name=name, model=entry, dataset_name="gtsrb", dataset=gtsrb, device="cpu"),
        base_weights=manifest if entry["weights"] is not None else None,
        checkpoint_path=checkpoint,
        threads=1,
    )
    return checkpoint


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)["state_dict"]


def test_finetuning_is_deterministic_and_the_checkpoint_runs_through_inference(
    tmp_path: Path, gtsrb_root: Path, pretrained: tuple[Path, dict[str, torch.Tensor]]
) -> None:
    manifest, reference = pretrained
    first = _finetune(tmp_path, gtsrb_root, manifest, "a")
    again = _finetune(tmp_path, gtsrb_root, manifest, "b")
    other_seed = _finetune(tmp_path, gtsrb_root, manifest, "c", seed=1)
    a, b, c = _weights(first), _weights(again), _weights(other_seed)
    assert a.keys() == b.keys() == reference.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)
    assert not torch.equal(a["features.0.weight"], reference["features.0.weight"])  # trained, not copied
    assert a["classifier.1.weight"].shape == (43, 512, 1, 1)  # one output per GTSRB class

    meta = read_finetuned(first)
    assert meta["architecture"] == ARCH and meta["num_classes"] == 43
    assert tuple(meta["class_names"]) == GTSRB_CLASSES
    assert meta["base"]["resolved"] == f"{ARCH}:SqueezeNet1_1_Weights.IMAGENET1K_V1"
    assert meta["training"]["n_train"] == 4 * TRAIN_CLASSES and len(meta["training"]["history"]) == 1
    config = DataConfig.from_dict(meta["data_config"])
    assert config.input_size == (3, 32, 32) and config.mean == (0.485, 0.456, 0.406)

    logits_path = tmp_path / "logits.npz"
    gtsrb = {"source": "torchvision", "name": "gtsrb", "root": str(gtsrb_root)}
    clean = {"name": "clean", "kind": "clean", "params": {}}
    infer_step(
        model=InferTarget("a", _entry(), first, logits_path),
        settings=InferenceSettings(dataset_name="gtsrb", dataset=gtsrb, shift=clean, seed=0, batch_size=2, device="cpu"),
    )
    scores = load_scores(logits_path)
    assert scores.kind == "logits" and scores.scores.shape == (5, 43) and scores.labels.tolist() == [0, 1, 2, 1, 0]

    # independent reference: torchvision's own model with the saved weights, normalised by hand
    model = torchvision.models.squeezenet1_1(num_classes=43)
    model.load_state_dict(a)
    model.eval()
    folder = gtsrb_root / "gtsrb" / "GTSRB" / "Final_Test" / "Images"
    images = [Image.open(folder / f"{i:05d}.ppm").convert("RGB") for i in range(5)]
    x = preprocess_batch(images, config)
    mean, std = torch.tensor(config.mean).view(1, 3, 1, 1), torch.tensor(config.std).view(1, 3, 1, 1)
    with torch.no_grad():
        expected = model((x - mean) / std).numpy()
    np.testing.assert_allclose(scores.scores, expected, rtol=1e-4, atol=1e-4)


def test_random_start_needs_no_download(tmp_path: Path, gtsrb_root: Path) -> None:
    checkpoint = _finetune(tmp_path, gtsrb_root, None, "scratch", weights=None)
    assert read_finetuned(checkpoint)["base"]["weights"] is None
    assert _weights(checkpoint)["classifier.1.weight"].shape == (43, 512, 1, 1)


@pytest.mark.parametrize(
    ("change", "field", "expected"),
    [
        ({"architecture": "alexnt"}, "models.m.architecture", "alexnet"),
        ({"weights": "IMAGENET9K"}, "models.m.weights", "IMAGENET1K_V1"),
        ({"train_on": None}, "models.m.train_on", "non-empty string"),
        ({"optimizer": "rmsprop"}, "models.m.optimizer", "sgd"),
        ({"momentum": 1.0}, "models.m.momentum", "[0, 1)"),
        ({"lr": 0}, "models.m.lr", "> 0"),
        ({"epochs": 0}, "models.m.epochs", ">= 1"),
        ({"name": "alexnet"}, "models.m.name", "unknown key"),
        ({"data_config": {"size": 3}}, "models.m.data_config.size", "input_size"),
        ({"architecture": "inception_v3"}, "models.m.architecture", "auxiliary"),
    ],
)
def test_bad_finetune_entries_name_the_field(change: dict[str, object], field: str, expected: str) -> None:
    # the job's parse and the source's, which check_models runs on every entry before any job
    from classwise.models.sources import parse_model_spec

    for parse in (parse_finetune_spec, parse_model_spec):
        with pytest.raises(InputError) as info:
            parse(_entry(**change), key="m", config_path="config/x.yaml")
        message = str(info.value)
        assert field in message and expected in message and "config/x.yaml" in message


def test_a_missing_required_key_is_named() -> None:
    entry = _entry()
    del entry["weights"]
    with pytest.raises(InputError, match="models.m.weights"):
        parse_finetune_spec(entry, key="m")


def test_two_missing_keys_name_the_first_in_sorted_order() -> None:
    # one check of a finetune entry's keys (check_keys), in the job's parse and at DAG build alike
    from classwise.models.sources import parse_model_spec

    entry = _entry()
    del entry["weights"], entry["train_on"]
    for parse in (parse_finetune_spec, parse_model_spec):
        with pytest.raises(InputError, match=r"field 'models.m.train_on': source 'finetune' needs this key"):
            parse(entry, key="m")


def test_a_foreign_checkpoint_is_named(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.zeros(1)}}, foreign)
    with pytest.raises(InputError) as info:
        read_finetuned(foreign)
    assert str(foreign) in str(info.value) and "format" in str(info.value)
    with pytest.raises(InputError, match="does not exist"):
        read_finetuned(tmp_path / "missing.pt")


@pytest.mark.workflow
def test_the_gtsrb_config_fine_tunes_its_models_before_inference(tmp_path: Path) -> None:
    """The shipped GTSRB config, plus a demo-trained model and a fine-tuned one from random
    weights: both rules write results/models/{model}.pt without competing for it."""
    from classwise.bench.fixtures import dry_run_fixtures

    shipped = yaml.safe_load((REPO / "config" / "decisiveness_gtsrb.yaml").read_text())
    finetuned = [name for name, entry in shipped["models"].items() if entry["source"] == "finetune"]
    assert len(finetuned) == 2 and all(shipped["models"][m]["weights"] == "IMAGENET1K_V1" for m in finetuned)
    shipped["models"]["cnn"] = {"source": "train", "architecture": "cnn", "train_on": "gtsrb", "epochs": 1}
    shipped["models"]["scratch"] = _entry(weights=None)
    config, _ = dry_run_fixtures(shipped, tmp_path)
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, configfile, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    counts = job_counts(result.stdout)
    assert counts["finetune_model"] == 3 and counts["train_model"] == 1 and counts["infer"] == 4
    assert counts["download_finetune_base"] == 2  # not for weights: null
    assert counts["prepare_dataset"] == 1 and "download_model" not in counts
    out = config["output_dir"]
    for model in finetuned:
        assert f"output: resources/models/{model}/base/manifest.json" in result.stdout
    for model in [*finetuned, "cnn", "scratch"]:
        assert f"input: {out}/models/{model}.pt" in result.stdout  # infer reads the model the pipeline made
    assert not (tmp_path / "results").exists()


def test_the_dag_time_check_imports_no_torch_once_the_names_are_remembered(tmp_path: Path) -> None:
    # the workflow checks finetune entries while it builds the DAG (finetune_inputs), which must
    # stay fast: torchvision is imported only when the name check's answer is not remembered yet
    code = (
        "import json, sys\n"
        "from classwise.models.finetune_spec import parse_finetune_entry\n"
        f"parse_finetune_entry({_entry()!r}, key='m')\n"
        "print(json.dumps(sorted(m for m in ('torch', 'torchvision') if m in sys.modules)))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(runs[0].stdout) == ["torch", "torchvision"]  # the first check asks torchvision
    assert json.loads(runs[1].stdout) == []
