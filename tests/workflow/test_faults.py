"""The bad-input and fault catalogue (issue 7).

Each fault must give a message that names the file (where there is one), the field and what was
expected, and leave nothing half-written: no output under its final name, no temporary beside it.
Faults of the pipeline run Snakemake itself in a temporary directory; the rest call the library.
The "Bad input and faults" table of docs/faults.md points at these tests and the older ones they extend.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from paths import REPO
from PIL import Image

from classwise.errors import InputError
from classwise.logits_io import load_scores, save_logits

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
TINY_CONFIG = REPO / "tests" / "configs" / "tiny.yaml"
PGD = "pgd_linf_eps0.1"


def snakemake_command(workdir: Path, configfile: Path, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "snakemake",
        "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir),
        "--configfile", str(configfile),
        "--cores", "2",
        *args,
    ]  # fmt: skip


def snakemake(workdir: Path, configfile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(snakemake_command(workdir, configfile, *args), capture_output=True, text=True)


def write_config(path: Path, config: dict) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def leftovers(directory: Path) -> list[str]:
    """Every file below ``directory`` (relative paths), temporaries included."""
    if not directory.exists():
        return []
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- bad config


def _digits_config() -> dict:
    return {
        "datasets": {"digits": {"source": "sklearn_digits"}},
        "models": {"linear": {"source": "train", "train_on": "digits", "architecture": "linear", "epochs": 1}},
        "shifts": {"clean": True},
    }


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        # A wrong type or value: tests/workflow/test_workflow.py (wrong-type) and the schema check below.
        (lambda c: c["datasets"]["digits"].update(on_bad_images="skip"), ["on_bad_images"]),
        (
            lambda c: c["datasets"].update(shapes={"source": "image_folder", "root": "data/no_such_dir"}),
            ["datasets.shapes.root", "data/no_such_dir", "does not exist"],
        ),
        (
            lambda c: c["models"].update(net={"source": "torchvision", "name": "resnet5", "weights": None}),
            ["models.net.name", "resnet5", "resnet50"],
        ),
    ],
    ids=["unknown-dataset-key", "missing-dataset-directory", "unknown-model-name"],
)
@pytest.mark.workflow
def test_bad_config_stops_before_any_job(tmp_path: Path, mutate, expected: list[str]) -> None:
    config = _digits_config()
    mutate(config)
    result = snakemake(tmp_path, write_config(tmp_path / "bad.yaml", config))
    message = result.stdout + result.stderr
    assert result.returncode != 0
    for text in expected:
        assert text in message, (text, message[-3000:])
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()


@pytest.mark.parametrize(
    ("mutate", "field", "text"),
    [
        (lambda c: c.update(modles=c.pop("models")), "modles", "unknown key 'modles'; expected one of ["),
        (lambda c: c["datasets"]["digits"].update(on_bad_images="skip"), "datasets.digits.on_bad_images", "'on_bad_image'"),
        (lambda c: c["models"]["linear"].update(epochs="ten"), "models.linear.epochs", "expected integer, got 'ten'"),
        (lambda c: c["datasets"]["digits"].update(on_bad_image="maybe"), "datasets.digits.on_bad_image", "['error', 'skip']"),
        (lambda c: c["datasets"]["digits"].pop("source"), "datasets.digits.source", "required key is missing"),
        (
            lambda c: c["datasets"]["digits"]["superclasses"].update(round=[0, "6"]),
            "datasets.digits.superclasses.round[1]",
            "integer",
        ),
        (
            lambda c: c["metrics"].update(bootstrap={"replicates": -1}),
            "metrics.bootstrap.replicates",
            "expected a value >= 0, got -1",
        ),
        (
            lambda c: c["metrics"].update(bootstrap={"confidence": 1}),
            "metrics.bootstrap.confidence",
            "expected a value < 1, got 1",
        ),
        (
            lambda c: c["metrics"].update(bootstrap={"confidence": 0.0}),
            "metrics.bootstrap.confidence",
            "expected a value > 0, got 0.0",
        ),
    ],
    ids=[
        "unknown-top-level-key",
        "unknown-dataset-key",
        "wrong-type",
        "bad-enum",
        "missing-key",
        "nested-wrong-type",
        "negative-replicates",
        "confidence-of-one",
        "confidence-of-zero",
    ],
)
def test_schema_check_names_file_field_and_expectation(mutate, field: str, text: str) -> None:
    from classwise.pipeline.config_checks import check_schema

    config = yaml.safe_load(TINY_CONFIG.read_text())
    check_schema(config, SCHEMA, source="tests/configs/tiny.yaml")  # the valid config passes
    mutate(config)
    with pytest.raises(InputError) as info:
        check_schema(config, SCHEMA, source="my.yaml")
    assert info.value.path == "my.yaml" and info.value.field == field
    assert text in str(info.value)
    assert "\n" not in str(info.value)  # one line, not the schema


# --------------------------------------------------------------------------- image-file datasets

GOOD = {"a": 3, "b": 3}  # class folder -> readable images; class c has one unreadable image only


def _png(path: Path, seed: int) -> None:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)


def _image_project(workdir: Path) -> Path:
    """An ImageFolder with a truncated JPEG in class a and only an unreadable file in class c, a
    classwise checkpoint for it, and a config evaluating it with on_bad_image skip and error."""
    from classwise.models.architectures import build_model
    from classwise.models.checkpoint import save_checkpoint

    root = workdir / "data" / "shapes"
    for folder, count in GOOD.items():
        for i in range(count):
            _png(root / folder / f"img{i}.png", seed=10 * ord(folder) + i)
    broken = root / "a" / "broken.jpg"
    Image.fromarray(np.full((8, 8, 3), 200, np.uint8)).save(broken, format="JPEG")
    broken.write_bytes(broken.read_bytes()[:40])  # truncated
    (root / "c").mkdir()
    (root / "c" / "bad.png").write_bytes(b"not an image at all")
    model = build_model("cnn", n_classes=3, input_shape=(3, 8, 8), seed=0)
    save_checkpoint(
        workdir / "models" / "tiny.pt", model, architecture="cnn", n_classes=3, input_shape=(3, 8, 8),
        options={}, class_names=["a", "b", "c"], extra={},
    )  # fmt: skip
    config = {
        "datasets": {
            "shapes_skip": {"source": "image_folder", "root": "data/shapes", "on_bad_image": "skip"},
            "shapes_strict": {"source": "image_folder", "root": "data/shapes"},  # default: error
        },
        "models": {"tiny": {"source": "checkpoint", "path": "models/tiny.pt", "architecture": "cnn"}},
        "shifts": {"clean": True},
        "inference": {"batch_size": 4, "device": "cpu"},
        "metrics": {"worst_class": {"k": 2, "n": [2]}},
    }
    return write_config(workdir / "images.yaml", config)


@pytest.fixture(scope="module")
def image_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One Snakemake run over both datasets; --keep-going lets the strict one fail alone."""
    workdir = tmp_path_factory.mktemp("images")
    configfile = _image_project(workdir)
    targets = [
        "results/logits/shapes_skip/tiny/clean.npz",
        "results/metrics/shapes_skip/original/tiny/clean/worst_class.json",
        "results/logits/shapes_strict/tiny/clean.npz",
    ]
    return workdir, snakemake(workdir, configfile, "--keep-going", *targets)


