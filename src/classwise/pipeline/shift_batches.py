"""One job over a dataset's shifts instead of one per shift (``jobs.batch_shifts``).

A study of files of predictions is many small jobs: a (dataset, model, shift) is an
``import_predictions`` job and a metrics job, a (dataset, label view, shift) a job per table and
one of figures, each a Python process whose start-up (about 0.7 CPU-seconds of imports) costs far
more than its numbers. For a dataset evaluated only on files of predictions (every labels-only
dataset), ``batch_shifts: auto`` (the default) runs each of those rules as one job per model, or
per label view, over up to ``jobs.shifts_per_batch`` of the dataset's shifts: a *shift batch*,
a rule of its own without wildcards (the per-shift rules do not take such a dataset, so each
file has one rule that makes it). The batch job runs the rule's own
script once per shift in one process (:func:`run_items`), with the inputs, outputs, parameters,
wildcards and log file that shift's own job would have had, so every file (logs included) is
byte for byte the per-shift job's. Datasets the pipeline runs models on keep their per-shift
jobs: there one job per shift lets inference and metrics overlap.

A batch's inputs and parameters are all its shifts', so Snakemake reruns the whole batch when
one shift's file or setting changes; the batch keeps a copy of each shift's files (hard links)
with a record of what they were made from, takes back those still made from the same inputs
and parameters, and runs only the others (:func:`run_items`): a changed file recomputes its own
shift and what reads it. Torch-free: the workflow decides the batches while it builds the DAG.
"""

from __future__ import annotations

import hashlib
import runpy
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.outputs.kept import KeptFiles, fingerprint, prune

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
    "made_from",
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
    """One generated rule of one job: ``rule``'s jobs of ``dataset`` (label view ``view``, model
    ``model``) on ``shifts``. The rule has no wildcards: each of its outputs is one file, so
    Snakemake finds the rule of a file by its whole path."""

    rule: str
    dataset: str
    view: str | None
    shifts: tuple[str, ...]
    model: str | None = None
    index: int = 0

    @property
    def name(self) -> str:
        """The generated rule's name: the rule's, the dataset's, the view's (but the original)
        and the model's; the second and later batches of the same are numbered."""
        parts = [self.rule, "batch", self.dataset]
        if self.view is not None and self.view != "original":
            parts.append(self.view)
        if self.model is not None:
            parts.append(self.model)
        if self.index:
            parts.append(str(self.index))
        return "_".join(parts)

    def item_wildcards(self, shift: str) -> dict[str, str]:
        """The wildcards of the per-shift job the batch runs for ``shift``."""
        wildcards = {"dataset": self.dataset, "shift": shift}
        if self.view is not None:
            wildcards["labels"] = self.view
        if self.model is not None:
            wildcards["model"] = self.model
        return wildcards


def batched_datasets(
    models: Mapping[str, Sequence[str]], shifts: Mapping[str, Sequence[str]], specs: Mapping[str, ModelSpec], setting: str
) -> list[str]:
    """The datasets whose per-shift jobs run as shift batches: with ``setting`` ``auto``, those
    of more than one shift evaluated only on files of predictions (``source: predictions``);
    none with ``never``."""
    from classwise.models.sources import model_source

    if setting not in BATCH_SHIFTS:
        raise ValueError(f"batch_shifts must be one of {BATCH_SHIFTS}, got {setting!r}")
    if setting == "never":
        return []
    return [
        dataset
        for dataset, names in models.items()
        if names
        and len(shifts.get(dataset, ())) > 1
        and all(model_source(specs[name]).cached_by == "import_predictions" for name in names)
    ]


