"""Predictions beside the models classwise runs, on an image dataset's shifts (issue 28): a model
given by files of its outputs gives one per shift (a corruption, an attack, a published shift
set), keyed by the shift's name and matched by sample id, and sits in the same tables as the
models the pipeline runs.

A published set restricted to a class subset (ImageNet-R) is imported through the job's step on
a tiny stand-in: the file gives the dataset's classes, the cache keeps the subset's columns, as
inference does. The corruption and the attack run through Snakemake on the digits, beside a
trained linear model; the predictions model's numbers are checked against pandas on the test's
own files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from snakemake_runner import run_snakemake

from classwise.data.shift_sets import expand_shift_sets, open_shift
from classwise.data.sources import open_split
from classwise.data.stand_ins import IMAGENET_WNIDS, imagenet_val_fixture
from classwise.errors import InputError
from classwise.logits_io import load_outputs, load_scores
from classwise.steps.models import import_predictions_step

R_CLASSES = [0, 2]


def _imagenet_r(tmp_path: Path) -> tuple[dict, dict, np.ndarray, np.ndarray]:
    """A three-class ImageNet validation set and a copy of two of its classes as ImageNet-R:
    the dataset's config, the shift's JSON form, and the set's sample ids and labels."""
    val = imagenet_val_fixture(tmp_path / "imagenet", per_class=2)
    for c in R_CLASSES:
        wnid = IMAGENET_WNIDS[c]
        (tmp_path / "r" / "imagenet-r" / wnid).mkdir(parents=True)
        for source in sorted((val / "val" / wnid).iterdir()):
            (tmp_path / "r" / "imagenet-r" / wnid / source.name).write_bytes(source.read_bytes())
    dataset = {
        "source": "imagenet_val",
        "root": str(tmp_path / "imagenet"),
        "shift_sets": {"imagenet_r": {"root": str(tmp_path / "r")}},
    }
    spec = expand_shift_sets({"imagenet": dataset})["imagenet"]["imagenet_r"]
    images = open_shift(spec, dataset, dataset="imagenet").images
    return dataset, spec.to_json(), np.asarray(images.sample_ids).astype(str), np.asarray(images.labels)


def _import(tmp_path: Path, dataset: dict, shift: dict, outputs: Path) -> Path:
    cache = tmp_path / "cache" / "imagenet_r.npz"
    import_predictions_step(
        model_name="ext",
        model_cfg={"source": "predictions", "files": {"imagenet_r": str(outputs)}},
        dataset_name="imagenet",
        dataset_cfg=dataset,
        shift=shift,
        outputs_path=outputs,
        logits_path=cache,
    )
    return cache


def test_a_published_set_on_a_class_subset_keeps_the_subset_s_columns_of_the_user_s_scores(tmp_path: Path) -> None:
    dataset, shift, ids, labels = _imagenet_r(tmp_path)
    assert sorted(set(labels.tolist())) == R_CLASSES  # the set's labels are the dataset's class indices
    rng = np.random.default_rng(3)
    scores = rng.dirichlet(np.ones(3), ids.size)
    order = rng.permutation(ids.size)  # matched by id, not by position
    frame = pd.DataFrame(scores[order], columns=["score_0", "score_1", "score_2"])
    frame.insert(0, "sample_id", ids[order])
    frame.to_csv(tmp_path / "ext_r.csv", index=False)
    cached = load_scores(_import(tmp_path, dataset, shift, tmp_path / "ext_r.csv"))
    written = pd.read_csv(tmp_path / "ext_r.csv").set_index("sample_id").loc[cached.sample_ids.astype(str)]
    kept = written[["score_0", "score_2"]].to_numpy()
    np.testing.assert_allclose(cached.scores, kept / kept.sum(axis=1, keepdims=True))  # the softmax of the subset's logits
    by_id = dict(zip(ids, labels))
    np.testing.assert_array_equal(cached.labels, [R_CLASSES.index(by_id[i]) for i in cached.sample_ids.astype(str)])
    assert cached.class_names.size == 2
    assert np.asarray(cached.extra["class_indices"]).tolist() == R_CLASSES


