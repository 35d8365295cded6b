"""Nelson's decisiveness, geometric accuracy and robustness (George et al., 2020).

The three metrics are generalized means ``M_rho`` of correct-class probabilities:
decisiveness ``rho = 1`` (arithmetic mean), geometric accuracy ``rho = 0`` (geometric mean)
and robustness ``rho = -2/3``.  Probabilities below ``gamma`` are set to ``gamma`` first
(the paper uses ``gamma = 0.005``).  They are computed twice:

* **reported** (:func:`reported_metrics`): from the model's own probability of the true
  class of each sample;
* **measured** (:func:`measured_metrics`): from the fraction of correct decisions among
  all class probabilities whose value falls in the same bin (the paper's Sec. 4 procedure,
  with the exact binning convention documented on :func:`measured_metrics`).

:func:`calibration_slope` compares the two (Eq. 3): below 1 means overconfident, above 1
underconfident.  :func:`gamma_sweep` reproduces the shape of the paper's Table 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from classwise.errors import InputError
from classwise.metrics.catalogue import DEFAULTS
from classwise.metrics.probabilities import Probabilities, auto_chunk_rows, map_row_blocks

DECISIVENESS_RHO = 1.0
GEOMETRIC_RHO = 0.0
ROBUSTNESS_RHO = -2.0 / 3.0
#: The exponents of decisiveness, geometric accuracy and robustness, in that order.
RHOS: tuple[float, float, float] = (DECISIVENESS_RHO, GEOMETRIC_RHO, ROBUSTNESS_RHO)
DEFAULT_GAMMA = DEFAULTS.gamma
DEFAULT_GAMMAS: tuple[float, ...] = (0.05, 0.01, 0.005, 0.001, 0.0)


# ---------------------------------------------------------------------------- generalized mean
def generalized_mean_log(
    log_probs: np.ndarray,
    rho: float,
    *,
    gamma: float = 0.0,
    weights: np.ndarray | None = None,
) -> float:
    """Weighted generalized mean ``(sum w x^rho / sum w)^(1/rho)`` of ``x = exp(log_probs)``.

    Computed entirely in log space (a log-sum-exp for ``rho != 0``, the weighted mean of the
    logarithms for ``rho = 0``), so nothing under- or overflows on the way, even for
    ``gamma = 0`` and probabilities far below the float64 range.  Values below ``gamma``
    are set to ``gamma`` first (``gamma = 0`` clips nothing).  A zero probability
    (``log_probs = -inf``) that survives the clipping makes the mean 0 for ``rho <= 0``
    and contributes 0 to the sum for ``rho > 0``.  Entries with weight 0 are ignored.

    ``log_probs`` may have any shape (it is flattened); NaN and ``+inf`` are rejected.
    ``weights`` (same size, non-negative, positive sum) default to all ones.
    """
    lp = np.asarray(log_probs, dtype=np.float64).ravel()
    rho = float(rho)
    if not np.isfinite(rho):
        raise InputError(f"rho must be finite, got {rho}", field="rho")
    gamma = _check_gamma(gamma, upper=None)
    if lp.size == 0:
        raise InputError("cannot average an empty array", field="log_probs")
    if np.isnan(lp).any() or (lp == np.inf).any():
        raise InputError("log-probabilities must not be NaN or +inf", field="log_probs")
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64).ravel()
        if w.shape != lp.shape:
            raise InputError(f"expected {lp.size} weights, got shape {np.shape(weights)}", field="weights")
        if not np.isfinite(w).all() or (w < 0).any():
            raise InputError("weights must be finite and non-negative", field="weights")
        keep = w > 0
        if not keep.any():
            raise InputError("weights must have a positive sum", field="weights")
        lp, w = lp[keep], w[keep]
    else:
        w = None
    if gamma > 0:
        lp = np.maximum(lp, np.log(gamma))
    has_zero = bool((lp == -np.inf).any())
    if rho == 0.0:
        if has_zero:
            return 0.0
        mean_log = float(np.mean(lp)) if w is None else float(np.dot(w, lp) / w.sum())
        return float(np.exp(mean_log))
    if rho < 0 and has_zero:
        return 0.0  # a zero value makes x^rho infinite, hence the mean 0
    log_total = float(logsumexp(rho * lp, b=w))  # -inf only if every x is 0 (rho > 0)
    log_norm = np.log(lp.size) if w is None else np.log(w.sum())
    return float(np.exp((log_total - log_norm) / rho))


def generalized_mean(
    probs: np.ndarray,
    rho: float,
    *,
    gamma: float = 0.0,
    weights: np.ndarray | None = None,
) -> float:
    """Weighted generalized mean ``(sum w x^rho / sum w)^(1/rho)`` of non-negative ``probs``.

    ``rho = 0`` is the geometric mean ``exp(mean log x)``.  Values below ``gamma`` are set to
    ``gamma`` first.  Computed via :func:`generalized_mean_log`.
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.size and (not np.isfinite(p).all() or (p < 0).any()):
        raise InputError("values must be finite and non-negative", field="probs")
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    return generalized_mean_log(lp, rho, gamma=gamma, weights=weights)