def shift_batches(
    planned: Iterable[Planned],
    *,
    rule_of: Callable[[str], str],
    datasets: Sequence[str],
    imported: Mapping[str, Mapping[str, Sequence[str]]],
    shifts_per_batch: int = 32,
) -> list[ShiftBatch]:
    """The shift batches of ``datasets``: for each rule of :data:`BATCHED_RULES`, the shifts its
    planned outputs (``planned``, the records' names mapped to their rules by ``rule_of``) are
    planned at, per dataset, label view and (for a rule per model) model, in plan order;
    ``imported[dataset][model]``: the shifts whose predictions a model's batches import. Every
    such job of a batched dataset is in a batch (the per-shift rules do not take those
    datasets), of at most ``shifts_per_batch`` shifts: Snakemake matches every file it plans
    against each output of the rules that could make it, so a rule of thousands of outputs
    makes planning quadratic."""
    if shifts_per_batch < 1:
        raise ValueError(f"shifts_per_batch must be at least 1, got {shifts_per_batch}")
    chosen = set(datasets)
    # shift names in plan order, each once (a dict: several records are planned per shift)
    shifts: dict[tuple[str, str, str | None, str | None], dict[str, None]] = defaultdict(dict)
    for item in planned:
        rule = rule_of(item.name)
        wildcards = item.wildcards
        if rule not in BATCHED_RULES or wildcards.get("dataset") not in chosen or "shift" not in wildcards:
            continue
        model = wildcards.get("model") if BATCHED_RULES[rule] == "model" else None
        key = (rule, wildcards["dataset"], wildcards.get("labels"), model)
        shifts[key][wildcards["shift"]] = None
    for dataset in datasets:
        for model, names in imported.get(dataset, {}).items():
            shifts[("import_predictions", dataset, None, model)] = dict.fromkeys(names)
    batches: list[ShiftBatch] = []
    for (rule, dataset, view, model), ordered in shifts.items():
        names = list(ordered)
        for index, start in enumerate(range(0, len(names), shifts_per_batch)):
            chunk = tuple(names[start : start + shifts_per_batch])
            batches.append(ShiftBatch(rule, dataset, view, chunk, model, index))
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


def made_from(item: Mapping[str, Any], script: str | Path, file_digests: dict[str, str] | None = None) -> str:
    """What one shift's files are made from, as a sha256: the rule, its script's text, the
    shift's parameters and the bytes of each of its inputs (so a file restored unchanged by an
    earlier batch, whatever its time stamp, leaves the files made from it up to date).
    ``file_digests``: the digests of files already read, by path (a batch's shifts share their
    script and the dataset's files: each is read once)."""
    digests = {} if file_digests is None else file_digests
    digest = hashlib.sha256()
    digest.update(fingerprint({"rule": item["rule"], "params": item["params"]["values"]}).encode())
    digest.update(_file_digest(str(script), digests).encode())
    for path in item["input"]["values"]:
        digest.update(str(path).encode() + b"\0" + _file_digest(str(path), digests).encode())
    return digest.hexdigest()


def _file_digest(path: str, digests: dict[str, str]) -> str:
    """The sha256 of a file's bytes ("" for no file), read once per ``digests``."""
    if path not in digests:
        digest = hashlib.sha256()
        if Path(path).is_file():
            with open(path, "rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
            digests[path] = digest.hexdigest()
        else:
            digests[path] = ""
    return digests[path]


def run_items(items: Sequence[Mapping[str, Any]], script: str | Path, batch: Any, *, keep: str | Path | None = None) -> None:
    """Run ``script`` (a rule's Snakemake script) once per item, in this process, each with its
    own ``snakemake`` object (:func:`item_job`), in order; the first that fails stops the batch.

    ``keep``: a folder of the batch's own, where it keeps a copy of each shift's outputs (hard
    links: no second copy of the bytes) beside a record of what they were made from
    (:func:`made_from`; :class:`classwise.outputs.kept.KeptFiles`). Snakemake reruns a whole
    batch when one of its shifts changes; a shift whose record matches gets its files back from
    the copies instead of running again, so a changed file recomputes only its own shift and what
    reads it. Progress and what was kept go to the batch job's log (standard error)."""
    from tqdm import tqdm

    kept, shifts = [], []
    digests: dict[str, str] = {}
    for item in tqdm(items, desc=Path(script).stem, unit="shift", file=sys.stderr, mininterval=1.0):
        job = item_job(item, batch)
        shifts.append(str(job.wildcards.shift))
        copies = KeptFiles.of(Path(keep) / shifts[-1], job.output) if keep is not None else None
        made = made_from(item, script, digests) if copies is not None else ""
        if copies is not None and copies.why_stale(made) is None:
            copies.take_back()
            kept.append(shifts[-1])
            continue
        runpy.run_path(str(script), init_globals={"snakemake": job})
        if copies is not None:
            copies.keep(made)
    if keep is not None:
        prune(keep, shifts)  # a shift no longer in the batch
    if kept:
        print(f"{len(kept)} of {len(items)} shifts up to date, their files kept: {', '.join(kept)}", file=sys.stderr)
