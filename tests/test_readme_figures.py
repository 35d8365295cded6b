"""The README's figures of the demo say what the demo does: its job count against a dry run of
the demo config, its table against the config, and tools/update_readme.py, which writes the table
and the timings from a run (results/ and results/bench/demo.json), on a run's files."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from paths import REPO
from snakemake_runner import scheduled_jobs

sys.path.insert(0, str(REPO / "tools"))

import update_readme  # noqa: E402  (tools/ is no package)

README = REPO / "README.md"
DEMO = REPO / "config" / "config.yaml"


def _demo_section(readme: str) -> str:
    return readme.split(update_readme.BEGIN, 1)[1].split(update_readme.END, 1)[0]


@pytest.mark.workflow
def test_every_job_count_of_the_readme_is_the_demo_s(tmp_path: Path) -> None:
    total = sum(scheduled_jobs(tmp_path, DEMO).values())
    counts = re.findall(r"\b(\d+) jobs\b", README.read_text())
    assert len(counts) >= 2 and set(counts) == {str(total)}, (counts, total)
    # the home page says it once, in the demo's time budget (its other counts are of measurements then)
    home = re.findall(r"The demo is (\d+) jobs", (README.parent / "docs" / "index.md").read_text())
    assert home == [str(total)], (home, total)


def test_the_readme_s_demo_table_has_the_demo_config_s_models_and_rows() -> None:
    """A config changed without running the tool again shows here (the numbers need a run)."""
    config = yaml.safe_load(DEMO.read_text())
    rows = update_readme.table_rows(_demo_section(README.read_text()))
    assert rows[0] == ["metric", *config["models"]]
    k, ns = config["metrics"]["worst_class"]["k"], config["metrics"]["worst_class"]["n"]
    names = [row[0] for row in rows[1:]]
    assert {"A", "WCA", f"A@{k}", f"WCA@{k}", *(f"W{n}CR" for n in ns), *(f"W{n}CR@{k}" for n in ns)} <= set(names)
    assert all(len(row) == len(rows[0]) for row in rows)


WORST_CLASS = """Worst-class metrics on digits (original labels, shift clean), in percent. Source: ...

| metric | linear | mlp |
|:--|--:|--:|
| A | 91.10 | 94.99 |
| WCA | 68.13 (1) | 86.52 (7) |
"""
INTERVALS = """Worst-class metrics on digits, with their 95 % intervals in brackets.

| metric | linear | mlp |
|:--|--:|--:|
| A | 91.10 [89.21, 92.94] | 94.99 [93.88, 96.28] |
| WCA | 68.13 (1) [57.00, 78.12] | 86.52 (7) [78.00, 93.00] |
"""


def _run_results(root: Path) -> Path:
    """The files of a run the tool reads."""
    tables = root / update_readme.TABLES
    tables.mkdir(parents=True)
    (tables / "worst_class.md").write_text(WORST_CLASS)
    (tables / "worst_class_intervals.md").write_text(INTERVALS)
    (root / update_readme.FIGURE).parent.mkdir(parents=True)
    (root / update_readme.FIGURE).write_bytes(b"\x89PNG the run's figure")
    demo = {
        "wall_seconds": 131.4,
        "cores": 2,
        "cpu_seconds": 260.6,
        "machine": {"load_average_1min_at_start": 0.5, "load_average_1min_at_end": 2.3125},
    }
    (root / "bench").mkdir()
    (root / "bench" / "demo.json").write_text(json.dumps(demo))
    return root


def test_the_tool_writes_the_table_the_timings_and_the_figure_from_a_run(tmp_path: Path) -> None:
    results = _run_results(tmp_path / "results")
    readme = tmp_path / "repo" / "README.md"
    (readme.parent / "docs" / "img").mkdir(parents=True)
    shutil.copy(README, readme)
    shutil.copy(REPO / update_readme.README_FIGURE, readme.parent / update_readme.README_FIGURE)
    arguments = ["--results", str(results), "--readme", str(readme)]
    assert update_readme.main([*arguments, "--check"]) == 1
    assert update_readme.main(arguments) == 0
    text = readme.read_text()
    section = _demo_section(text)
    assert "the linear model\nis 91 % accurate on average but only 68 % on its worst class, the digit 1." in section
    assert "| metric | linear | mlp |\n|:--|--:|--:|\n| A | 91.10 | 94.99 |\n| WCA | 68.13 (1) | 86.52 (7) |\n" in section
    assert "(the linear model's WCA:\n`68.13 (1) [57.00, 78.12]`)" in section
    jobs = update_readme.TIMING.search(README.read_text())[1]  # the tool keeps the count (a dry run's: the test above)
    assert f"demo: {jobs} jobs in 131 s on 2 cores (261 CPU-s, load average 0.5 to 2.3;" in text
    assert (readme.parent / update_readme.README_FIGURE).read_bytes() == b"\x89PNG the run's figure"
    # everything outside the section and the timing is as it was
    original = README.read_text()
    assert text.split(update_readme.BEGIN)[0] == original.split(update_readme.BEGIN)[0]
    after, after_before = text.split(update_readme.END)[1], original.split(update_readme.END)[1]
    assert update_readme.TIMING.sub("T", after) == update_readme.TIMING.sub("T", after_before)
    assert update_readme.main([*arguments, "--check"]) == 0  # and a second run changes nothing
