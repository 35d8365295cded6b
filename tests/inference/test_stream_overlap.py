"""Inference that keeps an accelerator busy (issue #29): batches made ahead of the model by a
background thread, one decode for several models, mixed precision and channels-last, halving
the batch on a CUDA out-of-memory error. Everything runs on the CPU with stand-in models."""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from config_matrix import checkpoint_entry, write_checkpoint, write_image_folder
from torch import nn

from classwise.data import ImageSet, load_digits_split
from classwise.errors import InputError
from classwise.inference.execution import Execution
from classwise.inference.stream import predict_logits, stream_logits
from classwise.models import Hyperparameters, build_model, train_model
from classwise.shifts import expand_shifts
from classwise.shifts.corruptions import corrupt_batch
from classwise.shifts.seeding import sample_seed
from classwise.steps.models import InferenceSettings, InferTarget, _infer, infer_group_step, infer_step

SHIFTS = expand_shifts(
    {
        "clean": True,
        "corruptions": ["gaussian_noise"],
        "severities": [3],
        "pgd": [{"norm": "linf", "eps": 0.1, "steps": 3, "step_size": 0.05, "random_start": True}],
        "autoattack": [{"norm": "linf", "eps": 0.3}],  # APGD-CE fools every sample: the cheap case
        "transfer": [{"source": "other", "attack": "pgd_linf_eps0.1"}],
    }
)
#: The AutoAttack rows are the slow ones: a few samples.
SAMPLES = {"autoattack_linf_eps0.3": 8}


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Models this small run fastest on one torch thread; on a loaded machine two threads' barriers
    slow AutoAttack's step-by-step loops many times over."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _prefetch_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "classwise-prefetch"]


@pytest.fixture(scope="module")
def setup() -> tuple[nn.Module, nn.Module, ImageSet]:
    """Two models trained briefly on the digits, and 60 test images."""
    train, test = load_digits_split(test_fraction=0.3, seed=0)
    models = []
    for seed, architecture in ((0, "linear"), (1, "mlp")):
        model = build_model(architecture, n_classes=10, input_shape=(1, 8, 8), seed=seed)
        train_model(model, train, hyperparameters=Hyperparameters(epochs=2, lr=0.01, batch_size=64, seed=seed))
        models.append(model)
    return models[0], models[1], test.subset(np.arange(60))


@pytest.mark.parametrize("name", list(SHIFTS))
def test_batches_made_ahead_give_the_bytes_of_batches_made_one_after_the_other(setup, name: str) -> None:  # type: ignore[no-untyped-def]
    model, other, test = setup
    test = test.subset(np.arange(SAMPLES.get(name, len(test))))
    options = {"base_seed": 5, "batch_size": 4 if name in SAMPLES else 8, "execution": Execution("cpu"), "source_model": other}
    ahead = predict_logits(model, test, SHIFTS[name], prefetch=2, **options)
    in_turn = predict_logits(model, test, SHIFTS[name], prefetch=0, **options)
    assert ahead.dtype == np.float32 and ahead.shape == (len(test), 10)
    assert ahead.tobytes() == in_turn.tobytes()
    assert not _prefetch_threads()


def test_corrupted_logits_are_the_bytes_of_a_plain_loop(setup) -> None:  # type: ignore[no-untyped-def]
    """The reference: each batch corrupted with its samples' seeds, then the model, by hand."""
    model, _, test = setup
    spec = SHIFTS["gaussian_noise_s3"]
    logits = predict_logits(model, test, spec, base_seed=5, batch_size=16, execution=Execution("cpu"))
    expected = []
    model.eval()
    for start in range(0, len(test), 16):
        ids = test.sample_ids[start : start + 16]
        seeds = [sample_seed(5, spec.name, str(sid)) for sid in ids]
        images = corrupt_batch(test.images[start : start + 16], "gaussian_noise", 3, seeds)
        with torch.inference_mode():
            expected.append(model(torch.from_numpy(images)).numpy())
    assert logits.tobytes() == np.concatenate(expected).tobytes()


