"""The rROC paper's simulation, and an honest evaluation of the extrapolation methods.

Simulation (:func:`simulate_scores`, as the paper's notebook ``data.py``): ``n_classes``
class centroids drawn from ``N(0, I_d)``; ``per_class`` points per class drawn from
``N(centroid, sigma2 I_d)``; a prototype classifier scores a point against every class by
the negative Euclidean distance to the class centroid (higher = more likely).  The
paper's setting: ``d = 5``, 10 points per class, ``k2 = 2000`` classes, ``sigma2`` of 0.1
(also 0.2 among its settings), and ``k1 = 100`` or ``500`` observed classes.

Evaluation (:func:`evaluate_methods`, :class:`MethodComparison`): for each of ``repetitions``
seeded draws, sample
``k1`` of the ``K`` classes (without replacement), keep the samples of those classes and
the score columns of those classes, extrapolate from them to ``k_max`` by each method, and
compare with the true curve: the exact expected accuracy ``A_k`` on all ``K`` classes,
``k = 2..k_max`` (:func:`classwise.extrapolation.rroc.expected_accuracy`).  The error of
one repetition is ``RMSE = sqrt(mean_{k=2..k_max} (predicted_k - true_k)^2)``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.extrapolation.methods import METHODS, FitOptions, extrapolate_with_fit
from classwise.extrapolation.rroc import check_scores, expected_accuracy, subsample_classes

log = logging.getLogger(__name__)

#: The paper's simulation setting.
PAPER_DIM = 5
PAPER_PER_CLASS = 10
PAPER_K1: tuple[int, ...] = (100, 500)
PAPER_K2 = 2000
PAPER_SIGMA2 = 0.1


def simulate_scores(
    seed: int,
    *,
    n_classes: int = PAPER_K2,
    dim: int = PAPER_DIM,
    per_class: int = PAPER_PER_CLASS,
    sigma2: float = PAPER_SIGMA2,
) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``(n_classes * per_class, n_classes)`` and labels of the prototype simulation.

    Deterministic in ``seed`` (``numpy.random.default_rng``).  Score = minus the Euclidean
    distance from the point to the class centroid.
    """
    if n_classes < 2 or dim < 1 or per_class < 1 or not sigma2 > 0:
        raise InputError(
            f"expected n_classes >= 2, dim >= 1, per_class >= 1, sigma2 > 0; got {n_classes}, {dim}, {per_class}, {sigma2}",
            field="simulation",
        )
    rng = np.random.default_rng(seed)
    centroids = rng.standard_normal((n_classes, dim))
    labels = np.repeat(np.arange(n_classes), per_class)
    points = centroids[labels] + np.sqrt(sigma2) * rng.standard_normal((labels.size, dim))
    scores = points @ centroids.T  # in place from here on: |p|^2 - 2 p.c + |c|^2, then -sqrt
    scores *= -2.0
    scores += (points**2).sum(1)[:, None]
    scores += (centroids**2).sum(1)[None, :]
    np.maximum(scores, 0.0, out=scores)
    np.sqrt(scores, out=scores)
    np.negative(scores, out=scores)
    return scores, labels.astype(np.int64)


#: The columns of :attr:`Evaluation.fits`.
FIT_COLUMNS: tuple[str, ...] = ("repetition", "method", "steps", "final_loss", "converged")


@dataclass
class Evaluation:
    """Result of :func:`evaluate_methods`.

    ``ks`` = ``2..k_max``; ``true_curve[k-2]`` = exact ``A_k`` on all classes;
    ``predicted[method]`` = ``(repetitions, k_max-1)`` predicted curves; ``observed`` =
    ``(repetitions, k1-1)`` exact curves on the sampled classes (``k = 2..k1``);
    ``rmse`` = long table with columns ``repetition, method, rmse, seconds`` (seconds =
    the method's run time); ``fits`` = one row per trained fit (CleaneX), columns
    ``repetition, method, steps, final_loss, converged``.
    """

    k1: int
    ks: np.ndarray
    true_curve: np.ndarray
    observed: np.ndarray
    predicted: dict[str, np.ndarray] = field(default_factory=dict)
    rmse: pd.DataFrame = field(default_factory=pd.DataFrame)
    fits: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(FIT_COLUMNS)))

    def summary(self) -> pd.DataFrame:
        """Per method: RMSE mean, median, sd (ddof 1; 0 for one repetition), repetitions, mean
        seconds, and for a method that trains (CleaneX) its fits' convergence
        (:meth:`fit_summary`; NaN for the others)."""
        grouped = self.rmse.groupby("method", sort=False)["rmse"]
        out = pd.DataFrame(
            {
                "rmse_mean": grouped.mean(),
                "rmse_median": grouped.median(),
                "rmse_sd": grouped.std(ddof=1).fillna(0.0),
                "repetitions": grouped.size(),
                "seconds_mean": self.rmse.groupby("method", sort=False)["seconds"].mean(),
            }
        )
        out = out.join(self.fit_summary()).reset_index()
        out.insert(0, "k1", self.k1)
        return out

    def fit_summary(self) -> pd.DataFrame:
        """Per method that trains: ``fits``, ``converged`` (how many of them stopped on a loss
        plateau), ``steps_median``, ``steps_max`` and ``final_loss_max``."""
        grouped = self.fits.groupby("method", sort=False)
        return pd.DataFrame(
            {
                "fits": grouped.size(),
                "converged": grouped["converged"].sum(),
                "steps_median": grouped["steps"].median(),
                "steps_max": grouped["steps"].max(),
                "final_loss_max": grouped["final_loss"].max(),
            },
            index=pd.Index(list(dict.fromkeys(self.fits["method"])), name="method"),
        ).astype({"fits": float, "converged": float, "steps_median": float, "steps_max": float, "final_loss_max": float})


