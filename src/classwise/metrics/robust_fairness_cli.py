"""classwise robust-fairness CLEAN.npz ATTACKED.npz: how evenly an attack's damage falls on the classes.

``classwise robust-fairness CLEAN.npz ATTACKED.npz [--out F.json]``: both files hold the same
samples (matched by ``sample_ids``; an error naming the attacked file and the missing or extra
ids if they do not). Output (stdout without ``--out``): ``{"worst_class_clean_accuracy",
"worst_class_robust_accuracy", "robust_error_sd", "robust_error_nsd", "robust_error_gini",
"per_class"}``; see :mod:`classwise.metrics.robust_fairness` and docs/robust-fairness.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from classwise.metrics.arguments import emit_json, help_text


def robust_fairness_command(args: argparse.Namespace) -> int:
    from classwise.metrics.robust_fairness import robust_fairness_of_files

    result = robust_fairness_of_files(args.clean, args.attacked)[0].to_json()
    emit_json(result, args.out)
    return 0


def add_parser(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "robust-fairness",
        help="class-wise clean, robust and boundary error, worst classes, SD/NSD/Gini of robust error",
        description=help_text(__doc__),
    )
    parser.add_argument("clean", help="clean scores .npz (logits, probs or predictions, labels, sample_ids)")
    parser.add_argument("attacked", help="attacked scores .npz of the same samples (matched by sample_ids)")
    parser.add_argument("--out", help="output JSON (default: standard output)")
    parser.set_defaults(handler=robust_fairness_command)