class _Waiting(nn.Module):
    """Passes its input through ``inner``; on its first batch it first waits until the next
    batch is being made (``started[1]``), which only a background thread can do meanwhile."""

    def __init__(self, inner: nn.Module, started: list[threading.Event]) -> None:
        super().__init__()
        self.inner, self.started, self.calls = inner, started, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 1:
            # a guard against a hang, not a timing: the event is set as soon as the thread runs
            assert self.started[1].wait(timeout=120), "batch 2 was not made while the model ran batch 1"
        return self.inner(x)


def _chunks(test: ImageSet, size: int, started: list[threading.Event], closed: threading.Event) -> Iterator[ImageSet]:
    try:
        for i, start in enumerate(range(0, len(test), size)):
            started[i].set()
            yield test.subset(np.arange(start, min(start + size, len(test))))
    finally:
        closed.set()


def test_the_next_batch_is_made_while_the_model_runs_and_the_thread_is_joined(setup) -> None:  # type: ignore[no-untyped-def]
    model, _, test = setup
    started = [threading.Event() for _ in range(0, len(test), 20)]
    closed = threading.Event()
    waiting = _Waiting(model, started)
    spec = SHIFTS["gaussian_noise_s3"]
    with stream_logits(
        [waiting], _chunks(test, 20, started, closed), spec, n_classes=10, base_seed=5, batch_size=20, execution=Execution("cpu")
    ) as batches:
        logits = np.concatenate([out for _, (out,) in batches])
    assert closed.is_set() and not _prefetch_threads()
    assert logits.tobytes() == predict_logits(model, test, spec, base_seed=5, batch_size=20, execution=Execution("cpu")).tobytes()


def test_an_error_of_the_model_stops_and_joins_the_thread(setup) -> None:  # type: ignore[no-untyped-def]
    _, _, test = setup

    class Failing(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("the model failed")

    def endless() -> Iterator[ImageSet]:
        while True:
            yield test

    with pytest.raises(ValueError, match="the model failed"):
        with stream_logits(
            [Failing()], endless(), SHIFTS["clean"], n_classes=10, base_seed=0, batch_size=8, execution=Execution("cpu")
        ) as b:
            list(b)
    assert not _prefetch_threads()


def test_an_error_while_making_a_batch_reaches_the_caller(setup) -> None:  # type: ignore[no-untyped-def]
    model, _, test = setup

    def unreadable() -> Iterator[ImageSet]:
        yield test
        raise InputError("cannot read image", path="data/a/broken.png", field="image")

    with pytest.raises(InputError, match="broken.png"):
        with stream_logits(
            [model], unreadable(), SHIFTS["clean"], n_classes=10, base_seed=0, batch_size=8, execution=Execution("cpu")
        ) as b:
            list(b)
    assert not _prefetch_threads()


# --------------------------------------------------------------------------- one decode, several models


def test_several_models_fed_from_one_stream_get_their_own_logits(setup) -> None:  # type: ignore[no-untyped-def]
    model, other, test = setup
    spec = SHIFTS["gaussian_noise_s3"]
    with stream_logits(
        [model, other], [test], spec, n_classes=10, base_seed=2, batch_size=16, execution=Execution("cpu")
    ) as batches:
        pairs = [outputs for _, outputs in batches]
    for i, single in enumerate((model, other)):
        expected = predict_logits(single, test, spec, base_seed=2, batch_size=16, execution=Execution("cpu"))
        assert np.concatenate([outputs[i] for outputs in pairs]).tobytes() == expected.tobytes()
    with pytest.raises(InputError, match="each model needs its own"):
        with stream_logits([model, other], [test], SHIFTS["pgd_linf_eps0.1"], n_classes=10, base_seed=2) as batches:
            list(batches)


@pytest.fixture(scope="module")
def image_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, tuple[dict[str, Any], Path]]]:
    """An image folder (3 classes, 5 images each) and two checkpoints of one data config."""
    root = tmp_path_factory.mktemp("images")
    write_image_folder(root / "data", 3, per_class=5, seed=0)
    models = {}
    for seed, name in enumerate(("net_a", "net_b")):
        write_checkpoint(root / f"{name}.pth", 3, seed=seed)
        models[name] = (checkpoint_entry(root / f"{name}.pth", 3), root / f"{name}.pth")
    return {"source": "image_folder", "root": str(root / "data")}, models


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from classwise.models import data_config

    count = [0]
    original = data_config.preprocess_image

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(data_config, "preprocess_image", counted)
    return count