@pytest.mark.workflow
def test_unreadable_image_stops_the_job_naming_the_file(image_run) -> None:
    workdir, result = image_run
    assert result.returncode != 0  # the strict dataset's job failed
    assert "infer" in result.stdout + result.stderr
    log = (workdir / "results" / "logs" / "infer" / "shapes_strict" / "tiny" / "clean.log").read_text()
    assert "data/shapes/a/broken.jpg" in log and "on_bad_image: skip" in log, log[-2000:]
    assert leftovers(workdir / "results" / "logits" / "shapes_strict") == []
    # The one-line message comes first in the log and reaches Snakemake's output, not only the
    # end of a traceback.
    first_line = log.splitlines()[0]
    assert first_line.startswith("classwise: error: ") and "broken.jpg" in first_line and "field 'image'" in first_line
    terminal = result.stdout + result.stderr
    assert first_line in terminal


@pytest.mark.workflow
def test_skipped_images_are_left_out_and_recorded_in_the_sidecar(image_run) -> None:
    workdir, result = image_run
    logits = workdir / "results" / "logits" / "shapes_skip" / "tiny" / "clean.npz"
    assert logits.exists(), result.stderr[-4000:]
    scores = load_scores(logits)
    expected_ids = [f"{folder}/img{i}.png" for folder, count in GOOD.items() for i in range(count)]
    assert scores.sample_ids.tolist() == expected_ids
    assert scores.class_names.tolist() == ["a", "b", "c"]
    assert scores.labels.tolist() == [0, 0, 0, 1, 1, 1]
    skipped = json.loads(logits.with_suffix(".json").read_text())["skipped_images"]
    assert [s["sample_id"] for s in skipped] == ["a/broken.jpg", "c/bad.png"]
    assert all(s["path"].endswith(s["sample_id"]) and s["reason"] for s in skipped)


