"""Every kind of output file of the workflow, one record each (:class:`Output`): the rule that
writes it, its path, its formats, the source it mirrors, its report caption and category, and the
caption or title its files carry.

Everything that describes an output reads its record: the rules declare their outputs from it
(``outputs_of`` in workflow/rules/outputs_common.smk), the scripts ask it for their captions
(:func:`classwise.pipeline.captions.caption_of`), the HTML report's captions are generated from it
(``workflow/report/<name>.rst``, :func:`report_captions`) and ``results/README.md`` lists each
planned output with what it mirrors (:func:`classwise.steps.reports.results_readme_step`). A new
table or figure is its builder, one record in the module of its stage and its rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from classwise.outputs import analyses, metrics, robustness
from classwise.outputs.record import Output, Planned, Setting

__all__ = [
    "OUTPUTS",
    "Output",
    "Planned",
    "Setting",
    "listed_file",
    "output",
    "planned_files",
    "record_of",
    "report_captions",
    "rule_outputs",
    "target",
]

OUTPUTS: Mapping[str, Output] = {record.name: record for module in (metrics, analyses, robustness) for record in module.RECORDS}
"""Every record by name: the outputs of the metrics and paper tables, the analyses and robustness."""


def output(name: str) -> Output:
    """The record of ``name``; a ``KeyError`` naming the known records otherwise."""
    try:
        return OUTPUTS[name]
    except KeyError:
        raise KeyError(f"no output record {name!r}; expected one of {sorted(OUTPUTS)}") from None


def rule_outputs(rule: str) -> list[Output]:
    """The records a rule writes, in catalogue order."""
    return [record for record in OUTPUTS.values() if record.rule == rule]


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
    file no record describes). The records' paths are unambiguous (tests/test_outputs.py)."""
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
