"""classwise compare A.npz B.npz: every metric of B minus A, with paired bootstrap intervals.

``classwise compare A.npz B.npz [--bootstrap 1000] [--confidence 0.95] [--seed 0]
[--superclasses S.json] [--gamma 0.005] [--bins 10] [--k 5] [--n 10 100] [--out C.json]``

Both files hold the same samples (matched by ``sample_ids``; an error if the sets differ or
a matched sample's label differs).  Output (stdout without ``--out``):
``{"n_samples", "n_classes", "bootstrap": {...}, "metrics": {NAME: {"a", "b",
"difference", "ci", "p_value"}}}``; see :mod:`classwise.metrics.compare`.
"""

from __future__ import annotations

import argparse
from typing import Any

from classwise.metrics.arguments import emit_json, help_text


def compare_command(args: argparse.Namespace) -> int:
    from classwise.logits_io import load_scores
    from classwise.metrics.compare import compare
    from classwise.superclasses import load_superclasses

    first = load_scores(args.a)
    second = load_scores(args.b)
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
    emit_json(result, args.out)
    return 0


def add_parser(subcommands: Any) -> None:
    from classwise.metrics.arguments import add_bootstrap_arguments, add_metric_arguments

    parser = subcommands.add_parser(
        "compare",
        help="every metric of B minus A on the same samples, with paired bootstrap intervals and p-values",
        description=help_text(__doc__),
    )
    parser.add_argument("a", help="first scores .npz (A)")
    parser.add_argument("b", help="second scores .npz (B), the same samples by sample_ids")
    add_metric_arguments(parser)
    parser.add_argument("--out", help="output JSON (default: standard output)")
    add_bootstrap_arguments(parser, optional=False)
    parser.set_defaults(handler=compare_command)