@pytest.mark.parametrize("shift", ["clean", "gaussian_noise_s3"])
def test_one_decode_for_two_models_writes_the_bytes_of_their_own_jobs(
    tmp_path: Path, image_models, monkeypatch: pytest.MonkeyPatch, shift: str
) -> None:  # type: ignore[no-untyped-def]
    dataset, models = image_models
    settings = InferenceSettings(
        dataset_name="shapes", dataset=dataset, shift=SHIFTS[shift].to_json(), seed=4, batch_size=4, device="cpu"
    )
    decodes = _count_decodes(monkeypatch)
    for name, (cfg, weights) in models.items():
        infer_step(model=InferTarget(name, cfg, weights, tmp_path / f"{name}.npz"), settings=settings)
    assert decodes[0] == 2 * 15  # one job per model: each decodes the 15 images
    decodes[0] = 0
    targets = [InferTarget(name, cfg, weights, tmp_path / "together" / f"{name}.npz") for name, (cfg, weights) in models.items()]
    infer_group_step(models=targets, group_dir=tmp_path / "group", models_per_decode=2, settings=settings, threads=1)
    assert decodes[0] == 15  # once for both
    for name in models:
        for suffix in (".npz", ".json"):
            together = (tmp_path / "together" / name).with_suffix(suffix).read_bytes()
            assert together == (tmp_path / name).with_suffix(suffix).read_bytes(), (name, suffix)


def test_one_decode_refuses_models_of_other_data_configs(tmp_path: Path, image_models) -> None:  # type: ignore[no-untyped-def]
    dataset, models = image_models
    (cfg_a, weights_a), (cfg_b, weights_b) = models.values()
    cfg_b = {**cfg_b, "data_config": {"input_size": [3, 12, 12]}}
    targets = [
        InferTarget("net_a", cfg_a, weights_a, tmp_path / "a.npz"),
        InferTarget("net_b", cfg_b, weights_b, tmp_path / "b.npz"),
    ]
    # infer_group_step never asks it (it batches models by decoding): the guard of the one stream
    with pytest.raises(InputError, match="'net_b' preprocesses images otherwise than 'net_a'") as info:
        settings = InferenceSettings(
            dataset_name="shapes", dataset=dataset, shift=SHIFTS["clean"].to_json(), seed=0, batch_size=4, device="cpu"
        )
        _infer(targets, settings=settings, progress=None, threads=1)
    assert info.value.field == "models" and not list(tmp_path.glob("*.npz"))


