"""Compare two results directories of the same config: logits, metric values and tables.

    python tools/compare_results.py results-before/ results-after/ [--ignore-shift snow_s3 ...]

Logits are compared array by array (bit for bit), metric JSON value by value (every number under
``metrics``), tables as text. Prints one line per difference and exits 1 if there is any. Used to
show that a redesign leaves the demo's results as they were (docs/architecture.md); shifts named
with ``--ignore-shift`` are left out (a bug fix that changes them on purpose).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def _values(document: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a JSON document by its path, ``metrics.WCA.value`` style."""
    if isinstance(document, dict):
        out: dict[str, Any] = {}
        for key, value in document.items():
            out.update(_values(value, f"{prefix}{key}."))
        return out
    if isinstance(document, list):
        out = {}
        for index, value in enumerate(document):
            out.update(_values(value, f"{prefix}{index}."))
        return out
    return {prefix.rstrip("."): document}


def _ignored(path: Path, shifts: list[str]) -> bool:
    return any(part == shift or part == f"{shift}.npz" or part == f"{shift}.json" for shift in shifts for part in path.parts)


def _pairs(before: Path, after: Path, folder: str, pattern: str, ignore_shifts: list[str], differences: list[str]):
    """(relative path, before file, after file) of every ``pattern`` file below ``before/folder``
    that is not ignored; a file missing after is a difference."""
    for old in sorted((before / folder).rglob(pattern)):
        relative = old.relative_to(before)
        if _ignored(relative, ignore_shifts):
            continue
        new = after / relative
        if not new.exists():
            differences.append(f"{relative}: missing after")
            continue
        yield relative, old, new


def compare(before: Path, after: Path, *, ignore_shifts: list[str]) -> list[str]:
    differences: list[str] = []
    for relative, old, new in _pairs(before, after, "logits", "*.npz", ignore_shifts, differences):
        with np.load(old, allow_pickle=False) as a, np.load(new, allow_pickle=False) as b:
            for name in sorted(set(a.files) | set(b.files)):
                if name not in a.files or name not in b.files or not np.array_equal(a[name], b[name]):
                    differences.append(f"{relative}: array {name!r} differs")
    for relative, old, new in _pairs(before, after, "metrics", "*.json", ignore_shifts, differences):
        a = _values(json.loads(old.read_text())["metrics"])
        b = _values(json.loads(new.read_text())["metrics"])
        for key in sorted(a):
            # Keys the later version adds (intervals, say) are no change of a value.
            if a[key] != b.get(key):
                differences.append(f"{relative}: {key}: {a[key]!r} -> {b.get(key)!r}")
    for relative, old, new in _pairs(before, after, "tables", "*.md", ignore_shifts, differences):
        if new.read_text() != old.read_text():
            differences.append(f"{relative}: table differs")
    return differences


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore-shift", action="append", default=[], help="a shift whose outputs may differ")
    args = parser.parse_args(argv)
    differences = compare(args.before, args.after, ignore_shifts=args.ignore_shift)
    for line in differences:
        print(line)
    print(f"{len(differences)} differences", file=sys.stderr)
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
