"""The caption of a table and the title of a figure a Snakemake job writes, from its output
records (:mod:`classwise.outputs`) and the job's wildcards and parameters.

They are not the rules' ``params:``: Snakemake reruns a job whose parameters change, and rewording
a caption must not retrain CleaneX or rerun a permutation test. Each caption reads only the job's
wildcards and its real parameters, so it still follows the settings that made the table, and ends
with the source it mirrors (:func:`classwise.references.cite`) and, for a shift of corruptions
made on the fly, the note that they are classwise's own
(:func:`classwise.shifts.corruptions.own_definitions_note`).
"""

from __future__ import annotations

from typing import Any

from classwise.outputs import OUTPUTS, Output, rule_outputs
from classwise.outputs.record import Text

#: Record name -> the caption its table's files carry (the records with one).
CAPTIONS: dict[str, Text] = {name: record.caption for name, record in OUTPUTS.items() if record.caption is not None}
#: Rule -> the title of the figures it draws (each of a rule's figure records with a title shares it).
TITLES: dict[str, Text] = {record.rule: record.title for record in OUTPUTS.values() if record.title is not None}


#: The rules that write an output record.
_RULES = frozenset(record.rule for record in OUTPUTS.values())


def own_rule(name: str) -> str:
    """The classwise rule a job's rule is: ``name`` itself, or, in a workflow that uses classwise
    as a Snakemake module (``use rule * from classwise as classwise_*``), the rule whose name
    ``name`` ends with after the user's prefix (the longest such rule)."""
    if name in _RULES:
        return name
    matches = [rule for rule in _RULES if name.endswith(rule)]
    return max(matches, key=len) if matches else name


def _job(snakemake: Any) -> tuple[str, dict[str, str], dict[str, Any]]:
    return own_rule(str(snakemake.rule)), dict(snakemake.wildcards.items()), dict(snakemake.params.items())


def captioned(rule: str, table: str = "") -> Output:
    """The record of the table ``table`` of ``rule`` (its :attr:`~classwise.outputs.Output.part`;
    "" for the rule's first captioned table)."""
    records = [record for record in rule_outputs(rule) if record.caption is not None and record.part == table]
    if len(records) != 1:
        raise KeyError(f"rule {rule!r} has {len(records)} captioned tables named {table!r}; expected one")
    return records[0]


def caption_of(snakemake: Any, table: str = "") -> str:
    """The caption of the table a Snakemake job writes (``table``: which one, for a job that
    writes several: the record's ``part``)."""
    rule, wildcards, params = _job(snakemake)
    caption = captioned(rule, table).caption
    assert caption is not None
    return caption(wildcards, params)


def title_of(snakemake: Any) -> str:
    """The title of the figures a Snakemake job draws."""
    rule, wildcards, params = _job(snakemake)
    return TITLES[rule](wildcards, params)
