"""AutoAttack throughput beside torchattacks (``python -m classwise.bench.autoattack``, ``make bench``).

Images per second of :func:`classwise.shifts.autoattack.autoattack` and of torchattacks'
``AutoAttack`` called directly on the same model, images and seed, set to the same
hyper-parameters (the reference's: 100 iterations, ``min(9, C - 1)`` targets, Square without
schedule rescaling; :func:`reference_autoattack`). The wrapper adds input checks, one forward
pass for the class count, the budget guard, generator isolation and the log line per attack;
the issue's target is a loss under 5 %. The two are timed alternately after a warm-up and the
best of ``repeats`` runs is reported with the median, so background load affects both alike;
on a CPU the process's CPU time is recorded too (wall time on shared cores swings by 2-3x).

Models: the demo CNN at 8x8 (grayscale) by default, and a timm ResNet-18 at 32x32 (RGB) with
``--models demo_cnn_8x8 timm_resnet18_32x32`` (minutes on a CPU). Both have random weights;
labels are their clean predictions and ``eps`` (4/255) leaves images that survive APGD-CE,
so every attack of the ensemble runs (each row records the robust accuracy, which the
two implementations must share, and the largest pixel difference between their outputs).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from classwise.atomic import write_json
from classwise.bench.pgd import _timed, demo_cnn, parse_batch_sizes
from classwise.inference.stream import resolve_device
from classwise.models.architectures import Normalize
from classwise.shifts.attack_settings import AutoAttackSettings
from classwise.shifts.autoattack import REFERENCE_ITERATIONS, autoattack, target_classes

EPS = 4 / 255
"""L-inf radius: on the random demo CNN, APGD-CE fools about 40 % of the images and every later
attack runs on the rest (the cost of a run is mostly the attacks' step loops, not the batch)."""


def timm_resnet18_32() -> tuple[nn.Module, tuple[int, int, int]]:
    """timm's ResNet-18 (random weights, 10 classes) behind CIFAR normalisation, at 32x32."""
    import timm  # lazy: an optional dependency

    shape = (3, 32, 32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = timm.create_model("resnet18", pretrained=False, num_classes=10)
    return nn.Sequential(Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616), channels=3), net), shape


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, int, int]]]] = {
    "demo_cnn_8x8": demo_cnn,
    "timm_resnet18_32x32": timm_resnet18_32,
}


def reference_autoattack(model: nn.Module, *, eps: float, n_classes: int, seed: int) -> Any:
    """torchattacks' ``AutoAttack`` (standard, L-inf) set to the hyper-parameters classwise uses."""
    import torchattacks

    attack = torchattacks.AutoAttack(model, norm="Linf", eps=eps, version="standard", n_classes=n_classes, seed=seed)
    for component in attack._autoattack.attacks:
        if hasattr(component, "steps"):
            component.steps = REFERENCE_ITERATIONS
        if hasattr(component, "n_target_classes"):
            component.n_target_classes = target_classes(n_classes)
        if hasattr(component, "rescale_schedule"):
            component.rescale_schedule = False
    return attack


