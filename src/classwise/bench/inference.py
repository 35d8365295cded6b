"""Inference overlap benchmark (``python -m classwise.bench.inference``, part of ``make bench``).

Does inference keep an accelerator busy? Without a GPU the accelerator is a stand-in: a model
that takes a fixed time per batch (``time.sleep``, which releases the GIL as a GPU kernel does)
and returns cheap logits. The images are a generated ImageNet-shaped folder: random JPEGs of
500 x 375 pixels in a few class folders, decoded with ImageNet's evaluation preprocessing
(resize 256, centre crop 224, bilinear). Each case (``clean`` and one corruption) reports:

* ``decode_images_per_s``: the CPU side alone: decoding, preprocessing and the shift (the
  corruption) of every image, in ``decode_threads`` decoding threads, the model taking no time;
  ``decode_images_per_s_per_thread`` divides it by the threads (per core with one thread).
* ``model_images_per_s``: the stand-in model alone on batches already made: ``batch_size``
  over its time per batch. The time per batch is set so that the model is as fast as the
  decoding measured just before (``balanced``, the hardest case for overlap), or given.
* ``pipeline_images_per_s``: both, as ``infer`` runs them
  (:func:`classwise.inference.stream.stream_logits`: the next batches made by a background thread
  while the model runs); ``sequential_images_per_s`` the same with ``prefetch=0`` (one after
  the other, the path before issue 29), for comparison.
* ``efficiency`` = pipeline / min(decode, model): 1 when the slower side never waits for the
  other; one batch of filling and one of draining bound it by ``batches / (batches + 1)``.
  Target: at least 0.9 when balanced (:data:`EFFICIENCY_GOAL`).
* ``decoded_images_per_model_shift``: images decoded per (model, shift) pair in the pipeline
  run: every image once for its one model and shift.
* ``shared_decode``: ``models`` stand-in models (each its own weights) of one data config fed from one stream, as an
  ``infer_models_<dataset>`` job feeds them (``inference.models_per_decode``): the images
  decoded in all (``decoded_images``, the set once, not once per model), per (model, shift)
  (``decoded_images_per_model_shift`` = images / models), and whether each model's logits are
  those of its own run (``identical_logits``).

The four runs take turns over ``repeats`` rounds; each rate is the best round's (the round least
slowed by other processes), and ``efficiency_per_round`` pairs the runs of each round. The
1-minute load average is recorded at start and end. The logits of the pipeline and the
sequential runs are compared byte for byte (``identical_logits``).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from classwise.atomic import write_json
from classwise.bench.pipeline import load_average

EFFICIENCY_GOAL = 0.9
"""Pipeline images/s over the slower side's images/s, when both sides are balanced."""
STORED_SIZE = (375, 500)
"""(height, width) of the generated JPEGs: the typical ImageNet validation image."""
IMAGENET_EVAL = {
    "input_size": (3, 224, 224),
    "interpolation": "bilinear",
    "crop_pct": 0.875,
    "crop_mode": "center",
    "mean": (0.485, 0.456, 0.406),
    "std": (0.229, 0.224, 0.225),
}
CASES = {
    "clean": {"name": "clean", "kind": "clean", "params": {}},
    "gaussian_noise_s3": {
        "name": "gaussian_noise_s3",
        "kind": "corruption",
        "params": {"corruption": "gaussian_noise", "severity": 3},
    },
}


def stand_in_model(seconds_per_batch: float, n_classes: int, seed: int = 0) -> Any:
    """A module that sleeps ``seconds_per_batch`` per call (an accelerator busy for that long)
    and returns each image's mean per channel through a fixed linear map (drawn from ``seed``):
    ``n_classes`` logits."""
    import torch
    from torch import nn

    class SleepingModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            generator = torch.Generator().manual_seed(seed)
            self.head = nn.Parameter(torch.randn(3, n_classes, generator=generator), requires_grad=False)
            self.seconds = seconds_per_batch

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.seconds > 0:
                time.sleep(self.seconds)
            return x.mean(dim=(2, 3)) @ self.head

    return SleepingModel()