# ---------------------------------------------------------------------------- the three metrics
@dataclass(frozen=True)
class NelsonMetrics:
    """Decisiveness (``rho = 1``), geometric accuracy (``rho = 0``), robustness (``rho = -2/3``)."""

    decisiveness: float
    geometric_accuracy: float
    robustness: float

    def to_json(self) -> dict[str, float]:
        return {
            "decisiveness": float(self.decisiveness),
            "geometric_accuracy": float(self.geometric_accuracy),
            "robustness": float(self.robustness),
        }


def _nelson(log_values: np.ndarray, gamma: float, weights: np.ndarray | None = None) -> NelsonMetrics:
    return NelsonMetrics(
        decisiveness=generalized_mean_log(log_values, DECISIVENESS_RHO, gamma=gamma, weights=weights),
        geometric_accuracy=generalized_mean_log(log_values, GEOMETRIC_RHO, gamma=gamma, weights=weights),
        robustness=generalized_mean_log(log_values, ROBUSTNESS_RHO, gamma=gamma, weights=weights),
    )


def reported_metrics(correct_log_probs: np.ndarray, *, gamma: float = DEFAULT_GAMMA) -> NelsonMetrics:
    """The reported metrics: generalized means of the correct-class probabilities
    ``exp(correct_log_probs)`` (e.g. :meth:`Probabilities.correct_class_log_prob`),
    each clipped below at ``gamma``."""
    return _nelson(correct_log_probs, _check_gamma(gamma, upper=None))