def test_a_group_job_runs_only_its_missing_and_stale_models_and_writes_their_own_bytes(
    tmp_path: Path, image_models, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The job of rule infer_models_<dataset> (classwise.pipeline.decode_groups): one decode per
    batch of models, each file its own job's bytes, and a rerun computes only what changed, the
    rest taken back from the group's own copies (Snakemake removes a job's outputs first)."""
    dataset, models = image_models
    (cfg_a, weights_a), (cfg_b, weights_b) = models.values()
    settings = InferenceSettings(
        dataset_name="shapes", dataset=dataset, shift=SHIFTS["gaussian_noise_s3"].to_json(), seed=4, batch_size=4, device="cpu"
    )
    for name, (cfg, weights) in models.items():
        infer_step(model=InferTarget(name, cfg, weights, tmp_path / "own" / f"{name}.npz"), settings=settings)
    out, kept = tmp_path / "logits", tmp_path / "group"
    net_a = InferTarget("net_a", cfg_a, weights_a, out / "net_a.npz")
    net_b = InferTarget("net_b", cfg_b, weights_b, out / "net_b.npz")
    decodes = _count_decodes(monkeypatch)

    def run(*targets: InferTarget, per_decode: int = 2) -> str:
        decodes[0] = 0
        for path in out.glob("*"):  # as Snakemake does before the job runs
            path.unlink()
        log = io.StringIO()
        infer_group_step(models=targets, group_dir=kept, models_per_decode=per_decode, settings=settings, progress=log)
        return log.getvalue()

    def same_as_own(name: str) -> bool:
        return all(
            (out / name).with_suffix(suffix).read_bytes() == (tmp_path / "own" / name).with_suffix(suffix).read_bytes()
            for suffix in (".npz", ".json")
        )

    run(net_a)
    assert decodes[0] == 15 and same_as_own("net_a")
    log = run(net_a, net_b)  # a model added: it alone runs, net_a's file comes back from the group's copy
    assert decodes[0] == 15 and "1 of 2 models up to date, kept (net_a)" in log
    assert "computing net_b (no record of what its files were made from)" in log
    assert same_as_own("net_a") and same_as_own("net_b")
    assert sorted(path.name for path in kept.iterdir()) == ["net_a", "net_b"]
    assert all((kept / name / "_record.json").is_file() for name in ("net_a", "net_b"))
    assert "2 of 2 models up to date" in run(net_a, net_b) and decodes[0] == 0  # nothing stale: nothing runs
    assert same_as_own("net_a") and same_as_own("net_b")
    # net_b's entry changed (another input size: another decoding than net_a's): net_b alone runs
    net_b_small = InferTarget("net_b", {**cfg_b, "data_config": {"input_size": [3, 12, 12]}}, weights_b, out / "net_b.npz")
    assert "computing net_b (made from other parameters)" in run(net_a, net_b_small) and decodes[0] == 15
    assert same_as_own("net_a") and not same_as_own("net_b")
    assert "computing net_b (made from other parameters)" in run(net_a, net_b) and same_as_own("net_b")  # and back
    # net_b's weights newer than its copy (retrained): net_b alone runs
    later = (kept / "net_b" / "0-net_b.npz").stat().st_mtime + 10
    os.utime(weights_b, (later, later))
    assert f"computing net_b ({weights_b} is newer)" in run(net_a, net_b) and decodes[0] == 15 and same_as_own("net_b")
    # no records: every file is remade; two decodings in one job are two passes, not an error
    for name in ("net_a", "net_b"):
        (kept / name / "_record.json").unlink()
    run(net_a, net_b_small)
    assert decodes[0] == 2 * 15
    # one model per decode: every model its own pass, as infer's jobs; net_b_small's copy goes
    (kept / "net_a" / "_record.json").unlink()
    run(net_a, per_decode=1)
    assert decodes[0] == 15 and sorted(path.name for path in kept.iterdir()) == ["net_a"]


def test_a_group_job_that_fails_records_only_the_models_it_finished(tmp_path: Path, image_models) -> None:  # type: ignore[no-untyped-def]
    dataset, models = image_models
    (cfg_a, weights_a), (cfg_b, weights_b) = models.values()
    broken = tmp_path / "broken.pth"
    broken.write_bytes(b"not a checkpoint")
    settings = InferenceSettings(
        dataset_name="shapes", dataset=dataset, shift=SHIFTS["clean"].to_json(), seed=4, batch_size=4, device="cpu"
    )
    common = {"group_dir": tmp_path / "group", "models_per_decode": 1, "settings": settings}
    net_a = InferTarget("net_a", cfg_a, weights_a, tmp_path / "logits" / "net_a.npz")
    with pytest.raises(Exception):  # noqa: B017 (whatever torch says of a file that is no checkpoint)
        infer_group_step(models=[net_a, InferTarget("net_b", cfg_b, broken, tmp_path / "logits" / "net_b.npz")], **common)
    assert (tmp_path / "group" / "net_a" / "_record.json").is_file()
    assert not (tmp_path / "group" / "net_b" / "_record.json").exists()
    log = io.StringIO()
    net_b = InferTarget("net_b", cfg_b, weights_b, tmp_path / "logits" / "net_b.npz")
    infer_group_step(models=[net_a, net_b], progress=log, **common)
    assert "kept (net_a)" in log.getvalue() and "computing net_b" in log.getvalue()


# --------------------------------------------------------------------------- precision and layout


@pytest.fixture(scope="module")
def cnn() -> tuple[nn.Module, ImageSet]:
    train, test = load_digits_split(test_fraction=0.3, seed=0)
    model = build_model("cnn", n_classes=10, input_shape=(1, 8, 8), seed=0)
    train_model(model, train, hyperparameters=Hyperparameters(epochs=1, lr=0.01, batch_size=64, seed=0))
    return model, test.subset(np.arange(80))


@pytest.mark.parametrize(("precision", "channels_last"), [("bf16", False), ("fp16", False), ("fp32", True), ("bf16", True)])
def test_low_precision_and_channels_last_are_close_to_fp32_and_leave_the_model_as_it_was(
    cnn: tuple[nn.Module, ImageSet], precision: str, channels_last: bool
) -> None:
    model, test = cnn
    before = {name: (p.detach().clone(), p.is_contiguous()) for name, p in model.named_parameters()}
    spec = SHIFTS["clean"]
    fp32 = predict_logits(model, test, spec, base_seed=0, batch_size=32, execution=Execution("cpu"))
    options = {"base_seed": 0, "batch_size": 32, "execution": Execution("cpu", precision, channels_last)}
    low = predict_logits(model, test, spec, **options)
    assert low.dtype == np.float32 and low.tobytes() == predict_logits(model, test, spec, **options).tobytes()
    tolerance = {"fp32": 1e-4, "fp16": 2e-2, "bf16": 1e-1}[precision] * float(np.abs(fp32).max())
    np.testing.assert_allclose(low, fp32, atol=tolerance)
    if precision != "fp32":
        assert not np.array_equal(low, fp32)  # the arithmetic did change
    assert (low.argmax(1) == fp32.argmax(1)).mean() >= 0.9
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name][0]) and p.is_contiguous() == before[name][1]


def test_pgd_runs_under_autocast(setup) -> None:  # type: ignore[no-untyped-def]
    model, _, test = setup
    spec = SHIFTS["pgd_linf_eps0.1"]
    fp32 = predict_logits(model, test, spec, base_seed=1, batch_size=16, execution=Execution("cpu"))
    bf16 = predict_logits(model, test, spec, base_seed=1, batch_size=16, execution=Execution("cpu", "bf16"))
    clean = predict_logits(model, test, SHIFTS["clean"], base_seed=1, execution=Execution("cpu"))
    assert np.isfinite(bf16).all() and not np.array_equal(bf16, fp32)
    assert (bf16.argmax(1) == test.labels).mean() < (clean.argmax(1) == test.labels).mean()  # still an attack


@pytest.mark.parametrize(
    ("settings", "field"),
    [({"precision": "fp64"}, "inference.precision"), ({"channels_last": "yes"}, "inference.channels_last")],
)
def test_a_bad_precision_or_layout_names_the_file_and_field(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        Execution.from_config({"device": "auto", **settings}, source="my.yaml")
    assert info.value.path == "my.yaml" and info.value.field == field
    assert "fp64" in str(info.value) or "'yes'" in str(info.value)


def test_the_rule_parameter_is_the_device_alone_at_the_defaults() -> None:
    assert Execution.from_config({"device": "cuda", "precision": "fp32", "channels_last": False}).parameter() == "cuda"
    bf16 = Execution.from_config({"device": "auto", "precision": "bf16"})
    assert bf16.parameter() == {"device": "auto", "precision": "bf16", "channels_last": False}
    assert Execution.from_parameter(bf16.parameter()) == bf16 and Execution.from_parameter("cpu") == Execution("cpu")
    assert Execution("cpu").sidecar() == {} and bf16.sidecar() == {"inference": {"precision": "bf16", "channels_last": False}}


def test_the_sidecar_records_precision_and_layout_only_when_not_the_defaults(tmp_path: Path, image_models) -> None:  # type: ignore[no-untyped-def]
    dataset, models = image_models
    cfg, weights = models["net_a"]
    settings = {"dataset_name": "shapes", "dataset": dataset, "shift": SHIFTS["clean"].to_json(), "seed": 0, "batch_size": 8}
    infer_step(
        model=InferTarget("net_a", cfg, weights, tmp_path / "fp32.npz"), settings=InferenceSettings(device="cpu", **settings)
    )
    bf16 = InferenceSettings(device={"device": "cpu", "precision": "bf16", "channels_last": True}, **settings)
    infer_step(model=InferTarget("net_a", cfg, weights, tmp_path / "bf16.npz"), settings=bf16)
    fp32, bf16 = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("fp32", "bf16"))
    assert "inference" not in fp32 and bf16.pop("inference") == {"precision": "bf16", "channels_last": True}
    assert bf16 == fp32


# --------------------------------------------------------------------------- out of memory


class _SmallMemory(nn.Module):
    """``inner``, except that a batch of more than ``fits`` images raises CUDA's out-of-memory
    error, as a GPU does (the attacks' passes too)."""

    def __init__(self, inner: nn.Module, fits: int) -> None:
        super().__init__()
        self.inner, self.fits = inner, fits
        self.sizes: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.sizes.append(x.shape[0])
        if x.shape[0] > self.fits:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return self.inner(x)


@pytest.mark.parametrize("name", ["clean", "gaussian_noise_s3", "pgd_linf_eps0.1", "autoattack_linf_eps0.3"])
def test_out_of_memory_halves_the_batch_and_gives_a_run_at_the_smaller_size(setup, caplog, name: str) -> None:  # type: ignore[no-untyped-def]
    """64 -> 32 -> 16 on the first batch; then every batch in pieces of 16, as a run at batch
    size 16 (AutoAttack too: its first draws come after the back-off)."""
    model, _, test = setup
    test = test.subset(np.arange(24 if name in SAMPLES else len(test)))  # more than fit in one piece
    small = _SmallMemory(model, fits=16)
    with caplog.at_level(logging.WARNING, logger="classwise.inference.stream"):
        backed_off = predict_logits(small, test, SHIFTS[name], base_seed=3, batch_size=64, execution=Execution("cpu"))
    at_16 = predict_logits(model, test, SHIFTS[name], base_seed=3, batch_size=16, execution=Execution("cpu"))
    assert backed_off.tobytes() == at_16.tobytes()
    warnings = [r.getMessage() for r in caplog.records if "out of memory" in r.getMessage()]
    assert len(warnings) == 2 and "batch size 64" in warnings[0] and "going on at batch size 16" in warnings[1]
    assert max(small.sizes[-3:]) <= 16


def test_out_of_memory_at_one_image_is_raised(setup) -> None:  # type: ignore[no-untyped-def]
    model, _, test = setup
    with pytest.raises(torch.cuda.OutOfMemoryError):
        predict_logits(_SmallMemory(model, fits=0), test, SHIFTS["clean"], base_seed=0, batch_size=4, execution=Execution("cpu"))
    assert not _prefetch_threads()
