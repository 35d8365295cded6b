"""classwise compare A B: every metric of B minus A, with paired bootstrap intervals.

``classwise compare A B [--bootstrap 1000] [--confidence 0.95] [--seed 0]
[--superclasses S.json] [--gamma 0.005] [--bins 10] [--k 5] [--n 10 100] [--labels L [--match-by-row]]
[--classes N|NAMES.txt] [--abstain TOKEN] [--kind probs|logits] [--out C.json]``

A and B are files of outputs in any format ``classwise metrics`` reads (a logits-format
``.npz``, a CSV of scores or of hard predictions, timm's outputs, an ``.npy``). Both hold the
same samples (matched by sample id; an error if the sets differ or a matched sample's label
differs); they are compared on the metrics both give (hard predictions give none that needs
scores).  Output (stdout without ``--out``):
``{"n_samples", "n_classes", "bootstrap": {...}, "metrics": {NAME: {"a", "b",
"difference", "ci", "p_value"}}, "scores": {"a": {"read_as", "why"}, "b": {...}}}`` (what each
file's scores were read as: probabilities, logits or hard predictions, and why); see
:mod:`classwise.metrics.compare`.
"""

from __future__ import annotations

import argparse
from typing import Any

from classwise.metrics.arguments import emit_json, help_text


def compare_command(args: argparse.Namespace) -> int:
    from classwise.metrics.arguments import input_loader, scores_read_as
    from classwise.metrics.compare import compare
    from classwise.superclasses import load_superclasses

    load = input_loader(args)
    first = load(args.a)
    second = load(args.b)
    superclasses = load_superclasses(args.superclasses, first.n_classes) if args.superclasses is not None else None
    result = compare(
        first,
        second,
        superclasses=superclasses,
        gamma=args.gamma,
        bins=args.bins,
        k=args.k,
        ns=args.n,
        replicates=args.bootstrap,
        confidence=args.confidence,
        seed=args.seed,
    ).to_json()
    result["a"], result["b"] = str(args.a), str(args.b)
    result["scores"] = {"a": scores_read_as(first), "b": scores_read_as(second)}
    emit_json(result, args.out)
    return 0


def add_parser(subcommands: Any) -> None:
    from classwise.metrics.arguments import add_bootstrap_arguments, add_input_arguments, add_metric_arguments

    parser = subcommands.add_parser(
        "compare",
        help="every metric of B minus A on the same samples, with paired bootstrap intervals and p-values",
        description=help_text(__doc__),
    )
    parser.add_argument("a", help="first file of outputs (A): any format of classwise metrics")
    parser.add_argument("b", help="second file of outputs (B), the same samples by sample id")
    add_metric_arguments(parser)
    add_input_arguments(parser)
    parser.add_argument("--out", help="output JSON (default: standard output)")
    add_bootstrap_arguments(parser, optional=False)
    parser.set_defaults(handler=compare_command)