def test_a_hard_prediction_outside_the_subset_is_refused_naming_the_sample(tmp_path: Path) -> None:
    dataset, shift, ids, labels = _imagenet_r(tmp_path)
    predicted = labels.copy()
    predicted[1] = 1  # class 1 is none of ImageNet-R's
    pd.DataFrame({"sample_id": ids, "prediction": predicted}).to_csv(tmp_path / "hard.csv", index=False)
    with pytest.raises(InputError, match=rf"keeps 2 of the dataset's 3 classes, and 1 predictions name another class.*{ids[1]}"):
        _import(tmp_path, dataset, shift, tmp_path / "hard.csv")
    predicted[1] = labels[1]
    pd.DataFrame({"sample_id": ids, "prediction": predicted}).to_csv(tmp_path / "hard.csv", index=False)
    cached = load_outputs(_import(tmp_path, dataset, shift, tmp_path / "hard.csv"))
    np.testing.assert_array_equal(cached.predictions, cached.labels)  # renumbered into the subset's columns


# ----------------------------------------------------------------------- beside trained models

DIGITS = {"source": "sklearn_digits", "test_fraction": 0.5, "split_seed": 0}
EXTERNAL_SHIFTS = {"clean": 0.9, "gaussian_noise_s3": 0.6, "pgd_linf_eps0.1": 0.3}


@pytest.fixture(scope="module")
def digits_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("predictions_on_shifts")
    test = open_split(dict(DIGITS), "test", name="digits")
    ids, labels = np.asarray(test.sample_ids).astype(str), np.asarray(test.labels)
    rng = np.random.default_rng(28)
    for shift, accuracy in EXTERNAL_SHIFTS.items():
        predicted = np.where(rng.random(ids.size) < accuracy, labels, rng.integers(0, 10, ids.size))
        order = rng.permutation(ids.size)
        pd.DataFrame({"sample_id": ids[order], "prediction": predicted[order]}).to_csv(work / f"ext_{shift}.csv", index=False)
    pd.DataFrame({"sample_id": ids, "label": labels}).to_csv(work / "truth.csv", index=False)
    config = {
        "datasets": {"digits": DIGITS},
        "models": {
            "linear": {"source": "train", "train_on": "digits", "architecture": "linear", "epochs": 2, "lr": 0.02, "seed": 0},
            "ext": {"source": "predictions", "files": {shift: f"ext_{shift}.csv" for shift in EXTERNAL_SHIFTS}},
        },
        "shifts": {
            "clean": True,
            "corruptions": ["gaussian_noise"],
            "severities": [3],
            "pgd": [{"norm": "linf", "eps": 0.1, "steps": 2, "step_size": 0.05, "random_start": True}],
        },
        "analyses": {name: {"enabled": False} for name in ("subset_tests", "reference_tests", "extrapolation")},
    }
    configfile = work / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    tables = "results/tables/digits/robustness"
    result = run_snakemake(work, configfile, f"{tables}/shift_summary.csv", f"{tables}/transformation_tests_ext.csv")
    assert result.returncode == 0, result.stderr[-4000:]
    return work


@pytest.mark.workflow
def test_a_predictions_model_sits_beside_a_trained_one_on_a_corruption_and_an_attack(digits_run: Path) -> None:
    work = digits_run
    summary = pd.read_csv(work / "results/tables/digits/robustness/shift_summary.csv").set_index(["shift", "model"])
    assert set(summary.index) == {(shift, model) for shift in EXTERNAL_SHIFTS for model in ("linear", "ext")}
    truth = pd.read_csv(work / "truth.csv", dtype={"sample_id": str}).set_index("sample_id")["label"]
    predicted = {
        shift: pd.read_csv(work / f"ext_{shift}.csv", dtype={"sample_id": str})
        .set_index("sample_id")["prediction"]
        .loc[truth.index]
        for shift in EXTERNAL_SHIFTS
    }
    for shift in EXTERNAL_SHIFTS:
        right = predicted[shift] == truth
        row = summary.loc[(shift, "ext")]
        assert row["n"] == truth.size
        assert row["accuracy"] == pytest.approx(right.mean())
        assert row["worst_class_accuracy"] == pytest.approx(right.groupby(truth).mean().min())
    tests = pd.read_csv(work / "results/tables/digits/robustness/transformation_tests_ext.csv").set_index("shift")
    flips = (predicted["gaussian_noise_s3"] != predicted["clean"]).mean()
    assert tests.loc["gaussian_noise_s3", "flip_rate"] == pytest.approx(flips)
