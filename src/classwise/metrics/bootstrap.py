"""Stratified bootstrap of every metric, by reweighting sufficient statistics.

**The resampling.**  Each replicate redraws, for every class ``c``, ``n_c`` of the class's
samples with replacement (so class supports stay fixed).  Draw ``j`` of a replicate is
uniform over the samples of the class at sorted position ``j``; replicate ``r`` uses its
own generator, ``SeedSequence(seed, spawn_key=(r,))``, so the draws depend on the seed and
the replicate number only: not on the number of threads or on how replicates are grouped.
:meth:`StratifiedDraws.indices` gives the drawn sample indices; the naive bootstrap (index
the scores, recompute every metric) and the fast one below use the same draws.

**The fast path.**  A replicate is a weight per sample (how often it was drawn), and every
statistic the metrics need is a weighted sum over samples: per-class top-1 and top-k hits
(sparse class-by-sample indicators times the weights), per-class predicted counts, per
superclass restricted-argmax hits, the per-sample terms of the generalized means, the
per-sample bin counts of the measured calibration, and the pairwise losses of W2CA (see
:mod:`classwise.metrics.pair_losses`).  These are sparse or thin dense products of the
``(N, R)`` weight block, and the reducers of :mod:`classwise.metrics.worst_class`,
:mod:`classwise.metrics.cfps` and :mod:`classwise.metrics.decisiveness` turn the ``(R, C)``
statistics into metric values with the same formulas and tie rules as one evaluation.

The replicate values equal those of the naive bootstrap exactly for every count-based
metric (ratios of integers formed by one division) and to rounding (about 1e-15 relative)
for the reported generalized means and the calibration slope, whose per-sample terms are
summed in a different order.  The measured metrics hold the full sample's bin edges fixed
(only the counts in the bins are resampled).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from classwise.errors import InputError, check_count
from classwise.metrics import catalogue, kernels
from classwise.metrics import decisiveness as nelson
from classwise.metrics import worst_class as wc
from classwise.metrics.catalogue import DEFAULTS, MetricParameters
from classwise.metrics.intervals import check_confidence, minimum_bound, percentile_interval
from classwise.metrics.pair_losses import PairLosses
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.result import MetricReplicates
from classwise.metrics.stats import ClassificationStats

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SEED",
    "DEFAULT_BOOTSTRAP",
    "BootstrapSettings",
    "StratifiedDraws",
    "MetricReplicates",
    "BootstrapSummary",
    "check_replicates",
    "check_seed",
    "bootstrap_replicates",
    "summarize",
    "worst_shares",
]

DEFAULT_REPLICATES = 1000
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SEED = 0
#: How many of the most frequent worst classes ``worst_probability`` lists.
TOP_WORST = 5
#: Replicates whose statistics are computed together (bounds the scratch memory:
#: about ``N * BLOCK * 12`` bytes per worker).
BLOCK = 64


def check_replicates(replicates: object) -> int:
    """``replicates`` as a positive int, else :class:`InputError`."""
    return check_count(replicates, "bootstrap", meaning="the number of bootstrap replicates")


def check_seed(seed: object) -> int:
    """``seed`` as a non-negative int, else :class:`InputError`."""
    return check_count(seed, "seed", minimum=0)


@dataclass(frozen=True)
class BootstrapSettings:
    """How a bootstrap is run: ``replicates`` stratified replicates drawn from ``seed``,
    summarised at ``confidence``; one record for every function that bootstraps
    (:func:`~classwise.metrics.suite.evaluate`, :func:`bootstrap_replicates`,
    :func:`~classwise.metrics.compare.compare`). Checked when made: a bad value is an
    :class:`InputError` naming it (``bootstrap``, ``confidence`` or ``seed``), before any work."""

    replicates: int = DEFAULT_REPLICATES
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        # normalised as well as checked (a numpy integer, a confidence given as an int): the
        # JSON a run writes holds these values
        object.__setattr__(self, "replicates", check_replicates(self.replicates))
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        object.__setattr__(self, "seed", check_seed(self.seed))

    def to_json(self) -> dict[str, Any]:
        """The ``bootstrap`` block of a metrics JSON."""
        return {
            "replicates": self.replicates,
            "confidence": self.confidence,
            "seed": self.seed,
            "resampling": "stratified by true class",
            "ci": "percentile",
            "ci_bound": "exact bound for minima (docs/uncertainty.md)",
        }


#: The bootstrap of a function that always bootstraps, unless told otherwise (one instance: a
#: default argument is made once, and the record is frozen).
DEFAULT_BOOTSTRAP = BootstrapSettings()


# ----------------------------------------------------------------------------- draws


@dataclass(frozen=True)
class StratifiedDraws:
    """Within-class resampling of a labelled sample, one seeded generator per replicate."""

    seed: int
    order: np.ndarray  # sample indices sorted by label (stable)
    offsets: np.ndarray  # per sorted position: first position of its class
    sizes: np.ndarray  # per sorted position: its class's support (float64)

    @classmethod
    def from_labels(cls, labels: np.ndarray, n_classes: int, seed: int) -> StratifiedDraws:
        y = np.asarray(labels, dtype=np.int64)
        order = np.argsort(y, kind="stable")
        support = np.bincount(y, minlength=n_classes)
        starts = np.r_[0, np.cumsum(support)[:-1]]
        y_sorted = y[order]
        return cls(check_seed(seed), order, starts[y_sorted], support[y_sorted].astype(np.float64))

    @property
    def n_samples(self) -> int:
        return int(self.order.shape[0])

    def generator(self, replicate: int) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.seed, spawn_key=(int(replicate),))))

    def indices(self, replicate: int) -> np.ndarray:
        """The ``N`` sample indices of replicate ``replicate``, grouped by class: position
        ``j`` holds a uniform draw from the class of sorted position ``j``."""
        u = self.generator(replicate).random(self.n_samples)
        draw = np.minimum((u * self.sizes).astype(np.int64), self.sizes.astype(np.int64) - 1)
        return self.order[self.offsets + draw]

    def weights(self, replicate: int) -> np.ndarray:
        """``(N,)`` int64: how often each sample is drawn in replicate ``replicate``."""
        return np.bincount(self.indices(replicate), minlength=self.n_samples)


# ----------------------------------------------------------------------------- replicates


@dataclass(frozen=True)
class _Superclasses:
    """The superclass statistics of a model, all present or (no superclasses) all absent."""

    hits: sp.csr_matrix  # (G, N): restricted-argmax hit per superclass
    counts: np.ndarray
    members: np.ndarray  # (C, G) int64 membership
    names: list[Any]


@dataclass(frozen=True)
class _Model:
    """What the replicates of one model need, computed once from the full sample."""

    n: int
    c: int
    valid: np.ndarray
    support_valid: np.ndarray
    hits1: sp.csr_matrix  # (m_valid, N): correct top-1 sample of each valid class
    hitsk: sp.csr_matrix  # (m_valid, N): top-k hit
    predicted: sp.csr_matrix  # (C, N): predicted class
    # (C, N): correct prediction, by predicted class (the hits1 rows by label, unless a sample
    # has several correct labels: then a correct prediction need not be its label)
    precision_hits: sp.csr_matrix
    superclasses: _Superclasses | None
    terms: np.ndarray  # (3, N) generalized-mean terms (decisiveness, geometric, robustness)
    zero: np.ndarray  # (N,) float64: clipped probability is 0
    shifts: tuple[float, float, float]
    correct_bin: sp.csr_matrix  # (K, N)
    bin_counts: sp.csr_matrix  # (K, N): class probabilities per bin, per sample
    gamma: float
    pairs: PairLosses | None


def _indicator(rows: np.ndarray, n_rows: int, keep: np.ndarray | None = None) -> sp.csr_matrix:
    # scipy.sparse here, not above: the metric jobs import this module (through the suite) and only
    # build sparse matrices when the bootstrap is on
    import scipy.sparse as sp

    n = rows.shape[0]
    cols = np.arange(n)
    if keep is not None:
        rows, cols = rows[keep], cols[keep]
    return sp.csr_matrix((np.ones(rows.shape[0]), (rows, cols)), shape=(n_rows, n))


def _prepare(
    scores: np.ndarray,
    stats: ClassificationStats,
    probabilities: Probabilities,
    *,
    superclasses: Mapping[str, Sequence[int]] | None,
    gamma: float,
    bins: int,
    k: int,
    pairs: bool = True,
) -> _Model:
    import scipy.sparse as sp

    n, c = stats.n_samples, stats.n_classes
    labels = stats.labels
    valid = np.flatnonzero(stats.support > 0)
    position = np.full(c, -1, dtype=np.int64)
    position[valid] = np.arange(valid.shape[0])
    rank = stats.true_class_rank
    supers: _Superclasses | None = None
    if superclasses:
        groups = wc._validate_superclasses(superclasses, c)
        per_group = wc.superclass_sample_hits(scores, labels, groups)
        rows = np.concatenate([np.full(r.shape[0], g) for g, (r, _) in enumerate(per_group)])
        cols = np.concatenate([r for r, _ in per_group])
        hit = np.concatenate([h for _, h in per_group])
        super_hits = sp.csr_matrix((np.ones(int(hit.sum())), (rows[hit], cols[hit])), shape=(len(groups), n))
        super_counts = np.array([r.shape[0] for r, _ in per_group], dtype=np.int64)
        super_members = np.zeros((c, len(groups)), dtype=np.int64)
        for g, (_, idx) in enumerate(groups):
            super_members[idx, g] = 1
        supers = _Superclasses(super_hits, super_counts, super_members, [name for name, _ in groups])
    log_p = probabilities.correct_class_log_prob(labels)
    terms, zeros, shifts = [], [], []
    for rho in nelson.RHOS:
        t, z, shift = nelson.generalized_mean_terms(log_p, rho, gamma)
        terms.append(t)
        zeros.append(z)
        shifts.append(shift)
    inner, _ = nelson.bin_edges(probabilities.correct_class_prob(labels), gamma=gamma, n_bins=bins)
    correct_bin, bin_counts = nelson.sample_bin_counts(probabilities, labels, inner)
    return _Model(
        n=n,
        c=c,
        valid=valid,
        support_valid=stats.support[valid],
        hits1=_indicator(position[labels], valid.shape[0], rank == 0),
        hitsk=_indicator(position[labels], valid.shape[0], rank < k),
        predicted=_indicator(stats.predictions, c, ~stats.abstained if stats.n_abstained else None),  # abstentions: no class
        precision_hits=_indicator(stats.predictions, c, rank == 0),
        superclasses=supers,
        terms=np.ascontiguousarray(np.stack(terms)),
        zero=zeros[-1].astype(np.float64),
        shifts=(shifts[0], shifts[1], shifts[2]),
        correct_bin=_indicator(correct_bin, inner.size + 1),
        bin_counts=sp.csr_matrix(bin_counts.T.astype(np.float64)),
        gamma=float(gamma),
        pairs=PairLosses(scores, stats) if pairs and valid.shape[0] >= 2 else None,
    )


def _counts(matrix: sp.csr_matrix, weights: np.ndarray) -> np.ndarray:
    """``(R, rows)`` int64 weighted counts (float64 products of integers are exact)."""
    return np.rint(matrix @ weights).T.astype(np.int64)


def _block(model: _Model, draws: StratifiedDraws, replicates: np.ndarray) -> dict[str, Any]:
    """Sufficient statistics of a block of replicates."""
    n_rep = replicates.shape[0]
    rows = np.empty((n_rep, model.n), dtype=np.float64)
    term_sums = np.empty((n_rep, 3))
    zeros = np.empty(n_rep)
    for j, r in enumerate(replicates):
        idx = draws.indices(int(r))
        rows[j] = np.bincount(idx, minlength=model.n)
        # Float sums per replicate, in a fixed order: deterministic whatever the blocks.
        term_sums[j] = np.take(model.terms, idx, axis=1).sum(axis=1)
        zeros[j] = np.take(model.zero, idx).sum()
    w = np.ascontiguousarray(rows.T)  # (N, R): sparse-times-dense products want a row per sample
    del rows
    out: dict[str, Any] = {
        "hits1": _counts(model.hits1, w),
        "hitsk": _counts(model.hitsk, w),
        "predicted": _counts(model.predicted, w),
        "precision_hits": _counts(model.precision_hits, w),
        "term_sums": term_sums,
        "zeros": zeros,
        "n_correct_bins": _counts(model.correct_bin, w),
        "n_all_bins": _counts(model.bin_counts, w),
    }
    if model.superclasses is not None:
        out["super_hits"] = _counts(model.superclasses.hits, w)
    if model.pairs is not None:
        out["pairs"] = model.pairs.replicates(w[model.pairs.misclassified])
    return out


def _stack(blocks: list[dict[str, Any]], name: str) -> Any:
    first = blocks[0][name]
    if name == "pairs":
        stacked: dict[str, Any] = {
            attr: np.concatenate([getattr(b[name], attr) for b in blocks])
            for attr in ("pooled", "pooled_pairs", "balanced", "balanced_pairs")
        }
        for attr in ("pooled_shares", "balanced_shares"):  # per block: sums over its replicates
            total: Counter[tuple[int, int]] = Counter()
            for block in blocks:
                total.update(getattr(block[name], attr))
            stacked[attr] = dict(total)
        return stacked
    return np.concatenate([b[name] for b in blocks]) if isinstance(first, np.ndarray) else None


def bootstrap_replicates(
    scores: np.ndarray,
    stats: ClassificationStats,
    probabilities: Probabilities,
    *,
    superclasses: Mapping[str, Sequence[int]] | None = None,
    parameters: MetricParameters = DEFAULTS,
    bootstrap: BootstrapSettings = DEFAULT_BOOTSTRAP,
    workers: int | None = None,
    pairs: bool = True,
    top_k: int | None = None,
) -> dict[str, MetricReplicates]:
    """Replicate values of every metric of :func:`classwise.metrics.suite.evaluate`.

    ``scores`` are the ranking scores ``stats`` were computed from (logits or
    log-probabilities) and ``probabilities`` the model's probabilities; ``superclasses`` and
    the metrics' ``parameters`` are those of ``evaluate``, and ``bootstrap`` says how many
    replicates to draw from which seed (its ``confidence`` is for the summaries:
    :func:`summarize`).  Returns metric name -> :class:`MetricReplicates`, the names
    of ``evaluate``.  ``workers`` threads share the blocks of replicates (default: the CPU
    count); the result does not depend on it.  ``pairs=False`` leaves out W2CA and
    W2CA_balanced, the costliest part, for a caller that needs the other metrics only.
    ``top_k``: the scores are hard predictions of the ``top_k`` top-ranked classes, so the
    metrics those cannot give (:func:`~classwise.metrics.catalogue.unavailable_for_hard_predictions`,
    as ``evaluate`` leaves them out) are not resampled.
    """
    k, ns = parameters.k, parameters.ns
    draws = StratifiedDraws.from_labels(stats.labels, stats.n_classes, bootstrap.seed)
    model = _prepare(
        scores, stats, probabilities, superclasses=superclasses, gamma=parameters.gamma, bins=parameters.bins, k=k,
        pairs=pairs,
    )  # fmt: skip
    unavailable = () if top_k is None else catalogue.unavailable_for_hard_predictions(top_k, k=k, ns=ns, family=None)
    return _replicates(model, draws, bootstrap.replicates, stats, k=k, ns=ns, workers=workers, unavailable=frozenset(unavailable))


def _run_blocks(fn: Callable[[np.ndarray], dict[str, Any]], b: int, workers: int | None) -> list[dict[str, Any]]:
    chunks = [np.arange(lo, min(lo + BLOCK, b)) for lo in range(0, b, BLOCK)]
    workers = max(1, min(len(chunks), workers or os.cpu_count() or 1))
    if workers == 1:
        return [fn(chunk) for chunk in chunks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, chunks))  # results in block order: deterministic


def _replicates(
    model: _Model,
    draws: StratifiedDraws,
    b: int,
    stats: ClassificationStats,
    *,
    k: int,
    ns: Sequence[int],
    workers: int | None,
    unavailable: frozenset[str] = frozenset(),
) -> dict[str, MetricReplicates]:
    """Every catalogue metric's replicates that the model has the statistics for: the
    superclass metrics with superclasses, the pair metrics with pairs, ``W{n}CR`` for
    ``1 <= n <`` the classes with samples (as the suite: a larger n pools every class), but
    those named in ``unavailable``."""
    blocks = _run_blocks(lambda chunk: _block(model, draws, chunk), b, workers)
    names = ("hits1", "hitsk", "predicted", "precision_hits", "term_sums", "zeros", "n_correct_bins", "n_all_bins")
    counts = {name: _stack(blocks, name) for name in names}
    supers = model.superclasses
    if supers is not None:
        counts["super_hits"] = _stack(blocks, "super_hits")
    if model.pairs is not None:
        counts["pairs"] = _stack(blocks, "pairs")
    replicate_counts = kernels.ReplicateCounts(
        counts, b=b, n=model.n, c=model.c, valid=model.valid, support=stats.support,
        superclass_names=supers.names if supers else (), superclass_counts=supers.counts if supers else None,
        superclass_members=supers.members if supers else None, nelson_shifts=model.shifts, gamma=model.gamma,
    )  # fmt: skip
    valid_ns = [m for m in ns if 1 <= m < model.valid.shape[0]]
    out: dict[str, MetricReplicates] = {}
    for entry in catalogue.CATALOGUE:
        if entry.replicate is None or (entry.needs_superclasses and supers is None):
            continue
        if entry.worst == "pair" and model.pairs is None:
            continue
        for name, n in entry.instances(k=k, ns=valid_ns):
            if name not in unavailable:
                out[name] = catalogue.kernel(entry.replicate)(replicate_counts, n)
    return out


# ----------------------------------------------------------------------------- summaries


@dataclass(frozen=True)
class BootstrapSummary:
    """The JSON additions of one metric: the percentile interval, the most frequent worst
    classes and, for the recall-type minima, the exact-bound interval."""

    ci: tuple[float, float]
    worst_probability: list[tuple[tuple[Any, ...], float]] | None = None
    ci_bound: tuple[float, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ci": [_finite(self.ci[0]), _finite(self.ci[1])]}
        if self.worst_probability is not None:
            out["worst_probability"] = [
                {"classes": [_plain(x) for x in classes], "probability": share} for classes, share in self.worst_probability
            ]
        if self.ci_bound is not None:
            out["ci_bound"] = [_finite(self.ci_bound[0]), _finite(self.ci_bound[1])]
        out.update(self.extra)
        return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _plain(x: Any) -> Any:
    return x.item() if hasattr(x, "item") else x


#: Decimals a replicate count of :func:`worst_probability` is rounded to: float noise (1e-16 per
#: term) goes, and a share that differs by less than 1e-9 replicates reads as equal anyway.
SHARE_DECIMALS = 9


def worst_probability(
    worst: list[tuple[Any, ...]], top: int = TOP_WORST, *, shares: Mapping[tuple[Any, ...], float] | None = None
) -> list[tuple[tuple[Any, ...], float]]:
    """The ``top`` most frequent worst classes (or pairs, superclasses) and the share of
    replicates in which each is the worst; equal frequencies in order of the class indices
    (then names).  With ``shares`` (:attr:`MetricReplicates.shares`) a replicate in which ``t``
    elements tie counts ``1/t`` for each, so that a tie never shows as one element's finding;
    without them, each replicate counts for the element it names.  Replicates that name
    nothing (CFPS_max without errors) count in the denominator."""
    counts: Mapping[tuple[Any, ...], float] = shares if shares is not None else Counter(w for w in worst if w)
    # sums of 1/t added in different orders differ in the last bits: equal shares must rank (and
    # read) as equal, by the class index. Each reads as the first sum of its equals, not as the
    # rounded sum (which would write 0.305583333335 for 611.1666.../2000).
    rounded = {classes: round(count, SHARE_DECIMALS) for classes, count in counts.items()}
    ranked = sorted(counts.items(), key=lambda item: (-rounded[item[0]], _sort_key(item[0])))[:top]
    reads_as: dict[float, float] = {}
    return [(classes, reads_as.setdefault(rounded[classes], count) / len(worst)) for classes, count in ranked]


def worst_shares(replicates: MetricReplicates, n_classes: int) -> np.ndarray:
    """``(n_classes,)``: the share of replicates in which each class is the worst class a
    metric names (WCA, WCP, WCA@k, CFPS_max), a replicate in which ``t`` classes tie counting
    ``1/t`` for each (:attr:`MetricReplicates.shares`); every class is counted, not only the
    most frequent few of :func:`worst_probability`.  Replicates that name nothing count in the
    denominator, so the shares sum to at most 1."""
    if replicates.worst is None:
        raise InputError("this metric names no worst class", field="worst")
    named = [w for w in replicates.worst if w]
    if not all(len(w) == 1 and isinstance(w[0], (int, np.integer)) for w in named):
        raise InputError("expected one worst class index per replicate, got pairs or superclasses", field="worst")
    counts = np.zeros(n_classes, dtype=np.float64)
    if replicates.shares is not None:
        for (c,), share in replicates.shares.items():
            counts[c] += share
    else:
        np.add.at(counts, np.asarray([w[0] for w in named], dtype=np.int64), 1.0)
    return counts / max(1, len(replicates.worst))


def _sort_key(classes: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((0, x) if isinstance(x, (int, np.integer)) else (1, str(x)) for x in classes)


def minimum_bounds(stats: ClassificationStats, *, k: int, ns: Sequence[int], confidence: float) -> dict[str, tuple[float, float]]:
    """:func:`classwise.metrics.intervals.minimum_bound` of the recall-type minima: WCA,
    WCA@k, W{n}CR (and _exact, @k: the bound is for the exact minimum over n-subsets, which
    the heuristic equals on class-balanced test sets) and W2CA (items: pairs of classes,
    successes: pooled restricted-argmax wins)."""
    valid = np.flatnonzero(stats.support > 0)
    support = stats.support[valid]
    hits1 = stats.hits[valid]
    hitsk = wc._topk_hits(stats, k)[valid]
    out = {"WCA": minimum_bound(hits1, support, confidence), f"WCA@{k}": minimum_bound(hitsk, support, confidence)}
    for m in (m for m in ns if 1 <= m < valid.shape[0]):  # a larger n pools every class with samples
        bound = minimum_bound(hits1, support, confidence, n_smallest=m)
        out[f"W{m}CR"] = out[f"W{m}CR_exact"] = bound
        out[f"W{m}CR@{k}"] = minimum_bound(hitsk, support, confidence, n_smallest=m)
    if valid.shape[0] >= 2:
        ia, ib = np.triu_indices(valid.shape[0], 1)
        a, b = valid[ia], valid[ib]
        wins = stats.pairwise_wins[a, b] + stats.pairwise_wins[b, a]
        out["W2CA"] = minimum_bound(wins, stats.support[a] + stats.support[b], confidence)
        if np.all(support == support[0]):  # then W2CA_balanced is W2CA
            out["W2CA_balanced"] = out["W2CA"]
    return out


def summarize(
    replicates: Mapping[str, MetricReplicates],
    *,
    confidence: float,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, BootstrapSummary]:
    """Percentile interval and worst-class shares of each metric's replicates."""
    conf = check_confidence(confidence)
    bounds = bounds or {}
    return {
        name: BootstrapSummary(
            ci=percentile_interval(rep.values, conf),
            worst_probability=None if rep.worst is None else worst_probability(rep.worst, shares=rep.shares),
            ci_bound=bounds.get(name),
        )
        for name, rep in replicates.items()
    }
