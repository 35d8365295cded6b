"""Label-cleaned views: one label per evaluation image, ``-1`` where a view removes the image.

- :mod:`classwise.labels.imagenet_cleaned`: ImageNet ``paper`` / ``aligned`` and CIFAR-10
  ``cleaned`` from cleanlab/label-errors' MTurk votes, plus label-file reading and writing.
- :mod:`classwise.labels.confident_learning`: ``cleaned_cl`` for any data set, from a reference
  model's out-of-sample probabilities.
- :mod:`classwise.labels.cli`: ``classwise imagenet-cleaned-labels``.

The names below are imported on first use: a metric job reads its scores through
:mod:`classwise.labels.labelled_scores`, which needs neither the label-errors files' readers nor
confident learning (nor the pandas they import).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from classwise.labels.confident_learning import cleaned_cl_labels, find_label_issues
    from classwise.labels.imagenet_cleaned import (
        REMOVED,
        build_cifar10_view,
        build_imagenet_view,
        read_label_file,
        view_summary,
        write_label_file,
    )

_LAZY = {
    **dict.fromkeys(("cleaned_cl_labels", "find_label_issues"), "classwise.labels.confident_learning"),
    **dict.fromkeys(
        ("REMOVED", "build_cifar10_view", "build_imagenet_view", "read_label_file", "view_summary", "write_label_file"),
        "classwise.labels.imagenet_cleaned",
    ),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
