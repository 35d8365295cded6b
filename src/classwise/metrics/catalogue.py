"""The metric catalogue: every metric classwise computes, once, with what the rest of the code
asks of it.

An entry is a metric or a metric template (``W{n}CR@{k}`` is one entry, expanded over the
configured ``n`` and ``k``). It says which family computes it, what it needs of a model's
outputs (the predicted class, the set of the top k classes, or scores), whether it is defined when a sample has several correct labels
(ImageNet ReaL), what its worst element is (a class, a pair, a superclass), whether it is a row
of the worst-class paper table, and where its value and its bootstrap replicates are computed.
The catalogue's order is the order of the metrics in every output (JSON, tables).

Everything that used to keep its own list of metric names is a query of :data:`CATALOGUE`:
the suite (:func:`classwise.metrics.suite.worst_class_family`), the bootstrap, the table rows,
the gate check, the skip notes and the DAG-build checks. The defaults (:data:`DEFAULTS`, a
:class:`MetricParameters`) are stated here once; the CLIs read them, and a test pins the
workflow schema's to them.

This module imports no numerical library: the workflow reads it while it builds the DAG. The
functions an entry names (``compute``, ``replicate``: ``"module:function"``) are imported on
first use by :func:`kernel`.

Adding a metric: its function (in the family's module, with its formula, paper and 0/0
convention), one :class:`Metric` entry below, and its test against an independent reference
(docs/architecture.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, TypedDict

__all__ = [
    "CATALOGUE",
    "DEFAULTS",
    "LABEL_SETS_REASON",
    "HARD_PREDICTIONS_REASON",
    "MetricParameters",
    "Family",
    "Metric",
    "kernel",
    "label_sets_metric_names",
    "metric_names",
    "paper_rows",
    "score_metric_names",
    "skipped_for_class_count",
    "unavailable_for_hard_predictions",
]

Family = Literal["worst_class", "decisiveness", "cfps"]
Needs = Literal["prediction", "top_k", "scores"]
Worst = Literal["class", "pair", "superclass"]
TableRow = Literal["always", "never", "balanced_pairs"]


@dataclass(frozen=True, kw_only=True)
class MetricParameters:
    """The parameters of the metrics, one record for every function that computes them
    (:func:`~classwise.metrics.suite.evaluate`, the bootstrap, the comparison): what a run uses
    unless told otherwise, :data:`DEFAULTS` (the CLI, the library and the workflow schema all
    default to these). Each family reads its own: the worst-class metrics ``k`` and ``ns``, the
    decisiveness family ``gamma`` and ``bins``."""

    k: int = 5
    """k of the top-k metrics (``A@k``, ``WCA@k``, ``W{n}CR@k``)."""
    ns: Sequence[int] = (10, 100)
    """The n of ``W{n}CR`` (held as a tuple, whatever sequence is given: the record is frozen)."""
    gamma: float = 0.005
    """The probability floor of the decisiveness family's generalized means (the paper's)."""
    bins: int = 10
    """Equal-population bins of the measured decisiveness metrics."""

    def __post_init__(self) -> None:
        # a list (the CLI's --n, a config's n) would leave the frozen record mutable and unhashable
        object.__setattr__(self, "ns", tuple(self.ns))


DEFAULTS = MetricParameters()

#: Why some metrics are missing under a view with several correct labels per image (ImageNet ReaL).
LABEL_SETS_REASON = (
    "several correct labels per image (ReaL): the restricted argmax within a pair of classes or a "
    "superclass has no single true class to match (docs/real-labels.md)"
)
#: Why the metrics that rank or weigh classes by score are missing for hard predictions.
HARD_PREDICTIONS_REASON = "hard predictions only: no scores to rank the classes by"


@dataclass(frozen=True)
class Metric:
    """One metric, or a template over ``{n}`` (the n worst classes) and ``{k}`` (top-k)."""

    template: str
    family: Family
    summary: str
    compute: str
    """``module:function`` giving its value on the whole sample (see :func:`kernel`)."""
    replicate: str | None = None
    """``module:function`` giving its bootstrap replicates; None: no interval."""
    needs: Needs = "prediction"
    """What it needs of a model's outputs: the predicted class alone (``prediction``), the set
    of the k top-ranked classes (``top_k``: hard top-k predictions of at least k classes do), or
    scores to rank or weigh every class by (``scores``)."""
    under_label_sets: bool = True
    """Defined when a sample has several correct labels (ImageNet ReaL)."""
    worst: Worst | None = None
    """What the metric names as its worst element, if anything."""
    needs_superclasses: bool = False
    table_row: TableRow = "never"
    """A row of the worst-class paper table: always, never, or when balanced pairs are asked for."""

    @property
    def needs_scores(self) -> bool:
        """Needs more than the predicted class (skipped for hard predictions of one class)."""
        return self.needs != "prediction"

    @property
    def over_n(self) -> bool:
        return "{n}" in self.template

    @property
    def over_k(self) -> bool:
        return "{k}" in self.template

    def name(self, *, k: int, n: int | None = None) -> str:
        return self.template.format(k=k, n=n)

    def instances(self, *, k: int, ns: Sequence[int]) -> Iterator[tuple[str, int | None]]:
        """``(name, n)`` for each metric this entry stands for (``n`` None without ``{n}``)."""
        if self.over_n:
            for n in ns:
                yield self.name(k=k, n=n), n
        else:
            yield self.name(k=k), None


class _KernelReferences(TypedDict):
    compute: str
    replicate: str


def _kernels(name: str, module: str = "classwise.metrics.kernels") -> _KernelReferences:
    """``compute`` and ``replicate`` of an entry whose kernels are ``name`` and ``name_replicates``."""
    return {"compute": f"{module}:{name}", "replicate": f"{module}:{name}_replicates"}


_REPORTED = "of the correct-class probability, probabilities below gamma raised to gamma (reported)"
_MEASURED = "from the binned fraction of correct decisions (measured)"

CATALOGUE: tuple[Metric, ...] = (
    Metric("A", "worst_class", "accuracy", **_kernels("accuracy"), table_row="always"),
    Metric(
        "WCA", "worst_class", "worst-class accuracy: the lowest recall", **_kernels("worst_class_accuracy"),
        worst="class", table_row="always",
    ),
    Metric(
        "WCP", "worst_class", "worst-class precision", **_kernels("worst_class_precision"), worst="class",
        table_row="always",
    ),
    Metric(
        "WSupCA", "worst_class", "worst-superclass accuracy: the argmax within the superclass",
        **_kernels("worst_superclass_accuracy"), needs="scores", under_label_sets=False, worst="superclass",
        needs_superclasses=True, table_row="always",
    ),
    Metric(
        "WSupCR", "worst_class", "worst-superclass recall: the pooled recall of its classes",
        **_kernels("worst_superclass_recall"), worst="superclass", needs_superclasses=True, table_row="always",
    ),
    Metric(
        "W{n}CR", "worst_class", "pooled recall of the n individually worst classes (the paper's heuristic)",
        **_kernels("worst_n_class_recall"), table_row="always",
    ),
    Metric(
        "W{n}CR_exact", "worst_class", "the lowest pooled recall over all n-subsets of classes",
        **_kernels("worst_n_class_recall_exact"),
    ),
    Metric(
        "W2CA", "worst_class", "worst pair accuracy: the argmax within a pair, pooled", **_kernels("worst_pair_accuracy"),
        needs="scores", under_label_sets=False, worst="pair", table_row="always",
    ),
    Metric(
        "W2CA_balanced", "worst_class", "worst pair accuracy, class-balanced (the published code's)",
        **_kernels("worst_pair_accuracy_balanced"), needs="scores", under_label_sets=False, worst="pair",
        table_row="balanced_pairs",
    ),
    Metric("A@{k}", "worst_class", "top-k accuracy", **_kernels("topk_accuracy"), needs="top_k", table_row="always"),
    Metric(
        "WCA@{k}", "worst_class", "worst-class top-k accuracy", **_kernels("worst_class_topk_accuracy"), needs="top_k",
        worst="class", table_row="always",
    ),
    Metric(
        "W{n}CR@{k}", "worst_class", "pooled top-k recall of the n classes of lowest top-k recall",
        **_kernels("worst_n_class_topk_recall"), needs="top_k", table_row="always",
    ),
    Metric(
        "decisiveness", "decisiveness", f"arithmetic mean {_REPORTED}", **_kernels("decisiveness"), needs="scores",
        under_label_sets=False,
    ),
    Metric(
        "geometric_accuracy", "decisiveness", f"geometric mean {_REPORTED}", **_kernels("geometric_accuracy"),
        needs="scores", under_label_sets=False,
    ),
    Metric(
        "robustness", "decisiveness", f"generalized mean (rho = -2/3) {_REPORTED}", **_kernels("robustness"),
        needs="scores", under_label_sets=False,
    ),
    Metric(
        "decisiveness_measured", "decisiveness", f"decisiveness {_MEASURED}", **_kernels("decisiveness_measured"),
        needs="scores", under_label_sets=False,
    ),
    Metric(
        "geometric_accuracy_measured", "decisiveness", f"geometric accuracy {_MEASURED}",
        **_kernels("geometric_accuracy_measured"), needs="scores", under_label_sets=False,
    ),
    Metric(
        "robustness_measured", "decisiveness", f"robustness {_MEASURED}", **_kernels("robustness_measured"),
        needs="scores", under_label_sets=False,
    ),
    Metric(
        "calibration_slope", "decisiveness", "slope of measured against reported (below 1: overconfident)",
        **_kernels("calibration_slope"), needs="scores", under_label_sets=False,
    ),
    Metric("CFPS_max", "cfps", "the largest class false-positive score", **_kernels("cfps_max"), worst="class"),
)  # fmt: skip


def entries(family: Family | None = None) -> tuple[Metric, ...]:
    """The catalogue's entries, of one family or all, in output order."""
    return tuple(entry for entry in CATALOGUE if family is None or entry.family == family)


