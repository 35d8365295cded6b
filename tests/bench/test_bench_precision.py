"""``python -m classwise.bench.precision`` at a tiny size: fp32 is its own reference, the other
settings' figures are recomputed from their definitions on logits made independently."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from classwise.bench.precision import SETTINGS, main


def test_a_tiny_run_reports_flips_and_the_change_of_a_and_wca(tmp_path: Path) -> None:
    out = tmp_path / "precision.json"
    main(["--out", str(out), "--epochs", "1", "--samples", "40"])
    results = json.loads(out.read_text())
    assert results["samples"] == 40 and set(results["shifts"]) == {"clean", "gaussian_noise_s3", "pgd_linf_eps0.05"}
    for rows in results["shifts"].values():
        assert set(rows) == set(SETTINGS)
        assert rows["fp32"]["flipped"] == 0 and rows["fp32"]["max_abs_logit_difference"] == 0
        for row in rows.values():
            assert 0 <= row["flipped"] <= 1 and 0 <= row["worst_class_accuracy"] <= row["accuracy"] <= 1
            assert row["delta_accuracy"] == pytest.approx(row["accuracy"] - rows["fp32"]["accuracy"])
            # one flip changes A by at most 1/n
            assert abs(row["delta_accuracy"]) <= row["flipped"] + 1e-12
        assert rows["bf16"]["max_abs_logit_difference"] > 0  # autocast did change the arithmetic


def test_the_accuracies_are_those_of_the_logits_by_hand(tmp_path: Path) -> None:
    """A and WCA of the clean fp32 row against numpy on logits of an independent predict_logits call."""
    from classwise.data import load_digits_split
    from classwise.inference.execution import Execution
    from classwise.inference.stream import predict_logits
    from classwise.models import Hyperparameters, build_model, train_model
    from classwise.shifts import expand_shifts

    out = tmp_path / "precision.json"
    main(["--out", str(out), "--epochs", "1", "--samples", "30"])
    row = json.loads(out.read_text())["shifts"]["clean"]["fp32"]
    train, test = load_digits_split(test_fraction=0.3, seed=0)
    test = test.subset(np.arange(30))
    model = build_model("cnn", n_classes=10, input_shape=test.input_shape, seed=0)
    train_model(model, train, hyperparameters=Hyperparameters(epochs=1, lr=0.01, batch_size=64, seed=0), device="cpu")
    logits = predict_logits(model, test, expand_shifts({"clean": True})["clean"], base_seed=0, execution=Execution("cpu"))
    hits = logits.argmax(1) == test.labels
    recalls = [hits[test.labels == c].mean() for c in np.unique(test.labels)]
    assert row["accuracy"] == pytest.approx(hits.mean()) and row["worst_class_accuracy"] == pytest.approx(min(recalls))
