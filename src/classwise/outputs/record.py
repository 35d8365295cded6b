"""One record per kind of output file (a table, a figure, a data file): the rule that writes it,
where, in which formats, what it mirrors and how the report and its own caption describe it.

A record's :attr:`~Output.path` is a template below the run's output directory, without a suffix,
over the workflow's wildcards (``tables/{dataset}/{labels}/{shift}/worst_class``); its
:attr:`~Output.files` name the rule's outputs and their suffixes. Filled with a job's wildcards,
the record gives that job's files (:class:`Planned`); with the wildcards left in, the paths a
rule declares (``workflow/rules/outputs_common.smk``); matched against a file's path, the record
and wildcards that made it (:func:`classwise.outputs.record_of`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from classwise.outputs.catalogue import ANALYSES

#: A caption or title from a job's wildcards and parameters (never from parameters of its own:
#: Snakemake reruns a job whose parameters change, and rewording a caption must rerun nothing).
Text = Callable[[Mapping[str, str], Mapping[str, Any]], str]


@dataclass(frozen=True)
class Setting:
    """A report label read from the config, by its keys from the top: ``Setting("analyses",
    "extrapolation", "shift")``."""

    keys: tuple[str, ...]

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", keys)

    def of(self, config: Mapping[str, Any]) -> str:
        value: Any = config
        for key in self.keys:
            value = value[key]
        return str(value)


#: A label of the HTML report: text with wildcards in braces, a value of the config, or a function
#: Snakemake calls with the job's wildcards.
Label = str | Setting | Callable[..., str]

_WILDCARD = re.compile(r"\{(\w+)\}")

#: The conditions a record is written under (:attr:`Output.when`) -> what holds then. The
#: planning functions of the workflow say which hold at each scope (a dataset, view, shift, model)
#: of a stage; a record is planned there only when all of its hold.
CONDITIONS: Mapping[str, str] = {
    # the whole run
    "bootstrap": "the bootstrap is on (metrics.bootstrap.replicates > 0)",
    # a (dataset, label view, shift), or that and a model
    "scored": "the model has scores on the shift (not hard predictions only); for a view and shift, some model has",
    "one_label": "the label view gives one true class per image (not a view of label sets such as ImageNet ReaL)",
    "compared": "the dataset's models are compared pair by pair (the bootstrap on, two models or more)",
    # a (dataset, label view)
    "view": "a label view other than the original, evaluated on some shift",
    # the analyses: each runs at the scope (its views and models; the simulation once)
    **{analysis.name: analysis.condition for analysis in ANALYSES},
    "simulation": "the extrapolation simulation runs (analyses.simulation)",
    # the robustness analyses of a dataset (classwise.pipeline.plan.RobustnessRuns)
    "classwise": "the class-wise robustness analysis runs (a shift scoring every class)",
    # a (dataset, label view) of the robustness stage
    "class_drops": "the class-drop tests run on the view (clean and another shift scoring every class, one true class per image)",
    "attacked": "an untargeted attack whose images attack a model (a mean confusion figure each)",
    "corruption_grid": "the corruption grid is drawn (corruptions made on the fly)",
    "robust_fairness": "an attack of the model itself compared with clean (a robust-fairness table each)",
    "transformation_tests": "the transformation tests run",
    "transfer_matrix": "the transfer matrix is drawn",
    "targeted_attacks": "the targeted attacks are analysed",
}
#: The conditions that hold or not for the whole run: a rule declares a record only where they hold
#: (the others vary from job to job of the rule, which declares the record anyway).
RUN_CONDITIONS = frozenset({"bootstrap"})


def check_conditions(conditions: Collection[str], *, owner: str = "") -> None:
    """A ``ValueError`` (its message starting with ``owner``) naming those of ``conditions`` that
    are not keys of :data:`CONDITIONS`: a misspelt condition would never hold, silently."""
    unknown = [condition for condition in conditions if condition not in CONDITIONS]
    if unknown:
        raise ValueError(f"{owner}unknown conditions {unknown}; expected some of {list(CONDITIONS)}")


#: The suffixes of the file kinds: a table is written as Markdown (with CSV and LaTeX beside it).
TABLE_SUFFIX, FIGURE_SUFFIX = ".md", ".png"


@dataclass(frozen=True)
class Output:
    """A kind of output file of the workflow, one record each (:data:`classwise.outputs.OUTPUTS`)."""

    #: The record's key; the report caption is ``workflow/report/<name>.rst``.
    name: str
    #: The Snakemake rule that writes it.
    rule: str
    #: Below the output directory, without a suffix, wildcards in braces.
    path: str
    #: The rule's named outputs of this record -> their suffixes. The first is the file a run lists
    #: and requests; the others are written beside it.
    files: Mapping[str, str]
    #: What it mirrors, for ``results/README.md``: a key of :data:`classwise.references.REFERENCES`
    #: and the table or figure there (cited with :func:`classwise.references.cite`), or ``None``
    #: and what the output is when no source has it.
    mirrors: tuple[str | None, str]
    #: The named output the HTML report shows ("" for a file the report leaves out).
    shown: str = ""
    #: The report's caption of :attr:`shown`: Jinja over the job (``snakemake.wildcards``, ...),
    #: then reStructuredText with classwise's directives (:mod:`classwise.pipeline.report`).
    report: str = ""
    #: The source whose report category holds it (a key of ``REFERENCES``).
    category: str | None = None
    subcategory: str = "{dataset}"
    #: The report's labels of the shown file: a mapping of labels, or a function of the wildcards.
    labels: Mapping[str, Label] | Callable[..., Mapping[str, str]] = field(default_factory=dict)
    #: The caption a table's files carry (Markdown, LaTeX), from the job's wildcards and parameters.
    caption: Text | None = None
    #: Which of its rule's captioned tables this is, as the rule's script asks for its caption
    #: (``caption_of(snakemake, part)``; "" for the rule's first).
    part: str = ""
    #: The title a figure carries (one per rule: each of the rule's figures that has one shares it).
    title: Text | None = None
    #: One file per job's wildcard value inside one folder per job (the mean confusion figures,
    #: one per attack): the rule declares the folder, whose files are :attr:`path` with the
    #: remaining wildcards filled.
    directory: bool = False
    #: The conditions it is written under (keys of :data:`CONDITIONS`), all of which must hold:
    #: ``("bootstrap",)`` for an interval table. Its rule declares it only where the run-wide ones
    #: hold (:data:`RUN_CONDITIONS`); its stage plans it where all of them hold.
    when: tuple[str, ...] = ()
    #: Other rules that write the same files, for other jobs (a model's cached outputs: a merge of
    #: shards, a decode shared by several models, an import of a file of predictions); each
    #: declares the record with ``outputs_of``.
    also_written_by: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_conditions(self.when, owner=f"output {self.name!r}: ")
        if not self.files:
            raise ValueError(f"output {self.name!r} names no file")
        if bool(self.shown) != bool(self.report) or bool(self.shown) != (self.category is not None):
            raise ValueError(f"output {self.name!r}: a shown file, its report caption and category come together")
        if self.shown and self.shown not in self.files:
            raise ValueError(f"output {self.name!r} shows {self.shown!r}, not one of its files {list(self.files)}")

    @property
    def kind(self) -> str:
        """``table`` (a Markdown file first), ``figure`` (a PNG) or ``data``."""
        first = next(iter(self.files.values()))
        return {TABLE_SUFFIX: "table", FIGURE_SUFFIX: "figure"}.get(first, "data")

    @property
    def suffixes(self) -> list[str]:
        return list(self.files.values())

    @property
    def wildcards(self) -> list[str]:
        """The wildcards of :attr:`path`, in order."""
        return _WILDCARD.findall(self.path)

    @property
    def folder(self) -> str:
        """The folder a :attr:`directory` record's rule declares (its path up to the last ``/``)."""
        return self.path.rsplit("/", 1)[0]

    @property
    def pattern(self) -> str:
        """A :attr:`directory` record's file name inside its folder (the report's ``patterns``)."""
        return self.path.rsplit("/", 1)[1] + self.suffixes[0]

    def report_labels(
        self, config: Mapping[str, Any]
    ) -> Mapping[str, str | Callable[..., str]] | Callable[..., Mapping[str, str]]:
        """The report's labels of the shown file, the values of the config filled in."""
        if callable(self.labels):
            return self.labels
        return {name: value.of(config) if isinstance(value, Setting) else value for name, value in self.labels.items()}

    def fill(self, wildcards: Mapping[str, str]) -> str:
        """:attr:`path` with the given wildcards filled, the others left in braces."""
        return _WILDCARD.sub(lambda match: str(wildcards.get(match[1], match[0])), self.path)

    def files_of(self, out: str, wildcards: Mapping[str, str]) -> dict[str, str]:
        """Named output -> the file under ``out`` for ``wildcards`` (those left out stay in braces)."""
        stem = f"{out}/{self.fill(wildcards)}"
        return {key: stem + suffix for key, suffix in self.files.items()}

    def matcher(self) -> re.Pattern[str]:
        """A path below the output directory of one of this record's files: groups are its
        wildcards (none holds a ``/``) and ``suffix``."""
        parts = _WILDCARD.split(self.path)
        regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+?)" for i, part in enumerate(parts))
        suffixes = "|".join(re.escape(suffix) for suffix in self.suffixes)
        return re.compile(f"{regex}(?P<suffix>{suffixes})")

    def holds(self, conditions: Collection[str]) -> bool:
        """Whether every condition it is written under is one of ``conditions``."""
        return all(condition in conditions for condition in self.when)

    def declared(self, run: Collection[str]) -> bool:
        """Whether its rule declares it, ``run`` being the run-wide conditions that hold."""
        return all(condition in run for condition in self.when if condition in RUN_CONDITIONS)


@dataclass(frozen=True)
class Planned:
    """One job's output of a record: the record's name and the job's wildcards."""

    name: str
    wildcards: Mapping[str, str] = field(default_factory=dict)