def _best(rounds: int, run: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest wall time of ``rounds`` calls of ``run``, and the last call's result."""
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def bench_case(
    shift_json: dict[str, Any],
    root: Path,
    *,
    batch_size: int,
    decode_threads: int,
    repeats: int,
    seconds_per_batch: float | None,
    shared_models: int = 4,
) -> dict[str, Any]:
    """One case's row (see the module docstring); ``shared_models``: the models of the shared
    decode's run."""
    import torch

    from classwise.data.sources import open_split
    from classwise.inference.execution import Execution
    from classwise.inference.stream import stream_logits
    from classwise.models.data_config import DataConfig, preprocess_image
    from classwise.shifts.spec import ShiftSpec

    config = DataConfig.from_timm(IMAGENET_EVAL, origin="ImageNet evaluation")
    spec = ShiftSpec.from_json(shift_json)
    dataset = open_split({"source": "image_folder", "root": str(root)}, "test", name="bench")
    n_images, n_classes = len(dataset), len(dataset.class_names)
    decodes = [0]
    lock = threading.Lock()

    def transform(image: Any) -> np.ndarray:
        with lock:
            decodes[0] += 1
        return preprocess_image(image, config).numpy()

    def run(model: Any, prefetch: int) -> np.ndarray:
        chunks = dataset.iter_batches(batch_size, transform, workers=decode_threads)
        with stream_logits(
            [model],
            chunks,
            spec,
            n_classes=n_classes,
            base_seed=0,
            batch_size=batch_size,
            execution=Execution("cpu"),
            prefetch=prefetch,
        ) as batches:
            return np.concatenate([logits for _, (logits,) in batches])

    def run_shared(models: list[Any]) -> list[np.ndarray]:
        """``models`` fed from one stream: each batch decoded and shifted once for all."""
        chunks = dataset.iter_batches(batch_size, transform, workers=decode_threads)
        with stream_logits(
            models, chunks, spec, n_classes=n_classes, base_seed=0, batch_size=batch_size, execution=Execution("cpu"), prefetch=2
        ) as batches:
            per_batch = [outputs for _, outputs in batches]
        return [np.concatenate([outputs[i] for outputs in per_batch]) for i in range(len(models))]

    free = stand_in_model(0.0, n_classes)
    run(free, 0)  # warm-up, untimed: imports (albumentations), caches
    n_batches = -(-n_images // batch_size)
    if seconds_per_batch is None:  # balanced: the model as fast as the decoding
        seconds_per_batch = _best(1, lambda: run(free, 0))[0] / n_batches
    model = stand_in_model(seconds_per_batch, n_classes)
    made = [torch.zeros((min(batch_size, n_images - i), *config.input_size)) for i in range(0, n_images, batch_size)]

    def model_alone() -> None:
        with torch.inference_mode():
            for batch in made:
                model(batch)

    # the four runs take turns, round after round, so that load from other processes falls on
    # each alike; a round's efficiency compares runs made seconds apart
    times: dict[str, list[float]] = {"decode": [], "model": [], "pipeline": [], "sequential": []}
    for _ in range(repeats):
        times["decode"].append(_best(1, lambda: run(free, 0))[0])
        times["model"].append(_best(1, model_alone)[0])
        decodes[0] = 0
        seconds, overlapped = _best(1, lambda: run(model, 2))
        times["pipeline"].append(seconds)
        decoded = decodes[0]
        seconds, sequential = _best(1, lambda: run(model, 0))
        times["sequential"].append(seconds)
    several = [stand_in_model(0.0, n_classes, seed=index) for index in range(shared_models)]
    decodes[0] = 0
    shared = run_shared(several)
    shared_decodes = decodes[0]
    rate = {side: n_images / min(values) for side, values in times.items()}
    # pipeline images/s over the slower side's, within one round
    per_round = [max(d, m) / p for d, m, p in zip(times["decode"], times["model"], times["pipeline"], strict=True)]
    return {
        "images": n_images,
        "batches": n_batches,
        "batch_size": batch_size,
        "decode_threads": decode_threads,
        "model_seconds_per_batch": seconds_per_batch,
        "decode_images_per_s": rate["decode"],
        "decode_images_per_s_per_thread": rate["decode"] / decode_threads,
        "model_images_per_s": rate["model"],
        "pipeline_images_per_s": rate["pipeline"],
        "sequential_images_per_s": rate["sequential"],
        "efficiency": rate["pipeline"] / min(rate["decode"], rate["model"]),
        "efficiency_per_round": per_round,
        "efficiency_bound_fill_and_drain": n_batches / (n_batches + 1),
        "decoded_images_per_model_shift": decoded,
        "identical_logits": overlapped.tobytes() == sequential.tobytes(),
        "shared_decode": {
            "models": shared_models,
            "decoded_images": shared_decodes,
            "decoded_images_per_model_shift": shared_decodes / shared_models,
            "identical_logits": all(
                logits.tobytes() == run(model, 2).tobytes() for logits, model in zip(shared, several, strict=True)
            ),
        },
    }


def run(
    *,
    classes: int = 4,
    images_per_class: int = 64,
    batch_size: int = 16,
    decode_threads: int = 1,
    repeats: int = 3,
    seconds_per_batch: float | None = None,
    cases: Sequence[str] = tuple(CASES),
) -> dict[str, Any]:
    """Every case on one generated folder, and the machine it ran on."""
    import torch

    from classwise.data.stand_ins import image_folder_fixture

    torch.set_num_threads(1)  # the decoding's threads are the CPU work measured; the model sleeps
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "load_average_1min_at_start": load_average(),
        },
        "stored_image_size_hw": list(STORED_SIZE),
        "preprocessing": "resize 256, centre crop 224, bilinear",
        "goal": {"efficiency_at_least": EFFICIENCY_GOAL},
        "cases": {},
    }
    with tempfile.TemporaryDirectory(prefix="classwise-bench-inference-") as name:
        names = [f"n{c:08d}" for c in range(classes)]
        root = image_folder_fixture(Path(name) / "val", names, per_class=images_per_class, size=STORED_SIZE, suffix=".JPEG")
        for case in cases:
            row = bench_case(
                CASES[case], root, batch_size=batch_size, decode_threads=decode_threads, repeats=repeats,
                seconds_per_batch=seconds_per_batch,
            )  # fmt: skip
            row["goal_met"] = bool(row["efficiency"] >= EFFICIENCY_GOAL)
            results["cases"][case] = row
    results["machine"]["load_average_1min_at_end"] = load_average()
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: run the cases, write JSON atomically to ``--out``, print a summary."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/inference.json"))
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--images-per-class", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--decode-threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds-per-batch", type=float, help="the stand-in model's time per batch (default: balanced)")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    args = parser.parse_args(argv)
    for name in ("classes", "images_per_class", "batch_size", "decode_threads", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} expects an integer >= 1, got {getattr(args, name)}")
    if args.seconds_per_batch is not None and args.seconds_per_batch < 0:
        parser.error(f"--seconds-per-batch expects a number >= 0, got {args.seconds_per_batch}")
    results = run(
        classes=args.classes, images_per_class=args.images_per_class, batch_size=args.batch_size,
        decode_threads=args.decode_threads, repeats=args.repeats, seconds_per_batch=args.seconds_per_batch, cases=args.cases,
    )  # fmt: skip
    write_json(args.out, results)
    for case, row in results["cases"].items():
        print(
            f"{case}: decode {row['decode_images_per_s']:.1f} img/s, model {row['model_images_per_s']:.1f} img/s, "
            f"pipeline {row['pipeline_images_per_s']:.1f} img/s (sequential {row['sequential_images_per_s']:.1f}), "
            f"efficiency {row['efficiency']:.2f} (goal {EFFICIENCY_GOAL}: {'met' if row['goal_met'] else 'NOT met'})"
        )
    print(f"load average {results['machine']['load_average_1min_at_start']} -> {results['machine']['load_average_1min_at_end']}")
    print(f"written to {args.out}")
    return results


if __name__ == "__main__":
    main()