@pytest.mark.workflow
def test_a_class_without_samples_is_left_out_of_the_minima_and_counted(image_run) -> None:
    """Class c's only image was skipped: its recall is undefined, so it is excluded from WCA and
    every other recall minimum, and counted in ``n_classes_without_samples``."""
    workdir, _ = image_run
    scores = load_scores(workdir / "results" / "logits" / "shapes_skip" / "tiny" / "clean.npz")
    metrics_dir = workdir / "results" / "metrics" / "shapes_skip" / "original" / "tiny" / "clean"
    document = json.loads((metrics_dir / "worst_class.json").read_text())
    predicted = scores.scores.argmax(axis=1)
    recalls = {c: float(np.mean(predicted[scores.labels == c] == c)) for c in (0, 1)}  # c = 2 has no samples
    wca = document["metrics"]["WCA"]
    assert wca["value"] == pytest.approx(min(recalls.values()))
    tied = [c for c in (0, 1) if recalls[c] == min(recalls.values())]
    declared = {"n_tied": 2, "tied": tied} if len(tied) > 1 else {}  # equal recalls are declared a tie
    assert wca["details"] == {"n_classes_without_samples": 1, **declared} and 2 not in wca["classes"]
    per_class = pd.read_csv(metrics_dir / "per_class.csv")
    assert per_class["support"].tolist() == [3, 3, 0]
    assert np.isnan(per_class.loc[2, "recall"]) and not per_class.loc[:1, "recall"].isna().any()


@pytest.mark.workflow
def test_a_failed_import_leaves_neither_its_cache_nor_a_readme(tmp_path: Path) -> None:
    """The digits' sample ids are known only once the set is loaded, so a predictions file that
    names none of them passes the plan and stops its import job; results/README.md, which
    describes a finished run, waits for every output and is not written either."""
    rows = "\n".join(f"nope-{i}," + ",".join(["0.1"] * 10) for i in range(3))
    (tmp_path / "net.csv").write_text("sample_id," + ",".join(f"score_{j}" for j in range(10)) + "\n" + rows + "\n")
    config = {
        "datasets": {"digits": {"source": "sklearn_digits"}},
        "models": {"net": {"source": "predictions", "files": {"clean": "net.csv"}}},
        "shifts": {"clean": True},
        "analyses": {name: {"enabled": False} for name in ("subset_tests", "reference_tests", "extrapolation")},
    }
    result = snakemake(tmp_path, write_config(tmp_path / "net.yaml", config))
    assert result.returncode != 0
    terminal = result.stdout + result.stderr
    assert "Error in rule import_predictions" in terminal
    assert "net.csv: field 'sample_id': " in terminal and "row(s) of this file name no sample of dataset 'digits'" in terminal
    assert leftovers(tmp_path / "results" / "logits") == []
    assert not (tmp_path / "results" / "README.md").exists()