def metric_names(
    *,
    k: int = DEFAULTS.k,
    ns: Sequence[int] = DEFAULTS.ns,
    family: Family | None = None,
    where: Callable[[Metric], bool] | None = None,
) -> tuple[str, ...]:
    """Every metric name for top-k ``k`` and the ``ns`` of ``W{n}CR``, in output order (of one
    family, and of the entries ``where`` accepts)."""
    return tuple(name for entry in entries(family) if where is None or where(entry) for name, _ in entry.instances(k=k, ns=ns))


def score_metric_names(k: int, ns: Sequence[int]) -> tuple[str, ...]:
    """The worst-class metrics that need scores, not only the predicted class."""
    return metric_names(k=k, ns=ns, family="worst_class", where=lambda entry: entry.needs_scores)


def top_k_reason(top_k: int, k: int) -> str:
    """Why the top-k metrics are missing for hard predictions of the ``top_k`` best classes."""
    if top_k == 1:
        return HARD_PREDICTIONS_REASON
    return f"hard top-{top_k} predictions: the top-{k} metrics need the {k} top-ranked classes of each sample"


def unavailable_for_hard_predictions(
    top_k: int, *, k: int, ns: Sequence[int], family: Family | None = "worst_class"
) -> dict[str, str]:
    """The metrics (of one family, or all) that hard predictions of the ``top_k`` top-ranked
    classes per sample cannot give, with why: those that need scores, and the top-k metrics
    when ``top_k < k`` (1: the predicted class alone)."""
    out: dict[str, str] = {}
    for entry in entries(family):
        if entry.needs == "scores" or (entry.needs == "top_k" and top_k < k):
            reason = HARD_PREDICTIONS_REASON if entry.needs == "scores" else top_k_reason(top_k, k)
            out.update((name, reason) for name, _ in entry.instances(k=k, ns=ns))
    return out


