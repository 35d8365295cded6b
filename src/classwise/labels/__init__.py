"""Label-cleaned views: one label per evaluation image, ``-1`` where a view removes the image.

- :mod:`classwise.labels.imagenet_cleaned`: ImageNet ``paper`` / ``aligned`` and CIFAR-10
  ``cleaned`` from cleanlab/label-errors' MTurk votes, plus label-file reading and writing.
- :mod:`classwise.labels.confident_learning`: ``cleaned_cl`` for any data set, from a reference
  model's out-of-sample probabilities.
- :mod:`classwise.labels.cli`: ``classwise imagenet-cleaned-labels``.
"""

from classwise.labels.confident_learning import cleaned_cl_labels, find_label_issues
from classwise.labels.imagenet_cleaned import (
    REMOVED,
    build_cifar10_view,
    build_imagenet_view,
    read_label_file,
    view_summary,
    write_label_file,
)

__all__ = [
    "REMOVED",
    "build_cifar10_view",
    "build_imagenet_view",
    "cleaned_cl_labels",
    "find_label_issues",
    "read_label_file",
    "view_summary",
    "write_label_file",
]
