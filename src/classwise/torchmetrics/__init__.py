"""The worst-class metrics for training loops: stateful :mod:`torchmetrics` metrics.

Needs the ``torchmetrics`` extra (``pip install "classwise[torchmetrics]"``). Each metric
follows torchmetrics' ``Metric`` API -- ``update(preds, target)``, ``compute()``, ``reset()``,
the sync across processes -- and equals the library's function on all the data seen:

=================================  ===========================  ==============================
metric                             paper                        library function
=================================  ===========================  ==============================
``WorstClassAccuracy``             WCA, WCA@k (``top_k``)       ``worst_class_accuracy``
``WorstClassPrecision``            WCP                          ``worst_class_precision``
``WorstNClassRecall``              WnCR, WnCR@k                 ``worst_n_class_recall``
``WorstTwoClassAccuracy``          W2CA                         ``worst_pair_accuracy``
``WorstSuperclassAccuracy``        WSupCA                       ``worst_superclass_accuracy``
``WorstSuperclassRecall``          WSupCR                       ``worst_superclass_recall``
``MaxClassFalsePositiveScore``     CFPS_max                     ``cfps.cfps_max``
=================================  ===========================  ==============================

``preds`` are logits or probabilities ``(N, C)`` (or ``(N,)`` predicted classes for the
metrics that need only the argmax), ``target`` the labels ``(N,)``. ``compute()`` returns the
value; built with ``return_classes=True`` it returns ``(value, classes)``, the worst class
(pair, n classes, superclass position) as an int64 tensor. Their state is integer counts (the
confusion matrix, top-k hits, pairwise wins), so syncing processes is a sum and the value is
exact whatever the batching.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from classwise._extras import import_module, require

if TYPE_CHECKING:
    from classwise.torchmetrics.metrics import (
        MaxClassFalsePositiveScore,
        WorstClassAccuracy,
        WorstClassPrecision,
        WorstNClassRecall,
        WorstSuperclassAccuracy,
        WorstSuperclassRecall,
        WorstTwoClassAccuracy,
    )

require("torch", "torchmetrics", extra="torchmetrics", feature="classwise.torchmetrics")

__all__ = [
    "MaxClassFalsePositiveScore",
    "WorstClassAccuracy",
    "WorstClassPrecision",
    "WorstNClassRecall",
    "WorstSuperclassAccuracy",
    "WorstSuperclassRecall",
    "WorstTwoClassAccuracy",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("classwise.torchmetrics.metrics"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
