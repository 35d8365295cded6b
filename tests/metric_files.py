"""What the metrics step writes of one model's outputs, made by the metrics step itself: the files
the views across shifts read (classwise.steps.robustness.MetricFiles)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from classwise.logits_io import ABSTAINED, save_logits, save_predictions
from classwise.steps.metrics import WorstClassSettings, worst_class_step
from classwise.steps.robustness import MetricFiles


def write_metric_files(
    folder: Path, stem: str, ids: np.ndarray, labels: np.ndarray, predicted: np.ndarray, names: list[str]
) -> MetricFiles:
    """The outputs file of ``predicted`` (one-hot logits; hard predictions where the model
    abstained, -1) and the metrics step's ``worst_class.json``, ``per_class.csv`` and
    ``confusion.csv`` of it, below ``folder/stem``."""
    folder = folder / stem
    folder.mkdir(parents=True, exist_ok=True)
    outputs = folder / "outputs.npz"
    predicted = np.asarray(predicted, dtype=np.int64)
    common = {"labels": np.asarray(labels), "sample_ids": np.asarray(ids).astype(str), "class_names": np.array(names)}
    if (predicted == ABSTAINED).any():
        save_predictions(outputs, predictions=predicted, metadata={}, **common)
    else:
        save_logits(outputs, logits=np.eye(len(names), dtype=np.float32)[predicted], metadata={}, **common)
    files = MetricFiles(
        worst_class=folder / "worst_class.json",
        per_class=folder / "per_class.csv",
        confusion=folder / "confusion.csv",
        outputs=outputs,
    )
    worst_class_step(
        logits_path=outputs,
        label_view="original",
        view_labels_path=None,
        settings=WorstClassSettings(superclasses={}, k=1, n=[]),
        metrics_path=files.worst_class,
        per_class_path=files.per_class,
        confusion_path=files.confusion,
    )
    return files


def confusion_samples(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels and predictions of one sample per count of a confusion matrix ``[true, predicted]``."""
    m = np.asarray(confusion, dtype=np.int64)
    true, predicted = np.nonzero(m)
    counts = m[true, predicted]
    return np.repeat(true, counts), np.repeat(predicted, counts)
