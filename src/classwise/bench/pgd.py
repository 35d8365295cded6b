"""PGD throughput beside torchattacks (``python -m classwise.bench.pgd``, part of ``make bench``).

Images per second of a 10-step PGD (L-inf and L2, no random start) with
:func:`classwise.shifts.pgd.pgd_attack` and with torchattacks' ``PGD`` / ``PGDL2`` on the same
model and inputs, on the demo CNN at 8x8 (grayscale) and on a timm ResNet-18 at 64x64 (RGB,
randomly initialised; the row is skipped with a reason when timm is not installed). The two
implementations are timed alternately, a warm-up run first, and the best of ``repeats`` runs
is reported with the median, so background load affects both alike. Labels are the model's own clean
predictions, so every sample starts correctly classified; each row also records both
attacks' adversarial accuracy and the largest pixel difference between their outputs.
The issue's target: at least torchattacks' speed.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from classwise.atomic import write_json
from classwise.inference.stream import resolve_device
from classwise.models import build_model
from classwise.models.architectures import Normalize
from classwise.shifts.attack_settings import PgdSettings
from classwise.shifts.pgd import Norm, pgd_attack

STEPS = 10
ATTACKS: dict[Norm, dict[str, float]] = {
    "linf": {"eps": 8 / 255, "alpha": 2 / 255},
    "l2": {"eps": 0.5, "alpha": 0.1},
}
"""Attack strength per norm (the usual CIFAR settings; throughput does not depend on them)."""


def demo_cnn() -> tuple[nn.Module, tuple[int, int, int]]:
    """The demo CNN (``build_model('cnn', ...)``, default options) for 8x8 grayscale digits."""
    shape = (1, 8, 8)
    return build_model("cnn", n_classes=10, input_shape=shape, seed=0), shape


def timm_resnet18() -> tuple[nn.Module, tuple[int, int, int]]:
    """timm's ResNet-18 (random weights, 10 classes) behind ImageNet normalisation, at 64x64.

    Raises :class:`ImportError` when timm is not installed.
    """
    import timm  # lazy: an optional dependency

    shape = (3, 64, 64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = timm.create_model("resnet18", pretrained=False, num_classes=10)
    model = nn.Sequential(Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225), channels=3), net)
    return model, shape


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, int, int]]]] = {
    "demo_cnn_8x8": demo_cnn,
    "timm_resnet18_64x64": timm_resnet18,
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def parse_batch_sizes(parser: argparse.ArgumentParser, items: Sequence[str], models: Collection[str]) -> dict[str, int]:
    """``--batch-size MODEL=N`` options as ``{model: N}``; a parser error for an unknown model or
    an N below 1."""
    sizes: dict[str, int] = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in models or not value.isdigit() or int(value) < 1:
            parser.error(f"--batch-size expects MODEL=N with MODEL in {list(models)} and N >= 1, got {item!r}")
        sizes[name] = int(value)
    return sizes


def _timed(fn: Callable[[], torch.Tensor], device: torch.device) -> tuple[float, torch.Tensor]:
    _sync(device)
    start = time.perf_counter()
    out = fn()
    _sync(device)
    return time.perf_counter() - start, out


def bench_model(
    name: str,
    model: nn.Module,
    shape: tuple[int, int, int],
    *,
    batch_size: int,
    repeats: int,
    device: torch.device,
    norms: Sequence[Norm] = ("linf", "l2"),
) -> list[dict[str, Any]]:
    """One row per norm: images/s of both implementations on one batch of random images."""
    import torchattacks

    model = model.to(device).eval()
    generator = torch.Generator().manual_seed(0)
    images = torch.rand((batch_size, *shape), generator=generator).to(device)
    with torch.no_grad():
        labels = model(images).argmax(1)
    rows = []
    for norm in norms:
        params = ATTACKS[norm]

        def ours(norm: Norm = norm, eps: float = params["eps"], alpha: float = params["alpha"]) -> torch.Tensor:
            return pgd_attack(
                model, images, labels, attack=PgdSettings(norm, eps, steps=STEPS, step_size=alpha, random_start=False)
            )

        reference_cls = torchattacks.PGD if norm == "linf" else torchattacks.PGDL2
        theirs = reference_cls(model, eps=params["eps"], alpha=params["alpha"], steps=STEPS, random_start=False)

        ours(), theirs(images, labels)  # warm-up (allocator, cuDNN autotuning, lazy imports)
        times: dict[str, list[float]] = {"classwise": [], "torchattacks": []}
        outputs: dict[str, torch.Tensor] = {}
        for r in range(repeats):
            order = (("classwise", ours), ("torchattacks", lambda attack=theirs: attack(images, labels)))
            for key, fn in order if r % 2 == 0 else order[::-1]:
                seconds, outputs[key] = _timed(fn, device)
                times[key].append(seconds)
        with torch.no_grad():
            accuracy = {k: float((model(v).argmax(1) == labels).float().mean()) for k, v in outputs.items()}
        best = {k: min(v) for k, v in times.items()}
        median = {k: statistics.median(v) for k, v in times.items()}
        rows.append(
            {
                "model": name,
                "input_shape": list(shape),
                "norm": norm,
                **params,
                "steps": STEPS,
                "batch_size": batch_size,
                "seconds_best": best,
                "seconds_median": median,
                "seconds_all": times,
                "images_per_second": {k: batch_size / v for k, v in best.items()},
                "images_per_second_median": {k: batch_size / v for k, v in median.items()},
                "speed_ratio_classwise_over_torchattacks": best["torchattacks"] / best["classwise"],
                "speed_ratio_median": median["torchattacks"] / median["classwise"],
                "adversarial_accuracy": accuracy,
                "max_abs_pixel_difference": float((outputs["classwise"] - outputs["torchattacks"]).abs().max()),
            }
        )
    return rows


def run(
    *,
    device: str = "auto",
    repeats: int = 3,
    batch_sizes: dict[str, int] | None = None,
    models: Sequence[str] = tuple(MODELS),
) -> dict[str, Any]:
    """All rows plus machine details; a model that cannot be built is listed under ``skipped``."""
    import torchattacks

    target = resolve_device(device)
    sizes = {"demo_cnn_8x8": 1024, "timm_resnet18_64x64": 16 if target.type == "cpu" else 512}
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
        "steps": STEPS,
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
        results["rows"] += bench_model(name, model, shape, batch_size=sizes[name], repeats=repeats, device=target)
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: run the benchmark, write JSON atomically to ``--out``, print a summary."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/pgd.json"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument(
        "--batch-size",
        nargs="+",
        default=[],
        metavar="MODEL=N",
        help="images per attacked batch, e.g. timm_resnet18_64x64=128 (defaults: 1024 for the demo "
        "CNN; 16 for the ResNet-18 on CPU, 512 on GPU)",
    )
    args = parser.parse_args(argv)
    sizes = parse_batch_sizes(parser, args.batch_size, MODELS)
    results = run(device=args.device, repeats=args.repeats, models=args.models, batch_sizes=sizes)
    write_json(args.out, results)
    for row in results["rows"]:
        speed = row["images_per_second"]
        print(
            f"{row['model']:>22s} {row['norm']:>4s}: classwise {speed['classwise']:9.1f} img/s, "
            f"torchattacks {speed['torchattacks']:9.1f} img/s "
            f"(x{row['speed_ratio_classwise_over_torchattacks']:.2f} best, x{row['speed_ratio_median']:.2f} median)"
        )
    for name, reason in results["skipped"].items():
        print(f"{name:>22s}: skipped ({reason})")
    print(f"written to {args.out}")
    return results


if __name__ == "__main__":
    main()
