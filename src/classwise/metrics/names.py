"""Names of metric groups that the workflow needs while it builds the DAG (which must not import
the metric implementations and their numerical libraries)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LABEL_SETS_METRICS", "LABEL_SETS_REASON", "score_metric_names"]

#: Why some metrics are missing under a view with several correct labels per image (ImageNet ReaL).
LABEL_SETS_REASON = (
    "several correct labels per image (ReaL): the restricted argmax within a pair of classes or a "
    "superclass has no single true class to match (docs/real-labels.md)"
)
LABEL_SETS_METRICS = ("W2CA", "W2CA_balanced", "WSupCA")


def score_metric_names(k: int, ns: Sequence[int]) -> tuple[str, ...]:
    """The metrics of :func:`worst_class_family` that need scores, not only the predicted class:
    the pair accuracies (the argmax within a pair), WSupCA (within a superclass) and the top-k
    metrics."""
    return ("W2CA", "W2CA_balanced", "WSupCA", f"A@{k}", f"WCA@{k}", *(f"W{n}CR@{k}" for n in ns))
