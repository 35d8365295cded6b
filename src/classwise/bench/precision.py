"""What ``inference.precision`` and ``inference.channels_last`` change in the predictions
(``python -m classwise.bench.precision``, part of ``make bench``).

A stand-in model, seeded and rerunnable on any CPU: the library's ``cnn`` (two 3x3 conv blocks
and a hidden layer) trained on the digits' training split (:func:`classwise.data.load_digits_split`,
seed 0), evaluated on the whole test split under ``clean``, a corruption (``gaussian_noise``,
severity 3) and an L-inf PGD attack, once per setting: fp32 (the reference), bf16, fp16 (both
``torch.autocast`` on the CPU) and fp32 channels-last. Per shift and setting:

* ``flipped``: the share of samples whose top-1 prediction differs from fp32's;
* ``accuracy`` and ``worst_class_accuracy`` (A and WCA) and their change from fp32
  (``delta_accuracy``, ``delta_worst_class_accuracy``, in fractions: 0.01 is one point);
* ``max_abs_logit_difference`` from fp32.

Under PGD the attack itself runs at the setting's precision (its gradients too), so a flip there
mixes a different attack with a different forward pass. The figures of a GPU's autocast differ
(other kernels), but the orders of magnitude carry over.
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Sequence
from typing import Any

import numpy as np

from classwise.atomic import write_json
from classwise.bench.pipeline import load_average

SETTINGS: dict[str, tuple[str, bool]] = {
    "fp32": ("fp32", False),
    "bf16": ("bf16", False),
    "fp16": ("fp16", False),
    "fp32_channels_last": ("fp32", True),
}
"""Setting -> (precision, channels_last)."""
SHIFTS = {
    "clean": True,
    "corruptions": ["gaussian_noise"],
    "severities": [3],
    "pgd": [{"norm": "linf", "eps": 0.05, "steps": 10, "step_size": 0.01, "random_start": True}],
}


def run(*, epochs: int = 10, samples: int | None = None, batch_size: int = 128, seed: int = 0) -> dict[str, Any]:
    """Every shift at every setting; ``samples`` limits the test split (``None``: all of it)."""
    import torch

    from classwise.data import load_digits_split
    from classwise.inference.execution import Execution
    from classwise.inference.stream import predict_logits
    from classwise.metrics import worst_class as wc
    from classwise.metrics.stats import compute_stats
    from classwise.models import Hyperparameters, build_model, train_model
    from classwise.shifts import expand_shifts

    train, test = load_digits_split(test_fraction=0.3, seed=seed)
    if samples is not None:
        test = test.subset(np.arange(min(samples, len(test))))
    model = build_model("cnn", n_classes=test.n_classes, input_shape=test.input_shape, seed=seed)
    train_model(model, train, hyperparameters=Hyperparameters(epochs=epochs, lr=0.01, batch_size=64, seed=seed), device="cpu")
    results: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "load_average_1min": load_average()},
        "model": f"cnn on the digits (8x8), {epochs} epochs, seed {seed}",
        "samples": len(test),
        "shifts": {},
    }
    for name, spec in expand_shifts(SHIFTS).items():
        logits = {
            setting: predict_logits(
                model, test, spec, base_seed=seed, batch_size=batch_size, execution=Execution("cpu", precision, layout)
            )
            for setting, (precision, layout) in SETTINGS.items()
        }
        reference = logits["fp32"]
        rows = {}
        for setting, values in logits.items():
            stats = compute_stats(values, test.labels, n_classes=test.n_classes)
            accuracy, worst = wc.accuracy(stats).value, wc.worst_class_accuracy(stats).value
            rows[setting] = {
                "flipped": float(np.mean(values.argmax(1) != reference.argmax(1))),
                "accuracy": accuracy,
                "worst_class_accuracy": worst,
                "max_abs_logit_difference": float(np.abs(values - reference).max()),
            }
        for row in rows.values():
            row["delta_accuracy"] = row["accuracy"] - rows["fp32"]["accuracy"]
            row["delta_worst_class_accuracy"] = row["worst_class_accuracy"] - rows["fp32"]["worst_class_accuracy"]
        results["shifts"][name] = rows
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: run, write JSON atomically to ``--out``, print a table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", default="results/bench/precision.json")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--samples", type=int, help="test samples (default: the whole test split)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.epochs < 1 or (args.samples is not None and args.samples < 1):
        parser.error("--epochs and --samples expect integers >= 1")
    results = run(epochs=args.epochs, samples=args.samples, seed=args.seed)
    write_json(args.out, results)
    print(f"{results['model']}, {results['samples']} test samples")
    for shift, rows in results["shifts"].items():
        for setting, row in rows.items():
            print(
                f"{shift:20s} {setting:20s} flipped {row['flipped']:.4f}  A {row['accuracy']:.4f} "
                f"({row['delta_accuracy']:+.4f})  WCA {row['worst_class_accuracy']:.4f} "
                f"({row['delta_worst_class_accuracy']:+.4f})  max |dlogit| {row['max_abs_logit_difference']:.2e}"
            )
    print(f"written to {args.out}")
    return results


if __name__ == "__main__":
    main()
