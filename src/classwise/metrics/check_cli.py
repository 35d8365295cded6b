"""classwise check METRICS.json [...] --min WCA=0.5 --max CFPS_max=0.3: gates for CI.

Each ``--min METRIC=VALUE`` / ``--max METRIC=VALUE`` (repeatable) is checked on every file (a
``classwise metrics`` output, or the workflow's ``worst_class.json`` / ``decisiveness.json``;
values are fractions, as the files hold them). Exit status 0 when every gate passes; 1 when one
fails, with a Markdown table of the failures on standard output (a metric the file skipped, or
whose value is undefined, fails); 2 for an unknown metric, a malformed bound or an unreadable
file. See :mod:`classwise.metrics.gates`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from classwise.errors import InputError
from classwise.metrics.arguments import help_text


def check_command(args: argparse.Namespace) -> int:
    from classwise.metrics.gates import check, parse_bound, results_table
    from classwise.tables import to_markdown

    gates = [parse_bound(text, "min") for text in args.min] + [parse_bound(text, "max") for text in args.max]
    if not gates:
        raise InputError("give at least one gate (--min METRIC=VALUE or --max METRIC=VALUE)", field="--min")
    seen: set[tuple[str, str]] = set()
    for gate in gates:
        if (gate.metric, gate.bound) in seen:
            raise InputError(f"{gate.metric} is bounded twice", field=f"--{gate.bound}")
        seen.add((gate.metric, gate.bound))
    results = []
    for path in args.metrics:
        results += check(_read(path), gates, where={"file": str(path)}, source=str(path))
    failed = [result for result in results if not result.passed]
    if failed:
        sys.stdout.write(to_markdown(results_table(failed).set_index("file")))
        print(f"classwise check: {len(failed)} of {len(results)} gates failed", file=sys.stderr)
        return 1
    print(f"classwise check: all {len(results)} gates passed ({len(args.metrics)} file(s))")
    return 0


def _read(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file does not exist", path=path) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not a readable JSON file ({exc})", path=path) from None


def add_parser(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "check",
        help="gates for CI: exit 1 (with a table) when a metric is below its --min or above its --max",
        description=help_text(__doc__),
    )
    parser.add_argument("metrics", nargs="+", help="metrics JSON file(s): classwise metrics output, worst_class.json, ...")
    parser.add_argument(
        "--min", action="append", default=[], metavar="METRIC=VALUE", help="the metric must be >= VALUE (repeatable)"
    )
    parser.add_argument(
        "--max", action="append", default=[], metavar="METRIC=VALUE", help="the metric must be <= VALUE (repeatable)"
    )
    parser.set_defaults(handler=check_command)
