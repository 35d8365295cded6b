"""Command-line argument types of the metric commands (``classwise metrics``, ``classwise
compare``), shared by both without either importing the other."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from classwise.logits_io import ScoresFile

from classwise.metrics.catalogue import DEFAULTS, MetricParameters

#: Per-class interval methods (classwise.metrics.intervals.INTERVAL_METHODS; listed here so
#: that building the parser imports nothing heavy).
INTERVAL_CHOICES = ("clopper-pearson", "wilson")


#: A reStructuredText role (``:func:`~classwise.x.y```) and its target; an inline literal
#: (````x````) or interpreted text (```x```).
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`]*)`")
_LITERAL = re.compile(r"``([^`]*)``|`([^`]*)`")


def help_text(docstring: str | None) -> str:
    """A docstring's first line as ``--help`` shows it: plain text, without the markup the API
    reference renders (``:func:`~a.b``` -> ``b``, ``:func:`a.b``` -> ``a.b``, double or single
    backticks dropped)."""
    line = (docstring or "").strip().splitlines()[0] if (docstring or "").strip() else ""
    line = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), line)
    return _LITERAL.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), line)


def add_bootstrap_arguments(parser: argparse.ArgumentParser, *, optional: bool) -> None:
    """``--bootstrap [B]``, ``--confidence`` and ``--seed``; values are checked by the library
    (a bad one exits with status 2 and writes nothing)."""
    if optional:
        parser.add_argument(
            "--bootstrap",
            type=int,
            nargs="?",
            const=1000,
            default=None,
            metavar="B",
            help="add stratified-bootstrap intervals with B replicates (default B = 1000; off without the flag)",
        )
    else:
        parser.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap replicates (default 1000)")
    parser.add_argument("--confidence", type=float, default=0.95, help="confidence level of every interval (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap draws (default 0)")


def add_metric_arguments(parser: argparse.ArgumentParser) -> None:
    """``--superclasses``, ``--gamma``, ``--bins``, ``--k`` and ``--n``, defaulting to the
    catalogue's :data:`~classwise.metrics.catalogue.DEFAULTS`."""
    parser.add_argument("--superclasses", help="JSON mapping superclass name -> list of class indices")
    parser.add_argument(
        "--gamma",
        type=gamma,
        default=DEFAULTS.gamma,
        help=f"probability floor of the generalized means (default {DEFAULTS.gamma})",
    )
    parser.add_argument(
        "--bins",
        type=positive_int,
        default=DEFAULTS.bins,
        help=f"equal-population bins for measured metrics (default {DEFAULTS.bins})",
    )
    parser.add_argument("--k", type=positive_int, default=DEFAULTS.k, help=f"k of the top-k metrics (default {DEFAULTS.k})")
    parser.add_argument(
        "--n",
        type=positive_int,
        nargs="+",
        default=list(DEFAULTS.ns),
        help=f"n of W{{n}}CR (default {' '.join(map(str, DEFAULTS.ns))}; n >= C skipped)",
    )


def metric_parameters(args: argparse.Namespace) -> MetricParameters:
    """The options of :func:`add_metric_arguments` but ``--superclasses`` (a file, read per
    input), as the library takes them."""
    return MetricParameters(k=args.k, ns=args.n, gamma=args.gamma, bins=args.bins)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """``--labels``, ``--classes``, ``--abstain``, ``--match-by-row`` and ``--kind``: what a file
    of outputs other than a logits-format ``.npz`` may need
    (:func:`classwise.predictions_io.load_for_metrics`)."""
    parser.add_argument(
        "--labels",
        help="the labels, for files without them (timm's outputs, an .npy): a CSV sample_id,label (paired by sample id) "
        "or an .npy in row order (paired by row)",
    )
    parser.add_argument(
        "--classes",
        metavar="N|NAMES.txt",
        help="the number of classes, or a file of class names (one per line, in index order) to map names to indices",
    )
    parser.add_argument("--abstain", metavar="TOKEN", help="a prediction cell meaning 'abstained' (beside empty and -1)")
    parser.add_argument(
        "--match-by-row",
        dest="match_by_row",
        action="store_true",
        help="pair a file and --labels by row where only one of them has sample ids (an .npy beside a CSV): you say "
        "that both list the samples in the same order (without it, that is an error; with ids on both sides they are "
        "paired by id)",
    )
    parser.add_argument(
        "--kind",
        choices=("probs", "logits"),
        help="read the scores of a CSV of scores or an .npy as probabilities or as logits (default: probabilities "
        "when every row is non-negative and sums to 1 within 0.001, else logits); probs renormalises rows that "
        "sum to 1 within 0.02 (probabilities rounded in the file). A file that says its kind (an .npz's array, "
        "timm's logit/prob columns) must agree",
    )


def input_loader(args: argparse.Namespace) -> Callable[[str], ScoresFile]:
    """Reads a file of outputs with the options of :func:`add_input_arguments` (the labels file
    and the class names read once), warning on standard error where its scores may have been
    misread (probabilities rounded in the file, read as logits)."""
    import sys

    from classwise.predictions_io import load_for_metrics, read_class_names, read_reference

    reference = read_reference(args.labels) if args.labels is not None else None
    n_classes, class_names = read_class_names(args.classes) if args.classes is not None else (None, None)

    def load(path: str) -> ScoresFile:
        loaded = load_for_metrics(
            path,
            reference=reference,
            n_classes=n_classes,
            class_names=class_names,
            abstain=args.abstain,
            match_by_row=args.match_by_row,
            kind=args.kind,
        )
        if loaded.read_as is not None and loaded.read_as.warning is not None:
            print(f"classwise {args.command}: warning: {loaded.read_as.warning}", file=sys.stderr)
        return loaded

    return load


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def gamma(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected gamma in [0, 1), got {text}")
    return value


def scores_read_as(scores_file: ScoresFile) -> dict[str, str]:
    """The ``"scores"`` entry of a command's output: what the file's scores were read as, and why."""
    if scores_file.read_as is None:  # load_for_metrics decides it for every file it reads
        raise ValueError(f"{scores_file.path}: read without deciding its kind of scores")
    return scores_file.read_as.to_json()


def emit_json(result: dict[str, object], out: str | None) -> None:
    """A command's JSON result: written atomically to ``out``, or to standard output."""
    import json
    import sys

    from classwise.atomic import write_json

    if out is not None:
        write_json(out, result)
    else:
        json.dump(result, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
