"""Worst-class metrics (Bitterwolf et al., 2022), and the metrics beside them.

``robust_fairness`` is the function (:func:`classwise.metrics.robust_fairness.robust_fairness`);
its module's other names are imported with ``from classwise.metrics.robust_fairness import ...``.
"""

from classwise.metrics.robust_fairness import robust_fairness

__all__ = ["robust_fairness"]
