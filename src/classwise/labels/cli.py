"""``classwise imagenet-cleaned-labels``: write an ImageNet label-cleaned view as a label file.

Output: the workflow's label-view format (:func:`classwise.labels.views.write_view`), a
``sample_id,label`` CSV with one row per validation image in sorted ImageFolder order: the id is
``<wnid>/<file name>`` and the label is the view's, or ``-1`` if the view removes the image;
written atomically. A summary (images, kept, removed) goes to standard error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from classwise.errors import InputError
from classwise.labels.imagenet_cleaned import IMAGENET_FILES, view_summary
from classwise.labels.views import build_view, write_view

COMMAND = "imagenet-cleaned-labels"


def run(args: argparse.Namespace) -> int:
    """Build the requested view and write it to ``args.out``; 0 on success."""
    if args.paper_file is not None and args.variant != "paper":
        raise InputError(
            f"--paper-file is only read with --variant paper; the {args.variant!r} view is built from the "
            "votes in --label-errors-dir (leave --paper-file out)",
            field="--paper-file",
        )
    view: dict[str, Any] = {"kind": "imagenet_cleaned", "variant": args.variant}
    if args.paper_file is not None:
        view["paper_file"] = str(args.paper_file)
    sample_ids, labels = build_view(view, label_errors_dir=args.label_errors_dir, field="--variant")
    write_view(args.out, sample_ids, labels)
    summary = view_summary(labels)
    print(
        f"{COMMAND}: {args.variant}: {summary['images']} images, {summary['kept']} kept, "
        f"{summary['removed']} removed -> {args.out}",
        file=sys.stderr,
    )
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``imagenet-cleaned-labels`` on an ``argparse`` subparsers object (handler: :func:`run`)."""
    parser = subparsers.add_parser(
        COMMAND,
        help="write the ImageNet 'paper' or 'aligned' label-cleaned view as a sample_id,label CSV",
        description=(
            "Write the view as a sample_id,label CSV (the workflow's label-view format), one row per "
            "ImageNet validation image in sorted ImageFolder order: the id <wnid>/<file> and its label "
            "in the view, or -1 if the view removes it. 'paper' is j-cb/worst_classes new_labels.csv "
            "as published (misaligned); 'aligned' applies the same rule through each MTurk entry's file."
        ),
    )
    parser.add_argument(
        "--label-errors-dir",
        required=True,
        type=Path,
        help="directory with "
        + ", ".join(IMAGENET_FILES[k] for k in ("mturk", "index_to_filepath", "original_labels"))
        + " (the 'paper' variant needs only the index-to-filepath list, for the sample ids)",
    )
    parser.add_argument("--variant", required=True, choices=["paper", "aligned"])
    parser.add_argument(
        "--paper-file",
        type=Path,
        default=None,
        help=f"the published new_labels.csv (default: DIR/{IMAGENET_FILES['paper']}); only with --variant paper",
    )
    parser.add_argument("--out", required=True, type=Path, help="output CSV with columns sample_id,label")
    parser.set_defaults(handler=run)
    return parser
