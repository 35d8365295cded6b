"""Class False Positive Score and the class-wise analyses of Medi et al., 2024.

Every function takes a confusion matrix indexed ``[true, predicted]`` (rows: ground truth,
columns: prediction, as :func:`sklearn.metrics.confusion_matrix` and
:class:`classwise.metrics.stats.ClassificationStats` lay it out).  Counts may be integers
or non-negative floats (e.g. a confusion matrix averaged over models, as in the paper's
Figure 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from classwise.errors import InputError, field_path
from classwise.metrics.result import MetricResult
from classwise.metrics.worst_class import with_ties


def _check_confusion(confusion: np.ndarray, field: str = "confusion") -> np.ndarray:
    m = np.asarray(confusion)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise InputError(f"expected a square (C, C) confusion matrix, got shape {m.shape}", field=field)
    if not (np.issubdtype(m.dtype, np.integer) or np.issubdtype(m.dtype, np.floating)):
        raise InputError(f"expected numeric counts, got dtype {m.dtype}", field=field)
    m = m.astype(np.float64)
    if not np.isfinite(m).all() or (m < 0).any():
        raise InputError("confusion counts must be finite and non-negative", field=field)
    return m


def class_false_positive_score(confusion: np.ndarray) -> np.ndarray:
    """Eq. 1: ``CFPS(c) = #{pred = c, y != c} / #{pred != y}``, one float64 per class.

    The scores sum to 1 whenever there is at least one error.  With no errors at all the
    ratio is 0/0; we define every score as 0 then (no class attracts any false positive).
    """
    m = _check_confusion(confusion)
    false_positives = m.sum(axis=0) - np.diag(m)
    errors = m.sum() - np.trace(m)
    if errors <= 0:
        return np.zeros(m.shape[0], dtype=np.float64)
    return false_positives / errors


def false_positive_scores(predicted: np.ndarray, precision_hits: np.ndarray, misclassified: int) -> np.ndarray:
    """Eq. 1 from counts: ``(predicted_c - correct predictions of c) / misclassified``, one float64
    per class, all 0 without misclassifications (see :func:`class_false_positive_score`). An
    abstention is no prediction of any class and no misclassification: it counts nowhere here."""
    predicted = np.asarray(predicted)
    if misclassified <= 0:
        return np.zeros(predicted.shape[-1], dtype=np.float64)
    return (predicted - np.asarray(precision_hits)).astype(np.float64) / float(misclassified)


def cfps_max(confusion: np.ndarray, class_names: Sequence[str] | None = None) -> MetricResult:
    """The largest CFPS and its class: ``classes = (index,)`` (ties -> lowest index).

    ``details`` holds ``n_errors`` (the denominator of Eq. 1) and, when ``class_names`` is
    given, ``class_name``.  With no errors the value is 0 and ``classes`` is empty (no
    class stands out; see :func:`class_false_positive_score`).
    """
    m = _check_confusion(confusion)
    if class_names is not None and len(class_names) != m.shape[0]:
        raise InputError(f"expected {m.shape[0]} class names, got {len(class_names)}", field="class_names")
    n_errors = float(m.sum() - np.trace(m))
    details: dict[str, object] = {"n_errors": int(n_errors) if n_errors.is_integer() else n_errors}
    if n_errors <= 0:
        return MetricResult(0.0, (), details)
    false_positives = m.sum(axis=0) - np.diag(m)
    value, worst_row = cfps_max_rows(false_positives, np.float64(n_errors))
    worst = int(worst_row)
    if class_names is not None:
        details["class_name"] = str(class_names[worst])
    return MetricResult(float(value), (worst,), with_ties(details, tied_largest(false_positives)))


def tied_largest(false_positives: np.ndarray) -> list[int]:
    """The classes with the most false positives (equal counts, equal CFPS)."""
    fp = np.asarray(false_positives)
    return [int(i) for i in np.flatnonzero(fp == fp.max())]


def cfps_max_rows(false_positives: np.ndarray, errors: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """``(max CFPS, its class)`` for each row of per-class false-positive counts
    ``(..., C)`` with ``errors`` ``(...)`` misclassifications (Eq. 1; the first maximum, i.e.
    the lowest class index among ties).  Rows without errors get value 0 and class -1."""
    fp = np.asarray(false_positives, dtype=np.float64)
    err = np.asarray(errors, dtype=np.float64)
    has = err > 0
    scores = np.divide(fp, err[..., None], out=np.zeros(fp.shape), where=has[..., None])
    worst = np.argmax(scores, axis=-1)
    value = np.take_along_axis(scores, worst[..., None], axis=-1)[..., 0]
    return np.where(has, value, 0.0), np.where(has, worst, -1)


def class_wise_accuracy(confusion: np.ndarray) -> np.ndarray:
    """Per-class recall ``#{pred = c, y = c} / #{y = c}`` (NaN for a class without samples).

    This is the class-wise accuracy the paper plots as fractions (Figures 1 and 3).  Its
    Eq. 2 as printed divides true positives by true negatives
    (``#{pred != c, y != c}``), which is not a fraction of anything and disagrees with the
    figures; we use the standard definition of the cited works instead (Benz et al., Tian
    et al.): the fraction of the class's samples that are classified correctly.
    """
    m = _check_confusion(confusion)
    support = m.sum(axis=1)
    out = np.full(m.shape[0], np.nan)
    has = support > 0
    out[has] = np.diag(m)[has] / support[has]
    return out


def off_diagonal_error_profile(confusion: np.ndarray) -> np.ndarray:
    """Row-normalised confusion ``P(pred = j | y = i)`` with the diagonal set to 0, flattened.

    Rows of classes without samples are zero.  This is the vector compared by
    :func:`prediction_cosine_similarity`.
    """
    m = _check_confusion(confusion)
    support = m.sum(axis=1, keepdims=True)
    rates = np.divide(m, support, out=np.zeros_like(m), where=support > 0)
    np.fill_diagonal(rates, 0.0)
    return rates.ravel()


def prediction_cosine_similarity(confusions: Mapping[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    """Cosine similarity between models' class-wise *errors* (the paper's Figure 7).

    Each model is represented by its off-diagonal error profile
    (:func:`off_diagonal_error_profile`): the row-normalised confusion matrix
    ``P(pred = j | y = i)`` with the diagonal removed.  Two models score 1 when they
    misclassify each class into the other classes in the same proportions, and 0 when
    they never make the same kind of mistake.

    Why the off-diagonal part: the full row-normalised matrix of any two decent models is
    dominated by its diagonal (their recalls), so its cosine similarity is close to 1 for
    every pair and says nothing (simulated 10-class models with 85-92% recall give
    0.996-0.999 whether their errors are related or not).  Without the diagonal the same
    simulations give about 0.3-0.6 for unrelated structured error patterns and 0.87-0.92
    for models sharing 70% of their error structure, which is what a class-to-class bias
    analysis needs.  Errors spread uniformly over the other classes still look alike
    (about 0.9), since all entries are non-negative.  Row normalisation weights every
    true class equally whatever its sample count.

    Returns ``(names, S)``: the model names in the mapping's order and the symmetric
    ``(M, M)`` similarity matrix.  A model without any error has an all-zero profile;
    its similarities (including with itself) are NaN.
    """
    names = list(confusions)
    if not names:
        raise InputError("no confusion matrices given", field="confusions")
    profiles = []
    shape = None
    for name in names:
        m = _check_confusion(confusions[name], field=field_path("confusions", name))
        if shape is None:
            shape = m.shape
        elif m.shape != shape:
            raise InputError(f"expected shape {shape} like the first model, got {m.shape}", field=field_path("confusions", name))
        profiles.append(off_diagonal_error_profile(m))
    x = np.stack(profiles)
    norms = np.linalg.norm(x, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = x / norms[:, None]
    similarity = np.clip(unit @ unit.T, -1.0, 1.0)
    zero = norms == 0
    similarity[zero, :] = np.nan
    similarity[:, zero] = np.nan
    return names, similarity


def _check_attack_arrays(predictions: np.ndarray, targets: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, ...]:
    arrays = []
    for field, a in (("predictions", predictions), ("targets", targets), ("labels", labels)):
        arr = np.asarray(a)
        if arr.ndim != 1:
            raise InputError(f"expected a 1-D array, got shape {arr.shape}", field=field)
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise InputError(f"expected integer class indices, got dtype {arr.dtype}", field=field)
        if (arr < 0).any():
            raise InputError("class indices must be non-negative", field=field)
        arrays.append(arr.astype(np.int64))
    if not (arrays[0].shape == arrays[1].shape == arrays[2].shape):
        raise InputError(
            f"predictions, targets and labels must have the same length, got "
            f"{arrays[0].shape[0]}, {arrays[1].shape[0]}, {arrays[2].shape[0]}",
            field="predictions",
        )
    return tuple(arrays)


def targeted_success_rate(predictions: np.ndarray, targets: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of targeted-attack samples predicted as their target (Figure 5).

    Only attacked samples count, i.e. those whose label differs from the target (a sample
    already of the target class is not an attack).  NaN when there is no such sample.
    """
    pred, tgt, lab = _check_attack_arrays(predictions, targets, labels)
    attacked = lab != tgt
    if not attacked.any():
        return float("nan")
    return float(np.mean(pred[attacked] == tgt[attacked]))


def targeted_success_rate_per_class(
    predictions: np.ndarray, targets: np.ndarray, labels: np.ndarray, n_classes: int
) -> np.ndarray:
    """Success rate of :func:`targeted_success_rate` for each target class, ``(n_classes,)``.

    Entry ``t`` is the fraction of attacked samples with target ``t`` (label != ``t``) that
    are predicted as ``t``; NaN for a class that was never a target.
    """
    pred, tgt, lab = _check_attack_arrays(predictions, targets, labels)
    c = int(n_classes)
    if c < 1:
        raise InputError(f"n_classes must be >= 1, got {n_classes}", field="n_classes")
    for field, arr in (("predictions", pred), ("targets", tgt), ("labels", lab)):
        if arr.size and arr.max() >= c:
            raise InputError(f"class indices must lie in [0, {c})", field=field)
    attacked = lab != tgt
    attempts = np.bincount(tgt[attacked], minlength=c)
    hits = np.bincount(tgt[attacked & (pred == tgt)], minlength=c)
    out = np.full(c, np.nan)
    has = attempts > 0
    out[has] = hits[has] / attempts[has]
    return out
