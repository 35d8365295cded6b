"""Subset performance tests (the model-testing catalogue, "Subset Performance").

The samples are split by each feature (:func:`split_feature`); for every subset and metric
(:mod:`classwise.testsuites.classification`, scikit-learn definitions) we test whether the
subset does significantly *worse* than the whole set: lower for the higher-is-better metrics
(macro F1 / precision / recall, accuracy, OvO AUC), higher for the lower-is-better ones
(positive prediction rate = share of the most-predicted class, average uncertainty =
``mean(1 - max p)``).

Test: a one-sided **permutation test of subset membership**.  Under H0 the subset's ``m``
samples are exchangeable with the others, i.e. the subset is a uniformly random ``m``-subset
of the ``N`` samples.  We draw ``B`` such subsets (seeded; a ``(B, m)`` index matrix, the
``m`` smallest of ``N`` uniform keys per row) and score them all at once; with ``T`` the
subset's value and ``T*_b`` the draws' values (NaN draws dropped, ``B'`` left),

    p = (1 + #{b : T*_b at least as bad as T}) / (1 + B')

("at least as bad": ``T*_b <= T`` when higher is better, ``>=`` otherwise, with a
``1e-12`` relative tolerance so that float summation order cannot break ties).  This
p-value is valid (never anti-conservative) for finite ``B`` (Phipson & Smyth, 2010).
Comparing with random subsets *of the same size* also calibrates away the size bias of
macro averages and of the maximum prediction share on small subsets, which a comparison
with the whole set's value alone would not.

Effect size: ``difference = T - T_all`` (subset minus whole set) and ``shortfall``, the
same difference signed so that positive means worse; ``null_mean`` is the mean of the
``T*_b`` (the expected value of a random subset of that size).

Multiple comparisons: **Holm** (default; family-wise error rate, valid under any
dependence - subsets of one feature and correlated features are dependent) or
Benjamini-Hochberg (``correction="bh"``; false discovery rate, valid under positive
dependence), applied per metric over every tested (feature, subset) pair.

Status: ``"skipped"`` (subset smaller than ``min_subset_size``, equal to the whole set, or
metric undefined - e.g. OvO AUC with one class), ``"fail"`` when the adjusted p-value is
``<= alpha`` and ``shortfall > min_effect``, else ``"pass"``.

Cost: ``O(B N)`` per subset for the draws and confusion metrics, ``O(B m C)`` for the OvO
AUC; for many classes (ImageNet) use fewer resamples or leave ``auc_ovo`` out.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.testsuites.classification import (
    HIGHER_IS_BETTER,
    SUBSET_METRICS,
    LabelSet,
    SubsetEvaluator,
    _check_metrics,
    check_label_set,
    to_probabilities,
)
from classwise.validation import ScoreKind

__all__ = [
    "Subset",
    "SubsetSplit",
    "SubsetTestOptions",
    "adjust_pvalues",
    "benjamini_hochberg",
    "holm",
    "permutation_test",
    "split_feature",
    "subset_performance_tests",
    "worst_subsets",
]

Correction = Literal["holm", "bh"]
SubsetKind = Literal["quantile", "category", "missing"]
# Random keys drawn at once for the permutation index matrices (float64 elements).
_TARGET_DRAW_ELEMENTS = 1 << 22
_TIE_RTOL = 1e-12


# ---------------------------------------------------------------------------- splitting
@dataclass(frozen=True, eq=False)
class Subset:
    """One subset of the samples: ``indices`` into the set, sorted ascending.

    ``kind`` is ``"quantile"`` (``lower <= value < upper``; the last bin is closed),
    ``"category"`` (``lower``/``upper`` NaN) or ``"missing"`` (NaN / None values).
    """

    feature: str
    label: str
    kind: SubsetKind
    lower: float
    upper: float
    indices: np.ndarray

    @property
    def size(self) -> int:
        return int(self.indices.size)


def _is_categorical(values: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)


def split_feature(
    # list or tuple rather than any Sequence: a str is a Sequence too, and would be one value
    values: pd.Series | np.ndarray | list[object] | tuple[object, ...],
    *,
    name: str = "feature",
    n_quantiles: int = 4,
    categorical: bool | None = None,
) -> list[Subset]:
    """Split the samples by one feature.

    * Categorical (non-numeric or boolean dtype, ``categorical=True``, or numeric with at
      most ``n_quantiles`` distinct values): one subset per distinct value, ordered by the
      value's string form.
    * Numeric: ``q = n_quantiles`` bins between the quantiles
      ``e_j = quantile(v, j / q)`` (``np.quantile``, linear interpolation) of the non-missing
      values; duplicate edges are merged and bin ``j`` is ``[e_j, e_{j+1})`` (the last one
      closed).  Ties are handled deterministically: membership depends on the value only,
      so equal values always share a subset (bins may then be unequal); empty bins are
      dropped.
    * Missing values (NaN / None) form a last ``"missing"`` subset.
    """
    if int(n_quantiles) < 2:
        raise InputError(f"n_quantiles must be >= 2, got {n_quantiles}", field="n_quantiles")
    q = int(n_quantiles)
    s = (values if isinstance(values, pd.Series) else pd.Series(values)).reset_index(drop=True)
    if len(s) == 0:
        raise InputError("expected at least one value", field=name)
    missing = s.isna().to_numpy()
    present = np.flatnonzero(~missing)
    out: list[Subset] = []
    cat = _is_categorical(s) if categorical is None else bool(categorical)
    if not cat and s[~missing].nunique() <= q:
        cat = True
    if cat:
        keys = s[~missing].map(str).to_numpy()
        for key in sorted(set(keys)):
            idx = present[keys == key]
            out.append(Subset(name, key, "category", np.nan, np.nan, idx))
    elif present.size:
        v = s[~missing].to_numpy(dtype=np.float64)
        if not np.isfinite(v).all():
            raise InputError("numeric feature holds +-inf", field=name)
        edges = np.unique(np.quantile(v, np.linspace(0.0, 1.0, q + 1)))
        k = edges.size - 1
        bins = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, k - 1)
        for j in range(k):
            idx = present[bins == j]
            if idx.size == 0:
                continue
            close = "]" if j == k - 1 else ")"
            label = f"[{edges[j]:.6g}, {edges[j + 1]:.6g}{close}"
            out.append(Subset(name, label, "quantile", float(edges[j]), float(edges[j + 1]), idx))
    if missing.any():
        out.append(Subset(name, "missing", "missing", np.nan, np.nan, np.flatnonzero(missing)))
    return out


# ---------------------------------------------------------------------------- corrections
def _check_p(pvalues: np.ndarray | Sequence[float]) -> np.ndarray:
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise InputError(f"expected a 1-D array of p-values, got shape {p.shape}", field="pvalues")
    ok = ~np.isnan(p)
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise InputError("p-values must lie in [0, 1]", field="pvalues")
    return p


def holm(pvalues: np.ndarray | Sequence[float]) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values; NaN entries stay NaN and are not counted.

    With the ``m`` p-values sorted, ``p_(1) <= ... <= p_(m)``:
    ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``; rejecting ``adj <= alpha`` is the
    step-down procedure at level ``alpha``.
    """
    p = _check_p(pvalues)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def benjamini_hochberg(pvalues: np.ndarray | Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg (1995) step-up adjusted p-values (q-values); NaN stays NaN.

    ``adj_(i) = min_{j >= i} min(1, m p_(j) / j)``; rejecting ``adj <= alpha`` is the
    step-up procedure controlling the false discovery rate at ``alpha``.
    """
    p = _check_p(pvalues)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    out[order] = np.minimum.accumulate(scaled[::-1])[::-1]
    return out


def adjust_pvalues(pvalues: np.ndarray | Sequence[float], method: Correction = "holm") -> np.ndarray:
    """Adjusted p-values by ``method``: ``"holm"`` or ``"bh"`` (Benjamini-Hochberg)."""
    if method == "holm":
        return holm(pvalues)
    if method == "bh":
        return benjamini_hochberg(pvalues)
    raise InputError(f"correction must be 'holm' or 'bh', got {method!r}", field="correction")


# ---------------------------------------------------------------------------- the test
def _subset_rng(seed: int, feature: str, label: str) -> np.random.Generator:
    """Generator of one (feature, subset): independent of the order features are tested in."""
    key = [int(seed), zlib.crc32(feature.encode()), zlib.crc32(label.encode())]
    return np.random.default_rng(key)


def permutation_test(
    evaluator: SubsetEvaluator,
    indices: np.ndarray,
    metrics: Sequence[str],
    *,
    n_resamples: int,
    rng: np.random.Generator,
) -> dict[str, dict[str, float]]:
    """Subset value, null mean and one-sided permutation p-value of each metric.

    Returns ``{metric: {"value", "null_mean", "p_value", "n_null"}}`` (module docstring).
    """
    names = _check_metrics(metrics)
    n = evaluator.n_samples
    idx = np.asarray(indices, dtype=np.int64)
    m = idx.size
    if m == 0 or m >= n:
        raise InputError(f"a subset needs 1 <= m < N samples, got m = {m}, N = {n}", field="indices")
    observed = evaluator.evaluate(idx[None, :], names)
    step = max(1, _TARGET_DRAW_ELEMENTS // n)
    null = {k: np.empty(int(n_resamples)) for k in names}
    for start in range(0, int(n_resamples), step):
        b = min(step, int(n_resamples) - start)
        draws = np.argpartition(rng.random((b, n)), m - 1, axis=1)[:, :m]
        for k, v in evaluator.evaluate(draws, names).items():
            null[k][start : start + b] = v
    out: dict[str, dict[str, float]] = {}
    for k in names:
        t = float(observed[k][0])
        z = null[k][~np.isnan(null[k])]
        tol = _TIE_RTOL * max(1.0, abs(t))
        if np.isnan(t) or z.size == 0:
            out[k] = {
                "value": t,
                "null_mean": float(z.mean()) if z.size else np.nan,
                "p_value": np.nan,
                "n_null": z.size,
            }
            continue
        worse = (z <= t + tol) if HIGHER_IS_BETTER[k] else (z >= t - tol)
        p = (1.0 + worse.sum()) / (1.0 + z.size)
        out[k] = {"value": t, "null_mean": float(z.mean()), "p_value": float(p), "n_null": int(z.size)}
    return out


@dataclass(frozen=True, kw_only=True)
class SubsetSplit:
    """How each feature is split into subsets (:func:`split_feature`) and which of them are tested.

    ``n_quantiles`` bins of a numeric feature; the ``categorical`` features are split by value
    even though numeric; a subset of fewer than ``min_subset_size`` samples is reported but not
    tested (``"skipped"``).
    """

    n_quantiles: int = 4
    categorical: Sequence[str] = ()
    min_subset_size: int = 20

    def __post_init__(self) -> None:
        if isinstance(self.categorical, str):
            raise InputError("expected a list of feature names, got one string", field="categorical")
        object.__setattr__(self, "categorical", tuple(self.categorical))
        if int(self.n_quantiles) < 2:
            raise InputError(f"n_quantiles must be >= 2, got {self.n_quantiles}", field="n_quantiles")
        if int(self.min_subset_size) < 1:
            raise InputError(f"min_subset_size must be >= 1, got {self.min_subset_size}", field="min_subset_size")


@dataclass(frozen=True, kw_only=True)
class SubsetTestOptions:
    """How each subset is tested (module docstring): the ``metrics`` and the classes a macro
    average covers (``label_set``, :mod:`classwise.testsuites.classification`); ``n_resamples``
    permutation draws, from a generator per (feature, subset) seeded by ``(seed,
    crc32(feature), crc32(subset))``; and when a subset fails: its p-value adjusted by
    ``correction`` (``"holm"`` or ``"bh"``) at most ``alpha``, and its shortfall above
    ``min_effect``."""

    metrics: Sequence[str] = SUBSET_METRICS
    label_set: LabelSet = "present"
    n_resamples: int = 1000
    alpha: float = 0.05
    correction: Correction = "holm"
    min_effect: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", _check_metrics(self.metrics))
        check_label_set(self.label_set)
        if int(self.n_resamples) < 1:
            raise InputError(f"n_resamples must be >= 1, got {self.n_resamples}", field="n_resamples")
        if not 0 < float(self.alpha) < 1:
            raise InputError(f"alpha must lie in (0, 1), got {self.alpha}", field="alpha")
        adjust_pvalues([], self.correction)  # validates the method name


def subset_performance_tests(
    scores: np.ndarray,
    labels: np.ndarray,
    features: pd.DataFrame,
    *,
    kind: ScoreKind = "logits",
    split: SubsetSplit | None = None,
    options: SubsetTestOptions | None = None,
) -> pd.DataFrame:
    """Subset performance tests of one model on one set (module docstring).

    Parameters
    ----------
    scores, labels, kind:
        ``(N, C)`` logits (softmax taken in float64) or probabilities, ``(N,)`` labels.
        Predictions are ``argmax(scores)`` (ties -> lowest index).
    features:
        ``N`` rows, positionally aligned with the samples (e.g. :func:`image_features`
        joined with :func:`load_metadata`); a ``sample_id`` column is ignored.
    split:
        How the features are split and which subsets are tested (:class:`SubsetSplit`;
        default its defaults); its ``categorical`` names must be feature columns.
    options:
        How each subset is tested (:class:`SubsetTestOptions`; default its defaults).

    Returns
    -------
    DataFrame, one row per (feature, subset, metric), with columns ``feature, subset,
    subset_kind, lower, upper, n, metric, higher_is_better, overall, value, difference,
    shortfall, null_mean, p_value, p_adjusted, status, is_worst`` (``is_worst``: the tested
    subset with the largest shortfall of its (feature, metric)).
    """
    split = SubsetSplit() if split is None else split
    options = SubsetTestOptions() if options is None else options
    if not isinstance(split, SubsetSplit):
        raise InputError(f"expected a SubsetSplit, got {split!r}", field="split")
    if not isinstance(options, SubsetTestOptions):
        raise InputError(f"expected a SubsetTestOptions, got {options!r}", field="options")
    names = tuple(options.metrics)
    categorical = split.categorical
    n_resamples, seed, min_subset_size = options.n_resamples, options.seed, split.min_subset_size
    if not isinstance(features, pd.DataFrame):
        raise InputError("features must be a pandas DataFrame", field="features")
    probs = to_probabilities(scores, kind)
    ev = SubsetEvaluator(probs, labels, predictions=np.argmax(np.asarray(scores), axis=1), label_set=options.label_set)
    del probs
    n = ev.n_samples
    if len(features) != n:
        raise InputError(f"expected {n} rows (one per sample), got {len(features)}", field="features")
    columns = [c for c in features.columns if c != "sample_id"]
    if not columns:
        raise InputError("no feature columns (besides sample_id)", field="features")
    unknown = [c for c in categorical if c not in columns]
    if unknown:
        raise InputError(f"categorical names unknown feature columns {unknown}", field="categorical")
    overall = ev.evaluate_all(names)
    records: list[dict[str, object]] = []
    for col in columns:
        subsets = split_feature(
            features[col].reset_index(drop=True),
            name=str(col),
            n_quantiles=split.n_quantiles,
            categorical=True if col in categorical else None,
        )
        for sub in subsets:
            testable = min_subset_size <= sub.size < n
            res = (
                permutation_test(ev, sub.indices, names, n_resamples=n_resamples, rng=_subset_rng(seed, sub.feature, sub.label))
                if testable
                else None
            )
            values = ev.evaluate_subset(sub.indices, names) if res is None else {}
            for k in names:
                value = res[k]["value"] if res is not None else values[k]
                diff = value - overall[k]
                records.append(
                    {
                        "feature": sub.feature,
                        "subset": sub.label,
                        "subset_kind": sub.kind,
                        "lower": sub.lower,
                        "upper": sub.upper,
                        "n": sub.size,
                        "metric": k,
                        "higher_is_better": HIGHER_IS_BETTER[k],
                        "overall": overall[k],
                        "value": value,
                        "difference": diff,
                        "shortfall": -diff if HIGHER_IS_BETTER[k] else diff,
                        "null_mean": res[k]["null_mean"] if res is not None else np.nan,
                        "p_value": res[k]["p_value"] if res is not None else np.nan,
                    }
                )
    table = pd.DataFrame.from_records(records)
    table["p_adjusted"] = np.nan
    for k in names:
        rows = table["metric"] == k
        table.loc[rows, "p_adjusted"] = adjust_pvalues(table.loc[rows, "p_value"].to_numpy(dtype=np.float64), options.correction)
    tested = table["p_value"].notna()
    failed = tested & (table["p_adjusted"] <= options.alpha) & (table["shortfall"] > options.min_effect)
    table["status"] = np.where(~tested, "skipped", np.where(failed, "fail", "pass"))
    table["is_worst"] = False
    cand = table[tested]
    if len(cand):
        worst_idx = cand.groupby(["feature", "metric"], sort=False)["shortfall"].idxmax()
        table.loc[worst_idx.to_numpy(), "is_worst"] = True
    return table


def worst_subsets(table: pd.DataFrame, by: Sequence[str] = ("feature", "metric")) -> pd.DataFrame:
    """The key detail of each test: per group of ``by``, the tested subset with the largest
    shortfall against the whole set, with ``n_subsets`` tested and ``n_failed``.

    ``table`` is the output of :func:`subset_performance_tests`; use ``by=("metric",)`` for
    the worst subset of each metric over all features.
    """
    keys = list(by)
    missing = [k for k in [*keys, "shortfall", "status", "p_value"] if k not in table.columns]
    if missing:
        raise InputError(f"not a subset test table: missing columns {missing}", field="table")
    tested = table[table["status"] != "skipped"]
    if tested.empty:
        return pd.DataFrame(columns=[*table.columns, "n_subsets", "n_failed"])
    groups = tested.groupby(keys, sort=False)
    worst = tested.loc[groups["shortfall"].idxmax().to_numpy()].reset_index(drop=True)
    counts = groups.agg(n_subsets=("status", "size"), n_failed=("status", lambda s: int((s == "fail").sum())))
    return worst.merge(counts.reset_index(), on=keys, how="left").drop(columns=["is_worst"], errors="ignore")
