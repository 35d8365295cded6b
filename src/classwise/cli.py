"""The ``classwise`` command line.

``classwise metrics LOGITS.npz`` computes every metric from a logits (or probabilities) file
that users bring themselves; see docs/library.md for the file format and the output layout.
Other subcommands live beside the code they drive and register themselves through an
``add_parser(subcommands)`` function (see ``_SUBCOMMAND_MODULES``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

from classwise._extras import MissingExtraError
from classwise.errors import InputError
from classwise.metrics.arguments import INTERVAL_CHOICES, add_bootstrap_arguments, add_metric_arguments, emit_json, help_text


def _metrics_command(args: argparse.Namespace) -> int:
    from classwise.logits_io import load_scores
    from classwise.metrics.suite import evaluate, per_class_table, worst_class_shares
    from classwise.superclasses import load_superclasses
    from classwise.tables import write_csv

    scores_file = load_scores(args.logits)
    superclasses = load_superclasses(args.superclasses, scores_file.n_classes) if args.superclasses is not None else None
    evaluation = evaluate(
        scores_file.scores,
        scores_file.labels,
        kind=scores_file.kind,
        superclasses=superclasses,
        gamma=args.gamma,
        bins=args.bins,
        k=args.k,
        ns=args.n,
        bootstrap=args.bootstrap,
        confidence=args.confidence,
        seed=args.seed,
    )
    result = evaluation.to_json()
    result["class_names"] = scores_file.class_names.tolist()
    # Compute everything before writing anything: a failure leaves no partial outputs.
    per_class = None
    if args.per_class is not None:
        per_class = per_class_table(
            evaluation.stats,
            k=args.k,
            class_names=scores_file.class_names,
            confidence=args.confidence,
            interval=args.interval,
            worst_shares=None
            if evaluation.bootstrap_replicates is None
            else worst_class_shares(evaluation.bootstrap_replicates, evaluation.stats.n_classes),
        )
    emit_json(result, args.out)
    if per_class is not None:
        write_csv(args.per_class, per_class, index=False)  # full precision, as the JSON
    return 0


def installed_version() -> str:
    """The installed distribution's version (``pyproject.toml``'s, through the package metadata)."""
    try:
        return importlib.metadata.version("classwise")
    except importlib.metadata.PackageNotFoundError:  # imported from a source tree, not installed
        return "unknown (not installed; pip install -e . records the version)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command`` given, only the modules of that subcommand are imported
    (``classwise metrics`` stays fast), otherwise every subcommand is listed."""
    parser = argparse.ArgumentParser(prog="classwise", description=help_text(__doc__))
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    metrics = commands.add_parser(
        "metrics",
        help="every worst-class, decisiveness/robustness and CFPS metric of a logits file",
        description="Compute every metric from LOGITS.npz (arrays 'logits' or 'probs', and 'labels').",
    )
    metrics.add_argument("logits", help=".npz with 'logits' (N x C) or 'probs', and 'labels' (N)")
    add_metric_arguments(metrics)
    metrics.add_argument("--out", help="output JSON (default: standard output)")
    metrics.add_argument(
        "--per-class",
        dest="per_class",
        help="also write per-class recall, precision (with confidence intervals), top-k recall, CFPS, support as CSV",
    )
    add_bootstrap_arguments(metrics, optional=True)
    metrics.add_argument(
        "--interval",
        choices=INTERVAL_CHOICES,
        default="clopper-pearson",
        help="per-class recall/precision interval in --per-class (default clopper-pearson, exact)",
    )
    metrics.set_defaults(handler=_metrics_command)
    for name, module in _SUBCOMMAND_MODULES.items():
        if command is None or command == name:
            importlib.import_module(module).add_parser(commands)
    return parser


#: Subcommand -> module whose ``add_parser(subcommands)`` adds it.
_SUBCOMMAND_MODULES: dict[str, str] = {
    "compare": "classwise.metrics.compare_cli",
    "imagenet-cleaned-labels": "classwise.labels.cli",
    "extrapolate": "classwise.extrapolation.cli",
    "check": "classwise.metrics.check_cli",
    "robust-fairness": "classwise.metrics.robust_fairness_cli",
}


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    known = {"metrics", *_SUBCOMMAND_MODULES}
    parser = build_parser(arguments[0] if arguments and arguments[0] in known else None)
    args = parser.parse_args(arguments)
    try:
        return int(args.handler(args))
    except (InputError, MissingExtraError) as exc:  # bad input; a feature of an extra not installed
        print(f"classwise {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
