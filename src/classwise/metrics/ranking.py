"""Which models differ on their worst classes: ranks with bootstrap intervals, and the groups of
models that cannot be told apart.

For the accuracy ``A``, the worst-class accuracy ``WCA`` and the worst-n class recall ``W{n}CR``
(each ``n`` of :data:`~classwise.metrics.catalogue.DEFAULTS` below the number of classes with
samples), every model is evaluated on the samples that all models share (matched by sample id,
labels checked) and resampled on the **same** stratified bootstrap replicates as ``classwise
compare`` (:class:`~classwise.metrics.bootstrap.StratifiedDraws`: the same labels and seed give
the same draws, so a replicate keeps the pairing of the samples). The replicate values come
from the catalogue's replicate kernels (:mod:`classwise.metrics.kernels`), the same reducers
as every other bootstrap of the package.

* **rank**: 1 is the best (the highest value); models with equal values share the average of
  their ranks (``n_tied`` says how many models share the value), on the full sample and in
  every replicate.
* **rank_low, rank_high**: the percentile interval of the replicate ranks at ``confidence``
  (the lower quantile rounded down to a rank a replicate gave, the upper one up).
* **pairs** (:attr:`ModelRanking.pairs`): every pair's difference ``b - a`` with the percentile
  interval of its replicate differences and the two-sided bootstrap p-value, as
  :func:`classwise.metrics.compare.compare_models` computes them; ``distinguishable`` when the
  interval excludes 0. Per pair, not adjusted for the number of pairs.
* **group**: a compact letter display of ``distinguishable`` (Piepho's insert-and-absorb,
  2004): two models share a letter when no pair's interval told them apart; letters run from
  ``a`` at the best model. Models that share no letter differ.
* **rank_low_pairwise, rank_high_pairwise**: the ranks the pairwise decisions leave open:
  ``1 + #{models distinguishably better}`` to ``M - #{models distinguishably worse}``. In the
  simulation they held for every model at once far more often than the percentile intervals
  (docs/uncertainty.md): read them for a statement about several models.
* **n_samples, n_classes**: the samples every model holds, and the classes with samples among
  them.

The minima (``WCA``, ``W{n}CR``) are biased low and their percentile bootstrap under-covers
(docs/uncertainty.md); the simulation in :mod:`classwise.bench.class_drops_simulation` measures
how that carries over to the rank intervals.
"""

from __future__ import annotations

import os
import string
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.stats import rankdata

from classwise.errors import InputError
from classwise.metrics import bootstrap as boot
from classwise.metrics import kernels
from classwise.metrics.catalogue import DEFAULTS
from classwise.metrics.intervals import check_confidence
from classwise.metrics.outcomes import Outcomes, SampleOutcomes, as_outcomes, id_index, n_classes_of

__all__ = [
    "PAIR_COLUMNS",
    "RANKING_COLUMNS",
    "ModelRanking",
    "compact_letter_display",
    "model_ranking",
    "rank_models",
    "shared_outcomes",
]

#: The columns of :attr:`ModelRanking.table`, one row per (metric, model).
RANKING_COLUMNS: tuple[str, ...] = (
    "metric",
    "model",
    "value",
    "rank",
    "rank_low",
    "rank_high",
    "group",
    "rank_low_pairwise",
    "rank_high_pairwise",
    "n_tied",
    "n_samples",
    "n_classes",
    "replicates",
    "confidence",
    "seed",
)
#: The columns of :attr:`ModelRanking.pairs`, one row per (metric, pair of models).
PAIR_COLUMNS: tuple[str, ...] = (
    "metric",
    "a",
    "b",
    "a_value",
    "b_value",
    "difference",
    "ci_low",
    "ci_high",
    "p_value",
    "distinguishable",
)


@dataclass(frozen=True)
class ModelRanking:
    """What :func:`rank_models` returns: the ranking table, the pairwise table and, per metric,
    the ``(B, M)`` replicate values (columns in the order of the models given)."""

    table: pd.DataFrame
    pairs: pd.DataFrame
    replicate_values: dict[str, np.ndarray]
    models: tuple[str, ...]


