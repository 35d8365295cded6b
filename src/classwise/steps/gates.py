"""Workflow steps of the config's ``gates:`` (rules check_gates and enforce_gates).

``check_gates`` writes ``gates.md`` (every check: the run, the gate, the value, pass / FAIL) and
``gates.json`` and never fails on a failed gate; ``enforce_gates``, which runs after every other
output is written, fails the run when ``gates.json`` records a failure, so that a CI job sees a
non-zero exit status and still has every table, figure and the gates' report to look at.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.atomic import write_json, write_text
from classwise.errors import InputError

# The metrics' catalogue (numpy), the gates and the tables (pandas) are imported by check_gates,
# which uses them: enforce_gates reads one JSON file.
if TYPE_CHECKING:
    from classwise.metrics.gates import GateResult

RUN_KEYS = ("dataset", "labels", "model", "shift")


def _read_json(path: str | Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None


def _document(run: Mapping[str, str]) -> dict[str, Any]:
    """The run's worst-class and decisiveness metrics as one document; without decisiveness
    (hard predictions) its metrics are listed as skipped."""
    from classwise.metrics.catalogue import HARD_PREDICTIONS_REASON, metric_names

    worst = _read_json(run["worst_class"])
    metrics = dict(worst["metrics"])
    skipped = dict(worst.get("skipped") or {})
    if run.get("decisiveness"):
        metrics.update(_read_json(run["decisiveness"])["metrics"])
    else:
        skipped.update({name: HARD_PREDICTIONS_REASON for name in metric_names(family="decisiveness")})
    return {"metrics": metrics, "skipped": skipped}


def check_gates_step(
    *,
    gates: Mapping[str, Mapping[str, Any]],
    runs: Sequence[Mapping[str, str]],
    markdown_path: str | Path,
    json_path: str | Path,
) -> list[GateResult]:
    """Check each gate of the config on each run it applies to (``runs``: ``{dataset, labels,
    model, shift, worst_class, decisiveness}`` with the paths of its metrics JSON, decisiveness
    empty without scores); write the table of every check and the JSON summary."""
    from classwise import tables
    from classwise.metrics.gates import applies, check, gates_from_config, results_table

    results: list[GateResult] = []
    for run in runs:
        where = {key: run[key] for key in RUN_KEYS}
        wanted = [gate for gate in gates_from_config(gates) if applies(gates[gate.metric], where)]
        if wanted:
            results += check(_document(run), wanted, where=where, source=run["worst_class"])
    failed = [result for result in results if not result.passed]
    verdict = f"{len(failed)} of {len(results)} failed" if failed else f"all {len(results)} passed"
    caption = f"Gates of the config (values are fractions, as in the metrics JSON): {verdict}."
    summary = {
        "passed": not failed,
        "checks": len(results),
        "failed": [{**dict(r.where), "gate": str(r.gate), "value": r.value, "note": r.note} for r in failed],
    }
    write_text(markdown_path, tables.to_markdown(results_table(results).set_index("dataset"), caption=caption))
    write_json(json_path, summary)
    return results


def enforce_gates_step(*, summary_path: str | Path, report_path: str | Path, passed_path: str | Path) -> str | None:
    """None (and ``passed_path`` written) when every gate passed, else the message to fail the
    run with, naming the failures and ``report_path``."""
    summary = _read_json(summary_path)
    if summary["passed"]:
        write_text(passed_path, f"all {summary['checks']} gates passed\n")
        return None
    failures = "; ".join(
        f"{f['gate']} on {'/'.join(f[key] for key in RUN_KEYS)}: "
        + (f"{f['value']:.4f}" if f["value"] is not None else f["note"])
        for f in summary["failed"][:5]
    )
    more = f" and {len(summary['failed']) - 5} more" if len(summary["failed"]) > 5 else ""
    return f"{len(summary['failed'])} of {summary['checks']} gates failed ({report_path}): {failures}{more}"
