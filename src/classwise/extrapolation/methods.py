"""Extrapolating the accuracy curve from the ``K`` observed classes to ``k_max`` classes.

Every method returns its predicted expected accuracy for ``k = 2..k_max`` (for ``k <= K``
too: the curve is the method's own, not the observed one, so that its error can be
measured on the whole range).  All rest on Theorem 1 of the rROC paper,
``E_k[A] = E_x[C_x^(k-1)]``, where ``C_x`` is the probability that a new random class
scores below the correct one; they differ in how the distribution of ``C_x`` is estimated.

``naive``
    ``C_x`` = the observed share (:func:`classwise.extrapolation.rroc.c_x`, tie convention
    ``ties``); prediction ``mean_x C_x^(k-1)``.  Biased upward for ``k >> K``: a sample
    whose correct class beats all ``K-1`` observed classes gets ``C_x = 1`` and is
    predicted correct for every ``k``.
``kde``
    Kay et al. (2008) as used by Zheng et al. (2018): ``C_x`` = the CDF at ``s_y(x)`` of a
    Gaussian kernel density estimate of the ``K-1`` incorrect scores of ``x``,
    ``C_x = mean_j Phi((s_y - s_j) / h_x)``; prediction ``mean_x C_x^(k-1)``.  Bandwidth
    ``h_x`` per sample by Silverman's rule of thumb (R's ``bw.nrd0``:
    ``0.9 min(sd, IQR/1.34) n^(-1/5)``), not the pseudo-likelihood cross-validation of the
    original.
``regression``
    Zheng, Achanta & Benjamini (2018), radial-basis regression on the accuracy curve
    (their R package ``ClassEx``, ``get_gaussian_basis_mat``): the distribution of
    ``C_x`` is modelled as a non-negative mixture of "probit-normal" bumps,
    ``C = Phi(Z)`` with ``Z ~ N(mu_j, sigma^2)``, plus a point mass at ``C = 1``
    (``mu = +inf``).  Basis ``j`` at ``k`` classes is ``b_j(k) = E[Phi(Z_j)^(k-1)]``
    (a 1-D integral, by quadrature on a fine grid: :class:`GaussianBasis`).  Centres
    ``mu_j`` are evenly spaced on ``[-mu_max, mu_max]`` with spacing about ``sigma``,
    ``mu_max = Phi^{-1}(1 - 1/K^2)``.  Weights ``beta >= 0`` by non-negative least squares
    of the observed exact curve ``A_k``, ``k = 1..K`` (``A_1 = 1`` is included as a row, so
    that the weights sum to about one), and the prediction is ``sum_j beta_j b_j(k)``.
    The width ``sigma`` is chosen from ``bandwidths`` (default ``0.1, 0.2, ..., 1.0``, as
    ClassEx) as ClassEx does in spirit: fit on the exact curves of random halves of the
    classes (``k <= K/2``, seeded by ``seed``) and keep the width whose fits best predict
    the observed ``A_k``, ``k <= K``.
``cleanex``
    The paper's network (CleaneX; notebook YuliSl/CleaneX): per sample, the input vector
    is the correct score followed by the ``K-1`` incorrect scores sorted ascending, all
    standardised by the mean and standard deviation of the whole ``N x K`` score matrix.
    An MLP ``K -> 512 -> 128 -> 1`` (ReLU) with a sigmoid output ``q_x`` that estimates
    ``1 - C_x``; ``Ĉ_x = 1 - q_x``.  Loss ``mean_{k=2..K} (mean_x Ĉ_x^(k-1) - A_k)^2``
    with the exact observed ``A_k``; full-batch Adam, learning rate ``1e-4``, fresh weights
    seeded by ``seed``.  Prediction ``mean_x Ĉ_x^(k-1)``.  Runs on the CPU unless
    :attr:`FitOptions.device` says otherwise.  Two departures from the notebook, both about how
    long training takes, not what it fits:

    * the output bias starts at ``logit(1 - A_2)``, so that the first prediction is the
      observed 2-class accuracy: with the default initialisation every ``Ĉ_x`` starts near
      0.5, and at learning rate ``1e-4`` Adam needs about 600 steps to climb to the
      ``Ĉ_x`` of 0.99 of an accurate classifier (the digits demo, measured) before the fit
      of the curve's shape begins;
    * training stops on a loss plateau (:class:`CleanexTraining`): when the loss has fallen
      by less than a share ``tolerance`` over ``patience`` steps, or after ``max_steps``
      (the notebook trains a fixed 10,000 steps with Adam's ``beta2 = 0.999``; we use
      ``beta2 = 0.99``, :data:`DEFAULT_BETA2`).  The fit records the steps it took, its
      final loss and whether it converged (:class:`CleanexFit`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

import numpy as np
from scipy.optimize import nnls
from scipy.special import log_ndtr, ndtr, ndtri

from classwise._extras import require
from classwise.errors import InputError, check_count
from classwise.extrapolation.rroc import (
    Ties,
    c_x,
    check_scores,
    check_ties,
    correct_scores,
    expected_accuracy,
    power_curve,
    row_blocks,
    subsample_classes,
)

log = logging.getLogger(__name__)

METHODS: tuple[str, ...] = ("naive", "kde", "regression", "cleanex")
#: ClassEx's candidate widths of the Gaussian basis functions.
DEFAULT_BANDWIDTHS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 11))
#: CleaneX's default cap on Adam steps (the notebook trains 10,000 with beta2 = 0.999; see
#: :data:`DEFAULT_BETA2`): enough to converge on the paper's simulation, and a few seconds
#: for a few hundred samples on a CPU.
DEFAULT_CLEANEX_MAX_STEPS = 3000
#: The plateau: the loss fell by less than this share of itself over ``patience`` steps.
DEFAULT_CLEANEX_TOLERANCE = 0.01
#: Steps over which the loss must fall by ``tolerance`` for training to go on.
DEFAULT_CLEANEX_PATIENCE = 500
#: Adam's second-moment decay for CleaneX.  The notebook uses TensorFlow's default 0.999;
#: then the memory of the large gradients of the first ~100 steps keeps Adam's steps tiny
#: and training sits on a plateau (loss ~1e-5, curve far from converged) for ~5,000 steps.
#: With 0.99 the plateau ends after ~1,500 steps and the fit reaches the same loss
#: (~1e-8) and extrapolation error (measured on the paper's simulation, k1 = 100).
DEFAULT_BETA2 = 0.99
#: CleaneX's Adam learning rate (the notebook's).
DEFAULT_CLEANEX_LR = 1e-4
#: The output bias starts at ``logit(1 - A_2)`` with ``1 - A_2`` clipped to this and one
#: minus this (a perfect classifier's ``A_2 = 1`` has no finite logit).
_INITIAL_ERROR_FLOOR = 1e-6


def _ks_to(k_max: int) -> np.ndarray:
    return np.arange(2, check_count(k_max, "k_max", minimum=2) + 1)


def incorrect_scores(scores: np.ndarray, labels: np.ndarray, *, sort: bool = False) -> np.ndarray:
    """The ``K-1`` incorrect scores of every sample, ``(N, K-1)``, optionally sorted ascending."""
    n, k = scores.shape
    keep = np.ones((n, k), dtype=bool)
    keep[np.arange(n), labels] = False
    out = scores[keep].reshape(n, k - 1)
    if sort:
        out.sort(axis=1)
    return out


# --------------------------------------------------------------------------------- naive
def naive_curve(scores: np.ndarray, labels: np.ndarray, k_max: int, *, ties: Ties = "random") -> np.ndarray:
    """``mean_x C_x^(k-1)`` for ``k = 2..k_max`` with the observed ``C_x``."""
    return power_curve(c_x(scores, labels, ties), _ks_to(k_max))


# ----------------------------------------------------------------------------------- kde
def silverman_bandwidth(values: np.ndarray) -> np.ndarray:
    """Row-wise ``0.9 min(sd, IQR/1.34) n^(-1/5)`` (R's ``bw.nrd0``), ``values`` (N, n).

    As in R, if ``min(sd, IQR/1.34)`` is 0 the first non-zero of ``sd``, ``|x_1|``, ``1``
    is used instead, so the bandwidth is always positive.
    """
    n = values.shape[1]
    sd = values.std(axis=1, ddof=1) if n > 1 else np.zeros(values.shape[0])
    q75, q25 = np.percentile(values, [75, 25], axis=1)
    lo = np.minimum(sd, (q75 - q25) / 1.34)
    lo = np.where(lo > 0, lo, np.where(sd > 0, sd, np.where(np.abs(values[:, 0]) > 0, np.abs(values[:, 0]), 1.0)))
    return 0.9 * lo * n ** (-0.2)


def kde_c(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``C_x = mean_j Phi((s_y - s_j) / h_x)`` over the incorrect scores ``s_j`` of ``x``.

    Row blocks at a time (float64 inside a block), so memory stays ``O(N + block)``.
    """
    s, y = check_scores(scores, labels)
    out = np.empty(s.shape[0])
    for block in row_blocks(*s.shape):
        rows = s[block].astype(np.float64)
        wrong = incorrect_scores(rows, y[block])
        h = silverman_bandwidth(wrong)
        out[block] = ndtr((correct_scores(rows, y[block])[:, None] - wrong) / h[:, None]).mean(axis=1)
    return out


def kde_curve(scores: np.ndarray, labels: np.ndarray, k_max: int) -> np.ndarray:
    """``mean_x C_x^(k-1)`` for ``k = 2..k_max`` with the kernel-density ``C_x`` (:func:`kde_c`)."""
    return power_curve(kde_c(scores, labels), _ks_to(k_max))


# ---------------------------------------------------------------------------- regression
class GaussianBasis:
    """The basis ``b_j(k) = E[Phi(Z)^(k-1)]``, ``Z ~ N(mu_j, sigma^2)``, for one width ``sigma``.

    Quadrature on a uniform grid ``z`` (step ``min(0.01, sigma/10)``, covering every centre
    +- 8 sigma): ``b_j(k) = sum_z w_j(z) Phi(z)^(k-1)`` with ``w_j`` the normal density at
    ``z`` normalised to sum 1 over the grid, i.e. one matrix product of ``Phi(z)^(k-1)``
    (``len(ks) x len(z)``) with the weights (``len(z) x len(mus)``).  A centre
    ``mu = +inf`` is the constant basis 1 (all mass at ``C = 1``).
    """

    def __init__(self, mus: np.ndarray, sigma: float):
        self.mus = np.asarray(mus, dtype=np.float64)
        self.sigma = float(sigma)
        finite = self.mus[np.isfinite(self.mus)]
        step = min(0.01, self.sigma / 10.0)
        lo, hi = finite.min() - 8.0 * self.sigma, finite.max() + 8.0 * self.sigma
        self.z = np.arange(lo, hi + step, step)
        weights = np.exp(-0.5 * ((self.z[:, None] - finite[None, :]) / self.sigma) ** 2)
        self.weights = weights / weights.sum(axis=0, keepdims=True)
        self.log_phi = log_ndtr(self.z)[None, :]

    def __call__(self, ks: np.ndarray) -> np.ndarray:
        """Basis matrix ``(len(ks), len(mus))``."""
        exponent = (np.asarray(ks, dtype=np.float64) - 1.0)[:, None]
        out = np.ones((exponent.shape[0], self.mus.size))
        finite = np.isfinite(self.mus)
        for block in row_blocks(exponent.shape[0], self.z.size):
            out[block, finite] = np.exp(exponent[block] * self.log_phi) @ self.weights
        return out


def basis_centres(sigma: float, n_classes: int) -> np.ndarray:
    """ClassEx's centres: ``seq(0, mu_max, length = ceil(mu_max / sigma))`` mirrored, plus ``+inf``."""
    mu_max = float(ndtri(1.0 - 1.0 / n_classes**2))
    n_half = max(2, int(np.ceil(mu_max / sigma)))
    half = np.linspace(0.0, mu_max, n_half)
    return np.concatenate([-half[:0:-1], half, [np.inf]])


def _nnls_weights(design: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Non-negative least squares of ``[1, observed]`` (``A_1 = 1`` first) on ``design``."""
    beta, _ = nnls(design, np.concatenate([[1.0], observed]), maxiter=50 * design.shape[1])
    return beta


def regression_curve(
    scores: np.ndarray,
    labels: np.ndarray,
    k_max: int,
    *,
    seed: int = 0,
    fit: FitOptions | None = None,
) -> np.ndarray:
    """Zheng et al.'s radial-basis regression (see the module docstring) for ``k = 2..k_max``.

    Width selection among ``fit.bandwidths`` (:class:`FitOptions`, default its defaults):
    ``fit.n_subsamples`` random halves of the classes (``numpy`` generator seeded by ``seed``);
    for each width, fit on a half's exact curve (``k = 2..K//2``), predict ``k = 2..K`` and take
    the mean squared error against the observed curve (ties broken by ``fit.ties``), averaged
    over the halves; the width with the smallest error is refitted on all ``k = 1..K``.
    Skipped (first width used) when only one width is given or ``K < 6``.
    """
    fit = _fit_options(fit)
    ties, bandwidths, n_subsamples = fit.ties, fit.bandwidths, fit.n_subsamples
    targets = _ks_to(k_max)
    s, y = check_scores(scores, labels)
    n_classes = s.shape[1]
    ks = np.arange(2, n_classes + 1)
    observed = expected_accuracy(s, y, ks, ties)
    sigma = float(bandwidths[0])
    half = n_classes // 2
    if len(bandwidths) > 1 and half >= 3:
        rng = np.random.default_rng(seed)
        halves = []
        for _ in range(int(n_subsamples)):
            sub_scores, sub_labels = subsample_classes(s, y, rng.choice(n_classes, size=half, replace=False))
            if sub_labels.size:
                halves.append(expected_accuracy(sub_scores, sub_labels, None, ties))
        if halves:
            errors = []
            for b in bandwidths:
                basis = GaussianBasis(basis_centres(b, n_classes), b)
                design, predict = basis(np.arange(1, half + 1)), basis(ks)
                errors.append(np.mean([np.mean((predict @ _nnls_weights(design, h) - observed) ** 2) for h in halves]))
            sigma = float(bandwidths[int(np.argmin(errors))])
    basis = GaussianBasis(basis_centres(sigma, n_classes), sigma)
    beta = _nnls_weights(basis(np.concatenate([[1], ks])), observed)
    return np.clip(basis(targets) @ beta, 0.0, 1.0)


# ------------------------------------------------------------------------------- cleanex
def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


@dataclass(frozen=True)
class CleanexTraining:
    """How CleaneX trains: full-batch Adam at learning rate ``lr`` with second-moment decay
    ``beta2`` (:data:`DEFAULT_BETA2`), until the loss has fallen by less than a share
    ``tolerance`` of itself over the last ``patience`` steps (a plateau: the fit converged), or
    at most ``max_steps`` Adam steps (then it did not converge).

    The comparison is of the lowest loss so far, so Adam's step-to-step jitter near the
    minimum neither stops training nor keeps it going.  A plateau can also be a saddle that
    more steps would leave (measured on the paper's simulation, docs/analyses.md): the fit's
    final loss tells the two apart only by comparison with other fits.
    """

    max_steps: int = DEFAULT_CLEANEX_MAX_STEPS
    tolerance: float = DEFAULT_CLEANEX_TOLERANCE
    patience: int = DEFAULT_CLEANEX_PATIENCE
    lr: float = DEFAULT_CLEANEX_LR
    beta2: float = DEFAULT_BETA2

    def __post_init__(self) -> None:
        check_count(self.max_steps, "max_steps")
        check_count(self.patience, "patience")
        if not _is_number(self.tolerance) or not 0 <= self.tolerance < 1:
            raise InputError(f"expected a number in [0, 1), got {self.tolerance!r}", field="tolerance")
        if not _is_number(self.lr) or not 0 < self.lr < np.inf:
            raise InputError(f"expected a positive number, got {self.lr!r}", field="lr")
        if not _is_number(self.beta2) or not 0 <= self.beta2 < 1:
            raise InputError(f"expected a number in [0, 1), got {self.beta2!r}", field="beta2")


@dataclass(frozen=True, kw_only=True)
class FitOptions:
    """How the extrapolation methods fit, each reading its own: the tie convention ``ties`` of
    the observed ``C_x`` and ``A_k`` (:mod:`classwise.extrapolation.rroc`; ``kde`` has no ties
    to break); ``regression``'s candidate ``bandwidths`` and the ``n_subsamples`` random halves
    of the classes that choose among them (:func:`regression_curve`); how CleaneX trains
    (``cleanex``), the torch ``device`` it trains on and the stream ``progress`` that receives
    its tqdm bar (``None``: no bar; the other methods take well under a second)."""

    ties: Ties = "random"
    bandwidths: Sequence[float] = DEFAULT_BANDWIDTHS
    n_subsamples: int = 5
    cleanex: CleanexTraining = CleanexTraining()
    device: str = "cpu"
    progress: IO[str] | None = None

    def __post_init__(self) -> None:
        check_ties(self.ties)
        object.__setattr__(self, "bandwidths", tuple(self.bandwidths))
        if len(self.bandwidths) == 0 or any(not (b > 0) for b in self.bandwidths):
            raise InputError(f"expected positive bandwidths, got {list(self.bandwidths)}", field="bandwidths")
        if not isinstance(self.cleanex, CleanexTraining):
            raise InputError(f"expected a CleanexTraining, got {self.cleanex!r}", field="cleanex")


def _fit_options(fit: FitOptions | None) -> FitOptions:
    fit = FitOptions() if fit is None else fit
    if not isinstance(fit, FitOptions):
        raise InputError(f"expected a FitOptions, got {fit!r}", field="fit")
    return fit


@dataclass(frozen=True)
class CleanexFit:
    """A trained CleaneX estimate: ``c`` = ``Ĉ_x`` per sample; ``loss`` = the training loss of
    the returned ``c`` (the mean squared error of its curve against the observed one,
    ``k = 2..K``); ``steps`` = the Adam steps taken; ``converged`` = training stopped on a
    loss plateau rather than at ``max_steps`` (:class:`CleanexTraining`)."""

    c: np.ndarray
    loss: float
    steps: int
    converged: bool

    def curve(self, k_max: int) -> np.ndarray:
        """``mean_x Ĉ_x^(k-1)`` for ``k = 2..k_max``."""
        return power_curve(np.clip(self.c, 0.0, 1.0), _ks_to(k_max))

    def describe(self) -> str:
        """One line for a log: steps, final loss, and whether the fit converged."""
        state = "converged" if self.converged else "did NOT converge (stopped at max_steps)"
        return f"{self.steps} steps, loss {self.loss:.2e}, {state}"


def cleanex_inputs(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``[s_y, sorted incorrect scores]`` per row, standardised by the whole matrix' mean and sd."""
    s, y = check_scores(scores, labels)
    s = s.astype(np.float64, copy=False)
    x = np.concatenate([correct_scores(s, y)[:, None], incorrect_scores(s, y, sort=True)], axis=1)
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


_LOSS_SHOWN_EVERY = 100


def _progress_interval(stream: IO[str] | None) -> float:
    """Seconds between bar redraws: tqdm's default on a terminal; in a log file every redraw
    is kept, so rarely."""
    isatty = getattr(stream, "isatty", None)
    return 0.1 if callable(isatty) and isatty() else 5.0


class _Plateau:
    """The stopping rule of :class:`CleanexTraining`, fed one loss per step."""

    def __init__(self, tolerance: float, patience: int):
        self.tolerance, self.patience = tolerance, patience
        self.best = float("inf")
        self.reference = float("inf")  # the best loss when the loss last fell by ``tolerance``
        self.since = 0  # steps since then

    def reached(self, loss: float) -> bool:
        self.best = min(self.best, loss)
        if self.best < self.reference * (1.0 - self.tolerance):
            self.reference, self.since = self.best, 0
        else:
            self.since += 1
        return self.since >= self.patience


def cleanex_fit(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    seed: int = 0,
    fit: FitOptions | None = None,
) -> CleanexFit:
    """Train CleaneX on the observed classes and return ``Ĉ_x`` (see the module docstring).

    ``fit`` (:class:`FitOptions`, default its defaults): ``fit.cleanex`` says how CleaneX trains
    and when it stops (:class:`CleanexTraining`), ``fit.ties`` breaks the ties of the observed
    curve, ``fit.device`` is where it trains and ``fit.progress`` receives a tqdm bar of the
    steps and the loss (a fit takes seconds to tens of seconds). Seeded: weights are drawn with
    ``torch.manual_seed(seed)`` inside ``torch.random.fork_rng`` (the caller's global torch RNG
    state is left untouched); training is full-batch, so nothing else is random, and the same
    seed, data and thread count give the same bytes. A fit that stops at ``max_steps`` without
    converging is logged as a warning.
    """
    require("torch", "tqdm", extra="models", feature="the CleaneX extrapolation")
    import torch
    from tqdm import tqdm

    options = _fit_options(fit)
    training, ties, device, progress = options.cleanex, options.ties, options.device, options.progress
    s, y = check_scores(scores, labels)
    n_classes = s.shape[1]
    observed = expected_accuracy(s, y, np.arange(2, n_classes + 1), ties)
    target = torch.as_tensor(observed, dtype=torch.float32, device=device)
    inputs = torch.as_tensor(cleanex_inputs(s, y), dtype=torch.float32, device=device)
    exponents = torch.arange(1, n_classes, dtype=torch.float32, device=device)[None, :]  # k - 1 = 1..K-1
    devices = [torch.device(device)] if torch.device(device).type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        hidden = [torch.nn.Linear(n_classes, 512), torch.nn.ReLU(), torch.nn.Linear(512, 128), torch.nn.ReLU()]
        output = torch.nn.Linear(128, 1)
    error = float(np.clip(1.0 - observed[0], _INITIAL_ERROR_FLOOR, 1.0 - _INITIAL_ERROR_FLOOR))
    with torch.no_grad():  # start at the observed 2-class accuracy (module docstring)
        output.bias.fill_(float(np.log(error / (1.0 - error))))
    model = torch.nn.Sequential(*hidden, output).to(device)
    optimiser = torch.optim.Adam(model.parameters(), lr=training.lr, betas=(0.9, training.beta2))

    def curve_loss() -> torch.Tensor:
        logit = model(inputs)  # q_x = sigmoid(logit) estimates 1 - C_x
        log_c = torch.nn.functional.logsigmoid(-logit)  # log Ĉ_x = log(1 - q_x), stable
        return torch.mean((torch.exp(log_c * exponents).mean(dim=0) - target) ** 2)

    plateau = _Plateau(float(training.tolerance), int(training.patience))
    converged, steps = False, 0
    bar = tqdm(
        total=int(training.max_steps),
        desc="CleaneX fit",
        unit="step",
        file=progress,
        disable=progress is None,
        mininterval=_progress_interval(progress),
    )
    with bar:
        while steps < training.max_steps and not converged:
            optimiser.zero_grad(set_to_none=True)
            loss = curve_loss()
            loss.backward()
            optimiser.step()
            loss_value = float(loss.detach())  # the loss before this step's update
            converged = plateau.reached(loss_value)
            if steps % _LOSS_SHOWN_EVERY == 0:
                bar.set_postfix(loss=f"{loss_value:.2e}", refresh=False)
            steps += 1
            bar.update()
        with torch.no_grad():
            final_loss = float(curve_loss())
            c_hat = torch.sigmoid(-model(inputs)).squeeze(1).double().cpu().numpy()
        if converged:  # the bar ends at 100 % of the steps taken
            bar.total = steps
        bar.set_postfix(loss=f"{final_loss:.2e}", converged=converged, refresh=False)
    result = CleanexFit(c=c_hat, loss=final_loss, steps=steps, converged=converged)
    if not converged:
        log.warning(
            "CleaneX fit did not converge: stopped at max_steps = %d before its loss plateaued (a fall of less than "
            "tolerance = %g of itself over patience = %d steps); final loss %.2e, its curve is a partial fit",
            steps,
            training.tolerance,
            training.patience,
            final_loss,
        )
    return result


def cleanex_curve(
    scores: np.ndarray,
    labels: np.ndarray,
    k_max: int,
    *,
    seed: int = 0,
    fit: FitOptions | None = None,
) -> np.ndarray:
    """``mean_x Ĉ_x^(k-1)`` for ``k = 2..k_max`` with CleaneX's ``Ĉ_x`` (:func:`cleanex_fit`)."""
    _ks_to(k_max)  # a bad k_max fails before training
    return cleanex_fit(scores, labels, seed=seed, fit=fit).curve(k_max)


# -------------------------------------------------------------------------------- facade
@dataclass(frozen=True)
class Extrapolation:
    """A method's predicted curve for ``k = 2..k_max``; ``fit`` = CleaneX's training record
    (steps, final loss, converged), ``None`` for the methods that do not train."""

    curve: np.ndarray
    fit: CleanexFit | None = None


def extrapolate_with_fit(
    scores: np.ndarray,
    labels: np.ndarray,
    k_max: int,
    method: str,
    *,
    seed: int = 0,
    fit: FitOptions | None = None,
) -> Extrapolation:
    """Predicted expected accuracy for ``k = 2..k_max`` by ``method`` (one of :data:`METHODS`),
    with CleaneX's training record.

    ``scores`` (N, K): higher = more likely; ``labels`` (N,) in ``[0, K)``.  ``seed`` matters
    for ``cleanex`` (weights) and ``regression`` (width selection); ``fit`` (:class:`FitOptions`,
    default its defaults) holds the tie convention of the observed ``C_x`` and ``A_k``,
    regression's widths, how long CleaneX trains, on which device and where its progress bar
    goes.
    """
    options = _fit_options(fit)
    if method == "naive":
        return Extrapolation(naive_curve(scores, labels, k_max, ties=options.ties))
    if method == "kde":
        return Extrapolation(kde_curve(scores, labels, k_max))
    if method == "regression":
        return Extrapolation(regression_curve(scores, labels, k_max, seed=seed, fit=options))
    if method == "cleanex":
        _ks_to(k_max)  # a bad k_max fails before training
        trained = cleanex_fit(scores, labels, seed=seed, fit=options)
        return Extrapolation(trained.curve(k_max), trained)
    raise InputError(f"expected one of {list(METHODS)}, got {method!r}", field="method")


def extrapolate(
    scores: np.ndarray,
    labels: np.ndarray,
    k_max: int,
    method: str,
    *,
    seed: int = 0,
    fit: FitOptions | None = None,
) -> np.ndarray:
    """The curve of :func:`extrapolate_with_fit`, without CleaneX's training record."""
    return extrapolate_with_fit(scores, labels, k_max, method, seed=seed, fit=fit).curve
