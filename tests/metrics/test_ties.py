"""Ties are declared, not resolved silently into a finding: a worst class, pair or superclass
that shares its value with others says so in the JSON (``n_tied``, ``tied``) and in the tables,
and the bootstrap's worst-class shares split a tied replicate evenly (checked against brute
force)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from classwise import tables
from classwise.metrics import bootstrap as boot
from classwise.metrics import cfps, kernels
from classwise.metrics.bootstrap import BootstrapSettings
from classwise.metrics.catalogue import MetricParameters
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.stats import compute_stats
from classwise.metrics.suite import evaluate, worst_class_family, worst_class_shares


def _all_correct(n_per_class: int = 3, c: int = 10) -> tuple[np.ndarray, np.ndarray]:
    labels = np.repeat(np.arange(c), n_per_class)
    logits = np.full((labels.size, c), -1.0)
    logits[np.arange(labels.size), labels] = 1.0
    return logits, labels


def _all_wrong(n_per_class: int = 2, c: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Every sample predicted as the next class, its own second: every recall 0, every top-2
    recall 1, every class predicted equally."""
    labels = np.repeat(np.arange(c), n_per_class)
    logits = np.zeros((labels.size, c))
    logits[np.arange(labels.size), (labels + 1) % c] = 1.0
    logits[np.arange(labels.size), labels] = 0.5
    return logits, labels


def test_all_equal_recalls_name_every_class_as_tied() -> None:
    logits, labels = _all_wrong()
    metrics = worst_class_family(compute_stats(logits, labels), logits, k=2, ns=(2,))
    wca = metrics["WCA"]
    assert wca.value == 0.0 and wca.classes == (0,)
    assert wca.details["n_tied"] == 10 and wca.details["tied"] == list(range(10))
    assert metrics["WCP"].details["n_tied"] == 10  # every precision 0
    assert metrics["WCA@2"].details["n_tied"] == 10  # every top-2 recall is 1


def test_tied_classes_equal_a_brute_force_of_the_recalls() -> None:
    rng = np.random.default_rng(4)
    labels = np.repeat(np.arange(6), 4)  # recalls in quarters: ties likely
    logits = rng.normal(size=(labels.size, 6))
    logits[np.arange(labels.size), labels] += rng.choice([0.0, 3.0], size=labels.size)
    stats = compute_stats(logits, labels)
    recall = stats.hits / stats.support
    expected = [c for c in range(6) if recall[c] == recall.min()]
    wca = worst_class_family(stats, logits, ns=(2,))["WCA"]
    assert wca.details.get("tied", [wca.classes[0]]) == expected
    assert wca.classes == (expected[0],)


def test_tied_pairs_and_superclasses_equal_a_brute_force() -> None:
    logits, labels = _all_correct(c=5)
    stats = compute_stats(logits, labels)
    metrics = worst_class_family(stats, logits, superclasses={"a": [0, 1], "b": [2, 3, 4]}, ns=(2,))
    every_pair = [list(pair) for pair in itertools.combinations(range(5), 2)]  # all at accuracy 1
    assert metrics["W2CA"].details["tied"] == every_pair and metrics["W2CA"].details["n_tied"] == 10
    assert metrics["WSupCA"].details["tied"] == ["a", "b"]
    # an untied minimum declares nothing
    logits[0] = [0.0, 2.0, 0.0, 0.0, 0.0]  # one sample of class 0 taken for class 1
    metrics = worst_class_family(compute_stats(logits, labels), logits, superclasses={"a": [0, 1], "b": [2, 3, 4]}, ns=(2,))
    assert "n_tied" not in metrics["WCA"].details and metrics["WCA"].classes == (0,)
    assert "n_tied" not in metrics["W2CA"].details and metrics["W2CA"].classes == (0, 1)


def test_cfps_max_declares_classes_with_equal_false_positives() -> None:
    logits, labels = _all_wrong(c=4)
    confusion = compute_stats(logits, labels).confusion
    result = cfps.cfps_max(confusion)
    assert result.details["n_tied"] == 4 and result.details["tied"] == [0, 1, 2, 3]
    assert evaluate(logits, labels, parameters=MetricParameters(k=2, ns=(2,))).metrics["CFPS_max"].details["tied"] == [0, 1, 2, 3]


def test_a_tied_cell_says_how_many_tie() -> None:
    logits, labels = _all_wrong()
    document = evaluate(logits, labels, parameters=MetricParameters(k=2, ns=(2,))).to_json()
    document["class_names"] = [str(i) for i in range(10)]
    frame = tables.metric_table({"m": document}, ["A", "WCA", "W2CR"])
    assert frame.loc["WCA", "m"] == "0.00 (0; 10 tied)"
    # the two worst of ten tied classes are a choice of the tie rule, and the cell says so
    assert frame.loc["W2CR", "m"] == "0.00 (0, 1; 10 tied)"


