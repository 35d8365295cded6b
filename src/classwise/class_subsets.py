"""Evaluating a model on a test set that covers only some of its classes (ImageNet-R, ImageNet-A,
a user's class subset).

The standard protocol of these sets (Hendrycks et al., "The Many Faces of Robustness" and
"Natural Adversarial Examples", whose evaluation code keeps the model's logits of the 200 classes
and takes the argmax among them) restricts the model's outputs to the subset's classes **before
the argmax**: a 1,000-class model that scores a class outside the subset highest is not wrong
for that reason; its prediction is the best-scored class of the subset. Every metric then ranges
over the subset only: the worst class is the worst of the subset's classes, and the softmax
(calibration, decisiveness) is taken over the subset's scores.

classwise applies it once, at inference: the cached logits of such a shift hold only the
subset's columns, in the base dataset's class order, with labels renumbered into them, and the
file records the base class index of each column (array ``class_indices``). Every metric, table
and figure reading the file is then the restricted evaluation without knowing about it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from classwise.errors import InputError


def restrict_to_classes(scores: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(scores[:, classes], labels renumbered)``: the ``(N, K)`` scores of the ``K`` classes of
    the subset (base class indices, strictly increasing) and each label's position among them.

    Raises :class:`InputError` for indices out of range or unsorted, or for a label outside the
    subset (a sample of a class the subset leaves out cannot be scored among it).
    """
    scores = np.asarray(scores)
    labels = np.asarray(labels, dtype=np.int64)
    classes = np.asarray(classes, dtype=np.int64)
    n_classes = scores.shape[1]
    if classes.ndim != 1 or classes.size < 1 or classes.min() < 0 or classes.max() >= n_classes:
        raise InputError(f"expected class indices in [0, {n_classes}), got {classes[:10].tolist()}", field="classes")
    if np.any(np.diff(classes) <= 0):
        raise InputError("expected strictly increasing class indices", field="classes")
    position = np.full(n_classes, -1, dtype=np.int64)
    position[classes] = np.arange(classes.size)
    renumbered = position[labels]
    outside = renumbered < 0
    if outside.any():
        raise InputError(
            f"{int(outside.sum())} samples have labels outside the class subset, e.g. {np.unique(labels[outside])[:5].tolist()}",
            field="labels",
        )
    return np.ascontiguousarray(scores[:, classes]), renumbered


def restrict_superclasses(superclasses: Mapping[str, Sequence[int]], classes: np.ndarray) -> dict[str, list[int]]:
    """Superclasses (members as base class indices) renumbered into a class subset's columns
    (``classes``: the subset's base class indices); members outside the subset are dropped, and
    so are superclasses left without a member (WSupCA then ranges over the subset's superclasses)."""
    position = {int(base): i for i, base in enumerate(np.asarray(classes).tolist())}
    restricted = {name: [position[int(m)] for m in members if int(m) in position] for name, members in superclasses.items()}
    return {name: members for name, members in restricted.items() if members}
