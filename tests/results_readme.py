"""What a run's results/README.md lists, read back for the tests: each row's file and the files
its record writes beside it (``also written as``)."""

from __future__ import annotations

import re
from pathlib import Path

#: The suffixes of the tables, figures, data files and pages every run's README lists.
LISTED_SUFFIXES = {".md", ".csv", ".tex", ".png", ".html"}
_ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| .* \| (?P<beside>[^|]*)\|$")


def listed_files(readme: str) -> set[str]:
    """Every file the README's table lists, as paths below the output directory."""
    listed = set()
    for line in readme.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        path = Path(row["file"])
        listed.add(path.as_posix())
        listed |= {path.with_suffix(suffix).as_posix() for suffix in re.findall(r"`(\.\w+)`", row["beside"])}
    return listed


def written_files(results: Path) -> set[str]:
    """The tables, figures, data files and pages (the explorer) a run wrote below ``results`` (not
    the README itself)."""
    return {
        path.relative_to(results).as_posix()
        for path in results.rglob("*")
        if path.is_file() and path.suffix in LISTED_SUFFIXES and path != results / "README.md"
    }
