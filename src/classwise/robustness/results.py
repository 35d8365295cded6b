"""One model's class-wise numbers under one shift, as the cross-shift views take them.

The metrics step computes A, WCA, each class's recall (accuracy), precision and CFPS of every
(model, shift) once and writes them (``worst_class.json``, ``per_class.csv``). The views across
shifts read those numbers (:meth:`ClassResults.read`) and compute only what the metrics step
cannot know: a shift's numbers on a subset of its samples, such as the clean numbers on the 20
images an attack ran on (:meth:`ClassResults.from_counts`, with the metrics step's own counts-level
functions, so that the same counts give the same bits).

One rule for abstentions everywhere (docs/metrics.md): a sample on which the model abstained is
an error of its class for accuracy and recall (it counts in the class's support, never in its
hits) and a prediction of no class (it counts in no precision or CFPS).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from classwise.errors import InputError
from classwise.logits_io import ABSTAINED
from classwise.metrics.cfps import false_positive_scores
from classwise.metrics.result import metric_entry, read_metrics_document, read_per_class_table
from classwise.metrics.stats import class_rates
from classwise.metrics.worst_class import worst_recall

__all__ = ["ClassResults", "as_results", "class_counts_of"]

#: The columns of ``per_class.csv`` read (the metrics step writes them at full precision).
PER_CLASS_COLUMNS = ("class", "name", "support", "predicted", "recall", "precision", "cfps")

#: A recall read from ``per_class.csv`` must be hits / support to this tolerance.
_RATIO_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class ClassResults:
    """A, WCA and the per-class numbers of one model under one shift, on one set of samples."""

    #: The samples (abstentions included).
    n: int
    #: The samples on which the model abstained.
    n_abstained: int
    #: A: the share of samples classified right.
    accuracy: float
    #: WCA: the lowest recall over the classes with samples (NaN when none has any).
    worst_class_accuracy: float
    #: The class of WCA (the lowest index of those tied; -1 when none has samples).
    worst_class: int
    #: How many classes share WCA (more than 1: the class named is the tie rule's pick).
    worst_class_tied: int
    #: ``(C,)`` int64: each class's samples, its samples classified right, its predictions.
    support: np.ndarray
    hits: np.ndarray
    predicted: np.ndarray
    #: ``(C,)`` float64: recall (NaN without samples), precision (NaN never predicted), CFPS.
    recall: np.ndarray
    precision: np.ndarray
    cfps: np.ndarray
    #: Where the numbers come from, for error messages.
    source: str = ""
    #: Which samples: ``"all"`` (every sample of the model under the shift, as the metrics step
    #: counted them) or those of a comparison (``"shared with clean"``, ``"of autoattack"``).
    samples: str = "all"

    @property
    def n_classes(self) -> int:
        return int(self.support.shape[0])

    @classmethod
    def from_counts(
        cls,
        hits: np.ndarray,
        support: np.ndarray,
        predicted: np.ndarray,
        *,
        n_abstained: int = 0,
        source: str = "",
        samples: str = "all",
    ) -> ClassResults:
        """The numbers of per-class counts (abstentions in ``support``, in neither ``hits`` nor
        ``predicted``), by the functions the metrics step computes them with."""
        hits, support, predicted = (np.asarray(a, dtype=np.int64) for a in (hits, support, predicted))
        n = int(support.sum())
        correct = int(hits.sum())
        rates = class_rates(hits, support, predicted)
        if (support > 0).any():
            worst = worst_recall(hits, support)
            wca, worst_class = float(worst.value), int(worst.classes[0])
            tied = int(worst.details.get("n_tied", 1))
        else:
            wca, worst_class, tied = float("nan"), -1, 0
        return cls(
            n=n,
            n_abstained=int(n_abstained),
            accuracy=correct / n if n else float("nan"),
            worst_class_accuracy=wca,
            worst_class=worst_class,
            worst_class_tied=tied,
            support=support,
            hits=hits,
            predicted=predicted,
            recall=rates["recall"],
            precision=rates["precision"],
            cfps=false_positive_scores(predicted, hits, n - correct - int(n_abstained)),
            source=source,
            samples=samples,
        )

    @classmethod
    def from_confusion(cls, confusion: np.ndarray, *, abstained: np.ndarray | None = None, source: str = "") -> ClassResults:
        """The numbers of a confusion matrix ``[true, predicted]`` of the answered samples and,
        per true class, the samples on which the model abstained (``abstained``, ``(C,)``)."""
        m = np.rint(np.asarray(confusion, dtype=np.float64)).astype(np.int64)
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise InputError(f"expected a square (C, C) confusion matrix, got shape {m.shape}", field="confusion")
        missing = np.zeros(m.shape[0], dtype=np.int64) if abstained is None else np.asarray(abstained, dtype=np.int64)
        return cls.from_counts(np.diag(m), m.sum(axis=1) + missing, m.sum(axis=0), n_abstained=int(missing.sum()), source=source)

    @classmethod
    def from_predictions(
        cls, labels: np.ndarray, predicted: np.ndarray, n_classes: int, *, source: str = "", samples: str = "all"
    ) -> ClassResults:
        """The numbers of per-sample labels and predicted classes (``-1``: abstained)."""
        hits, support, counts, n_abstained = class_counts_of(labels, predicted, n_classes)
        return cls.from_counts(hits, support, counts, n_abstained=n_abstained, source=source, samples=samples)

    @classmethod
    def read(cls, worst_class_path: str | Path, per_class_path: str | Path) -> ClassResults:
        """The numbers the metrics step wrote: A and WCA (its class and ties) of
        ``worst_class.json``, each class's numbers of ``per_class.csv`` beside it."""
        document = read_metrics_document(worst_class_path)
        frame = read_per_class_table(per_class_path, PER_CLASS_COLUMNS)
        support = frame["support"].to_numpy(dtype=np.int64)
        recall = frame["recall"].to_numpy(dtype=np.float64)
        hits = np.rint(np.nan_to_num(recall) * support).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            off = np.abs(np.where(support > 0, hits / np.maximum(support, 1), 0.0) - np.nan_to_num(recall))
        if (off > _RATIO_TOLERANCE).any():
            c = int(np.argmax(off))
            raise InputError(
                f"expected each recall to be hits / support, got {recall[c]!r} for class {c} of support {support[c]}",
                path=per_class_path,
                field="recall",
            )
        a, wca = metric_entry(document, "A", worst_class_path), metric_entry(document, "WCA", worst_class_path)
        n = int(document.get("n_samples", support.sum()))
        if n != int(support.sum()):
            raise InputError(
                f"has {n} samples, its per-class supports add up to {int(support.sum())} ({per_class_path})",
                path=worst_class_path,
                field="n_samples",
            )
        classes = wca.get("classes") or [-1]
        details = wca.get("details") or {}
        return cls(
            n=n,
            n_abstained=int((document.get("coverage") or {}).get("n_abstained", 0)),
            accuracy=_number(a["value"]),
            worst_class_accuracy=_number(wca["value"]),
            worst_class=int(classes[0]),
            worst_class_tied=int(details.get("n_tied", 1)) if wca["value"] is not None else 0,
            support=support,
            hits=hits,
            predicted=frame["predicted"].to_numpy(dtype=np.int64),
            recall=recall,
            precision=frame["precision"].to_numpy(dtype=np.float64),
            cfps=frame["cfps"].to_numpy(dtype=np.float64),
            source=str(worst_class_path),
        )


def class_counts_of(labels: np.ndarray, predicted: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(hits, support, predicted, n_abstained)`` per class of per-sample labels and predicted
    classes (``-1``: abstained: in its class's support, in no hits and no predictions)."""
    y = np.asarray(labels, dtype=np.int64)
    p = np.asarray(predicted, dtype=np.int64)
    answered = p != ABSTAINED
    support = np.bincount(y, minlength=n_classes)
    hits = np.bincount(y[answered & (p == y)], minlength=n_classes)
    counts = np.bincount(p[answered], minlength=n_classes)
    return hits, support, counts, int(np.count_nonzero(~answered))


def as_results(value: ClassResults | np.ndarray) -> ClassResults:
    """``value`` itself, or the numbers of a ``(C, C)`` confusion matrix of a model that never
    abstained (the form the library's callers may hold)."""
    return value if isinstance(value, ClassResults) else ClassResults.from_confusion(value)


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)