@pytest.mark.parametrize("make", [_all_wrong, _all_correct])
def test_no_class_is_the_bootstrap_worst_in_every_replicate_because_of_the_tie_rule(make) -> None:
    logits, labels = make()
    stats = compute_stats(logits, labels)
    replicates = boot.bootstrap_replicates(
        logits,
        stats,
        Probabilities.from_scores(logits, "logits"),
        parameters=MetricParameters(ns=(2,)),
        bootstrap=BootstrapSettings(30),
    )
    shares = worst_class_shares(replicates, 10)
    np.testing.assert_allclose(shares["worst_recall_probability"], np.full(10, 0.1))
    summary = boot.summarize(replicates, confidence=0.95)["WCA"]
    assert summary.worst_probability is not None
    assert [share for _, share in summary.worst_probability] == pytest.approx([0.1] * 5)


def test_tie_shares_equal_a_brute_force_over_the_replicates() -> None:
    rng = np.random.default_rng(7)
    labels = np.repeat(np.arange(5), 4)
    logits = rng.normal(size=(labels.size, 5))
    logits[np.arange(labels.size), labels] += 0.8
    stats = compute_stats(logits, labels)
    b, seed = 25, 5
    replicates = boot.bootstrap_replicates(
        logits,
        stats,
        Probabilities.from_scores(logits, "logits"),
        parameters=MetricParameters(ns=(2,)),
        bootstrap=BootstrapSettings(b, seed=seed),
        pairs=False,
    )
    draws = boot.StratifiedDraws.from_labels(labels, 5, seed)
    expected = {name: np.zeros(5) for name in ("WCA", "WCP", "CFPS_max")}
    for r in range(b):
        idx = draws.indices(r)
        drawn = compute_stats(logits[idx], labels[idx], n_classes=5)
        recall = drawn.hits / drawn.support
        with np.errstate(invalid="ignore", divide="ignore"):
            precision = drawn.precision_hits / drawn.predicted
        false_positives = drawn.predicted - drawn.precision_hits
        for name, values, pick in (
            ("WCA", recall, np.nanmin),
            ("WCP", precision, np.nanmin),
            ("CFPS_max", false_positives, np.max),
        ):
            if name == "CFPS_max" and drawn.errors == 0:
                continue
            tied = np.flatnonzero(values == pick(values))
            expected[name][tied] += 1 / (b * tied.size)
    got = {name: boot.worst_shares(replicates[name], 5) for name in expected}
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], err_msg=name)
    assert any(0 < share % (1 / b) for share in got["WCA"] * b), "no replicate tied: the test would not test ties"


def test_a_tie_of_more_pairs_than_listed_counts_them_all_and_lists_the_first() -> None:
    # a perfect classifier on 50 classes ties all 1,225 pairs at 1: n_tied counts them, tied
    # lists the lexicographically first MAX_TIED_LISTED (the whole list is never built)
    from classwise.metrics import worst_class as wc

    c = 50
    labels = np.repeat(np.arange(c), 2)
    stats = compute_stats(np.eye(c)[labels], labels)
    pairs = [list(pair) for pair in itertools.combinations(range(c), 2)]
    for balanced in (False, True):
        details = wc.worst_pair_accuracy(stats, balanced=balanced).details
        assert details["n_tied"] == len(pairs) and details["tied"] == pairs[: wc.MAX_TIED_LISTED]


def test_equal_shares_rank_by_class_index_whatever_the_order_of_their_replicates() -> None:
    # classes 0 and 1 are each the worst in four replicates, tied with 9, 4, 2 and 6 others, in
    # opposite orders: both shares are exactly 1/10 + 1/5 + 1/3 + 1/7 (their float sums differ in
    # the last bit), so class 0 ranks first and both show the same probability
    from fractions import Fraction

    c, ties = 12, (10, 5, 3, 7)

    def replicate(worst: int, t: int) -> np.ndarray:
        recall = np.ones(c)
        recall[[worst, *[x for x in range(2, c)][: t - 1]]] = 0.0
        return recall

    recalls = np.array([replicate(0, t) for t in ties] + [replicate(1, t) for t in reversed(ties)])
    shares = kernels.tie_shares(recalls, recalls.min(axis=1), list(range(c)))
    assert float(sum(Fraction(1, t) for t in ties)) == pytest.approx(shares[(0,)]) == pytest.approx(shares[(1,)])
    ranked = [(classes, p) for classes, p in boot.worst_probability([(0,)] * len(recalls), top=c, shares=shares)]
    order = [classes for classes, _ in ranked]
    assert order.index((0,)) < order.index((1,))
    assert dict(ranked)[(0,)] == dict(ranked)[(1,)]
    # each reads as an exact sum of its replicates' shares, not as the sum rounded for ranking
    assert dict(ranked)[(0,)] in (shares[(0,)] / len(recalls), shares[(1,)] / len(recalls))


