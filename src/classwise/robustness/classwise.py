"""The numbers behind the class-wise robustness figures (Medi et al., 2024).

Everything starts from confusion matrices indexed ``[true, predicted]``, one per
(shift, model), computed from cached logits with :func:`confusion_of`; the figures in
:mod:`classwise.plots.robustness` draw exactly what these tables hold.

* Figures 2-3: :func:`classwise_table` -- class-wise accuracy (recall) and CFPS per shift,
  model and class;
* Figure 4: :func:`mean_confusion` -- the confusion matrix averaged over models;
* Figure 7: :func:`similarity_table` -- cosine similarity of the models' class-wise errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from classwise.errors import InputError, field_path
from classwise.logits_io import ScoresFile
from classwise.metrics.cfps import (
    prediction_cosine_similarity,
)
from classwise.robustness._scores import as_scores, predictions
from classwise.robustness.results import ClassResults, as_results

Confusions = Mapping[str, Mapping[str, "ClassResults | np.ndarray"]]
"""``{shift: {model: numbers}}``: the metrics step's :class:`~classwise.robustness.results.ClassResults`
(or a ``(C, C)`` confusion matrix ``[true, predicted]`` of a model that never abstained)."""


def confusion_of(source: ScoresFile | str | Path) -> np.ndarray:
    """``(C, C)`` int64 confusion matrix ``[true, predicted]`` of a cached logits file."""
    scores = as_scores(source)
    c = scores.n_classes
    flat = scores.labels * c + predictions(scores)
    return np.bincount(flat, minlength=c * c).reshape(c, c).astype(np.int64)


def as_nested_results(confusions: Confusions, n_classes: int) -> dict[str, dict[str, ClassResults]]:
    """``{shift: {model: ClassResults}}`` of ``confusions`` (each a :class:`ClassResults` or a
    ``(C, C)`` confusion matrix of a model that never abstained), each of ``n_classes`` classes."""
    if not confusions:
        raise InputError("no shifts given", field="confusions")
    out: dict[str, dict[str, ClassResults]] = {}
    for shift, by_model in confusions.items():
        if not by_model:
            raise InputError("no models given", field=field_path("confusions", shift))
        out[shift] = {}
        for model, m in by_model.items():
            if isinstance(m, ClassResults) and m.n_classes != n_classes:
                raise InputError(
                    f"expected the numbers of {n_classes} classes to match class_names, got {m.n_classes}",
                    field=field_path("confusions", shift, model),
                )
            if not isinstance(m, ClassResults) and np.shape(m) != (n_classes, n_classes):
                raise InputError(
                    f"expected a ({n_classes}, {n_classes}) confusion matrix to match class_names, got {np.shape(m)}",
                    field=field_path("confusions", shift, model),
                )
            out[shift][model] = as_results(m)
    return out


def classwise_values(
    confusions: Confusions, n_classes: int
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict[str, np.ndarray]]]:
    """``(accuracy, cfps)``, each ``{shift: {model: (C,)}}``, in the input order.

    Accuracy is the class-wise recall (NaN for a class without samples; an abstention is an
    error of its class); CFPS is Eq. 1 of the paper. Read from :class:`ClassResults` (the
    metrics step's numbers), or computed from a confusion matrix."""
    results = as_nested_results(confusions, n_classes)
    accuracy = {s: {m: r.recall for m, r in by.items()} for s, by in results.items()}
    cfps = {s: {m: r.cfps for m, r in by.items()} for s, by in results.items()}
    return accuracy, cfps


def classwise_table(confusions: Confusions, class_names: Sequence[str], *, samples: pd.DataFrame | None = None) -> pd.DataFrame:
    """Long table with one row per (shift, model, class): columns ``shift``, ``model``,
    ``class``, ``class_name``, ``accuracy``, ``cfps`` (the numbers of Figures 2-3) and, with
    ``samples`` (:func:`classwise.robustness.pairing.pairing_table` of the same confusions),
    ``n`` (the samples of the shift and model) and ``pairing``."""
    names = [str(n) for n in class_names]
    accuracy, cfps = classwise_values(confusions, len(names))
    counts = {} if samples is None else samples.to_dict("index")
    frames = []
    for shift, by_model in accuracy.items():
        for model, acc in by_model.items():
            columns: dict[str, object] = {
                "shift": shift,
                "model": model,
                "class": np.arange(len(names)),
                "class_name": names,
                "accuracy": acc,
                "cfps": cfps[shift][model],
            }
            if samples is not None:
                columns |= {"n": counts[(shift, model)]["n"], "pairing": counts[(shift, model)]["pairing"]}
            frames.append(pd.DataFrame(columns))
    return pd.concat(frames, ignore_index=True)


def mean_confusion(confusions: Mapping[str, np.ndarray]) -> np.ndarray:
    """The element-wise mean of the models' confusion matrices (Figure 4), float64.

    The models are evaluated on the same samples (the workflow counts them on the samples every
    model holds, :func:`classwise.robustness.pairing.pair_confusions`), so every row has the same
    support in every matrix and the mean of the counts, row-normalised, equals the mean of the
    row-normalised matrices.
    """
    if not confusions:
        raise InputError("no confusion matrices given", field="confusions")
    matrices = [np.asarray(m, dtype=np.float64) for m in confusions.values()]
    shape = matrices[0].shape
    for name, m in zip(confusions, matrices):
        if m.ndim != 2 or m.shape != shape or shape[0] != shape[1]:
            raise InputError(
                f"expected square matrices of one shape {shape}, got {m.shape}", field=field_path("confusions", name)
            )
    return np.mean(matrices, axis=0)


def similarity_table(confusions: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Model-by-model cosine similarity of class-wise errors (Figure 7), as a DataFrame.

    See :func:`classwise.metrics.cfps.prediction_cosine_similarity` for the definition.
    """
    names, matrix = prediction_cosine_similarity(confusions)
    return pd.DataFrame(matrix, index=pd.Index(names, name="model"), columns=names)
