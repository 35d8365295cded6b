"""Subset splitting, the permutation test and the multiple-comparison corrections."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from classwise.errors import InputError
from classwise.testsuites.classification import SubsetEvaluator, to_probabilities
from classwise.testsuites.subsets import (
    SubsetSplit,
    SubsetTestOptions,
    adjust_pvalues,
    benjamini_hochberg,
    holm,
    permutation_test,
    split_feature,
    subset_performance_tests,
    worst_subsets,
)


def _model(seed: int, n: int, c: int, signal: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    logits = rng.normal(size=(n, c)).astype(np.float32)
    logits[np.arange(n), y] += signal
    return logits, y


# ---------------------------------------------------------------------------- splitting
def test_quantile_split_handles_ties_by_value() -> None:
    rng = np.random.default_rng(0)
    v = np.concatenate([np.zeros(50), rng.integers(1, 4, 30), rng.normal(5, 1, 20)])
    subsets = split_feature(v, name="x", n_quantiles=4)
    members = np.concatenate([s.indices for s in subsets])
    assert np.array_equal(np.sort(members), np.arange(v.size))  # a partition
    which = np.empty(v.size, dtype=int)
    for j, s in enumerate(subsets):
        which[s.indices] = j
        assert s.kind == "quantile" and s.size > 0
        inside = v[s.indices]
        assert (inside >= s.lower).all() and (inside <= s.upper).all()
    for value in np.unique(v):
        assert np.unique(which[v == value]).size == 1  # equal values share a subset
    # deterministic: membership depends on the value only, not on the order
    perm = rng.permutation(v.size)
    shuffled = split_feature(v[perm], name="x", n_quantiles=4)
    assert [s.label for s in shuffled] == [s.label for s in subsets]
    for a, b in zip(shuffled, subsets, strict=True):
        assert np.array_equal(np.sort(perm[a.indices]), b.indices)


def test_quantile_bins_are_equal_without_ties_and_closed_on_the_right_end() -> None:
    v = np.arange(100, dtype=float)
    subsets = split_feature(v, n_quantiles=4)
    assert [s.size for s in subsets] == [25, 25, 25, 25]
    assert subsets[-1].label.endswith("]") and subsets[0].label.endswith(")")
    assert 99 in subsets[-1].indices


def test_categorical_few_values_and_missing() -> None:
    s = pd.Series(["b", "a", None, "b", "c"])
    subsets = split_feature(s, name="cam")
    assert [(x.label, x.kind, x.indices.tolist()) for x in subsets] == [
        ("a", "category", [1]),
        ("b", "category", [0, 3]),
        ("c", "category", [4]),
        ("missing", "missing", [2]),
    ]
    binary = split_feature(np.array([0, 1, 1, 0, 1.0]), n_quantiles=4)  # <= q distinct values: by value
    assert [x.label for x in binary] == ["0.0", "1.0"]
    forced = split_feature(np.arange(10), categorical=True)
    assert len(forced) == 10
    numeric_nan = split_feature(np.array([1.0, np.nan, 2, 3, 4, 5, 6]), n_quantiles=2)
    assert numeric_nan[-1].label == "missing" and numeric_nan[-1].indices.tolist() == [1]


# ---------------------------------------------------------------------------- corrections
def _holm_textbook(p: np.ndarray, alpha: float) -> np.ndarray:
    """Step-down: walk the sorted p-values, reject while p_(k) <= alpha / (m - k + 1)."""
    m = p.size
    reject = np.zeros(m, dtype=bool)
    for k, i in enumerate(np.argsort(p, kind="stable")):
        if p[i] <= alpha / (m - k):
            reject[i] = True
        else:
            break
    return reject


def _bh_textbook(p: np.ndarray, alpha: float) -> np.ndarray:
    """Step-up: the largest k with p_(k) <= k alpha / m; reject the k smallest."""
    m = p.size
    order = np.argsort(p, kind="stable")
    ks = [k for k in range(1, m + 1) if p[order[k - 1]] <= k * alpha / m]
    reject = np.zeros(m, dtype=bool)
    if ks:
        reject[order[: max(ks)]] = True
    return reject


@pytest.mark.parametrize("seed", range(6))
def test_holm_and_bh_match_textbook_procedures(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    p = np.concatenate([rng.uniform(0, 0.02, m // 3), rng.uniform(0, 1, m - m // 3)])
    p[rng.integers(0, m)] = p[0]  # a tie
    h, b = holm(p), benjamini_hochberg(p)
    assert (h >= p).all() and (b >= p - 1e-15).all() and (h <= 1).all() and (b <= h + 1e-15).all()
    for alpha in [0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]:
        assert np.array_equal(h <= alpha, _holm_textbook(p, alpha)), alpha
        assert np.array_equal(b <= alpha, _bh_textbook(p, alpha)), alpha


def test_corrections_known_values_and_nan() -> None:
    p = np.array([0.01, np.nan, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(holm(p), [0.03, np.nan, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(benjamini_hochberg(p), [0.02, np.nan, 0.04, 0.04, 0.02])
    assert np.isnan(adjust_pvalues([np.nan], "bh")).all()
    with pytest.raises(InputError):
        adjust_pvalues([0.1], "bonferroni")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        holm([1.5])


# ---------------------------------------------------------------------------- permutation test
def test_permutation_pvalues_are_calibrated_under_the_null() -> None:
    """200 random subsets of a set, unrelated to correctness: P(p <= a) should be <= a.

    Each fraction is a mean of 200 (nearly independent) indicators, sd <= 0.025 at a = 0.1,
    so the bound a + 0.06 is about 2.5 sd; the draws are seeded, so the test is exact to
    repeat.  A continuous metric (OvO AUC) must also not be grossly conservative.
    """
    logits, y = _model(0, 300, 4)
    ev = SubsetEvaluator.from_scores(logits, y)
    rng = np.random.default_rng(1)
    metrics = ["accuracy", "macro_f1", "auc_ovo"]
    ps = np.array(
        [
            [
                r["p_value"]
                for r in permutation_test(
                    ev,
                    np.sort(rng.choice(300, 60, replace=False)),
                    metrics,
                    n_resamples=99,
                    rng=np.random.default_rng(i),
                ).values()
            ]
            for i in range(200)
        ]
    )
    for a in (0.05, 0.1, 0.2):
        assert ((ps <= a).mean(axis=0) <= a + 0.06).all(), a
    assert (ps[:, 2] <= 0.2).mean() >= 0.1
    assert ps.min() >= 1 / 100  # the permutation p-value is never below 1 / (B + 1)


def test_planted_bad_subset_fails_and_is_the_worst() -> None:
    logits, y = _model(2, 600, 5, signal=2.5)
    rng = np.random.default_rng(3)
    blur = rng.uniform(0, 1, 600)  # the top 25 % of "blur" get random logits: a real failure
    bad = blur >= np.quantile(blur, 0.75)
    logits[bad] = rng.normal(size=(bad.sum(), 5)).astype(np.float32)
    features = pd.DataFrame({"sample_id": np.arange(600).astype(str), "blur": blur, "noise": rng.normal(size=600)})
    table = subset_performance_tests(logits, y, features, options=SubsetTestOptions(n_resamples=199, seed=0))
    top = table[(table["feature"] == "blur") & (table["subset"].str.endswith("]"))]
    for metric in ["macro_f1", "macro_precision", "macro_recall", "accuracy", "auc_ovo", "average_uncertainty"]:
        row = top[top["metric"] == metric].iloc[0]
        assert row["status"] == "fail" and row["is_worst"], metric
        assert row["p_value"] == pytest.approx(1 / 200)
        assert row["shortfall"] > 0.1
    # the unrelated feature does not fail
    assert (table.loc[table["feature"] == "noise", "status"] == "pass").all()
    worst = worst_subsets(table, by=("metric",))
    assert (worst.set_index("metric").loc["accuracy", "subset"]) == top["subset"].iloc[0]
    assert worst.set_index("metric").loc["accuracy", "n_failed"] == 1


def test_null_features_do_not_fail_and_results_are_seeded() -> None:
    logits, y = _model(4, 300, 3)
    rng = np.random.default_rng(5)
    features = pd.DataFrame({f"f{j}": rng.normal(size=300) for j in range(4)})
    features["cat"] = rng.choice(["a", "b", "c"], 300)
    table = subset_performance_tests(logits, y, features, options=SubsetTestOptions(n_resamples=99, seed=7))
    assert (table["status"] == "pass").all()
    # Holm per metric over the 4 * 4 + 3 = 19 subsets
    assert table.groupby("metric").size().eq(19).all()
    again = subset_performance_tests(logits, y, features, options=SubsetTestOptions(n_resamples=99, seed=7))
    pd.testing.assert_frame_equal(table, again)
    # the generator of a (feature, subset) does not depend on the order of the features
    reordered = subset_performance_tests(
        logits, y, features[features.columns[::-1]], options=SubsetTestOptions(n_resamples=99, seed=7)
    )
    key = ["feature", "subset", "metric"]
    a = table.set_index(key)["p_value"]
    b = reordered.set_index(key)["p_value"].loc[a.index]
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_small_and_whole_subsets_are_skipped() -> None:
    logits, y = _model(6, 120, 3)
    features = pd.DataFrame({"const": np.ones(120), "rare": np.r_[np.zeros(110), np.ones(10)]})
    table = subset_performance_tests(
        logits,
        y,
        features,
        split=SubsetSplit(min_subset_size=20),
        options=SubsetTestOptions(n_resamples=20, metrics=["accuracy"]),
    )
    assert table["status"].tolist() == ["skipped", "pass", "skipped"]
    assert table["n"].tolist() == [120, 110, 10]
    assert np.isfinite(table["value"]).all() and table["p_value"].isna().tolist() == [True, False, True]
    assert worst_subsets(table).shape[0] == 1


def test_subset_values_match_direct_evaluation() -> None:
    logits, y = _model(8, 200, 4)
    features = pd.DataFrame({"x": np.random.default_rng(9).normal(size=200)})
    table = subset_performance_tests(logits, y, features, options=SubsetTestOptions(n_resamples=10))
    probs = to_probabilities(logits)
    from classwise.testsuites.classification import classification_metrics

    overall = classification_metrics(probs, y)
    for sub in split_feature(features["x"], name="x"):
        direct = classification_metrics(probs[sub.indices], y[sub.indices])
        rows = table[table["subset"] == sub.label].set_index("metric")
        for k, v in direct.items():
            assert rows.loc[k, "value"] == pytest.approx(v)
            assert rows.loc[k, "overall"] == pytest.approx(overall[k])
            assert rows.loc[k, "difference"] == pytest.approx(v - overall[k])


def test_bad_arguments_raise_input_error() -> None:
    logits, y = _model(0, 50, 3)
    ok = pd.DataFrame({"x": np.arange(50.0)})
    with pytest.raises(InputError):
        subset_performance_tests(logits, y, ok.iloc[:10])
    with pytest.raises(InputError):
        subset_performance_tests(logits, y, pd.DataFrame({"sample_id": np.arange(50)}))
    with pytest.raises(InputError):
        subset_performance_tests(logits, y, ok, split=SubsetSplit(categorical=["nope"]))
    with pytest.raises(InputError):
        subset_performance_tests(logits, y, ok, options={"alpha": 0.1})  # type: ignore[arg-type]
    with pytest.raises(InputError):
        split_feature(np.arange(5.0), n_quantiles=1)


@pytest.mark.parametrize(
    ("record", "values", "field"),
    [
        (SubsetTestOptions, {"correction": "sidak"}, "correction"),
        (SubsetTestOptions, {"metrics": ["f1"]}, "metrics"),
        (SubsetTestOptions, {"n_resamples": 0}, "n_resamples"),
        (SubsetTestOptions, {"alpha": 1.0}, "alpha"),
        (SubsetTestOptions, {"label_set": "some"}, "label_set"),
        (SubsetSplit, {"n_quantiles": 1}, "n_quantiles"),
        (SubsetSplit, {"min_subset_size": 0}, "min_subset_size"),
        (SubsetSplit, {"categorical": "blur"}, "categorical"),
    ],
)
def test_subset_test_records_refuse_bad_values_when_made(record: type, values: dict[str, object], field: str) -> None:
    """The options are checked when the record is made, before any score is read."""
    with pytest.raises(InputError) as err:
        record(**values)
    assert err.value.field == field


def test_subset_test_records_hold_their_sequences_as_tuples() -> None:
    assert SubsetSplit(categorical=["a", "b"]).categorical == ("a", "b")
    assert SubsetTestOptions(metrics=["accuracy"]).metrics == ("accuracy",)
    assert SubsetTestOptions() == SubsetTestOptions(metrics=list(SubsetTestOptions().metrics))