def label_sets_metric_names(family: Family | None = None) -> tuple[str, ...]:
    """The metrics (of one family, or all) undefined under several correct labels per sample
    (none is a template)."""
    return tuple(entry.template for entry in entries(family) if not entry.under_label_sets)


def paper_rows(
    ns: Sequence[int], k: int, *, superclasses: bool, balanced_pairs: bool = False, n_classes: int | None = None
) -> list[str]:
    """The worst-class paper table's rows (Table 1's order) for the given n of W{n}CR and k of
    the top-k metrics. ``balanced_pairs`` adds ``W2CA_balanced`` after ``W2CA``. With
    ``n_classes`` the rows that are trivial for that many classes are left out: W{n}CR for
    n >= C, and the top-k rows for k >= C."""
    if n_classes is not None:
        ns = [n for n in ns if n < n_classes]
    rows: list[str] = []
    for entry in entries("worst_class"):
        shown = entry.table_row == "always" or (entry.table_row == "balanced_pairs" and balanced_pairs)
        if not shown or (entry.needs_superclasses and not superclasses):
            continue
        if entry.over_k and n_classes is not None and k >= n_classes:
            continue
        rows += [name for name, _ in entry.instances(k=k, ns=ns)]
    return rows


def skipped_for_class_count(n_classes: int, *, k: int, ns: Sequence[int], with_samples: int | None = None) -> dict[str, str]:
    """The worst-class metrics that are trivial for ``n_classes`` classes of which
    ``with_samples`` (default: all) have samples, with why: those over ``{n}`` for n at least
    the classes with samples (the n worst would be every class), those over ``{k}`` for
    k >= C (every label is among the top k)."""
    skipped: dict[str, str] = {}
    present = n_classes if with_samples is None else with_samples
    which = "classes" if present == n_classes else "classes with samples"
    family = entries("worst_class")
    for n in ns:
        if n >= present:
            reason = f"n = {n} >= {present} {which}: the n worst classes would be every class"
            for entry in family:
                if entry.over_n:
                    skipped[entry.name(k=k, n=n)] = reason
    if k >= n_classes:
        reason = f"k = {k} >= {n_classes} classes: every label is among the top k, so the value is 1"
        kept_ns = [n for n in ns if n < present]
        for entry in family:
            if entry.over_k:
                for name, _ in entry.instances(k=k, ns=kept_ns):
                    skipped[name] = reason
    return skipped


@cache
def kernel(reference: str) -> Callable[..., Any]:
    """The function ``"module:function"`` names, imported on first use."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
