"""``classwise imagenet-cleaned-labels``: write an ImageNet label-cleaned view as a label file.

Output: one line per validation image in sorted ImageFolder order (50,000 lines), the label or
``-1`` if the view removes the image; written atomically. A summary (images, kept, removed,
relabelled) goes to standard error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from classwise.labels.imagenet_cleaned import IMAGENET_FILES, build_imagenet_view, view_summary, write_label_file

COMMAND = "imagenet-cleaned-labels"


def run(args: argparse.Namespace) -> int:
    """Build the requested view and write it to ``args.out``; 0 on success."""
    labels = build_imagenet_view(args.label_errors_dir, args.variant, paper_file=args.paper_file)
    write_label_file(args.out, labels)
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
        help="write the ImageNet 'paper' or 'aligned' label-cleaned view (one label or -1 per image)",
        description=(
            "Write one line per ImageNet validation image (sorted ImageFolder order): its label in the "
            "view, or -1 if the view removes it. 'paper' is j-cb/worst_classes new_labels.csv as "
            "published (misaligned); 'aligned' applies the same rule through each MTurk entry's file."
        ),
    )
    parser.add_argument(
        "--label-errors-dir",
        required=True,
        type=Path,
        help="directory with " + ", ".join(IMAGENET_FILES[k] for k in ("mturk", "index_to_filepath", "original_labels")),
    )
    parser.add_argument("--variant", required=True, choices=["paper", "aligned"])
    parser.add_argument(
        "--paper-file",
        type=Path,
        default=None,
        help=f"the published new_labels.csv (default: DIR/{IMAGENET_FILES['paper']}); 'paper' only",
    )
    parser.add_argument("--out", required=True, type=Path, help="output label file (LABELS.csv)")
    parser.set_defaults(handler=run)
    return parser
