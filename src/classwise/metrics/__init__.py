"""Worst-class metrics (Bitterwolf et al., 2022), and the metrics beside them.

The metric functions are importable from here (``from classwise.metrics import
worst_class_accuracy``), each module loaded on first use: importing the catalogue
(:mod:`classwise.metrics.catalogue`, which the workflow reads while it builds its DAG) loads no
metric implementation. Every metric is listed once in
:data:`~classwise.metrics.catalogue.CATALOGUE`; :func:`evaluate` computes them all.

``robust_fairness`` is the function (:func:`classwise.metrics.robust_fairness.robust_fairness`),
bound here so that it, not its module, is what ``from classwise.metrics import robust_fairness``
gives; its module's other names are imported with ``from classwise.metrics.robust_fairness
import ...``.
"""

from __future__ import annotations

import importlib
from typing import Any

from classwise.metrics.robust_fairness import robust_fairness

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("CATALOGUE", "DEFAULTS", "Metric", "MetricParameters", "metric_names"), "classwise.metrics.catalogue"),
    **dict.fromkeys(("ClassificationStats", "compute_stats"), "classwise.metrics.stats"),
    **dict.fromkeys(("Evaluation", "evaluate"), "classwise.metrics.suite"),
    "BootstrapSettings": "classwise.metrics.bootstrap",
    **dict.fromkeys(("compare", "compare_models"), "classwise.metrics.compare"),
    **dict.fromkeys(
        (
            "accuracy",
            "topk_accuracy",
            "worst_class_accuracy",
            "worst_class_precision",
            "worst_class_topk_accuracy",
            "worst_n_class_recall",
            "worst_n_class_recall_exact",
            "worst_pair_accuracy",
            "worst_superclass_accuracy",
            "worst_superclass_recall",
        ),
        "classwise.metrics.worst_class",
    ),
    **dict.fromkeys(("class_false_positive_score", "cfps_max"), "classwise.metrics.cfps"),
    **dict.fromkeys(("reported_metrics", "measured_metrics", "calibration_slope"), "classwise.metrics.decisiveness"),
    "MetricResult": "classwise.metrics.result",
}

__all__ = sorted([*_EXPORTS, "robust_fairness"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'classwise.metrics' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
