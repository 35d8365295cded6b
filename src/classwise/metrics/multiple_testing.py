"""Multiple-testing adjustments of p-values: Benjamini-Hochberg and Holm, vectorised.

With 1,000 classes and 100 shifts a model gets 100,000 tests, and some class drops by chance
under every shift: a per-test 5 % level finds 5,000 "drops" where nothing changed. The
adjustments turn the p-values of one family of tests into adjusted p-values ``p_adj``; a test
is significant at level ``q`` when ``p_adj <= q``:

* **Benjamini-Hochberg** (``"bh"``; Benjamini and Hochberg, 1995): controls the false discovery
  rate, the expected share of false findings among the findings, at ``q`` (for independent or
  positively dependent tests). With the ``m`` p-values sorted ``p_(1) <= ... <= p_(m)``,
  ``p_adj_(i) = min over j >= i of min(1, m p_(j) / j)``; ``p_adj <= q`` rejects exactly the
  tests of the step-up procedure (the largest ``i`` with ``p_(i) <= i q / m`` and every smaller).
* **Holm** (``"holm"``; Holm, 1979): controls the family-wise error rate, the probability of any
  false finding, at ``q`` under any dependence. ``p_adj_(i) = max over j <= i of
  min(1, (m - j + 1) p_(j))``: the step-down Bonferroni procedure.

Both give the adjusted p-values of statsmodels' ``multipletests(p, method="fdr_bh")`` and
``method="holm"`` (the tests compare them). **NaN** marks a test that was not made (a class
without samples on one side): it stays NaN and is not counted in ``m``. The family is every
non-NaN entry of the array, whatever its shape.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from classwise.errors import InputError
from classwise.metrics.intervals import check_confidence

__all__ = [
    "ADJUSTMENTS",
    "Adjustment",
    "adjust_p_values",
    "benjamini_hochberg",
    "check_adjustment",
    "check_level",
    "holm",
    "reject",
]

Adjustment = Literal["bh", "holm"]
#: Adjustment name -> what it controls, as the output tables name it.
ADJUSTMENTS: dict[str, str] = {
    "bh": "Benjamini-Hochberg: false discovery rate",
    "holm": "Holm: family-wise error rate",
}


def check_adjustment(adjustment: object) -> Adjustment:
    """``adjustment`` if it names one of :data:`ADJUSTMENTS`, else :class:`InputError`."""
    if adjustment == "bh":
        return "bh"
    if adjustment == "holm":
        return "holm"
    raise InputError(f"expected one of {', '.join(ADJUSTMENTS)}, got {adjustment!r}", field="adjustment")


def check_level(q: object) -> float:
    """``q`` (a false discovery rate or family-wise error level) as a float strictly between 0
    and 1, else :class:`InputError` naming ``q``."""
    return check_confidence(q, field="q")


def _p_values(p_values: object) -> np.ndarray:
    p = np.asarray(p_values, dtype=np.float64)
    bad = ~np.isnan(p) & ((p < 0.0) | (p > 1.0))
    if bad.any():
        raise InputError(f"expected p-values in [0, 1] (NaN: no test), got {p[bad].ravel()[0]!r}", field="p_value")
    return p


def _sorted_finite(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The flat positions of the non-NaN p-values in ascending order (stable) and those values."""
    flat = p.ravel()
    tested = np.flatnonzero(~np.isnan(flat))
    order = tested[np.argsort(flat[tested], kind="stable")]
    return order, flat[order]


def benjamini_hochberg(p_values: object) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (see the module docstring); NaN stays NaN."""
    p = _p_values(p_values)
    out = np.full(p.shape, np.nan)
    order, ranked = _sorted_finite(p)
    m = ranked.size
    if m:
        scaled = ranked * m / np.arange(1, m + 1)
        # the minimum over j >= i: a running minimum from the largest p-value down
        out.flat[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def holm(p_values: object) -> np.ndarray:
    """Holm (step-down Bonferroni) adjusted p-values (see the module docstring); NaN stays NaN."""
    p = _p_values(p_values)
    out = np.full(p.shape, np.nan)
    order, ranked = _sorted_finite(p)
    m = ranked.size
    if m:
        scaled = np.minimum(ranked * (m - np.arange(m)), 1.0)
        out.flat[order] = np.maximum.accumulate(scaled)
    return out


def adjust_p_values(p_values: object, adjustment: str = "bh") -> np.ndarray:
    """:func:`benjamini_hochberg` (``"bh"``) or :func:`holm` (``"holm"``) of one family."""
    return benjamini_hochberg(p_values) if check_adjustment(adjustment) == "bh" else holm(p_values)


def reject(p_values: object, q: float = 0.05, adjustment: str = "bh") -> np.ndarray:
    """Boolean: the test is significant, its adjusted p-value at most ``q`` (False where NaN)."""
    level = check_level(q)
    with np.errstate(invalid="ignore"):
        return np.asarray(adjust_p_values(p_values, adjustment) <= level)
