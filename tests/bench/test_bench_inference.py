"""``python -m classwise.bench.inference`` at a tiny size: every key of every case, rates that
agree with each other, and the overlapped logits equal to the sequential ones (no timing goal
is asserted: the machine's load decides those)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from classwise.bench.inference import main, stand_in_model

KEYS = {"decode_images_per_s", "model_images_per_s", "pipeline_images_per_s", "efficiency", "decoded_images_per_model_shift"}


def test_the_stand_in_model_takes_its_time_and_gives_the_same_logits_every_call() -> None:
    model = stand_in_model(0.05, n_classes=3)
    x = torch.rand(2, 3, 8, 8)
    start = time.perf_counter()
    first = model(x)
    assert time.perf_counter() - start >= 0.05
    assert first.shape == (2, 3) and torch.equal(first, model(x))
    assert not torch.equal(first, stand_in_model(0.0, n_classes=3, seed=1)(x))  # another model
    torch.testing.assert_close(first, x.mean(dim=(2, 3)) @ model.head)


def test_a_tiny_run_writes_every_key_per_case(tmp_path: Path) -> None:
    out = tmp_path / "inference.json"
    main(["--out", str(out), "--classes", "2", "--images-per-class", "3", "--batch-size", "2", "--repeats", "1"])
    results = json.loads(out.read_text())
    assert set(results["cases"]) == {"clean", "gaussian_noise_s3"}
    assert results["machine"]["load_average_1min_at_start"] is not None
    for row in results["cases"].values():
        assert KEYS <= set(row)
        assert row["images"] == 6 and row["batches"] == 3
        assert row["decoded_images_per_model_shift"] == 6  # every image once, in the pipeline run
        # four models sharing each decode: the set decoded once for all of them
        assert row["shared_decode"] == {
            "models": 4, "decoded_images": 6, "decoded_images_per_model_shift": 1.5, "identical_logits": True
        }  # fmt: skip
        assert row["identical_logits"] is True
        assert min(row[key] for key in KEYS) > 0
        slower = min(row["decode_images_per_s"], row["model_images_per_s"])
        assert row["efficiency"] == pytest.approx(row["pipeline_images_per_s"] / slower)
        # the stand-in sleeps its time on every batch: never faster than that
        assert row["model_seconds_per_batch"] > 0
        assert row["model_images_per_s"] <= row["images"] / (row["batches"] * row["model_seconds_per_batch"])
        assert len(row["efficiency_per_round"]) == 1
