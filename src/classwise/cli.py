"""The ``classwise`` command line.

``classwise metrics FILE [FILE ...]`` computes every metric from files of a model's outputs
that users bring themselves (logits, probabilities, hard predictions, timm's outputs); see
docs/library.md for the formats and the output layout.
Other subcommands live beside the code they drive and register themselves through an
``add_parser(subcommands)`` function (see ``_SUBCOMMAND_MODULES``).
"""

from __future__ import annotations

import argparse
import glob
import importlib
import importlib.metadata
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise._extras import MissingExtraError
from classwise.errors import InputError
from classwise.metrics.arguments import (
    INTERVAL_CHOICES,
    add_bootstrap_arguments,
    add_input_arguments,
    add_metric_arguments,
    emit_json,
    help_text,
    input_loader,
    metric_parameters,
    scores_read_as,
)

if TYPE_CHECKING:
    import pandas as pd


def _metrics_command(args: argparse.Namespace) -> int:
    import numpy as np

    from classwise.atomic import write_json
    from classwise.metrics.bootstrap import BootstrapSettings
    from classwise.metrics.intervals import check_confidence
    from classwise.metrics.suite import evaluate, per_class_table, worst_class_shares
    from classwise.superclasses import load_superclasses
    from classwise.tables import write_csv

    paths = input_files(args.files)
    several = len(paths) > 1
    if several and args.out_dir is None:
        raise InputError(f"{len(paths)} files need --out-dir (one JSON each); --out takes one file", field="--out-dir")
    if args.out_dir is not None and args.out is not None:
        raise InputError("give --out (one file) or --out-dir, not both", field="--out")
    if args.out_dir is None and (args.per_class is True or args.compare):
        raise InputError("a bare --per-class and --compare write into --out-dir", field="--out-dir")
    if args.compare and not several:
        raise InputError("--compare needs at least two files", field="--compare")
    stems = output_stems(paths)
    parameters = metric_parameters(args)
    if args.bootstrap is None:
        # --confidence is also the per-class intervals' level: refused before any file is read,
        # bootstrap or not
        check_confidence(args.confidence)
        bootstrap = None
    else:
        bootstrap = BootstrapSettings(args.bootstrap, args.confidence, args.seed)
    load = input_loader(args)
    superclasses = None
    # Compute everything before writing anything: a failure leaves no partial outputs.
    documents, tables, loaded = {}, {}, {}
    for path, stem in zip(paths, stems):
        with _naming(path):
            scores_file = load(path)
            if args.superclasses is not None and superclasses is None:
                superclasses = load_superclasses(args.superclasses, scores_file.n_classes)
            evaluation = evaluate(
                scores_file.scores,
                scores_file.labels,
                kind=scores_file.kind,
                superclasses=superclasses,
                parameters=parameters,
                bootstrap=bootstrap,
                top_k=scores_file.top_k if scores_file.hard_predictions else None,
                abstained=scores_file.abstained,
            )
        result = evaluation.to_json()
        result["class_names"] = scores_file.class_names.tolist()
        result["scores"] = scores_read_as(scores_file)
        documents[stem] = result
        if args.compare:
            loaded[stem] = scores_file
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
            if scores_file.hard_predictions and scores_file.top_k < args.k:
                per_class[f"top{args.k}_recall"] = np.nan  # fewer ranked classes than k
            tables[stem] = per_class
    comparison = _comparisons(loaded, documents, args, superclasses) if args.compare else None
    if args.out_dir is None:
        emit_json(documents[stems[0]], args.out)
        if args.per_class is not None:
            write_csv(args.per_class, tables[stems[0]], index=False)  # full precision, as the JSON
        return 0
    out_dir = Path(args.out_dir)
    for stem, document in documents.items():
        write_json(out_dir / f"{stem}.json", document)
        if stem in tables:
            write_csv(out_dir / f"{stem}.per_class.csv", tables[stem], index=False)
    write_csv(out_dir / "summary.csv", summary_table(documents, paths), index=False)
    if comparison is not None:
        write_json(out_dir / "compare.json", comparison)
    return 0


@contextmanager
def _naming(path: str) -> Iterator[None]:
    """An :class:`InputError` that names no file, raised while the file ``path`` is read and
    evaluated (a superclass beyond its classes, say), names it: in a call of several files the
    message must say which one."""
    try:
        yield
    except InputError as error:
        if error.path is not None:
            raise
        raise InputError(error.message, path=path, field=error.field) from error


