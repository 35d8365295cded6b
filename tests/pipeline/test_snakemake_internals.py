"""Each use of Snakemake beyond its public API (classwise.pipeline.snakemake_internals), run
against the installed Snakemake on a workflow of one rule, read as a module too: an upgrade of
Snakemake that changes one of them fails here, with its name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: A rule of every kind of declaration the workflow reads back, and what the internals make of it
#: (written while the Snakefile is read, under the name the rule has there).
SNAKEFILE = """
import json
from classwise.pipeline import snakemake_internals as internals

rule make:
    output:
        table=report("out/{x}.csv", caption="caption.rst", category="c"),
        scratch=temp("out/{x}.txt"),
    params:
        label=lambda wildcards, input, output: f"{wildcards.x}:{output.table}",
    log:
        "logs/{x}.log",
    threads: 3
    resources:
        mem_mb=100,
        runtime=lambda wildcards: 5,
    script:
        "make.py"

made = internals.rule_named(workflow, "make")
job = internals.expanded_job(made, {"x": "a"})
flagged = internals.flagged_path("out/b.csv", {"temp": True})
with open(f"internals_{made.name}.json", "w") as stream:
    json.dump(
        {
            "resources": internals.literal_resources(made),
            "templates": internals.named_output_templates(made),
            "job": {key: [str(value) for value in values] for key, values in job.items() if key != "wildcards"},
            "named": {key: str(getattr(job["output"], key)) for key in ("table", "scratch")},
            "params": str(job["params"].label),
            "script": internals.script_path(made),
            "flags": sorted(flagged.flags),
        },
        stream,
        default=str,
    )
"""

MODULE = """
module inner:
    snakefile:
        "inner/Snakefile"

use rule * from inner as inner_*
"""


def _read(directory: Path, snakefile: Path, rule: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(directory), "-n", "--cores", "1", "out/a.csv"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((directory / f"internals_{rule}.json").read_text())


@pytest.fixture(scope="module")
def read(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict, Path]:
    directory = tmp_path_factory.mktemp("internals")
    (directory / "inner").mkdir()
    (directory / "inner" / "Snakefile").write_text(SNAKEFILE)
    (directory / "inner" / "make.py").write_text("")
    (directory / "Snakefile").write_text(MODULE)
    alone = _read(directory, directory / "inner" / "Snakefile", "make")
    as_module = _read(directory, directory / "Snakefile", "inner_make")
    return alone, as_module, directory


def test_a_rule_is_found_under_the_name_a_module_gives_it(read) -> None:  # type: ignore[no-untyped-def]
    alone, as_module, _ = read
    assert alone["job"] == as_module["job"]


def test_the_literal_resources_are_read_and_the_expressions_left_to_each_job(read) -> None:  # type: ignore[no-untyped-def]
    alone, _, _ = read
    threads, resources = alone["resources"]
    assert threads == 3 and resources == {"mem_mb": 100}


def test_the_named_outputs_keep_their_templates_and_flags(read) -> None:  # type: ignore[no-untyped-def]
    alone, _, _ = read
    templates = alone["templates"]
    assert list(templates) == ["table", "scratch"]
    assert templates["table"][0] == "out/{x}.csv" and "report" in templates["table"][1]
    assert templates["scratch"][0] == "out/{x}.txt" and "temp" in templates["scratch"][1]
    assert alone["flags"] == ["temp"]


def test_one_job_is_expanded_as_snakemake_runs_it(read) -> None:  # type: ignore[no-untyped-def]
    alone, _, directory = read
    assert alone["job"]["output"] == ["out/a.csv", "out/a.txt"]
    assert alone["named"] == {"table": "out/a.csv", "scratch": "out/a.txt"}
    assert alone["job"]["log"] == ["logs/a.log"]
    assert alone["params"] == "a:out/a.csv"  # a parameter that reads the job's outputs
    assert Path(alone["script"]) == directory / "inner" / "make.py"
