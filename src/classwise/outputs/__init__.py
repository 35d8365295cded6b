"""Every kind of output file of the workflow, one record each (:class:`Output`): the rule that
writes it, its path, its formats, the source it mirrors, its report caption and category, and the
caption or title its files carry.

Everything that describes an output reads its record: the rules declare their outputs from it
(``outputs_of_rule`` in workflow/rules/outputs_common.smk: every record of the rule, :func:`declared_outputs`),
the workflow plans it from it (the stage's planning function names its scopes and the conditions
that hold there, :func:`plan_scopes` picks the records), the scripts ask it for their captions
(:func:`classwise.pipeline.captions.caption_of`), the HTML report's captions are generated from it
(``workflow/report/<name>.rst``, :func:`report_captions`) and ``results/README.md`` lists each
planned output with what it mirrors (:func:`classwise.steps.reports.results_readme_step`). A new
table or figure of an existing rule is its builder, one record in the module of its stage (its rule,
wildcards and conditions place it in the rule's outputs and in the plan) and its script's line.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from classwise.outputs import analyses, metrics, robustness
from classwise.outputs.record import CONDITIONS, RUN_CONDITIONS, Output, Planned, Setting, check_conditions

__all__ = [
    "CONDITIONS",
    "OUTPUTS",
    "RUN_CONDITIONS",
    "STAGES",
    "Output",
    "Planned",
    "Scope",
    "Setting",
    "declared_outputs",
    "file_of",
    "listed_file",
    "output",
    "plan_scopes",
    "planned_files",
    "record_of",
    "report_captions",
    "rule_outputs",
    "target",
]

OUTPUTS: Mapping[str, Output] = {record.name: record for module in (metrics, analyses, robustness) for record in module.RECORDS}
"""Every record by name: the outputs of the metrics and paper tables, the analyses and robustness."""

STAGES: Mapping[str, tuple[Output, ...]] = {
    "metrics": metrics.RECORDS,
    "analyses": analyses.RECORDS,
    "robustness": robustness.RECORDS,
}
"""The records of each stage, in catalogue order (the order its plan and ``results/README.md`` list them in):
the workflow's ``final_outputs``, ``analysis_outputs`` and ``robustness_outputs`` plan them."""


def output(name: str) -> Output:
    """The record of ``name``; a ``KeyError`` naming the known records otherwise."""
    try:
        return OUTPUTS[name]
    except KeyError:
        raise KeyError(f"no output record {name!r}; expected one of {sorted(OUTPUTS)}") from None


def rule_outputs(rule: str) -> list[Output]:
    """The records a rule writes, in catalogue order."""
    return [record for record in OUTPUTS.values() if record.rule == rule]


def declared_outputs(rule: str, run: Collection[str]) -> list[Output]:
    """The records a rule declares in its ``output:``, in catalogue order: each record of the rule
    but those whose run-wide conditions (:data:`RUN_CONDITIONS`) are not among ``run``, the
    run-wide conditions that hold (``{"bootstrap"}`` with the bootstrap on)."""
    return [record for record in rule_outputs(rule) if record.declared(run)]


@dataclass(frozen=True)
class Scope:
    """Where a stage's records may be planned: one job's wildcards (a dataset, view and shift;
    those and a model) and the conditions (keys of :data:`CONDITIONS`) that hold there. A stage
    that plans the same wildcards once per analysis (robustness: a dataset's class-wise analysis,
    then its corruption grid, ...), in the order ``results/README.md`` lists them, names at each
    visit the analysis it plans."""

    wildcards: Mapping[str, str]
    conditions: Collection[str] = ()

    def __post_init__(self) -> None:
        check_conditions(self.conditions)


def plan_scopes(stage: str, scopes: Iterable[Scope]) -> list[Planned]:
    """The planned outputs of ``stage`` (a key of :data:`STAGES`) over ``scopes``, in their order:
    at each scope, every record of the stage whose wildcards are the scope's and whose conditions
    all hold there, in catalogue order. A record planned twice for the same wildcards (scopes that
    overlap) is a ``ValueError``: ``results/README.md`` would list it twice."""
    planned: list[Planned] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    # A record's wildcards are parsed from its path: once per call, not once per scope.
    records = [(frozenset(record.wildcards), record) for record in STAGES[stage]]
    for scope in scopes:
        keys = frozenset(scope.wildcards)
        for wildcards, record in records:
            if wildcards != keys or not record.holds(scope.conditions):
                continue
            key = (record.name, tuple(sorted(scope.wildcards.items())))
            if key in seen:
                raise ValueError(f"output {record.name!r} planned twice for {dict(scope.wildcards)}")
            seen.add(key)
            planned.append(Planned(record.name, dict(scope.wildcards)))
    return planned


def file_of(name: str, out: str, wildcards: Mapping[str, str], key: str | None = None) -> str:
    """The one path of an output: record ``name``'s file ``key`` (default its first) below
    ``out`` for ``wildcards``. Rules, steps, the explorer, the table of every number and the
    tests ask this (or the record) for a path, never spell it out."""
    files = output(name).files_of(out, wildcards)
    return files[key] if key is not None else next(iter(files.values()))


def planned_files(planned: Planned, out: str) -> list[str]:
    """Every file of one planned output under ``out`` (a table: its Markdown, CSV and LaTeX)."""
    return list(output(planned.name).files_of(out, planned.wildcards).values())


def listed_file(planned: Planned, out: str) -> str:
    """The file ``results/README.md`` lists for a planned output (its first; the others beside it)."""
    return planned_files(planned, out)[0]


def target(planned: Planned, out: str) -> str:
    """What a run requests for a planned output: its first file, or the folder of a record whose
    rule declares one (:attr:`Output.directory`)."""
    record = output(planned.name)
    if record.directory:
        return f"{out}/{record.fill(planned.wildcards).rsplit('/', 1)[0]}"
    return listed_file(planned, out)


def record_of(relative: str) -> tuple[Output, dict[str, str]] | None:
    """The record and wildcards of a file, by its path below the output directory (``None`` for a
    file no record describes). The records' paths are unambiguous (tests/outputs/test_outputs.py)."""
    for record in OUTPUTS.values():
        match = record.matcher().fullmatch(relative)
        if match:
            wildcards = {name: value for name, value in match.groupdict().items() if name != "suffix"}
            return record, wildcards
    return None


def report_captions(records: Iterable[Output] | None = None) -> dict[str, str]:
    """File name -> text of the report captions (``workflow/report/<name>.rst``) of the records
    the report shows, each headed by a comment saying where to edit it."""
    captions = {}
    for record in OUTPUTS.values() if records is None else records:
        if record.report:
            header = (
                f".. Generated from the output record {record.name!r} in {_module_of(record)} by "
                "tools/write_report_captions.py: edit the record, then rerun the tool.\n\n"
            )
            captions[f"{record.name}.rst"] = header + record.report
    return captions


def _module_of(record: Output) -> str:
    for module in (metrics, analyses, robustness):
        if any(other is record for other in module.RECORDS):
            return module.__name__
    return __name__
