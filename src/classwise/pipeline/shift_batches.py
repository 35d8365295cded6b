"""One job over a dataset's shifts instead of one per shift (``jobs.batch_shifts``).

A study of files of predictions is many small jobs: a (dataset, model, shift) is an
``import_predictions`` job and a metrics job, a (dataset, label view, shift) a job per table and
one of figures, each a Python process whose start-up (about 0.7 CPU-seconds of imports) costs far
more than its numbers. For a dataset evaluated only on files of predictions (every labels-only
dataset), ``batch_shifts: auto`` (the default) runs each of those rules as one job per model, or
per label view, over all the dataset's shifts: a *shift batch*. The batch job runs the rule's own
script once per shift in one process (:func:`run_items`), with the inputs, outputs, parameters,
wildcards and log file that shift's own job would have had, so every file (logs included) is
byte for byte the per-shift job's. Datasets the pipeline runs models on keep their per-shift
jobs: there one job per shift lets inference and metrics overlap.

What it costs: a batch's parameters are every shift's, so a changed file or setting reruns the
whole batch (every shift of that model, or of that view's tables), not one shift; the numbers are
the same. Torch-free: the workflow decides the batches while it builds the DAG.
"""

from __future__ import annotations

import runpy
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from classwise.models.spec import ModelSpec
    from classwise.outputs.record import Planned

__all__ = [
    "BATCHED_RULES",
    "BATCH_SHIFTS",
    "JobValues",
    "ShiftBatch",
    "batched_datasets",
    "item_job",
    "run_items",
    "shift_batches",
]

#: The values of ``jobs.batch_shifts``: ``auto`` batches the datasets evaluated only on files of
#: predictions, ``never`` keeps one job per shift everywhere.
BATCH_SHIFTS = ("auto", "never")

#: The per-shift rules a shift batch may replace, with the wildcard it batches over each job of
#: (``model``: one batch per model; none: one per label view). ``import_predictions`` has no
#: output record: its items are the shifts of its dataset.
BATCHED_RULES: dict[str, str | None] = {
    "import_predictions": "model",
    "compute_worst_class_metrics": "model",
    "compute_decisiveness_metrics": "model",
    "aggregate_worst_class_tables": None,
    "compare_models": None,
    "aggregate_decisiveness_tables": None,
    "plot_class_wise_figures": None,
}


@dataclass(frozen=True)
class ShiftBatch:
    """One generated rule: ``rule``'s jobs of ``dataset`` (and label view ``view``) on ``shifts``,
    one job per model of ``models`` (or one job when the rule has no model wildcard)."""

    rule: str
    dataset: str
    view: str | None
    shifts: tuple[str, ...]
    models: tuple[str, ...] = ()
    index: int = 0

    @property
    def name(self) -> str:
        """The generated rule's name: the rule's, the dataset's and the view's (a dataset's
        models of different shift lists: one rule each, numbered)."""
        parts = [self.rule, "batch", self.dataset]
        if self.view is not None and self.view != "original":
            parts.append(self.view)
        if self.index:
            parts.append(str(self.index))
        return "_".join(parts)

    def item_wildcards(self, shift: str, model: str | None = None) -> dict[str, str]:
        """The wildcards of the per-shift job the batch runs for ``shift`` (and ``model``)."""
        wildcards = {"dataset": self.dataset, "shift": shift}
        if self.view is not None:
            wildcards["labels"] = self.view
        if model is not None:
            wildcards["model"] = model
        return wildcards


def batched_datasets(models: Mapping[str, Sequence[str]], specs: Mapping[str, ModelSpec], setting: str) -> list[str]:
    """The datasets whose per-shift jobs run as shift batches: with ``setting`` ``auto``, those
    evaluated only on files of predictions (``source: predictions``); none with ``never``."""
    if setting not in BATCH_SHIFTS:
        raise ValueError(f"batch_shifts must be one of {BATCH_SHIFTS}, got {setting!r}")
    if setting == "never":
        return []
    return [dataset for dataset, names in models.items() if names and all(specs[name].source == "predictions" for name in names)]


