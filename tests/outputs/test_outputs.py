"""One record per output (classwise.outputs): the rules declare their outputs from it, the report's
captions are generated from it, and results/README.md lists each planned output with the files
beside it and what it mirrors."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from paths import REPO
from results_readme import listed_files
from snakemake.iocontainers import Namedlist

from classwise.outputs import (
    CONDITIONS,
    OUTPUTS,
    STAGES,
    Output,
    Planned,
    Scope,
    Setting,
    declared_outputs,
    listed_file,
    output,
    plan_scopes,
    record_of,
    report_captions,
    rule_outputs,
    target,
)
from classwise.pipeline.captions import TITLES, title_of
from classwise.references import REFERENCES
from classwise.steps.reports import results_readme_step

#: Wildcard values that look like parts of other records' paths: a model named like a table, a view
#: named like the robustness folder, a shift with dots.
TRICKY = {"dataset": "digits", "labels": "robustness", "shift": "pgd_linf_eps0.1", "model": "intervals"}


def _rule_blocks() -> dict[str, str]:
    """Rule name -> its text, over every rule file."""
    text = "\n".join(path.read_text() for path in sorted((REPO / "workflow" / "rules").glob("*.smk")))
    return {match[1]: match[2] for match in re.finditer(r"^rule (\w+):\n(.*?)(?=^\S|\Z)", text, flags=re.S | re.M)}


def test_every_record_is_declared_by_the_rule_it_names_and_by_no_other() -> None:
    declared: dict[str, list[str]] = {}
    for rule, block in _rule_blocks().items():
        names = re.findall(r'outputs_of\("(\w+)"\)', block)
        # outputs_of_rule("<rule>"): every record of the rule it names (the bootstrap on)
        names += [record.name for named in re.findall(r'outputs_of_rule\("(\w+)"\)', block) for record in rule_outputs(named)]
        for name in names:
            declared.setdefault(name, []).append(rule)
    assert declared == {name: [record.rule, *record.also_written_by] for name, record in OUTPUTS.items()}


def test_a_rule_declares_a_record_only_where_its_run_wide_conditions_hold() -> None:
    names = [record.name for record in declared_outputs("aggregate_worst_class_tables", ["bootstrap"])]
    assert names == ["worst_class_table", "worst_class_intervals_table"]
    assert [record.name for record in declared_outputs("aggregate_worst_class_tables", [])] == ["worst_class_table"]
    # a condition that varies from job to job (scores on the shift) leaves the declaration alone
    assert [record.name for record in declared_outputs("compute_decisiveness_metrics", [])] == [
        "reliability_figure",
        "decisiveness_metrics",
    ]
    assert {condition for record in OUTPUTS.values() for condition in record.when} <= set(CONDITIONS)
    with pytest.raises(ValueError, match="unknown conditions"):
        Output(name="x", rule="r", path="x", files={"csv": ".csv"}, mirrors=(None, ""), when=("bootstrapped",))


def test_a_record_given_a_condition_is_planned_only_where_it_holds() -> None:
    shift = {"dataset": "d", "labels": "original", "shift": "clean"}
    without = [p.name for p in plan_scopes("metrics", [Scope(shift, {"one_label"})])]
    with_it = [p.name for p in plan_scopes("metrics", [Scope(shift, {"one_label", "bootstrap"})])]
    assert "worst_class_intervals_table" not in without and "worst_class_intervals_table" in with_it
    assert "worst_class_table" in without  # a record of no condition is planned wherever its wildcards are
    assert [name for name in with_it if name not in without] == [
        record.name for record in OUTPUTS.values() if record.when == ("bootstrap",) and set(record.wildcards) == set(shift)
    ]
    # a record is planned at the scopes of its own wildcards only
    assert plan_scopes("metrics", [Scope({"dataset": "d"}, set(CONDITIONS))]) == []
    assert plan_scopes("analyses", [Scope({}, {"simulation"})]) == [Planned("simulation_table"), Planned("simulation_figure")]
    with pytest.raises(ValueError, match="planned twice"):
        plan_scopes("robustness", [Scope({"dataset": "d"}, {"classwise"})] * 2)
    with pytest.raises(ValueError, match="unknown conditions"):
        Scope(shift, {"bootstrapped"})


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_the_plan_of_a_scope_where_every_condition_holds_is_the_catalogue_order(stage: str) -> None:
    """results/README.md lists a stage's outputs in its plan order: at each scope, its records in
    the order of their module (classwise.outputs.metrics, analyses, robustness)."""
    for keys in {tuple(sorted(record.wildcards)) for record in STAGES[stage]}:
        wildcards = {key: TRICKY[key] for key in keys}
        planned = plan_scopes(stage, [Scope(wildcards, set(CONDITIONS))])
        expected = [record.name for record in STAGES[stage] if set(record.wildcards) == set(keys)]
        assert [p.name for p in planned] == expected and all(p.wildcards == wildcards for p in planned)


def test_a_rule_s_records_name_distinct_outputs_and_files() -> None:
    for rule in {record.rule for record in OUTPUTS.values()}:
        records = [record for record in OUTPUTS.values() if record.rule == rule]
        keys = [key for record in records for key in record.files]
        assert len(keys) == len(set(keys)), rule
        files = [f"{record.path}{suffix}" for record in records for suffix in record.suffixes]
        assert len(files) == len(set(files)), rule


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_each_file_of_a_record_is_found_back_as_that_record_with_its_wildcards(name: str) -> None:
    record = OUTPUTS[name]
    wildcards = {key: TRICKY[key] for key in record.wildcards}
    for path in record.files_of("results", wildcards).values():
        relative = path.removeprefix("results/")
        assert record_of(relative) == (record, wildcards), relative
    assert record_of(f"{record.fill(wildcards)}.unknown") is None


def test_a_planned_output_gives_its_files_its_listed_file_and_what_a_run_requests() -> None:
    table = Planned("worst_class_table", {"dataset": "d", "labels": "original", "shift": "clean"})
    assert listed_file(table, "out") == target(table, "out") == "out/tables/d/original/clean/worst_class.md"
    figures = Planned("mean_confusion", {"dataset": "d", "shift": "pgd"})
    assert listed_file(figures, "out") == "out/figures/d/robustness/mean_confusion/pgd.png"
    assert target(figures, "out") == "out/figures/d/robustness/mean_confusion"  # the rule declares the folder
    assert output("mean_confusion").pattern == "{shift}.png"
    with pytest.raises(KeyError, match="no output record 'nothing'"):
        output("nothing")


def test_a_record_refuses_a_shown_file_without_its_caption_or_outside_its_files() -> None:
    with pytest.raises(ValueError, match="come together"):
        Output(name="x", rule="r", path="x", files={"csv": ".csv"}, mirrors=(None, ""), shown="csv")
    with pytest.raises(ValueError, match="not one of its files"):
        Output(
            name="x", rule="r", path="x", files={"csv": ".csv"}, mirrors=(None, ""), shown="png", report="t", category="medi2024"
        )


def test_every_shown_output_has_a_category_a_caption_and_labels_and_cites_a_known_source() -> None:
    for record in OUTPUTS.values():
        assert record.mirrors[0] is None or record.mirrors[0] in REFERENCES, record.name
        assert record.mirrors[1], record.name
        if record.shown:
            assert record.category in REFERENCES and record.report.strip(), record.name
            assert record.labels, record.name


def test_report_labels_read_the_config_where_a_record_says_so() -> None:
    config = {"analyses": {"subset_tests": {"shift": "gaussian_noise_s3"}}}
    labels = OUTPUTS["subset_tests"].report_labels(config)
    assert isinstance(labels, dict) and labels["shift"] == "gaussian_noise_s3" and labels["model"] == "{model}"
    assert Setting("a", "b").of({"a": {"b": 3}}) == "3"


def test_the_report_captions_are_the_records_and_nothing_else() -> None:
    """workflow/report/<name>.rst is written from each record by tools/write_report_captions.py."""
    report = REPO / "workflow" / "report"
    captions = report_captions()
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in report.glob("*.rst") if path.name != "workflow.rst"}
    assert set(on_disk) == set(captions), "rerun tools/write_report_captions.py"
    stale = [name for name, text in captions.items() if on_disk[name] != text]
    assert stale == [], f"rerun tools/write_report_captions.py: {stale}"
    assert all(f"output record {name[:-4]!r}" in text.splitlines()[0] for name, text in captions.items())


def test_the_figures_of_a_rule_share_its_title() -> None:
    for rule, title in TITLES.items():
        assert {record.title for record in OUTPUTS.values() if record.rule == rule and record.title is not None} == {title}
    job = SimpleNamespace(
        rule="analyse_robust_fairness",
        wildcards=Namedlist(fromdict={"dataset": "digits", "shift": "pgd"}),
        params=Namedlist(fromdict={}),
    )
    assert title_of(job) == "digits: class-wise clean vs robust accuracy under pgd"


def test_the_readme_lists_each_output_with_the_files_beside_it(tmp_path: Path) -> None:
    root = tmp_path / "results"
    planned = [
        Planned("worst_class_table", {"dataset": "d", "labels": "original", "shift": "clean"}),
        Planned("robust_fairness_table", {"dataset": "d", "shift": "pgd_linf_eps0.1"}),
        Planned("confusion_counts", {"dataset": "d", "labels": "original", "model": "m", "shift": "clean"}),
        Planned("mean_confusion", {"dataset": "d", "shift": "pgd_linf_eps0.1"}),
    ]
    results_readme_step(
        description="", output_dir=root, outputs=[listed_file(p, str(root)) for p in planned], readme_path=root / "README.md"
    )
    text = (root / "README.md").read_text()
    assert "| `tables/d/robustness/robust_fairness_pgd_linf_eps0.1.md` | [Medi et al., 2024](" in text
    assert text.count(" | `.csv`, `.tex`, `.json` |") == 1 and text.count(" | `.csv`, `.tex` |") == 1
    assert "| `metrics/d/original/m/clean/confusion.csv` | one model's confusion matrix as counts (true x predicted) |  |" in text
    assert listed_files(text) == {
        "tables/d/original/clean/worst_class.md",
        "tables/d/original/clean/worst_class.csv",
        "tables/d/original/clean/worst_class.tex",
        *(f"tables/d/robustness/robust_fairness_pgd_linf_eps0.1.{suffix}" for suffix in ("md", "csv", "tex", "json")),
        "metrics/d/original/m/clean/confusion.csv",
        "figures/d/robustness/mean_confusion/pgd_linf_eps0.1.png",
    }
