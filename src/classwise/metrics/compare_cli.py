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

``classwise compare CLEAN SHIFT --class-drops DROPS.csv [--q 0.05] [--adjustment bh|holm]
[--unpaired-test fisher|boschloo] [--confidence 0.95] [--model NAME] [--shift NAME]`` tests
instead, per class, whether the accuracy under the shift (B) differs from clean (A): paired by
sample id (McNemar's exact test) where the files share samples, Fisher's (or Boschloo's) exact
test where they share none, adjusted over the classes; it writes the table of
:func:`classwise.metrics.class_drops.class_drops` and prints how many classes drop
significantly. B may hold a subset of A's samples, or other samples; a file without sample ids
gets its row numbers as ids, so two such files are paired row by row (give other images ids of
their own).
"""

from __future__ import annotations

import argparse
from typing import Any

from classwise.metrics.arguments import emit_json, help_text


def compare_command(args: argparse.Namespace) -> int:
    if args.class_drops is not None:
        return class_drops_command(args)
    from classwise.metrics.arguments import input_loader, metric_parameters, scores_read_as
    from classwise.metrics.bootstrap import BootstrapSettings
    from classwise.metrics.compare import compare
    from classwise.superclasses import load_superclasses

    bootstrap = BootstrapSettings(args.bootstrap, args.confidence, args.seed)  # checked before any file is read
    load = input_loader(args)
    first = load(args.a)
    second = load(args.b)
    superclasses = load_superclasses(args.superclasses, first.n_classes) if args.superclasses is not None else None
    result = compare(
        first,
        second,
        superclasses=superclasses,
        parameters=metric_parameters(args),
        bootstrap=bootstrap,
    ).to_json()
    result["a"], result["b"] = str(args.a), str(args.b)
    result["scores"] = {"a": scores_read_as(first), "b": scores_read_as(second)}
    emit_json(result, args.out)
    return 0


def class_drops_command(args: argparse.Namespace) -> int:
    """``--class-drops``: the per-class tests of B (the shift) against A (clean), their CSV and a
    one-paragraph summary on standard output."""
    from pathlib import Path

    from classwise.metrics.arguments import input_loader
    from classwise.metrics.class_drops import TESTS, DropTestSettings, class_changes
    from classwise.metrics.multiple_testing import ADJUSTMENTS
    from classwise.tables import write_csv

    settings = DropTestSettings(
        q=args.q, adjustment=args.adjustment, unpaired_test=args.unpaired_test, confidence=args.confidence
    )
    load = input_loader(args)
    clean, shift = load(args.a), load(args.b)
    shift_name = args.shift if args.shift is not None else Path(args.b).stem
    table = class_changes(
        clean,
        shift,
        model=args.model,
        shift_name=shift_name,
        tests=settings,
    )
    write_csv(args.class_drops, table, index=False)
    tested = table["p_value"].notna()
    significant = table["significant"].to_numpy(dtype=bool)
    dropped = int((significant & (table["change"] < 0)).sum())
    rose = int((significant & (table["change"] > 0)).sum())
    pairing = str(table["pairing"].iloc[0])
    n_clean, n_shift = int(table["n_clean"].sum()), int(table["n_shift"].sum())
    tests = ", ".join(TESTS[t] for t in sorted(set(table.loc[tested, "test"]))) or "no test"
    if pairing == "unpaired":
        samples = f"{n_shift} shifted samples against {n_clean} clean ones"
    else:
        samples = f"on the {n_clean} samples both hold (clean: {clean.n_samples}, shift: {shift.n_samples})"
    print(f"{shift_name} against {Path(args.a).name}: {pairing}, {samples}; {tests}")
    print(
        f"{dropped} of {int(tested.sum())} tested classes drop significantly and {rose} rise at q = {args.q:g} "
        f"({ADJUSTMENTS[args.adjustment]}); {int((~tested).sum())} classes untested (no sample on a side)"
    )
    print(f"written to {args.class_drops}")
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
    drops = parser.add_argument_group(
        "class drops",
        "with --class-drops: A is the clean file, B the shifted one; per-class exact tests instead of the bootstrap",
    )
    drops.add_argument(
        "--class-drops",
        metavar="DROPS.csv",
        help="test per class whether B's accuracy differs from A's and write the table here (docs/uncertainty.md)",
    )
    drops.add_argument(
        "--q", type=float, default=0.05, help="false discovery rate (bh) or family-wise error (holm) (default 0.05)"
    )
    drops.add_argument("--adjustment", choices=("bh", "holm"), default="bh", help="multiple-testing adjustment (default bh)")
    drops.add_argument(
        "--unpaired-test",
        choices=("fisher", "boschloo"),
        default="fisher",
        help="exact test where the files share no sample (default fisher)",
    )
    drops.add_argument("--model", default="model", help="the model column of the table (default: model)")
    drops.add_argument("--shift", help="the shift column of the table (default: B's file name without its extension)")
    parser.set_defaults(handler=compare_command)
