"""A model's outcome on each sample: its id, its true class and whether the model got it right.

All that the class-level tests (:mod:`classwise.metrics.class_drops`) and the model ranking
(:mod:`classwise.metrics.ranking`) read of a model's outputs. **Abstentions**: the project's one
rule (:mod:`classwise.metrics.stats`): a sample the model abstained on (prediction ``-1``) is an
error for accuracy and recall, never a class, so it is ``correct = False`` here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from classwise.errors import InputError, check_count
from classwise.logits_io import ScoresFile, load_outputs

__all__ = ["Outcomes", "SampleOutcomes", "as_outcomes", "class_names_of", "id_index", "n_classes_of"]


@dataclass(frozen=True, eq=False)
class SampleOutcomes:
    """Per sample (``(N,)`` arrays in one order): ``sample_ids`` (strings; unique, which
    :func:`id_index` checks where samples are matched), ``labels``
    (int64 true class, ``>= 0``) and ``correct`` (bool). ``class_names`` (optional, index
    order) and ``n_classes`` (optional: the class count of the outputs, which may exceed the
    largest label) travel with them; ``source`` names the file in error messages.

    Construct with :meth:`from_correct`, :meth:`from_predictions` or :meth:`from_scores_file`,
    which check the arrays."""

    sample_ids: np.ndarray
    labels: np.ndarray
    correct: np.ndarray
    class_names: np.ndarray | None = None
    n_classes: int | None = None
    source: str = "outputs"

    @classmethod
    def from_correct(
        cls,
        sample_ids: object,
        labels: object,
        correct: object,
        *,
        class_names: object = None,
        n_classes: int | None = None,
        source: str = "outputs",
    ) -> SampleOutcomes:
        """From per-sample ids, labels and a boolean ``correct``."""
        ids = np.asarray(sample_ids).astype(str, copy=False)
        y = np.asarray(labels)
        hit = np.asarray(correct)
        if ids.ndim != 1 or y.shape != ids.shape or hit.shape != ids.shape:
            raise InputError(
                f"expected (N,) sample ids, labels and correctness of one length, got shapes {ids.shape}, {y.shape}, {hit.shape}",
                path=source,
                field="labels",
            )
        if hit.dtype != np.bool_:
            raise InputError(f"expected a boolean correctness per sample, got dtype {hit.dtype}", path=source, field="correct")
        if y.dtype == np.bool_ or not np.issubdtype(y.dtype, np.integer):
            raise InputError(f"expected integer class labels, got dtype {y.dtype}", path=source, field="labels")
        if y.size and y.min() < 0:
            raise InputError(f"expected labels >= 0, got {int(y.min())}", path=source, field="labels")
        if n_classes is not None and y.size and y.max() >= n_classes:
            raise InputError(f"label {int(y.max())} is out of range for {n_classes} classes", path=source, field="labels")
        names = None if class_names is None else np.asarray(class_names).astype(str)
        return cls(ids, y.astype(np.int64, copy=False), hit, names, n_classes, source)

    @classmethod
    def from_predictions(
        cls,
        sample_ids: object,
        labels: object,
        predictions: object,
        *,
        class_names: object = None,
        n_classes: int | None = None,
        source: str = "outputs",
    ) -> SampleOutcomes:
        """From per-sample ids, labels and top-1 predicted classes, ``-1`` where the model
        abstained (an error: an abstention never equals a label)."""
        predicted = np.asarray(predictions)
        if predicted.dtype == np.bool_ or not np.issubdtype(predicted.dtype, np.integer):
            raise InputError(f"expected integer predicted classes, got dtype {predicted.dtype}", path=source, field="predictions")
        if predicted.size and predicted.min() < -1:
            raise InputError(
                f"expected classes >= 0 or -1 (abstained), got {int(predicted.min())}", path=source, field="predictions"
            )
        y = np.asarray(labels)
        if predicted.shape != y.shape:
            raise InputError(f"expected {y.shape} predictions, got {predicted.shape}", path=source, field="predictions")
        return cls.from_correct(sample_ids, labels, predicted == y, class_names=class_names, n_classes=n_classes, source=source)

    @classmethod
    def from_scores_file(cls, scores: ScoresFile) -> SampleOutcomes:
        """From a loaded file of outputs (:func:`classwise.logits_io.load_outputs`): its top-1
        predictions (:attr:`~classwise.logits_io.ScoresFile.predictions`, ``-1`` where it
        abstained), labels, sample ids and class names."""
        return cls.from_predictions(
            scores.sample_ids,
            scores.labels,
            scores.predictions,
            class_names=scores.class_names,
            n_classes=scores.n_classes,
            source=scores.path if scores.path is not None else "outputs",
        )

    @property
    def n_samples(self) -> int:
        return int(self.labels.shape[0])


#: What the functions of class drops and ranking take for one model's outputs: outcomes, a
#: loaded file of outputs, or the path of one (read with ``load_outputs``).
Outcomes = SampleOutcomes | ScoresFile | str | Path


def as_outcomes(source: Outcomes) -> SampleOutcomes:
    """``source`` as :class:`SampleOutcomes` (a path is read with ``load_outputs``)."""
    if isinstance(source, SampleOutcomes):
        return source
    if isinstance(source, ScoresFile):
        return SampleOutcomes.from_scores_file(source)
    if isinstance(source, (str, Path)):
        return SampleOutcomes.from_scores_file(load_outputs(source))
    raise InputError(f"expected outcomes, a file of outputs or its path, got {type(source).__name__}", field="outputs")


def id_index(outcomes: SampleOutcomes) -> pd.Index:
    """The sample ids as a :class:`pandas.Index` to match others against (its hash table, built
    once, also answers the uniqueness check); :class:`InputError` naming the file when an id
    repeats. Checked here rather than on construction: the hash table of 50,000 ids costs more
    than the rest of a comparison, and a paired shift whose ids equal clean's row by row needs
    none."""
    index = pd.Index(outcomes.sample_ids)
    if not index.is_unique:
        repeated = pd.unique(outcomes.sample_ids[index.duplicated()])
        raise InputError(
            f"duplicate sample ids: {[str(i) for i in repeated[:5]]} ({repeated.size} in all)",
            path=outcomes.source,
            field="sample_ids",
        )
    return index


def n_classes_of(outcomes: Iterable[SampleOutcomes], n_classes: int | None = None) -> int:
    """The number of classes: ``n_classes`` if given (every label must be below it), else the
    largest class count the outcomes carry or, past it, the largest label + 1."""
    items = list(outcomes)
    top = max((int(o.labels.max()) + 1 for o in items if o.n_samples), default=0)
    if n_classes is not None:
        n_classes = check_count(n_classes, "n_classes")
        if top > n_classes:
            raise InputError(f"label {top - 1} is out of range for {n_classes} classes", field="n_classes")
        return n_classes
    carried = max((o.n_classes for o in items if o.n_classes is not None), default=0)
    count = max(top, carried)
    if count < 1:
        raise InputError("no samples and no class count: give n_classes", field="n_classes")
    return count


def class_names_of(outcomes: Iterable[SampleOutcomes], n_classes: int, class_names: object = None) -> np.ndarray:
    """``(n_classes,)`` class names: ``class_names`` if given, else the first outcomes' names of
    the right length, else the class indices as strings."""
    if class_names is not None:
        names = np.asarray(class_names).astype(str)
        if names.shape != (n_classes,):
            raise InputError(f"expected {n_classes} class names, got {names.size}", field="class_names")
        return names
    for o in outcomes:
        if o.class_names is not None and o.class_names.shape == (n_classes,):
            return o.class_names
    return np.arange(n_classes).astype(str)
