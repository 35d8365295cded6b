"""Model ranks with bootstrap intervals, pairwise differences and letter groups.

References: the package's bootstrap of every metric (:func:`bootstrap_replicates`, the draws of
``classwise compare``) on logits built to have the same correctness, the worst-class metric
functions, a loop over replicates with scipy's ``rankdata``, ``compare``'s interval and p-value
functions per pair, and hand-worked letter displays.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import rankdata

from classwise.errors import InputError
from classwise.metrics import bootstrap as boot
from classwise.metrics import worst_class as wc
from classwise.metrics.bootstrap import BootstrapSettings
from classwise.metrics.catalogue import MetricParameters
from classwise.metrics.compare import paired_p_value
from classwise.metrics.intervals import percentile_interval
from classwise.metrics.outcomes import SampleOutcomes
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.ranking import RANKING_COLUMNS, compact_letter_display, model_ranking, rank_models
from classwise.metrics.stats import compute_stats

C, PER_CLASS = 12, 20


def _models(rng: np.random.Generator, accuracies: list[float]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Labels and per-model correctness on shared samples (a shared difficulty per sample)."""
    labels = rng.permutation(np.repeat(np.arange(C), PER_CLASS))
    difficulty = rng.random(labels.size)
    correct = {}
    for m, accuracy in enumerate(accuracies):
        per_class = np.clip(accuracy + rng.normal(0, 0.12, C), 0.02, 0.98)
        correct[f"m{m}"] = difficulty < per_class[labels]
    return labels, correct


def _outcomes(labels: np.ndarray, correct: dict[str, np.ndarray]) -> dict[str, SampleOutcomes]:
    ids = np.array([f"s{i}" for i in range(labels.size)])
    return {name: SampleOutcomes.from_correct(ids, labels, hit) for name, hit in correct.items()}