def input_files(arguments: Sequence[str]) -> list[str]:
    """The files the arguments name: a file, a directory (the files in it whose extension
    classwise reads, sorted) or a glob pattern (quoted, so that the shell left it), in order."""
    from classwise.predictions_io import SUFFIXES

    files: list[str] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(str(p) for p in path.iterdir() if p.is_file() and p.name.lower().endswith(SUFFIXES))
            if not found:
                raise InputError(f"holds no file of outputs ({', '.join(SUFFIXES)})", path=path)
            files += found
        elif glob.has_magic(argument) and not path.exists():
            matched = sorted(glob.glob(argument))
            if not matched:
                raise InputError("matches no file", path=argument)
            files += matched
        else:
            files.append(argument)
    return files


def output_stems(paths: Sequence[str]) -> list[str]:
    """The name of each file's outputs: its file name without the format's extension
    (``a.csv.gz`` -> ``a``); two files of the same name are an error naming both."""
    from classwise.predictions_io import SUFFIXES

    stems: dict[str, str] = {}
    for path in paths:
        name = Path(path).name
        stem = next(
            (name[: -len(s)] for s in sorted(SUFFIXES, key=len, reverse=True) if name.lower().endswith(s)), Path(path).stem
        )
        if stem in stems:
            raise InputError(f"has the name {stem!r} of {stems[stem]} too: their outputs would overwrite each other", path=path)
        stems[stem] = path
    return list(stems)


def summary_table(documents: dict[str, dict[str, Any]], paths: Sequence[str]) -> pd.DataFrame:
    """One row per file: its name and path, samples, classes, coverage (the share of samples
    with a prediction), abstentions, what its scores were read as, then every metric's value
    (empty where skipped)."""
    import pandas as pd

    rows = []
    for (stem, document), path in zip(documents.items(), paths):
        coverage = document.get("coverage", {"value": 1.0, "n_abstained": 0})
        row: dict[str, Any] = {
            "name": stem,
            "file": path,
            "n_samples": document["n_samples"],
            "n_classes": document["n_classes"],
            "coverage": coverage["value"],
            "n_abstained": coverage["n_abstained"],
            "scores_read_as": document["scores"]["read_as"],
        }
        row.update({name: entry["value"] for name, entry in document["metrics"].items()})
        rows.append(row)
    return pd.DataFrame.from_records(rows)


def _comparisons(
    files: dict[str, Any], documents: dict[str, dict[str, Any]], args: argparse.Namespace, superclasses: Any
) -> dict[str, Any]:
    """``compare`` of every pair of files (paired bootstrap; ``--bootstrap`` replicates, default 1000),
    each with what the two files' scores were read as (their ``documents``' ``"scores"``)."""
    from classwise.metrics.bootstrap import DEFAULT_REPLICATES, BootstrapSettings
    from classwise.metrics.compare import compare_models

    bootstrap = BootstrapSettings(args.bootstrap or DEFAULT_REPLICATES, args.confidence, args.seed)
    pairs = compare_models(files, superclasses=superclasses, parameters=metric_parameters(args), bootstrap=bootstrap)
    return {
        "pairs": [
            {"a": a, "b": b, **comparison.to_json(), "scores": {"a": documents[a]["scores"], "b": documents[b]["scores"]}}
            for (a, b), comparison in pairs.items()
        ]
    }


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
        help="every worst-class, decisiveness/robustness and CFPS metric of one or many files of a model's outputs",
        description=(
            "Compute every metric of each FILE: an .npz (arrays 'logits', 'probs' or 'predictions', and 'labels'), a CSV "
            "sample_id,label,score_0,... or sample_id,label,prediction (hard predictions; empty or -1: abstained), timm "
            "inference.py's outputs (.csv, .json, .parquet; with --labels) or an .npy of probabilities (with --labels). "
            "A directory stands for the files in it; a quoted glob for the files it matches."
        ),
    )
    metrics.add_argument("files", nargs="+", metavar="FILE", help="files of outputs, directories of them, or glob patterns")
    add_metric_arguments(metrics)
    add_input_arguments(metrics)
    metrics.add_argument("--out", help="output JSON of one file (default: standard output)")
    metrics.add_argument(
        "--out-dir",
        dest="out_dir",
        help="write DIR/<file name>.json for each file and DIR/summary.csv, one row per file (needed for several files)",
    )
    metrics.add_argument(
        "--per-class",
        dest="per_class",
        nargs="?",
        const=True,
        metavar="CSV",
        help="also write per-class recall, precision (with confidence intervals), top-k recall, CFPS, support as CSV "
        "(with --out-dir: DIR/<file name>.per_class.csv, no CSV argument)",
    )
    metrics.add_argument(
        "--compare",
        action="store_true",
        help="with --out-dir: also compare every pair of files (paired bootstrap, as classwise compare) into DIR/compare.json",
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