def test_the_shift_summary_and_the_robust_fairness_table_declare_a_tied_worst_class() -> None:
    from classwise.metrics.robust_fairness import robust_fairness
    from classwise.robustness.across_shifts import shift_summary, shift_summary_display

    clean_logits, labels = _all_correct(n_per_class=2, c=4)
    attacked_logits, _ = _all_wrong(n_per_class=2, c=4)
    confusions = {
        shift: {"m": compute_stats(logits, labels).confusion}
        for shift, logits in (("clean", clean_logits), ("pgd", attacked_logits))
    }
    summary = shift_summary(confusions, ["a", "b", "c", "d"])
    assert summary.loc[("pgd", "m"), "worst_class_tied"] == 4  # every class at 0
    display = shift_summary_display(summary)
    assert display.loc["pgd", "m WCA"] == "0.000 (a; 4 tied) -1.000"
    assert display.loc["clean", "m WCA"] == "1.000 (a; 4 tied)"

    fairness = robust_fairness(clean_logits, attacked_logits, labels)
    assert fairness.worst_class_robust_accuracy.tied == 4 and fairness.worst_class_clean_accuracy.tied == 4
    table, data = tables.robust_fairness_table({"m": fairness}, ["a", "b", "c", "d"])
    assert table.loc["m", "worst-class robust A"] == "0.00 (a; 4 tied)"
    assert data.loc["m", "worst_class_robust_accuracy_tied"] == 4
    assert fairness.to_json()["worst_class_robust_accuracy"]["n_tied"] == 4


def _tie_heavy(c: int, supports: list[int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores on three levels: many samples rank classes alike, so pairs tie often."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(c), supports)
    logits = rng.integers(0, 3, size=(labels.size, c)).astype(np.float64)
    logits[np.arange(labels.size), labels] += rng.integers(0, 2, size=labels.size)
    return logits, labels


@pytest.mark.parametrize(
    "make",
    [
        lambda: _all_correct(n_per_class=2, c=6),  # every pair at 1: the pairs without any loss tie
        lambda: _tie_heavy(5, [4, 4, 4, 4, 4], seed=1),  # one support
        lambda: _tie_heavy(6, [3, 5, 2, 4, 6, 3], seed=2),  # supports differ
    ],
)
def test_pair_tie_shares_equal_a_brute_force_over_the_replicates(make) -> None:
    logits, labels = make()
    c = logits.shape[1]
    stats = compute_stats(logits, labels)
    b, seed = 20, 3
    replicates = boot.bootstrap_replicates(
        logits,
        stats,
        Probabilities.from_scores(logits, "logits"),
        parameters=MetricParameters(ns=(2,)),
        bootstrap=BootstrapSettings(b, seed=seed),
    )
    draws = boot.StratifiedDraws.from_labels(labels, c, seed)
    for name in ("W2CA", "W2CA_balanced"):
        expected: dict[tuple[int, int], float] = {}
        for r in range(b):
            idx = draws.indices(r)
            worst = worst_class_family(compute_stats(logits[idx], labels[idx], n_classes=c), logits[idx], ns=(2,))[name]
            tied = [tuple(pair) for pair in worst.details.get("tied", [list(worst.classes)])]
            assert worst.details.get("n_tied", 1) == len(tied)  # every tied pair listed here
            for pair in tied:
                expected[pair] = expected.get(pair, 0.0) + 1 / len(tied)
        got = replicates[name].shares
        assert got is not None
        ranked = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:5]
        summary = boot.worst_probability(replicates[name].worst or [], shares=got)
        assert [(pair, pytest.approx(share / b)) for pair, share in ranked] == summary, name
        for pair, share in got.items():
            assert share == pytest.approx(expected[pair]), (name, pair)


def test_a_transfer_cell_declares_a_tied_worst_class() -> None:
    from classwise.logits_io import ScoresFile
    from classwise.robustness.transfer import transfer_matrix

    clean_logits, labels = _all_correct(n_per_class=2, c=4)
    attacked_logits, _ = _all_wrong(n_per_class=2, c=4)
    ids, names = np.array([f"s{i}" for i in range(labels.size)]), np.array(list("abcd"))
    clean = ScoresFile(clean_logits, labels, "logits", ids, names)
    attacked = ScoresFile(attacked_logits, labels, "logits", ids, names)
    cells = transfer_matrix({"t": clean}, {("s", "pgd", "t"): attacked})
    assert cells.loc[0, "worst_class_tied"] == 4
    assert tables.transfer_matrix_table(cells).loc["s / pgd", "t"] == "0.0000 (a; 4 tied: 0.0000)"