#: Figure 3 (E) of the paper draws the RMSE ratios capped at this value.
RATIO_CAP = 4.0


def rmse_ratios(rmse: pd.DataFrame, reference: str = "cleanex", *, cap: float | None = RATIO_CAP) -> dict[str, np.ndarray]:
    """Per method other than ``reference``: its RMSE divided by ``reference``'s, repetition by
    repetition (``rmse``: the long table of :class:`Evaluation`), as Figure 3 (E) of the paper
    draws them: above 1, ``reference`` is better. Values above ``cap`` become ``cap`` (None:
    uncapped); ``x / 0`` is infinite (then ``cap``), ``0 / 0`` is 1 (the two are equal)."""
    wide = rmse.pivot(index="repetition", columns="method", values="rmse")
    if reference not in wide.columns:
        raise InputError(f"expected {reference!r} among the methods, got {list(wide.columns)}", field="methods")
    base = wide[reference].to_numpy()
    out = {}
    for method in dict.fromkeys(rmse["method"]):  # the table's method order
        if method == reference:
            continue
        other = wide[method].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where((base == 0) & (other == 0), 1.0, other / base)
        out[method] = ratio if cap is None else np.minimum(ratio, cap)
    return out


def reference_comparison(rmse: pd.DataFrame, reference: str = "cleanex") -> pd.DataFrame:
    """Per method other than ``reference``: the median of its RMSE ratio to ``reference``
    (:func:`rmse_ratios`, uncapped) and the share of repetitions in which ``reference`` has the
    strictly lower RMSE (``reference_wins``)."""
    ratios = rmse_ratios(rmse, reference, cap=None)
    return pd.DataFrame(
        {
            "ratio_median": [float(np.median(r)) for r in ratios.values()],
            "reference_wins": [float(np.mean(r > 1.0)) for r in ratios.values()],
        },
        index=pd.Index(list(ratios), name="method"),
    )


@dataclass(frozen=True, kw_only=True)
class MethodComparison:
    """How the extrapolation methods are compared (:func:`evaluate_methods`): ``repetitions``
    seeded draws of the observed classes, from ``seed``; the ``methods`` compared (among
    :data:`~classwise.extrapolation.methods.METHODS`) and how they fit
    (:class:`~classwise.extrapolation.methods.FitOptions`: its ``ties`` also break the ties of
    the true and observed curves; in repetition ``r`` every method is seeded
    ``seed * 1000 + r``)."""

    repetitions: int
    seed: int
    methods: Sequence[str] = METHODS
    fit: FitOptions = FitOptions()

    def __post_init__(self) -> None:
        if isinstance(self.methods, str):
            raise InputError(f"expected a list of methods among {list(METHODS)}, got {self.methods!r}", field="methods")
        object.__setattr__(self, "methods", tuple(self.methods))
        if int(self.repetitions) < 1:
            raise InputError(f"expected a positive integer, got {self.repetitions}", field="repetitions")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise InputError(f"expected methods among {list(METHODS)}, got {list(self.methods)}", field="methods")
        if not isinstance(self.fit, FitOptions):
            raise InputError(f"expected a FitOptions, got {self.fit!r}", field="fit")