def test_a_class_folder_without_images_names_itself(tmp_path: Path) -> None:
    from classwise.data.imagefolder import image_folder

    root = tmp_path / "shapes"
    _png(root / "a" / "img0.png", seed=0)
    (root / "b").mkdir()
    (root / "b" / "notes.txt").write_text("not an image")
    with pytest.raises(InputError) as info:
        image_folder(root)
    assert info.value.path == str(root) and info.value.field == "classes"
    assert "class folders without images" in str(info.value) and "['b']" in str(info.value)


# --------------------------------------------------------------------------- inference faults


def _digits_checkpoint(path: Path, *, n_classes: int = 10, input_shape=(1, 8, 8), nan_bias: bool = False) -> Path:
    import torch

    from classwise.models.architectures import build_model
    from classwise.models.checkpoint import save_checkpoint

    model = build_model("linear", n_classes=n_classes, input_shape=input_shape, seed=0)
    if nan_bias:
        with torch.no_grad():
            last = [p for name, p in model.named_parameters() if name.endswith("bias")][-1]
            last[3] = float("nan")
    save_checkpoint(
        path, model, architecture="linear", n_classes=n_classes, input_shape=input_shape, options={},
        class_names=[str(i) for i in range(n_classes)], extra={},
    )  # fmt: skip
    return path


def _infer_digits(tmp_path: Path, checkpoint: Path) -> Path:
    from classwise.steps.models import InferenceSettings, InferTarget, infer_step

    out = tmp_path / "logits" / "clean.npz"
    settings = InferenceSettings(
        dataset_name="digits", dataset={"source": "sklearn_digits"}, shift={"name": "clean", "kind": "clean", "params": {}},
        seed=0, batch_size=256, device="cpu",
    )  # fmt: skip
    model = InferTarget("m", {"source": "train", "architecture": "linear"}, checkpoint, out)
    infer_step(model=model, settings=settings, threads=1)
    return out


@pytest.mark.parametrize(
    ("checkpoint_kwargs", "field", "texts"),
    [
        ({"n_classes": 3}, "num_classes", ["(3,) outputs per image", "has 10 classes"]),
        ({"input_shape": (3, 8, 8)}, "input_shape", ["takes images of shape (3, 8, 8)", "has (1, 8, 8)"]),
        ({"nan_bias": True}, "logits", ["NaN or infinite logits on 899 of 899", "nothing was written"]),
    ],
    ids=["other-class-count", "other-input-shape", "nan-logits"],
)
def test_a_model_that_does_not_fit_the_dataset_stops_inference(tmp_path: Path, checkpoint_kwargs, field, texts) -> None:
    checkpoint = _digits_checkpoint(tmp_path / "model.pt", **checkpoint_kwargs)
    with pytest.raises(InputError) as info:
        _infer_digits(tmp_path, checkpoint)
    assert info.value.path == str(checkpoint) and info.value.field == field
    for text in texts:
        assert text in str(info.value), str(info.value)
    assert leftovers(tmp_path / "logits") == []


def test_a_fitting_checkpoint_gives_its_own_logits(tmp_path: Path) -> None:
    """The reference for the cases above: the same path with a fitting checkpoint writes logits
    equal to a plain forward pass."""
    import torch

    from classwise.data.digits import load_digits_split
    from classwise.models.checkpoint import load_checkpoint

    checkpoint = _digits_checkpoint(tmp_path / "model.pt")
    scores = load_scores(_infer_digits(tmp_path, checkpoint))
    _, test = load_digits_split(test_fraction=0.5, seed=0)
    model, _ = load_checkpoint(checkpoint)
    with torch.no_grad():
        expected = model(torch.from_numpy(test.images)).numpy()
    np.testing.assert_allclose(scores.scores, expected, rtol=1e-5, atol=1e-5)


