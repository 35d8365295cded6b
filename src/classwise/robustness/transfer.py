"""The class-wise transfer matrix: robust accuracy of each target model under the attacks
crafted on each source model (``transfer_<source>_<attack>`` shifts, issue #16), and the worst
class of each (source, target) cell.

Transfer attacks measure how far adversarial images carry from the model they were crafted on
to another one (Papernot et al. 2016, "Transferability in machine learning"); the diagonal is the
white-box case, the source's own attack. classwise-robustness-cfps.txt reads class-wise
accuracy under PGD on each model alone (Figures 2-3): the matrix adds which classes stay weak
when the attacker does not know the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.logits_io import ScoresFile
from classwise.robustness._scores import as_scores, predictions, where

#: The columns of :func:`transfer_matrix`, one row per (source, target).
TRANSFER_COLUMNS = (
    "source",
    "attack",
    "target",
    "samples",
    "clean_accuracy",
    "robust_accuracy",
    "worst_class",
    "worst_class_accuracy",
)


def class_accuracies(labels: np.ndarray, predicted: np.ndarray, n_classes: int) -> np.ndarray:
    """Accuracy of each class (recall), ``NaN`` for a class without samples."""
    totals = np.bincount(labels, minlength=n_classes).astype(np.float64)
    hits = np.bincount(labels[predicted == labels], minlength=n_classes).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, hits / np.where(totals > 0, totals, 1.0), np.nan)


def transfer_cell(clean: ScoresFile | str | Path, transferred: ScoresFile | str | Path) -> dict[str, object]:
    """One cell: the target's accuracy on the transferred images (``robust_accuracy``) and on the
    same samples clean (``clean_accuracy``; matched by sample id, as a ``per_class`` attack holds
    a subset), and the class of lowest accuracy under the transfer (ties: the lowest index;
    classes without samples left out)."""
    clean_file, attacked = as_scores(clean), as_scores(transferred)
    position = {sid: i for i, sid in enumerate(clean_file.sample_ids.tolist())}
    missing = [sid for sid in attacked.sample_ids.tolist() if sid not in position]
    if missing:
        raise InputError(
            f"{len(missing)} sample(s) of the transferred logits are not in the clean ones (first {missing[0]!r})",
            path=where(clean_file, "clean"),
            field="sample_ids",
        )
    rows = np.array([position[sid] for sid in attacked.sample_ids.tolist()], dtype=np.int64)
    labels = np.asarray(attacked.labels, dtype=np.int64)
    if not np.array_equal(np.asarray(clean_file.labels)[rows], labels):
        raise InputError(
            "the clean and transferred logits label the same samples differently",
            path=where(attacked, "transfer"),
            field="labels",
        )
    predicted = predictions(attacked)
    per_class = class_accuracies(labels, predicted, attacked.n_classes)
    worst = int(np.nanargmin(per_class)) if len(labels) else None
    return {
        "samples": int(len(labels)),
        "clean_accuracy": float(np.mean(predictions(clean_file)[rows] == labels)) if len(labels) else float("nan"),
        "robust_accuracy": float(np.mean(predicted == labels)) if len(labels) else float("nan"),
        "worst_class": None if worst is None else str(attacked.class_names[worst]),
        "worst_class_accuracy": float("nan") if worst is None else float(per_class[worst]),
    }


def transfer_matrix(
    clean: Mapping[str, ScoresFile | str | Path],
    transferred: Mapping[tuple[str, str, str], ScoresFile | str | Path],
) -> pd.DataFrame:
    """One row per (source, attack, target) of ``transferred`` (each target's clean outputs in
    ``clean``), in the order given, with the columns :data:`TRANSFER_COLUMNS`
    (:func:`transfer_cell`)."""
    rows = []
    for (source, attack, target), path in transferred.items():
        if target not in clean:
            raise InputError(f"no clean outputs of target model {target!r}", field="clean")
        rows.append({"source": source, "attack": attack, "target": target, **transfer_cell(clean[target], path)})
    return pd.DataFrame(rows, columns=list(TRANSFER_COLUMNS))
