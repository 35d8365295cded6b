"""What the workflow takes from Snakemake beyond its public API, in one place.

The shift batches (workflow/rules/batches.smk) run a per-shift rule's script once per shift with
that shift's own job, and a decode group's job takes infer's threads and resources
(``inherited_resources`` in workflow/rules/common.smk); both read a rule as Snakemake holds it:
its name under a module's renaming, its literal resources, its named outputs with their flags,
and one job's expansion of its inputs, outputs, parameters and log. Snakemake has no public API
for these, so each is a function here, and tests/pipeline/test_snakemake_internals.py runs each
against the installed Snakemake: an upgrade that changes one fails there, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "expanded_job",
    "flagged_path",
    "literal_resources",
    "named_output_templates",
    "rule_named",
    "script_path",
]


def rule_named(workflow: Any, name: str) -> Any:
    """The rule ``name`` of ``workflow`` under the name a module gives it (``use rule * from
    classwise as classwise_*`` renames every rule while the Snakefile is read)."""
    return workflow.get_rule(workflow.modifier.modify_rulename(name))


def literal_resources(rule: Any) -> tuple[int, dict[str, Any]]:
    """``(threads, resources)`` Snakemake gave ``rule`` as values (its own and a profile's
    set-threads and set-resources); those given as expressions (the default tmpdir, mem_mb and
    disk_mb, ``2*input.size_mb``) are evaluated per job and left out."""
    own = {key: value.value for key, value in rule.resources.items() if not value.is_evaluable() and value.value is not None}
    threads = own.pop("_cores", 1)
    return threads, {key: value for key, value in own.items() if not key.startswith("_")}


def named_output_templates(rule: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each named output of ``rule`` -> its path template (wildcard constraints stripped) and
    its flags (``report``, ``temp``, ...)."""
    from snakemake.io import strip_wildcard_constraints

    templates = {}
    for name, (start, _end) in rule.output._names.items():
        declared = rule.output[start]
        templates[name] = (strip_wildcard_constraints(str(declared)), dict(getattr(declared, "flags", {})))
    return templates


def flagged_path(path: str, flags: Mapping[str, Any]) -> Any:
    """``path`` as an output carrying ``flags``, as a rule's ``output:`` takes it."""
    from snakemake.io import AnnotatedString

    annotated = AnnotatedString(path)
    annotated.flags = dict(flags)
    return annotated


def expanded_job(rule: Any, wildcards: Mapping[str, str]) -> dict[str, Any]:
    """One job of ``rule`` for ``wildcards``, as Snakemake expands it: its ``input``, ``output``,
    ``params`` and ``log`` (Snakemake's named lists)."""
    from snakemake.iocontainers import Wildcards

    item = Wildcards(fromdict=dict(wildcards))
    input, _, _, _ = rule.expand_input(item)
    output, _ = rule.expand_output(item)
    params, _ = rule.expand_params(item, input, output, None)
    return {"wildcards": item, "input": input, "output": output, "params": params, "log": rule.expand_log(item)}


def script_path(rule: Any) -> str:
    """The local path of ``rule``'s script (a URL for a workflow read from one)."""
    return str(rule.basedir.join(rule.script).get_path_or_uri(secret_free=True))
