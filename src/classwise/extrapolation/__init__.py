"""Accuracy on more classes: reversed ROC and accuracy extrapolation (Slavutsky & Benjamini).

* :mod:`~classwise.extrapolation.rroc` — per-sample ``C_x``, the reversed ROC curve, rAUC
  and the exact expected accuracy ``A_k`` at ``k`` observed classes;
* :mod:`~classwise.extrapolation.methods` — extrapolation to ``k_max`` classes by
  ``naive``, ``kde``, ``regression`` (Zheng et al.) and ``cleanex`` (the paper's network);
* :mod:`~classwise.extrapolation.simulation` — the paper's simulation and an honest
  evaluation of the methods (sample ``k1`` classes, extrapolate, compare with the truth);
* :mod:`~classwise.extrapolation.cli` — ``classwise extrapolate``.
"""

from classwise.extrapolation.methods import METHODS, extrapolate
from classwise.extrapolation.rroc import (
    RankCounts,
    c_x,
    expected_accuracy,
    power_curve,
    rank_counts,
    rauc,
    reversed_roc,
)

__all__ = [
    "METHODS",
    "RankCounts",
    "c_x",
    "expected_accuracy",
    "extrapolate",
    "power_curve",
    "rank_counts",
    "rauc",
    "reversed_roc",
]