def _arrays(n: int = 5, c: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "logits": rng.normal(size=(n, c)).astype(np.float32),
        "labels": np.arange(n) % c,
        "sample_ids": np.array([f"s{i}" for i in range(n)]),
        "class_names": np.array([f"c{j}" for j in range(c)]),
    }


def test_nan_logits_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    arrays = _arrays()
    arrays["logits"][[1, 4], 2] = [np.nan, -np.inf]
    target = tmp_path / "clean.npz"
    with pytest.raises(InputError) as info:
        save_logits(target, **arrays, metadata={})
    assert str(target) in str(info.value) and info.value.field == "logits" and "rows 1, 4" in str(info.value)
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------------- full disk


def _full_disk_after(calls: int):
    """A replacement for ``np.lib.format.write_array`` that writes ``calls`` arrays, then fails
    like a full disk (so a partial temporary exists when the error comes)."""
    original = np.lib.format.write_array
    count = {"n": 0}

    def write_array(*args, **kwargs):
        count["n"] += 1
        if count["n"] > calls:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(*args, **kwargs)

    return write_array


def test_full_disk_while_writing_logits_names_the_file_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "logits" / "clean.npz"
    monkeypatch.setattr(np.lib.format, "write_array", _full_disk_after(2))
    with pytest.raises(OSError) as info:
        save_logits(target, **_arrays(), metadata={"model": "m"})
    assert info.value.errno == errno.ENOSPC
    assert info.value.filename == str(target) and str(target) in str(info.value)
    assert leftovers(tmp_path) == []


def test_full_disk_while_writing_the_sidecar_leaves_no_logits_either(tmp_path: Path, monkeypatch) -> None:
    import classwise.atomic

    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "clean.npz"
    monkeypatch.setattr(classwise.atomic.json, "dump", no_space)
    with pytest.raises(OSError) as info:
        save_logits(target, **_arrays(), metadata={"model": "m"})
    assert info.value.filename == str(target.with_suffix(".json"))
    assert leftovers(tmp_path) == []  # the .npz is renamed into place only after its sidecar


