"""``classwise extrapolate``: predict the accuracy curve on more classes than observed.

``classwise extrapolate SCORES.npz --k-max 2000 --method {naive,kde,regression,cleanex}
[--seed 0] [--max-steps 3000 --tolerance 0.01 --patience 500] --out CURVE.csv``

``SCORES.npz`` holds ``logits`` (N x K scores, higher = more likely; ``probs`` are accepted
too, as by ``classwise metrics``) and ``labels`` (N integers in ``[0, K)``).  ``CURVE.csv``
has the header ``k,accuracy`` and one row per ``k = 2..k_max``: the method's predicted
expected accuracy (:func:`classwise.extrapolation.methods.extrapolate`, ties broken at
random).  ``--max-steps``, ``--tolerance`` and ``--patience`` say how long CleaneX trains
(:class:`classwise.extrapolation.methods.CleanexTraining`); a fit that stops at
``--max-steps`` before its loss plateaus is written all the same, with a warning on standard
error.  The curve is computed in full before anything is written, and written atomically, so
a failure leaves no file.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np

from classwise.atomic import atomic_open
from classwise.errors import InputError

#: Decimal places of the accuracies in the CSV.
CSV_DECIMALS = 8


def _k_max(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text}")
    return value


def format_curve(ks: np.ndarray, accuracy: np.ndarray) -> str:
    """CSV text ``k,accuracy`` with one row per ``k``."""
    lines = ["k,accuracy"]
    lines.extend(f"{int(k)},{float(a):.{CSV_DECIMALS}f}" for k, a in zip(ks, accuracy, strict=True))
    return "\n".join(lines) + "\n"


def extrapolate_command(args: argparse.Namespace) -> int:
    """Handler of ``classwise extrapolate``; raises :class:`InputError` on bad input."""
    from classwise.extrapolation.methods import CleanexTraining, FitOptions, extrapolate_with_fit
    from classwise.logits_io import load_scores

    training = CleanexTraining(max_steps=args.max_steps, tolerance=args.tolerance, patience=args.patience)
    scores_file = load_scores(args.scores)
    try:
        result = extrapolate_with_fit(
            scores_file.scores,
            scores_file.labels,
            args.k_max,
            args.method,
            seed=args.seed,
            fit=FitOptions(cleanex=training, progress=sys.stderr),
        )
    except InputError as exc:
        raise InputError(str(exc), path=args.scores) from exc  # the message already names the field
    curve = result.curve
    if result.fit is not None and not result.fit.converged:
        print(f"classwise extrapolate: warning: the CleaneX fit {result.fit.describe()}", file=sys.stderr)
    if not np.isfinite(curve).all():
        raise InputError(f"method {args.method!r} produced a non-finite accuracy", path=args.scores, field=scores_file.kind)
    text = format_curve(np.arange(2, args.k_max + 1), curve)
    with atomic_open(args.out, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``extrapolate`` on an ``argparse`` sub-parsers object; returns its parser."""
    from classwise.extrapolation.methods import METHODS, CleanexTraining

    parser = subparsers.add_parser(
        "extrapolate",
        help="predict the expected accuracy on up to K_MAX classes from the classes observed",
        description=(
            "Extrapolate the expected accuracy from the K classes of SCORES.npz to k = 2..K_MAX "
            "classes (Slavutsky & Benjamini's rROC framework) and write CURVE.csv (k,accuracy)."
        ),
    )
    parser.add_argument("scores", help=".npz with 'logits' (N x K, higher = more likely) and 'labels' (N)")
    parser.add_argument("--k-max", dest="k_max", type=_k_max, required=True, help="largest number of classes (>= 2)")
    parser.add_argument("--method", choices=METHODS, required=True, help="extrapolation method")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of cleanex's weights and regression's width selection (default 0)"
    )
    defaults = CleanexTraining()
    parser.add_argument(
        "--max-steps",
        type=int,
        default=defaults.max_steps,
        help=f"cleanex: the most Adam steps (default {defaults.max_steps})",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=defaults.tolerance,
        help=f"cleanex: stop when the loss falls by less than this share over --patience steps (default {defaults.tolerance:g})",
    )
    parser.add_argument(
        "--patience",
        type=int,
        default=defaults.patience,
        help=f"cleanex: steps of the plateau test (default {defaults.patience})",
    )
    parser.add_argument("--out", required=True, help="output CSV with columns k,accuracy")
    parser.set_defaults(handler=extrapolate_command)
    return parser