def _logits(labels: np.ndarray, correct: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Logits whose argmax is the label exactly where ``correct``."""
    logits = rng.normal(size=(labels.size, C)).astype(np.float32)
    logits[np.arange(labels.size), labels] = np.where(correct, 10.0, -10.0)
    return logits


def test_replicates_are_those_of_the_package_bootstrap_and_values_those_of_the_metrics():
    rng = np.random.default_rng(0)
    labels, correct = _models(rng, [0.6, 0.7, 0.75])
    ranking = rank_models(_outcomes(labels, correct), ns=(3, 100), replicates=150, seed=4)
    assert set(ranking.replicate_values) == {"A", "WCA", "W3CR"}  # n = 100 >= 12 classes: W100CR is A
    for m, (name, hit) in enumerate(correct.items()):
        logits = _logits(labels, hit, rng)
        stats = compute_stats(logits, labels)
        reps = boot.bootstrap_replicates(
            logits,
            stats,
            Probabilities.from_scores(logits, "logits"),
            parameters=MetricParameters(ns=(3,)),
            bootstrap=BootstrapSettings(150, seed=4),
            pairs=False,
        )
        values = {"A": wc.accuracy(stats), "WCA": wc.worst_class_accuracy(stats), "W3CR": wc.worst_n_class_recall(stats, 3)}
        for metric in ("A", "WCA", "W3CR"):
            np.testing.assert_array_equal(ranking.replicate_values[metric][:, m], reps[metric].values)
            row = ranking.table[(ranking.table["metric"] == metric) & (ranking.table["model"] == name)]
            assert row["value"].iloc[0] == values[metric].value


def test_ranks_intervals_and_pairs_match_a_loop_over_replicates_and_pairs():
    rng = np.random.default_rng(1)
    labels, correct = _models(rng, [0.55, 0.6, 0.62, 0.8])
    ranking = rank_models(_outcomes(labels, correct), ns=(3,), replicates=200, confidence=0.9, seed=2)
    assert list(ranking.table.columns) == list(RANKING_COLUMNS)
    for metric, reps in ranking.replicate_values.items():
        ranks = np.array([rankdata(-row, method="average") for row in reps])  # 1 = best, ties averaged
        rows = ranking.table[ranking.table["metric"] == metric].set_index("model")
        for m, name in enumerate(ranking.models):
            ordered = np.sort(ranks[:, m])
            # the 5 % and 95 % quantiles, rounded outwards to ranks a replicate gave
            assert rows.loc[name, "rank_low"] == ordered[int(np.floor(0.05 * 199))]
            assert rows.loc[name, "rank_high"] == ordered[int(np.ceil(0.95 * 199))]
        pairs = ranking.pairs[ranking.pairs["metric"] == metric]
        for (a, b), (_, pair) in zip(itertools.combinations(range(len(ranking.models)), 2), pairs.iterrows()):
            differences = reps[:, b] - reps[:, a]
            low, high = percentile_interval(differences, 0.9)
            assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((low, high), rel=1e-12, abs=1e-15)
            assert pair["p_value"] == pytest.approx(paired_p_value(differences), rel=1e-12)
            assert pair["distinguishable"] == (low > 0 or high < 0)
            assert (pair["a"], pair["b"]) == (ranking.models[a], ranking.models[b])
        # the letters separate exactly the distinguishable pairs
        letters = rows["group"].to_dict()
        for _, pair in pairs.iterrows():
            share = bool(set(letters[pair["a"]]) & set(letters[pair["b"]]))
            assert share == (not pair["distinguishable"])
    accuracy = ranking.table[ranking.table["metric"] == "A"]
    assert accuracy["model"].iloc[0] == "m3" and accuracy["group"].iloc[0] == "a"  # best first, letter a


def test_equal_models_tie_and_cannot_be_told_apart():
    rng = np.random.default_rng(2)
    labels, correct = _models(rng, [0.5, 0.9])
    correct["twin"] = correct["m1"].copy()
    table = model_ranking(_outcomes(labels, correct), ns=(3,), replicates=100)
    for metric, rows in table.groupby("metric"):
        rows = rows.set_index("model")
        assert rows.loc["m1", "rank"] == rows.loc["twin", "rank"] == 1.5, metric
        assert rows.loc["m1", "n_tied"] == 2 and rows.loc["m0", "n_tied"] == 1
        assert rows.loc["m1", "group"] == rows.loc["twin", "group"]
        assert rows.loc["m1", "rank_low"] == rows.loc["m1", "rank_high"] == 1.5  # tied in every replicate too


def test_compact_letter_display_hand_worked():
    # three models best first, only the first and the last told apart: a | ab | b
    different = np.zeros((3, 3), dtype=bool)
    different[0, 2] = different[2, 0] = True
    assert compact_letter_display([0, 1, 2], different) == ["a", "ab", "b"]
    # four models, 0 differs from 2 and 3, 1 from 3: groups {0, 1}, {1, 2}, {2, 3}
    different = np.zeros((4, 4), dtype=bool)
    for i, j in ((0, 2), (0, 3), (1, 3)):
        different[i, j] = different[j, i] = True
    assert compact_letter_display([0, 1, 2, 3], different) == ["a", "ab", "bc", "c"]
    assert compact_letter_display([0, 1], np.zeros((2, 2), dtype=bool)) == ["a", "a"]
    assert compact_letter_display([1, 0], ~np.eye(2, dtype=bool)) == ["b", "a"]  # letters follow the order


def test_models_are_compared_on_the_samples_they_share():
    rng = np.random.default_rng(3)
    labels, correct = _models(rng, [0.6, 0.7])
    outcomes = _outcomes(labels, correct)
    more = SampleOutcomes.from_correct(
        np.r_[outcomes["m1"].sample_ids, ["x1", "x2"]], np.r_[labels, [0, 1]], np.r_[correct["m1"], [True, True]]
    )
    table = model_ranking({"m0": outcomes["m0"], "m1": more}, ns=(3,), replicates=50)
    assert (table["n_samples"] == labels.size).all()
    reference = model_ranking(outcomes, ns=(3,), replicates=50)
    np.testing.assert_array_equal(table["rank_low"], reference["rank_low"])
    relabelled = SampleOutcomes.from_correct(outcomes["m1"].sample_ids, (labels + 1) % C, correct["m1"], source="m1.npz")
    with pytest.raises(InputError, match="labels"):
        model_ranking({"m0": outcomes["m0"], "m1": relabelled}, replicates=20)
    twice = SampleOutcomes.from_correct(np.r_[outcomes["m1"].sample_ids[:-1], ["s0"]], labels, correct["m1"])
    with pytest.raises(InputError, match="duplicate"):
        model_ranking({"m0": outcomes["m0"], "m1": twice}, replicates=20)
    with pytest.raises(InputError, match="two models"):
        model_ranking({"m0": outcomes["m0"]}, replicates=20)