def shared_outcomes(outputs: Mapping[str, Outcomes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[SampleOutcomes]]:
    """``(sample_ids, labels, correct (N, M))`` on the samples every model holds, in the first
    model's order, and the outcomes read. :class:`InputError` when they share no sample or a
    shared sample's label differs between models."""
    read = [as_outcomes(source) for source in outputs.values()]
    if not read:
        raise InputError("no models given", field="models")
    first = read[0]
    indexes = [id_index(o) for o in read]
    keep = np.ones(first.n_samples, dtype=np.bool_)
    for index in indexes[1:]:
        keep &= index.get_indexer(indexes[0]) >= 0
    ids = first.sample_ids[keep]
    if ids.size == 0:
        raise InputError("the models share no sample id", path=read[-1].source, field="sample_ids")
    labels = first.labels[keep]
    correct = np.empty((ids.size, len(read)), dtype=np.bool_)
    for m, (other, index) in enumerate(zip(read, indexes)):
        rows = index.get_indexer(pd.Index(ids))
        differ = np.flatnonzero(other.labels[rows] != labels)
        if differ.size:
            raise InputError(
                f"sample {str(ids[differ[0]])!r} has label {int(other.labels[rows[differ[0]]])} here but "
                f"{int(labels[differ[0]])} in {first.source}",
                path=other.source,
                field="labels",
            )
        correct[:, m] = other.correct[rows]
    return ids, labels, correct, read


def _metric_values(
    hits: np.ndarray, support: np.ndarray, valid: np.ndarray, n_samples: int, ns: Sequence[int]
) -> dict[str, np.ndarray]:
    """Per metric, the values of the rows of ``hits`` (``(rows, valid classes)`` int), through
    the catalogue's replicate kernels (the rows stand for replicates)."""
    counts = kernels.ReplicateCounts(
        {"hits1": hits}, b=hits.shape[0], n=n_samples, c=support.shape[0], valid=valid, support=support
    )
    out = {
        "A": kernels.accuracy_replicates(counts).values,
        "WCA": kernels.worst_class_accuracy_replicates(counts).values,
    }
    for n in ns:
        out[f"W{n}CR"] = kernels.worst_n_class_recall_replicates(counts, n).values
    return out


def _replicate_hits(
    labels: np.ndarray, correct: np.ndarray, n_classes: int, valid: np.ndarray, replicates: int, seed: int, workers: int | None
) -> np.ndarray:
    """``(B, M, valid classes)`` int64: each model's hits per class in every stratified replicate
    (the draws of :class:`~classwise.metrics.bootstrap.StratifiedDraws`, shared by the models)."""
    n, m = correct.shape
    position = np.full(n_classes, -1, dtype=np.int64)
    position[valid] = np.arange(valid.size)
    sample, model = np.nonzero(correct)
    # row model * V + class position: one sparse (M V, N) indicator of the correct samples
    indicator = sp.csr_matrix(
        (np.ones(sample.size), (model * valid.size + position[labels[sample]], sample)), shape=(m * valid.size, n)
    )
    draws = boot.StratifiedDraws.from_labels(labels, n_classes, seed)

    def block(chunk: np.ndarray) -> np.ndarray:
        weights = np.empty((n, chunk.size))
        for j, r in enumerate(chunk):
            weights[:, j] = np.bincount(draws.indices(int(r)), minlength=n)
        # float64 products of integers below 2^53 are exact
        return np.rint(np.asarray(indicator @ weights)).T.astype(np.int64).reshape(chunk.size, m, valid.size)

    chunks = [np.arange(lo, min(lo + boot.BLOCK, replicates)) for lo in range(0, replicates, boot.BLOCK)]
    threads = max(1, min(len(chunks), workers or os.cpu_count() or 1))
    run: Callable[[np.ndarray], np.ndarray] = block
    if threads == 1:
        return np.concatenate([run(chunk) for chunk in chunks])
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return np.concatenate(list(pool.map(run, chunks)))  # in block order: deterministic


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 for the highest value; ties share their average rank."""
    return np.asarray(rankdata(-values, method="average", axis=-1), dtype=np.float64)


def compact_letter_display(order: Sequence[int], distinguishable: np.ndarray) -> list[str]:
    """Letters per model (index ``0 .. M-1``) such that two models share a letter exactly when
    ``distinguishable`` (``(M, M)`` bool, symmetric) does not separate them, by Piepho's (2004)
    insert-and-absorb: start with one group of every model; for each separated pair, split every
    group holding both into one without either of them; drop groups contained in another.
    Letters follow ``order`` (the best model first gets ``a``)."""
    count = distinguishable.shape[0]
    groups: list[frozenset[int]] = [frozenset(range(count))]
    for i in range(count):  # pairs of models (a handful), not of classes
        for j in range(i + 1, count):
            if not (distinguishable[i, j] or distinguishable[j, i]):
                continue
            split: list[frozenset[int]] = []
            for group in groups:
                if i in group and j in group:
                    split.extend((group - {j}, group - {i}))
                else:
                    split.append(group)
            unique = list(dict.fromkeys(split))
            groups = [g for g in unique if not any(g < other for other in unique)]
    position = {model: k for k, model in enumerate(order)}
    groups.sort(key=lambda g: sorted(position[model] for model in g))
    alphabet = string.ascii_lowercase + string.ascii_uppercase
    names = [alphabet[k] if k < len(alphabet) else f"[{k}]" for k in range(len(groups))]
    return ["".join(name for name, group in zip(names, groups) if model in group) for model in range(count)]


def rank_models(
    outputs: Mapping[str, Outcomes],
    *,
    ns: Sequence[int] = DEFAULTS.ns,
    n_classes: int | None = None,
    replicates: int = boot.DEFAULT_REPLICATES,
    confidence: float = boot.DEFAULT_CONFIDENCE,
    seed: int = boot.DEFAULT_SEED,
    workers: int | None = None,
) -> ModelRanking:
    """Ranks of the models (``outputs``: model name -> outcomes, a loaded file of outputs or its
    path) on A, WCA and W{n}CR with bootstrap intervals, pairwise differences and groups (see
    the module docstring). ``workers`` threads share the blocks of replicates; the result does
    not depend on it."""
    b_count = boot.check_replicates(replicates)
    conf = check_confidence(confidence)
    seed = boot.check_seed(seed)
    if len(outputs) < 2:
        raise InputError(f"expected at least two models to rank, got {len(outputs)}", field="models")
    models = tuple(outputs)
    ids, labels, correct, read = shared_outcomes(outputs)
    c = n_classes_of(read, n_classes)
    support = np.bincount(labels, minlength=c)
    valid = np.flatnonzero(support > 0)
    kept_ns = [n for n in ns if 1 <= n < valid.size]  # a larger n pools every class: W{n}CR = A
    position = np.full(c, -1, dtype=np.int64)
    position[valid] = np.arange(valid.size)
    full_hits = np.zeros((len(models), valid.size), dtype=np.int64)
    for m in range(len(models)):
        full_hits[m] = np.bincount(position[labels[correct[:, m]]], minlength=valid.size)
    values = _metric_values(full_hits, support, valid, ids.size, kept_ns)
    hits = _replicate_hits(labels, correct, c, valid, b_count, seed, workers)
    flat = _metric_values(hits.reshape(-1, valid.size), support, valid, ids.size, kept_ns)
    replicate_values = {name: v.reshape(b_count, len(models)) for name, v in flat.items()}
    alpha = 1.0 - conf
    rows, pair_rows = [], []
    for metric, value in values.items():
        reps = replicate_values[metric]
        rank = _ranks(value)
        rep_ranks = _ranks(reps)
        low = np.quantile(rep_ranks, alpha / 2.0, axis=0, method="lower")
        high = np.quantile(rep_ranks, 1.0 - alpha / 2.0, axis=0, method="higher")
        # differences b - a of every pair in every replicate: (B, a, b)
        differences = reps[:, None, :] - reps[:, :, None]
        ci_low, ci_high = np.quantile(differences, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        at_most = np.count_nonzero(differences <= 0, axis=0)
        at_least = np.count_nonzero(differences >= 0, axis=0)
        p_value = np.minimum(1.0, 2.0 * np.minimum(at_most + 1, at_least + 1) / (b_count + 1))
        distinguishable = (ci_low > 0) | (ci_high < 0)
        better = distinguishable & (ci_low > 0)  # [a, b]: b is distinguishably better than a
        order = sorted(range(len(models)), key=lambda m: (rank[m], m))
        letters = compact_letter_display(order, distinguishable)
        tied = np.count_nonzero(value[:, None] == value[None, :], axis=1)
        for m in order:
            rows.append(
                {
                    "metric": metric,
                    "model": models[m],
                    "value": float(value[m]),
                    "rank": float(rank[m]),
                    "rank_low": float(low[m]),
                    "rank_high": float(high[m]),
                    "group": letters[m],
                    "rank_low_pairwise": 1 + int(better[m].sum()),
                    "rank_high_pairwise": len(models) - int(better[:, m].sum()),
                    "n_tied": int(tied[m]),
                    "n_samples": int(ids.size),
                    "n_classes": int(valid.size),
                    "replicates": b_count,
                    "confidence": conf,
                    "seed": seed,
                }
            )
        for a in range(len(models)):
            for b in range(a + 1, len(models)):
                pair_rows.append(
                    {
                        "metric": metric,
                        "a": models[a],
                        "b": models[b],
                        "a_value": float(value[a]),
                        "b_value": float(value[b]),
                        "difference": float(value[b] - value[a]),
                        "ci_low": float(ci_low[a, b]),
                        "ci_high": float(ci_high[a, b]),
                        "p_value": float(p_value[a, b]),
                        "distinguishable": bool(distinguishable[a, b]),
                    }
                )
    table = pd.DataFrame(rows, columns=list(RANKING_COLUMNS))
    pairs = pd.DataFrame(pair_rows, columns=list(PAIR_COLUMNS))
    return ModelRanking(table, pairs, replicate_values, models)


def model_ranking(
    outputs: Mapping[str, Outcomes],
    *,
    ns: Sequence[int] = DEFAULTS.ns,
    n_classes: int | None = None,
    replicates: int = boot.DEFAULT_REPLICATES,
    confidence: float = boot.DEFAULT_CONFIDENCE,
    seed: int = boot.DEFAULT_SEED,
    workers: int | None = None,
) -> pd.DataFrame:
    """The ranking table of :func:`rank_models` (:data:`RANKING_COLUMNS`; per metric, the
    models best first)."""
    return rank_models(
        outputs, ns=ns, n_classes=n_classes, replicates=replicates, confidence=confidence, seed=seed, workers=workers
    ).table
