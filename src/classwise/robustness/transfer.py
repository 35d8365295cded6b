"""The class-wise transfer matrix: robust accuracy of each target model under the attacks
crafted on each source model (``transfer_<source>_<attack>`` shifts, issue #16), and the worst
class of each (source, target) cell.

Transfer attacks measure how far adversarial images carry from the model they were crafted on
to another one (Papernot et al. 2016, "Transferability in machine learning"); the diagonal is the
white-box case, the source's own attack. Medi et al., 2024 read class-wise
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
from classwise.metrics.worst_class import worst_recall
from classwise.robustness._scores import as_scores, predictions, where
from classwise.sample_ids import sample_id_positions

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
    "worst_class_tied",
)


def transfer_cell(clean: ScoresFile | str | Path, transferred: ScoresFile | str | Path) -> dict[str, object]:
    """One cell: the target's accuracy on the transferred images (``robust_accuracy``) and on the
    same samples clean (``clean_accuracy``; matched by sample id, as a ``per_class`` attack holds
    a subset), and the class of lowest accuracy under the transfer (ties: the lowest index, and
    ``worst_class_tied`` says how many classes share that accuracy; classes without samples left
    out)."""
    clean_file, attacked = as_scores(clean), as_scores(transferred)
    rows = sample_id_positions(
        attacked.sample_ids,
        clean_file.sample_ids,
        path=where(clean_file, "clean"),
        field="sample_ids",
        available_name="the clean logits",
        missing="{count} of {total} sample(s) of the transferred logits are not in the clean ones",
    )
    labels = np.asarray(attacked.labels, dtype=np.int64)
    if not np.array_equal(np.asarray(clean_file.labels)[rows], labels):
        raise InputError(
            "the clean and transferred logits label the same samples differently",
            path=where(attacked, "transfer"),
            field="labels",
        )
    if not len(labels):
        nan = float("nan")
        return {
            "samples": 0, "clean_accuracy": nan, "robust_accuracy": nan, "worst_class": None, "worst_class_accuracy": nan,
            "worst_class_tied": 0,
        }  # fmt: skip
    predicted = predictions(attacked)
    right = predicted == labels
    support = np.bincount(labels, minlength=attacked.n_classes)
    worst = worst_recall(np.bincount(labels[right], minlength=attacked.n_classes), support)
    return {
        "samples": int(len(labels)),
        "clean_accuracy": float(np.mean(predictions(clean_file)[rows] == labels)),
        "robust_accuracy": float(np.mean(right)),
        "worst_class": str(attacked.class_names[worst.classes[0]]),
        "worst_class_accuracy": worst.value,
        "worst_class_tied": int(worst.details.get("n_tied", 1)),
    }


def transfer_matrix(
    clean: Mapping[str, ScoresFile | str | Path],
    transferred: Mapping[tuple[str, str, str], ScoresFile | str | Path],
) -> pd.DataFrame:
    """One row per (source, attack, target) of ``transferred`` (each target's clean outputs in
    ``clean``), in the order given, with the columns :data:`TRANSFER_COLUMNS`
    (:func:`transfer_cell`)."""
    rows = []
    loaded: dict[str, ScoresFile] = {}  # each target's clean file read once, not once per source
    for (source, attack, target), path in transferred.items():
        if target not in clean:
            raise InputError(f"no clean outputs of target model {target!r}", field="clean")
        if target not in loaded:
            loaded[target] = as_scores(clean[target])
        rows.append({"source": source, "attack": attack, "target": target, **transfer_cell(loaded[target], path)})
    return pd.DataFrame(rows, columns=list(TRANSFER_COLUMNS))