def shift_batches(
    planned: Iterable[Planned],
    *,
    rule_of: Callable[[str], str],
    datasets: Sequence[str],
    imported: Mapping[str, Mapping[str, Sequence[str]]],
) -> list[ShiftBatch]:
    """The shift batches of ``datasets``: for each rule of :data:`BATCHED_RULES`, the shifts its
    planned outputs (``planned``, the records' names mapped to their rules by ``rule_of``) are
    planned at, per dataset and label view; ``imported[dataset][model]``: the shifts whose
    predictions a model's batch imports. Models of one dataset and view with the same shifts
    share a rule; a batch of one shift is not made (the per-shift job is the same job)."""
    chosen = set(datasets)
    shifts: dict[tuple[str, str, str | None, str | None], list[str]] = defaultdict(list)
    for item in planned:
        rule = rule_of(item.name)
        wildcards = item.wildcards
        if rule not in BATCHED_RULES or wildcards.get("dataset") not in chosen or "shift" not in wildcards:
            continue
        key = (rule, wildcards["dataset"], wildcards.get("labels"), wildcards.get("model"))
        if wildcards["shift"] not in shifts[key]:
            shifts[key].append(wildcards["shift"])
    for dataset in datasets:
        for model, names in imported.get(dataset, {}).items():
            shifts[("import_predictions", dataset, None, model)] = list(names)
    grouped: dict[tuple[str, str, str | None, tuple[str, ...]], list[str]] = defaultdict(list)
    for (rule, dataset, view, model_name), names in shifts.items():
        grouped[(rule, dataset, view, tuple(names))].append(model_name or "")
    batches: list[ShiftBatch] = []
    counts: dict[tuple[str, str, str | None], int] = defaultdict(int)
    for (rule, dataset, view, names), models in grouped.items():
        if len(names) < 2:
            continue
        index = counts[(rule, dataset, view)]
        counts[(rule, dataset, view)] += 1
        per_model = BATCHED_RULES[rule] == "model"
        batches.append(ShiftBatch(rule, dataset, view, names, tuple(models) if per_model else (), index))
    return batches


class JobValues(list[Any]):
    """A job's inputs, outputs, parameters, wildcards or log files as a script reads them from
    Snakemake's ``snakemake`` object: a list, whose named entries (a value or a run of values)
    are also attributes, ``get`` and ``items``."""

    def __init__(self, values: Sequence[Any] = (), names: Mapping[str, Sequence[int | None]] | None = None) -> None:
        super().__init__(values)
        self._names: dict[str, tuple[int, int | None]] = {}
        for name, (start, end) in (names or {}).items():
            assert start is not None
            self._names[name] = (int(start), None if end is None else int(end))

    def _value(self, name: str) -> Any:
        start, end = self._names[name]
        return self[start] if end is None else self[start:end]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._value(name)
        except KeyError:
            raise AttributeError(f"no entry named {name!r}") from None

    def get(self, name: str, default: Any = None) -> Any:
        return self._value(name) if name in self._names else default

    def keys(self) -> list[str]:
        return list(self._names)

    def items(self) -> Iterator[tuple[str, Any]]:
        for name in self._names:
            yield name, self._value(name)


def as_entries(values: Any) -> dict[str, Any]:
    """A Snakemake ``Namedlist`` (a job's inputs, outputs, parameters, log files, wildcards) as
    plain data: its values and, per name, the span of values it names."""
    names = getattr(values, "_names", {})
    return {
        "values": [str(value) if hasattr(value, "_file") else value for value in values],
        "names": {name: [start, end] for name, (start, end) in names.items()},
    }


@dataclass(frozen=True)
class ItemJob:
    """What a rule's script reads of ``snakemake`` for one shift of a batch."""

    rule: str
    input: JobValues
    output: JobValues
    params: JobValues
    wildcards: JobValues
    log: JobValues
    threads: int
    resources: Any
    config: Mapping[str, Any]
    scriptdir: str


def item_job(item: Mapping[str, Any], batch: Any) -> ItemJob:
    """The ``snakemake`` object of one item of a batch (from the batch job's own, ``batch``: its
    threads, resources, config and script folder)."""

    def values(key: str) -> JobValues:
        entries = item[key]
        return JobValues(entries["values"], entries["names"])

    return ItemJob(
        rule=item["rule"],
        input=values("input"),
        output=values("output"),
        params=values("params"),
        wildcards=values("wildcards"),
        log=values("log"),
        threads=batch.threads,
        resources=batch.resources,
        config=batch.config,
        scriptdir=batch.scriptdir,
    )


def run_items(items: Sequence[Mapping[str, Any]], script: str | Path, batch: Any) -> None:
    """Run ``script`` (a rule's Snakemake script) once per item, in this process, each with its
    own ``snakemake`` object (:func:`item_job`), in order; the first that fails stops the batch.
    Progress goes to the batch job's log (standard error)."""
    from tqdm import tqdm

    for item in tqdm(items, desc=Path(script).stem, unit="shift", file=sys.stderr, mininterval=1.0):
        runpy.run_path(str(script), init_globals={"snakemake": item_job(item, batch)})