def bench_model(
    name: str, model: nn.Module, shape: tuple[int, int, int], *, batch_size: int, repeats: int, device: torch.device
) -> dict[str, Any]:
    """One row: images/s of both on one batch of random images."""
    model = model.to(device).eval()
    images = torch.rand((batch_size, *shape), generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        labels = model(images).argmax(1)
        n_classes = int(model(images[:1]).shape[1])
    eps, seed = EPS, 0
    theirs = reference_autoattack(model, eps=eps, n_classes=n_classes, seed=seed)
    order: tuple[tuple[str, Callable[[], torch.Tensor]], ...] = (
        ("classwise", lambda: autoattack(model, images, labels, attack=AutoAttackSettings("linf", eps), seed=seed)),
        ("torchattacks", lambda: theirs(images, labels)),
    )
    times: dict[str, list[float]] = {"classwise": [], "torchattacks": []}
    cpu_times: dict[str, list[float]] = {"classwise": [], "torchattacks": []}
    outputs: dict[str, torch.Tensor] = {}
    for r in range(repeats + 1):  # the first round warms up (allocator, cuDNN autotuning, lazy imports)
        for key, fn in order if r % 2 == 0 else order[::-1]:
            cpu_start = time.process_time()
            seconds, outputs[key] = _timed(fn, device)
            if r:
                times[key].append(seconds)
                cpu_times[key].append(time.process_time() - cpu_start)
    with torch.no_grad():
        robust = {k: float((model(v).argmax(1) == labels).float().mean()) for k, v in outputs.items()}
        difference = float((outputs["classwise"] - outputs["torchattacks"]).abs().max())
    best = {k: min(v) for k, v in times.items()}
    median = {k: statistics.median(v) for k, v in times.items()}
    cpu_best = {k: min(v) for k, v in cpu_times.items()}
    return {
        "model": name,
        "input_shape": list(shape),
        "norm": "linf",
        "eps": eps,
        "batch_size": batch_size,
        "seconds_best": best,
        "seconds_median": median,
        "seconds_all": times,
        "images_per_second": {k: batch_size / v for k, v in best.items()},
        "wrapper_overhead_best": best["classwise"] / best["torchattacks"] - 1,
        "wrapper_overhead_median": median["classwise"] / median["torchattacks"] - 1,
        # on shared CPU cores wall time swings with the neighbours' load; the process's CPU time much less
        "cpu_seconds_all": cpu_times,
        "cpu_seconds_best": cpu_best,
        "wrapper_overhead_cpu_best": cpu_best["classwise"] / cpu_best["torchattacks"] - 1,
        "robust_accuracy": robust,
        "max_abs_pixel_difference": difference,
    }


def run(
    *,
    device: str = "auto",
    repeats: int = 3,
    batch_sizes: dict[str, int] | None = None,
    models: Sequence[str] = ("demo_cnn_8x8",),
) -> dict[str, Any]:
    """All rows plus machine details; a model that cannot be built is listed under ``skipped``."""
    import torchattacks

    target = resolve_device(device)
    sizes = {"demo_cnn_8x8": 64, "timm_resnet18_32x32": 16 if target.type == "cpu" else 256}
    sizes.update(batch_sizes or {})
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "device": str(target),
            "gpu": torch.cuda.get_device_name(target) if target.type == "cuda" else None,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torchattacks": getattr(torchattacks, "__version__", "unknown"),
        },
        "repeats": repeats,
        "rows": [],
        "skipped": {},
    }
    for name in models:
        try:
            model, shape = MODELS[name]()
        except ImportError as exc:
            results["skipped"][name] = f"{exc.name or exc} is not installed"
            continue
        results["rows"].append(bench_model(name, model, shape, batch_size=sizes[name], repeats=repeats, device=target))
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: run the benchmark, write JSON atomically to ``--out``, print a summary."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/autoattack.json"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch's CPU threads (default 1: the attacks' step loops on small batches run fastest on one, "
        "as the workflow's inference jobs do; more threads on shared cores slow both sides alike)",
    )
    parser.add_argument("--models", nargs="+", default=["demo_cnn_8x8"], choices=list(MODELS))
    parser.add_argument("--batch-size", nargs="+", default=[], metavar="MODEL=N", help="images per attacked batch")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads expects an integer >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    sizes = parse_batch_sizes(parser, args.batch_size, MODELS)
    results = run(device=args.device, repeats=args.repeats, models=args.models, batch_sizes=sizes)
    write_json(args.out, results)
    for row in results["rows"]:
        speed = row["images_per_second"]
        print(
            f"{row['model']:>22s}: classwise {speed['classwise']:8.1f} img/s, torchattacks {speed['torchattacks']:8.1f} img/s "
            f"(overhead {100 * row['wrapper_overhead_best']:+.1f} % best, {100 * row['wrapper_overhead_median']:+.1f} % median, "
            f"{100 * row['wrapper_overhead_cpu_best']:+.1f} % in CPU time; "
            f"robust accuracy {row['robust_accuracy']['classwise']:.3f} / {row['robust_accuracy']['torchattacks']:.3f})"
        )
    for name, reason in results["skipped"].items():
        print(f"{name:>22s}: skipped ({reason})")
    print(f"written to {args.out}")
    return results


if __name__ == "__main__":
    main()
