"""Write the README's figures of the demo from a run of it, so that they say what the run did.

    make run && make bench            # results/tables/digits/..., results/bench/demo.json
    python3 tools/update_readme.py    # README.md and its figure rewritten; --check: exit 1 if stale

What it writes: "What the demo gives" between its markers (the worst-class table of clean digits,
from results/tables/digits/original/clean/worst_class.md, the sentences that quote it and its
intervals) and its figure (docs/img/demo_per_class_recall.png, the run's per_class_recall.png);
and the demo's wall time, cores, CPU seconds and load average in the pipeline's row of
"Measured behaviour" (results/bench/demo.json). The demo's job count is not written here: a test
(tests/test_readme_figures.py) checks it against a dry run of the demo config.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLES = Path("tables/digits/original/clean")
FIGURE = Path("figures/digits/original/clean/per_class_recall.png")
README_FIGURE = Path("docs/img/demo_per_class_recall.png")
BEGIN = "<!-- tools/update_readme.py writes what follows, to its end marker, from a run of the demo -->"
END = "<!-- end of what tools/update_readme.py writes -->"
#: The demo's figures in the pipeline's row; the job count (group 1) stays as it is.
TIMING = re.compile(r"demo: (\d+) jobs in \d+ s on \d+ cores \(\d+ CPU-s, load average [\d.]+ to [\d.]+;")


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of a Markdown table's rows (header first, the alignment row left out)."""
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")] for line in markdown.splitlines() if line.startswith("|")
    ]
    return [row for row in rows if not all(re.fullmatch(r":?-+:?", cell) for cell in row)]


def demo_section(worst_class: str, intervals: str) -> str:
    """The text between the markers, from the two tables of the run."""
    rows = table_rows(worst_class)
    model = rows[0][1]
    cells = {row[0]: row[1] for row in rows[1:]}
    wca, worst = re.fullmatch(r"([\d.]+) \((.+)\)", cells["WCA"]).groups()  # type: ignore[union-attr]
    interval = {row[0]: row[1] for row in table_rows(intervals)[1:]}["WCA"]
    table = "\n".join(line for line in worst_class.splitlines() if line.startswith("|"))
    return f"""`results/tables/digits/original/clean/worst_class.md` of a run of the demo: the {model} model
is {float(cells["A"]):.0f} % accurate on average but only {float(wca):.0f} % on its worst class, the digit {worst}.

{table}

Percentages, worst class (or pair, or superclass) in parentheses; `; 10 tied` when that many
share the minimum (the one named is the lowest index, never a finding of its own). Beside it,
`worst_class_intervals.md` gives each number's 95 % interval (the {model} model's WCA:
`{interval}`), and `model_comparison.md` the paired bootstrap difference of every
pair of models."""


def updated(readme: str, results: Path) -> str:
    """``readme`` with the demo's section and timing taken from ``results``."""
    section = demo_section(
        (results / TABLES / "worst_class.md").read_text(), (results / TABLES / "worst_class_intervals.md").read_text()
    )
    before, rest = readme.split(BEGIN + "\n", 1)
    _, after = rest.split("\n" + END, 1)
    readme = f"{before}{BEGIN}\n{section}\n{END}{after}"
    demo = json.loads((results / "bench" / "demo.json").read_text())
    machine = demo["machine"]
    timing = (
        rf"demo: \1 jobs in {demo['wall_seconds']:.0f} s on {demo['cores']} cores ({demo['cpu_seconds']:.0f} CPU-s, load average "
        f"{machine['load_average_1min_at_start']:.1f} to {machine['load_average_1min_at_end']:.1f};"
    )
    readme, found = TIMING.subn(timing, readme)
    if found != 1:
        raise SystemExit(f"update_readme: expected one '{TIMING.pattern}' in the README, found {found}")
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", type=Path, default=REPO / "results", help="the demo's output_dir (default: results/)")
    parser.add_argument("--readme", type=Path, default=REPO / "README.md")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the README or its figure is stale")
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    new_text = updated(text, args.results)
    figure, readme_figure = (args.results / FIGURE).read_bytes(), args.readme.parent / README_FIGURE
    stale = [
        name
        for name, same in [(args.readme, new_text == text), (readme_figure, figure == readme_figure.read_bytes())]
        if not same
    ]
    if args.check:
        for path in stale:
            print(f"update_readme: {path} differs from the run in {args.results}", file=sys.stderr)
        return 1 if stale else 0
    args.readme.write_text(new_text)
    readme_figure.write_bytes(figure)
    print(f"update_readme: {', '.join(map(str, stale)) or 'nothing'} rewritten from {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