def test_an_existing_pair_survives_a_failed_rewrite(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "clean.npz"
    save_logits(target, **_arrays(), metadata={"run": 1})
    before = {name: (tmp_path / name).read_bytes() for name in ("clean.npz", "clean.json")}
    monkeypatch.setattr(np.lib.format, "write_array", _full_disk_after(1))
    with pytest.raises(OSError):
        save_logits(target, **_arrays(6), metadata={"run": 2})
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    assert leftovers(tmp_path) == ["clean.json", "clean.npz"]


def test_other_errors_inside_an_atomic_write_keep_their_type_and_text(tmp_path: Path) -> None:
    """Only storage errors are renamed to the target: e.g. a refused connection inside a
    download keeps its own type (retries depend on it)."""
    from classwise.atomic import atomic_path

    with pytest.raises(ConnectionRefusedError) as info:
        with atomic_path(tmp_path / "x.bin"):
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
    assert info.value.filename is None
    assert leftovers(tmp_path) == []


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    """A 64 KiB tmpfs (needs mount privileges; skipped without them)."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_a_really_full_disk_names_the_file_and_leaves_nothing(tiny_tmpfs: Path) -> None:
    target = tiny_tmpfs / "clean.npz"
    with pytest.raises(OSError) as info:
        save_logits(target, **_arrays(n=40_000, c=10), metadata={})  # 1.6 MB of logits
    assert info.value.errno == errno.ENOSPC and str(target) in str(info.value)
    assert leftovers(tiny_tmpfs) == []


# --------------------------------------------------------------------------- bad files given to metric steps


def _worst_class_outputs(tmp_path: Path) -> dict[str, Path]:
    return {name: tmp_path / "out" / f"{name}.x" for name in ("metrics_path", "per_class_path", "confusion_path")}


@pytest.mark.parametrize(
    ("mutate", "field", "text"),
    [
        (lambda a: a.update(logits=a["logits"].astype(np.int32)), "logits", "expected a floating-point array, got dtype int32"),
        (lambda a: a.update(logits=a["logits"][:, :1]), "logits", "at least 1 sample and 2 classes"),
        (lambda a: a.update(labels=a["labels"][:-1]), "labels", "expected shape (5,)"),
        (lambda a: a["logits"].__setitem__((2, 0), np.inf), "logits", "NaN or infinite values in data row 2 (0-based)"),
    ],
    ids=["integer-logits", "one-column", "labels-too-short", "infinite"],
)
def test_a_bad_logits_file_stops_the_metric_step(tmp_path: Path, mutate, field: str, text: str) -> None:
    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    arrays = _arrays()
    mutate(arrays)
    path = tmp_path / "bad.npz"
    np.savez(path, logits=arrays["logits"], labels=arrays["labels"])
    outputs = _worst_class_outputs(tmp_path)
    settings = WorstClassSettings(superclasses={}, k=2, n=[2])
    with pytest.raises(InputError) as info:
        worst_class_step(logits_path=path, label_view="original", view_labels_path=None, settings=settings, **outputs)
    assert info.value.path == str(path) and info.value.field == field and text in str(info.value)
    assert leftovers(tmp_path / "out") == []


def test_a_label_view_of_the_wrong_length_stops_the_metric_step(tmp_path: Path) -> None:
    from classwise.labels.views import write_view
    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    logits = tmp_path / "clean.npz"
    arrays = _arrays()
    save_logits(logits, **arrays, metadata={})
    view = tmp_path / "view.csv"
    write_view(view, arrays["sample_ids"][:3], np.array([0, 1, -1]))  # 3 rows for 5 samples
    outputs = _worst_class_outputs(tmp_path)
    settings = WorstClassSettings(superclasses={}, k=2, n=[2])
    with pytest.raises(InputError) as info:
        worst_class_step(logits_path=logits, label_view="v", view_labels_path=view, settings=settings, **outputs)
    assert info.value.path == str(view) and info.value.field == "sample_id"
    assert "2 of 5 samples have no label" in str(info.value) and "'s3', 's4'" in str(info.value)
    assert leftovers(tmp_path / "out") == []


def test_a_published_label_file_of_the_wrong_length_names_itself(tmp_path: Path) -> None:
    from classwise.labels.imagenet_cleaned import read_label_file

    path = tmp_path / "labels.txt"
    path.write_text("1\n-1\n3\n")
    with pytest.raises(InputError) as info:
        read_label_file(path, n_expected=5)
    assert info.value.path == str(path) and info.value.field == "labels"
    assert "expected 5 lines (one per image), got 3" in str(info.value)


# --------------------------------------------------------------------------- SIGKILL and determinism


def test_the_same_checkpoint_saved_twice_has_the_same_bytes(tmp_path: Path) -> None:
    """torch.save names its zip folder after the file it is given; save_checkpoint writes through
    a handle, so the random temporary name of an atomic write does not reach the bytes."""
    first = _digits_checkpoint(tmp_path / "one" / "a.pt")
    second = _digits_checkpoint(tmp_path / "two" / "b.pt")
    assert first.read_bytes() == second.read_bytes()


KILL_CONFIG = {
    "datasets": {"digits": {"source": "sklearn_digits"}},
    "models": {"cnn": {"source": "train", "train_on": "digits", "architecture": "cnn", "epochs": 1, "seed": 0}},
    # 100 PGD steps keep the job busy for seconds after its progress bar appears.
    "shifts": {"clean": True, "pgd": [{"norm": "linf", "eps": 0.1, "steps": 100, "step_size": 0.01}]},
    "inference": {"batch_size": 128, "device": "cpu"},
}
# The clean inference runs beside the PGD one and is not killed; the PGD logits feed a table.
KILL_TARGETS = ["results/logits/digits/cnn/clean.npz", f"results/tables/digits/original/{PGD}/worst_class.csv"]
COMPARED = [
    "results/models/cnn.pt",
    *(f"results/logits/digits/cnn/{shift}.{ext}" for shift in ("clean", PGD) for ext in ("npz", "json")),
    f"results/metrics/digits/original/cnn/{PGD}/worst_class.json",
    *(f"results/tables/digits/original/{PGD}/worst_class.{ext}" for ext in ("csv", "md", "tex")),
]


@pytest.fixture(scope="module")
def uninterrupted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("uninterrupted")
    result = snakemake(workdir, write_config(workdir / "kill.yaml", copy.deepcopy(KILL_CONFIG)), *KILL_TARGETS)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


def _process_writing(root_pid: int, log: Path, snakemake_process: subprocess.Popen):
    """The process below ``root_pid`` that holds the job log ``log`` open, once the job has
    printed its progress bar (the model and data are loaded, inference is under way). Waits as
    long as Snakemake runs: on a loaded machine loading takes what it takes."""
    import psutil

    while True:
        assert snakemake_process.poll() is None, "Snakemake ended before the inference job could be killed"
        if log.exists() and "0/899" in log.read_text(errors="replace"):
            try:
                children = psutil.Process(root_pid).children(recursive=True)
            except psutil.NoSuchProcess:
                children = []
            for child in children:
                try:
                    if any(Path(f.path) == log for f in child.open_files()):
                        return child
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
        time.sleep(0.05)


def _job_stats(output: str) -> dict[str, int]:
    """Rule -> job count from Snakemake's "Job stats" table."""
    table = output[output.index("Job stats:") :].split("\n\n")[0].splitlines()[3:]
    return {line.split()[0]: int(line.split()[1]) for line in table if line.split() and line.split()[0] != "total"}


@pytest.mark.workflow
def test_sigkill_of_an_inference_job_then_rerun_gives_the_uninterrupted_results(uninterrupted_run: Path, tmp_path: Path) -> None:
    """Two independent runs of the same config (one of them killed and resumed) give
    byte-identical checkpoints, logits, metrics and tables (test_workflow.py checks two clean
    runs of the tiny demo)."""
    configfile = write_config(tmp_path / "kill.yaml", copy.deepcopy(KILL_CONFIG))
    logits = tmp_path / "results" / "logits" / "digits" / "cnn"
    log = (tmp_path / "results" / "logs" / "infer" / "digits" / "cnn" / f"{PGD}.log").resolve()
    with open(tmp_path / "killed_run.out", "w") as output:
        process = subprocess.Popen(
            snakemake_command(tmp_path, configfile, *KILL_TARGETS), stdout=output, stderr=subprocess.STDOUT, text=True
        )
        try:
            job = _process_writing(process.pid, log, process)
            assert not (logits / f"{PGD}.npz").exists(), "the PGD job finished before it could be killed"
            job.send_signal(signal.SIGKILL)
            assert process.wait() != 0
        finally:
            if process.poll() is None:
                process.kill()
    # The killed job left no output, under its name or a temporary one.
    assert not any(name.startswith(PGD) or name.startswith(f".{PGD}") for name in os.listdir(logits))
    rerun = snakemake(tmp_path, configfile, *KILL_TARGETS)
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    # The rerun ran the killed job and what depends on it: not the training, not the clean
    # inference that finished beside it.
    assert _job_stats(rerun.stdout + rerun.stderr) == {
        "infer": 1, "compute_worst_class_metrics": 1, "aggregate_worst_class_tables": 1,
    }  # fmt: skip
    assert f"output: results/logits/digits/cnn/{PGD}.npz" in rerun.stdout + rerun.stderr
    for relative in COMPARED:
        assert (tmp_path / relative).read_bytes() == (uninterrupted_run / relative).read_bytes(), relative
    assert not [name for name in os.listdir(logits) if name.startswith(".")]  # no temporaries