def evaluate_methods(
    scores: np.ndarray,
    labels: np.ndarray,
    k1: int,
    k_max: int,
    comparison: MethodComparison,
) -> Evaluation:
    """Sample ``k1`` classes ``comparison.repetitions`` times, extrapolate to ``k_max``, score
    against the truth.

    Needs ``2 <= k1 <= K`` and ``2 <= k_max <= K`` (the truth is the exact curve on all
    ``K`` classes).  Class subsets come from ``numpy.random.default_rng(comparison.seed)``; in
    repetition ``r`` the methods get ``seed * 1000 + r`` (CleaneX's weights, regression's width
    selection).  ``comparison.fit.cleanex`` says how long CleaneX trains; every fit's steps,
    final loss and convergence go to :attr:`Evaluation.fits` and the repetition's log line.
    """
    if not isinstance(comparison, MethodComparison):
        raise InputError(f"expected a MethodComparison, got {comparison!r}", field="comparison")
    repetitions, seed, methods, options = comparison.repetitions, comparison.seed, comparison.methods, comparison.fit
    ties = options.ties
    s, y = check_scores(scores, labels)
    n_classes = s.shape[1]
    for name, value in (("k1", k1), ("k_max", k_max)):
        if not 2 <= int(value) <= n_classes:
            raise InputError(f"expected 2 <= {name} <= {n_classes} (the number of classes), got {value}", field=name)
    ks = np.arange(2, int(k_max) + 1)
    truth = expected_accuracy(s, y, ks, ties)
    rng = np.random.default_rng(seed)
    observed = np.empty((int(repetitions), int(k1) - 1))
    predicted = {m: np.empty((int(repetitions), ks.size)) for m in methods}
    rows, fits = [], []
    for rep in range(int(repetitions)):
        classes = rng.choice(n_classes, size=int(k1), replace=False)
        sub_scores, sub_labels = subsample_classes(s, y, classes)
        if sub_labels.size == 0:
            raise InputError("a sampled class subset holds no samples", field="labels")
        observed[rep] = expected_accuracy(sub_scores, sub_labels, None, ties)
        done = []
        for method in methods:
            start = time.perf_counter()
            result = extrapolate_with_fit(sub_scores, sub_labels, int(k_max), method, seed=int(seed) * 1000 + rep, fit=options)
            predicted[method][rep] = result.curve
            seconds = time.perf_counter() - start
            rmse = float(np.sqrt(np.mean((result.curve - truth) ** 2)))
            rows.append({"repetition": rep, "method": method, "rmse": rmse, "seconds": seconds})
            note = ""
            if result.fit is not None:
                fit = result.fit
                fits.append(
                    {"repetition": rep, "method": method, "steps": fit.steps, "final_loss": fit.loss, "converged": fit.converged}
                )
                note = f", {fit.describe()}"
            done.append(f"{method} {rmse:.4f} ({seconds:.1f} s{note})")
        # One line per repetition: a long run (hours at the paper's size) shows where it is.
        log.info("k1 = %d, repetition %d/%d, RMSE: %s", int(k1), rep + 1, int(repetitions), ", ".join(done))
    return Evaluation(
        k1=int(k1),
        ks=ks,
        true_curve=truth,
        observed=observed,
        predicted=predicted,
        rmse=pd.DataFrame(rows),
        fits=pd.DataFrame(fits, columns=list(FIT_COLUMNS)),
    )


@dataclass
class SimulationBenchmark:
    """Result of :func:`run_simulation_benchmark`: one :class:`Evaluation` per ``k1``."""

    evaluations: dict[int, Evaluation]
    settings: dict[str, object]
    seconds: float

    def summary(self) -> pd.DataFrame:
        """RMSE mean / median / sd per ``(k1, method)``."""
        return pd.concat([e.summary() for e in self.evaluations.values()], ignore_index=True)

    def to_json(self) -> dict[str, object]:
        """Plain-JSON form: settings, seconds, and the summary rows (``None`` where a column does
        not apply: the fit columns of a method that does not train)."""
        summary = self.summary().astype(object)
        return {
            "settings": self.settings,
            "seconds": round(self.seconds, 3),
            "rmse": summary.where(summary.notna(), None).to_dict(orient="records"),
        }


def run_simulation_benchmark(
    comparison: MethodComparison | None = None,
    *,
    k1s: Sequence[int] = PAPER_K1,
    k2: int = PAPER_K2,
    sigma2: float = PAPER_SIGMA2,
) -> SimulationBenchmark:
    """The paper's simulation: ``k2`` classes, extrapolate from each ``k1`` to ``k2``; RMSE per method.

    One simulated data set (``simulate_scores(comparison.seed, n_classes=k2, sigma2=sigma2)``),
    then :func:`evaluate_methods` for each ``k1`` with ``comparison`` (default
    ``MethodComparison(repetitions=5, seed=0)``: the paper uses 50 repetitions, its notebook 10)
    seeded ``seed + k1``.
    """
    comparison = MethodComparison(repetitions=5, seed=0) if comparison is None else comparison
    if not isinstance(comparison, MethodComparison):
        raise InputError(f"expected a MethodComparison, got {comparison!r}", field="comparison")
    seed, repetitions, training = comparison.seed, comparison.repetitions, comparison.fit.cleanex
    start = time.perf_counter()
    scores, labels = simulate_scores(seed, n_classes=k2, sigma2=sigma2)
    evaluations = {int(k1): evaluate_methods(scores, labels, int(k1), k2, replace(comparison, seed=seed + int(k1))) for k1 in k1s}
    settings: dict[str, object] = {
        "seed": seed,
        "k1": [int(k) for k in k1s],
        "k2": k2,
        "dim": PAPER_DIM,
        "per_class": PAPER_PER_CLASS,
        "sigma2": sigma2,
        "repetitions": repetitions,
        "cleanex_max_steps": training.max_steps,
        "cleanex_tolerance": training.tolerance,
        "cleanex_patience": training.patience,
        "methods": list(comparison.methods),
    }
    return SimulationBenchmark(evaluations=evaluations, settings=settings, seconds=time.perf_counter() - start)