# ---------------------------------------------------------------------------- measured metrics
@dataclass(frozen=True)
class MeasuredCalibration:
    """The binned measured-probability computation behind :func:`measured_metrics`.

    Bin ``j`` is ``[edges[j], edges[j+1])``; the last bin is closed (it also holds any
    probability above ``edges[-1]``).  ``edges[0] = 0`` and ``edges[-1] = 1`` are nominal.

    Attributes:
        metrics: the measured decisiveness / geometric accuracy / robustness.
        edges: ``(K + 1,)`` float64 bin edges.
        n_correct: ``(K,)`` int64 ``Nc``, correct-class probabilities in each bin.
        n_incorrect: ``(K,)`` int64 ``Ni``, incorrect-class probabilities (the other
            ``C - 1`` probabilities of every sample) in each bin.
        fraction_correct: ``(K,)`` ``f = Nc / (Nc + Ni)`` (NaN for a bin holding nothing).
        mean_reported: ``(K,)`` mean correct-class probability of the samples in each bin
            (NaN where ``Nc = 0``).
        singular: ``(K,)`` bool, True for the width-``gamma`` singularity bins.
        gamma: the clipping threshold and singularity-bin width.
        n_bins_requested: ``B``.
    """

    metrics: NelsonMetrics
    edges: np.ndarray
    n_correct: np.ndarray
    n_incorrect: np.ndarray
    fraction_correct: np.ndarray
    mean_reported: np.ndarray
    singular: np.ndarray
    gamma: float
    n_bins_requested: int

    @property
    def n_bins(self) -> int:
        return int(self.n_correct.shape[0])

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict (NaN becomes ``None``)."""

        def floats(a: np.ndarray) -> list[float | None]:
            return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=np.float64)]

        return {
            "metrics": self.metrics.to_json(),
            "gamma": float(self.gamma),
            "n_bins_requested": int(self.n_bins_requested),
            "edges": floats(self.edges),
            "n_correct": [int(v) for v in self.n_correct],
            "n_incorrect": [int(v) for v in self.n_incorrect],
            "fraction_correct": floats(self.fraction_correct),
            "mean_reported": floats(self.mean_reported),
            "singular": [bool(v) for v in self.singular],
        }


def singularity_windows(gamma: float) -> tuple[float, float]:
    """``(low, high)``: the bottom window is ``[0, low)``, the top window ``[high, 1]``.

    ``low = gamma`` and ``high = 1 - gamma``; for ``gamma = 0`` the windows shrink to the
    single values 0 and 1 (``low`` is then the smallest positive float64).
    """
    low = float(gamma) if gamma > 0 else float(np.nextafter(0.0, 1.0))
    return low, 1.0 - float(gamma)


def bin_edges(
    correct_probs: np.ndarray, *, gamma: float = DEFAULT_GAMMA, n_bins: int = DEFAULTS.bins
) -> tuple[np.ndarray, np.ndarray]:
    """Inner bin edges and singular flags from the correct-class probabilities.

    Returns ``(inner, singular)``: ``inner`` is the strictly increasing ``(K - 1,)`` array
    of edges between the ``K`` bins (a value ``v`` belongs to bin
    ``searchsorted(inner, v, side="right")``), ``singular`` the ``(K,)`` flags.  See
    :func:`measured_metrics` for the convention.
    """
    q = np.sort(np.asarray(correct_probs, dtype=np.float64).ravel())
    n = q.size
    if n == 0:
        raise InputError("no correct-class probabilities to bin", field="labels")
    gamma = _check_gamma(gamma, upper=0.5)
    b = _check_bins(n_bins)
    low, high = singularity_windows(gamma)
    n_bottom = int(np.searchsorted(q, low, side="left"))  # values < low
    n_top = n - int(np.searchsorted(q, high, side="left"))  # values >= high
    bottom = n_bottom * b > n  # more than N / B values: a singularity
    top = n_top * b > n
    n_middle_bins = max(b - int(bottom) - int(top), 1)
    middle = q[(n_bottom if bottom else 0) : (n - n_top if top else n)]
    m = middle.size
    middle_edges = np.empty(0)
    if m > 0 and n_middle_bins > 1:
        cuts = (np.arange(1, n_middle_bins) * m) // n_middle_bins  # first index of bins 2..B'
        middle_edges = np.unique(middle[cuts])  # tied cut values: merge the edges
        middle_edges = middle_edges[middle_edges > middle[0]]  # no bin without correct values
    inner = np.concatenate([[low] if bottom else [], middle_edges, [high] if top else []]).astype(np.float64)
    singular = np.zeros(inner.size + 1, dtype=bool)
    singular[0] = bottom
    singular[-1] = singular[-1] or top
    return inner, singular


def measured_metrics(
    probabilities: Probabilities,
    labels: np.ndarray,
    *,
    gamma: float = DEFAULT_GAMMA,
    n_bins: int = DEFAULTS.bins,
    edges: tuple[np.ndarray, np.ndarray] | None = None,
) -> MeasuredCalibration:
    """Measured decisiveness / geometric accuracy / robustness (the paper's Sec. 4 procedure).

    Binning convention (all probabilities in float64, as :meth:`Probabilities.iter_chunks`
    computes them):

    1. **Singularities.**  The bottom window ``[0, gamma)`` and the top window
       ``[1 - gamma, 1]`` each become a bin of their own (width ``gamma``, flagged
       ``singular``) when they hold *more than* ``N / B`` correct-class probabilities.
       With ``gamma = 0.005`` the top one is the paper's Figure 1 "last bin [that] includes
       all reported accuracies above 0.995".  For ``gamma = 0`` the windows are the single
       values 0 and 1.  No other value is treated as a singularity.
    2. **Equal-population bins.**  The correct-class probabilities outside singular windows
       are sorted and cut into ``B' = max(B - #singular, 1)`` bins at sorted positions
       ``floor(k M / B')`` (``k = 1 .. B'-1``, ``M`` values), so populations differ by at most
       one.  Each edge is the data value at its cut, and bins are left-closed
       ``[e_j, e_{j+1})`` (last bin closed), so equal values are never split across bins:
       a tie straddling a cut goes wholly to the upper bin, duplicate edges are merged and
       an edge equal to the smallest value is dropped, so ties can make bins uneven and
       fewer than ``B``.  Incorrect-class probabilities play no part in choosing edges.
    3. **Counting.**  ``Nc`` counts the correct-class probabilities and ``Ni`` the other
       ``C - 1`` probabilities of every sample in each bin, both assigned by the same rule
       (``searchsorted(inner_edges, p, side="right")``) applied to the same float64 values,
       row block by row block (never an N x C float64 matrix).
    4. ``f = Nc / (Nc + Ni)`` per bin.
    5. The measured metrics are generalized means of the per-bin ``f`` clipped below at
       ``gamma``, each bin weighted by its population ``Nc`` (equivalently: every sample
       gets its bin's ``f``).  Singular bins therefore count in proportion to their
       population; bins with ``Nc = 0`` (possible only between two singular windows that
       hold every sample) get weight 0.

    The bins tile ``[0, 1]``: the lowest starts at 0 (not at the smallest correct-class
    probability), so every one of the ``N x C`` probabilities is counted once and
    ``sum(Nc + Ni) = N C``.

    Caveat (inherent in the procedure, not an implementation choice): ``f`` of a bin is the
    mean over *all* class probabilities in it, while its samples' own correct-class
    probabilities are the larger ones (size-biased).  In a wide bin -- above all the lowest,
    which also takes nearly all of the tiny incorrect-class probabilities -- ``f`` is then
    well below the reported probabilities, so even a perfectly calibrated model gets a
    measured robustness (and, less so, geometric accuracy) below the reported one with
    few bins.  In our simulations (N = 20000, C = 10, labels drawn from the model's own
    probabilities) the gap in robustness is about 0.02-0.12 at ``B = 10`` and under 0.005
    at ``B = 100``; decisiveness agrees within 0.01 at either.

    ``gamma`` must lie in ``[0, 0.5)`` and ``n_bins >= 1``.  ``edges``, the ``(inner,
    singular)`` pair of :func:`bin_edges`, replaces steps 1-2 with given bins (the bootstrap
    holds the full sample's bins fixed).
    """
    lab = probabilities.check_labels(labels)
    gamma = _check_gamma(gamma, upper=0.5)
    b = _check_bins(n_bins)
    if edges is None:
        inner, singular = bin_edges(probabilities.correct_class_prob(lab), gamma=gamma, n_bins=b)
    else:
        inner, singular = edges
    k = inner.size + 1

    def count_block(rows: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p = probabilities.probabilities_of(rows)
        block_at_least = np.array([np.count_nonzero(p >= edge) for edge in inner], dtype=np.int64)
        correct = p[np.arange(p.shape[0]), lab[rows]]
        which = np.searchsorted(inner, correct, side="right")
        return block_at_least, np.bincount(which, minlength=k), np.bincount(which, weights=correct, minlength=k)

    # Blocks run on all cores; their partial counts are summed in block order (deterministic).
    partials = map_row_blocks(count_block, probabilities.n_samples, auto_chunk_rows(probabilities.n_classes))
    at_least = np.zeros(inner.size, dtype=np.int64)  # values >= inner[j], all classes
    n_correct = np.zeros(k, dtype=np.int64)
    sum_reported = np.zeros(k, dtype=np.float64)
    for block_at_least, block_correct, block_sum in partials:
        at_least += block_at_least
        n_correct += block_correct
        sum_reported += block_sum
    total_at_least = np.concatenate([[probabilities.n_samples * probabilities.n_classes], at_least, [0]])
    n_all = total_at_least[:-1] - total_at_least[1:]  # values in [inner[j-1], inner[j])
    n_incorrect = n_all - n_correct

    with np.errstate(invalid="ignore", divide="ignore"):
        mean_reported = np.where(n_correct > 0, sum_reported / np.maximum(n_correct, 1), np.nan)
    metrics, fraction = measured_from_counts(n_correct, n_all, gamma)

    top_edge = max(1.0, float(inner[-1])) if inner.size else 1.0
    all_edges = np.concatenate([[0.0], inner, [top_edge]])
    return MeasuredCalibration(
        metrics=metrics,
        edges=all_edges,
        n_correct=n_correct,
        n_incorrect=n_incorrect,
        fraction_correct=fraction,
        mean_reported=mean_reported,
        singular=singular,
        gamma=gamma,
        n_bins_requested=b,
    )


def measured_from_counts(n_correct: np.ndarray, n_all: np.ndarray, gamma: float) -> tuple[NelsonMetrics, np.ndarray]:
    """Steps 4-5 of :func:`measured_metrics`: ``f = Nc / (Nc + Ni)`` per bin (``n_all = Nc + Ni``;
    NaN for an empty bin) and the generalized means of ``f`` weighted by ``Nc``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(n_all > 0, n_correct / np.maximum(n_all, 1), np.nan)
    used = n_correct > 0
    with np.errstate(divide="ignore"):
        log_f = np.log(fraction[used])
    return _nelson(log_f, gamma, weights=n_correct[used].astype(np.float64)), fraction


def sample_bin_counts(probabilities: Probabilities, labels: np.ndarray, inner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sample: the bin of its correct-class probability ``(N,)`` and how many of its
    ``C`` class probabilities fall in each bin ``(N, K)`` (the correct one included), with
    the bins and float64 values of :func:`measured_metrics`.  Summed over samples they give
    that function's ``Nc`` and ``Nc + Ni``; the bootstrap sums them with replicate weights."""
    lab = probabilities.check_labels(labels)
    k = inner.size + 1
    correct_bin = np.empty(probabilities.n_samples, dtype=np.int64)
    counts = np.empty((probabilities.n_samples, k), dtype=np.int32)

    def count_block(rows: slice) -> None:
        p = probabilities.probabilities_of(rows)
        at_least = np.empty((p.shape[0], k + 1), dtype=np.int32)
        at_least[:, 0] = p.shape[1]
        at_least[:, -1] = 0
        for j, edge in enumerate(inner):
            at_least[:, j + 1] = np.count_nonzero(p >= edge, axis=1)
        counts[rows] = at_least[:, :-1] - at_least[:, 1:]
        correct_bin[rows] = np.searchsorted(inner, p[np.arange(p.shape[0]), lab[rows]], side="right")

    map_row_blocks(count_block, probabilities.n_samples, auto_chunk_rows(probabilities.n_classes))
    return correct_bin, counts


def generalized_mean_terms(log_values: np.ndarray, rho: float, gamma: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Per-sample terms whose (weighted) sums give :func:`generalized_mean_log`.

    Returns ``(terms, zero, shift)``: ``zero`` flags values that are 0 after clipping at
    ``gamma``; for ``rho = 0`` ``terms`` are the clipped logarithms, otherwise
    ``exp(rho * log x - shift)`` with ``shift`` the largest finite ``rho * log x`` (so no
    term overflows).  :func:`generalized_mean_from_sums` turns sums of them into the mean.
    """
    lp = np.asarray(log_values, dtype=np.float64).ravel()
    gamma = _check_gamma(gamma, upper=None)
    if gamma > 0:
        lp = np.maximum(lp, np.log(gamma))
    zero = lp == -np.inf
    if rho == 0.0:
        return np.where(zero, 0.0, lp), zero, 0.0
    x = np.where(zero, -np.inf, rho * lp)
    finite = x[np.isfinite(x)]
    shift = float(finite.max()) if finite.size else 0.0
    with np.errstate(over="ignore"):
        terms = np.exp(x - shift)
    return np.where(zero, 0.0, terms), zero, shift


def generalized_mean_from_sums(
    term_sum: np.ndarray, zero_weight: np.ndarray, total_weight: np.ndarray | float, rho: float, shift: float
) -> np.ndarray:
    """Generalized means from weighted sums of :func:`generalized_mean_terms` (any shape).

    A weighted zero makes the mean 0 for ``rho <= 0`` (and adds nothing for ``rho > 0``),
    as in :func:`generalized_mean_log`.
    """
    term_sum = np.asarray(term_sum, dtype=np.float64)
    total = np.asarray(total_weight, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if rho == 0.0:
            out = np.exp(term_sum / total)
        else:
            out = np.exp((np.log(term_sum) + shift - np.log(total)) / rho)
    if rho <= 0.0:
        out = np.where(np.asarray(zero_weight) > 0, 0.0, out)
    return out


# ---------------------------------------------------------------------------- slope and sweep
def calibration_slope(reported: NelsonMetrics, measured: NelsonMetrics) -> float:
    """Eq. 3: ``(d_measured - r_measured) / (d_reported - r_reported)``.

    Below 1: overconfident; above 1: underconfident.  NaN when the reported decisiveness
    equals the reported robustness (all clipped correct-class probabilities equal), where
    the slope is undefined.
    """
    denominator = float(reported.decisiveness) - float(reported.robustness)
    if denominator == 0.0 or not np.isfinite(denominator):
        return float("nan")
    return (float(measured.decisiveness) - float(measured.robustness)) / denominator


def gamma_sweep(correct_log_probs: np.ndarray, gammas: Sequence[float] = DEFAULT_GAMMAS) -> list[dict[str, float]]:
    """Reported metrics for each ``gamma`` (the paper's Table 2): rows
    ``{"gamma", "robustness", "geometric_accuracy", "decisiveness"}`` in the order given."""
    rows = []
    for gamma in gammas:
        m = reported_metrics(correct_log_probs, gamma=gamma)
        rows.append(
            {
                "gamma": float(gamma),
                "robustness": m.robustness,
                "geometric_accuracy": m.geometric_accuracy,
                "decisiveness": m.decisiveness,
            }
        )
    return rows


# ---------------------------------------------------------------------------- validation
def _check_gamma(gamma: float, *, upper: float | None) -> float:
    g = float(gamma)
    if not np.isfinite(g) or g < 0 or (upper is not None and g >= upper) or (upper is None and g > 1):
        bound = f"[0, {upper})" if upper is not None else "[0, 1]"
        raise InputError(f"gamma must lie in {bound}, got {gamma}", field="gamma")
    return g


def _check_bins(n_bins: int) -> int:
    if isinstance(n_bins, bool) or int(n_bins) != n_bins or int(n_bins) < 1:
        raise InputError(f"n_bins must be a positive integer, got {n_bins}", field="n_bins")
    return int(n_bins)
