"""Label views: the same cached logits evaluated against other labels or a subset.

A view never reruns inference. ``original`` uses the labels stored with the logits; any
other view supplies one label per sample, ``-1`` meaning "removed from this view".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from classwise.errors import InputError
from classwise.labels.real import REAL_CLASSES, LabelSets
from classwise.logits_io import ScoresFile
from classwise.validation import ScoreKind

ORIGINAL = "original"
REMOVED = -1


@dataclass(frozen=True)
class LabelledScores:
    """Scores restricted to the samples a view keeps, with that view's labels."""

    scores: np.ndarray
    labels: np.ndarray
    sample_ids: np.ndarray
    view: str
    kind: ScoreKind = "logits"
    class_names: np.ndarray = field(default_factory=lambda: np.array([], dtype=str))
    #: A class-subset shift's base class index per column (:mod:`classwise.class_subsets`), else None.
    class_indices: np.ndarray | None = None
    #: The scores are the one-hot encoding of hard predictions (see ``ScoresFile``).
    hard_predictions: bool = False
    #: A view of several correct labels per sample (ImageNet ReaL): each kept sample's set;
    #: ``labels`` are then the original labels, which per-class figures group by.
    label_sets: LabelSets | None = None
    #: Hard predictions: how many top-ranked classes each sample names (see ``ScoresFile``).
    top_k: int = 1
    #: Hard predictions: the kept samples on which the model abstained; None: none.
    abstained: np.ndarray | None = None


def apply_label_view(
    scores_file: ScoresFile,
    view: str,
    view_labels: np.ndarray | None = None,
    *,
    source: str | Path | None = None,
) -> LabelledScores:
    """Return the scores and labels of ``view``; ``view_labels`` is required unless original."""
    if view == ORIGINAL:
        if view_labels is not None:
            raise InputError("the 'original' view takes its labels from the logits file", path=source, field="labels")
        return LabelledScores(
            scores_file.scores,
            scores_file.labels,
            scores_file.sample_ids,
            view,
            scores_file.kind,
            scores_file.class_names,
            scores_file.extra.get("class_indices"),
            scores_file.hard_predictions,
            top_k=scores_file.top_k,
            abstained=scores_file.abstained,
        )
    if view_labels is None:
        raise InputError(f"label view '{view}' needs a label file", path=source, field="labels")
    view_labels = np.asarray(view_labels)
    if view_labels.shape != (scores_file.n_samples,):
        raise InputError(
            f"expected {scores_file.n_samples} labels (one per sample of {scores_file.path}), got shape {view_labels.shape}",
            path=source,
            field="labels",
        )
    invalid = (view_labels < REMOVED) | (view_labels >= scores_file.n_classes)
    if invalid.any():
        # the labels are in the order of the scores file's samples, not of the rows of ``source``: named by sample id
        bad = np.flatnonzero(invalid)
        raise InputError(
            f"labels must be -1 (removed) or in [0, {scores_file.n_classes}); {bad.size} are not, e.g. "
            f"{int(view_labels[bad[0]])} for sample ids {[str(i) for i in scores_file.sample_ids[bad[:5]]]}",
            path=source,
            field="labels",
        )
    keep = view_labels != REMOVED
    return LabelledScores(
        scores_file.scores[keep],
        view_labels[keep].astype(np.int64),
        scores_file.sample_ids[keep],
        view,
        scores_file.kind,
        scores_file.class_names,
        scores_file.extra.get("class_indices"),
        scores_file.hard_predictions,
        top_k=scores_file.top_k,
        abstained=_kept(scores_file.abstained, keep),
    )


def _kept(abstained: np.ndarray | None, keep: np.ndarray) -> np.ndarray | None:
    """The abstentions among the kept rows (None when none is kept)."""
    if abstained is None:
        return None
    kept = abstained[keep]
    return kept if kept.any() else None


def apply_label_sets(scores_file: ScoresFile, view: str, sets: LabelSets, *, source: str | Path | None = None) -> LabelledScores:
    """The scores of a view of label sets (:mod:`classwise.labels.real`), one set per sample of
    ``scores_file`` in its order: samples with an empty set are removed, the others keep their
    original label and carry their set."""
    if len(sets) != scores_file.n_samples:
        raise InputError(f"expected {scores_file.n_samples} sets, got {len(sets)}", path=source, field="real")
    if scores_file.n_classes != REAL_CLASSES or scores_file.extra.get("class_indices") is not None:
        raise InputError(
            f"ReaL labels index the {REAL_CLASSES} ImageNet-1k classes, but {scores_file.path} scores "
            f"{scores_file.n_classes} columns (set label_space: imagenet1k on the dataset)",
            path=source,
            field="real",
        )
    keep = np.flatnonzero(sets.sizes > 0)
    return LabelledScores(
        scores_file.scores[keep],
        scores_file.labels[keep].astype(np.int64),
        scores_file.sample_ids[keep],
        view,
        scores_file.kind,
        scores_file.class_names,
        None,
        scores_file.hard_predictions,
        sets.take(keep),
        top_k=scores_file.top_k,
        abstained=_kept(scores_file.abstained, keep),
    )
