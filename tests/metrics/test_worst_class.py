"""Tests for classwise.metrics.stats and classwise.metrics.worst_class.

References are either scikit-learn or brute force written as plainly as possible here
(explicit loops over samples, pairs and subsets, exact fractions).
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    precision_score,
    recall_score,
    top_k_accuracy_score,
)

from classwise.errors import InputError
from classwise.metrics import worst_class as wc
from classwise.metrics.stats import ClassificationStats, compute_stats

# ----------------------------------------------------------------------------- helpers


def tie_free_scores(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    """float32 scores with all values in a row distinct."""
    base = np.argsort(rng.random((n, c)), axis=1).astype(np.float32)  # a permutation per row
    return base + rng.random((n, 1)).astype(np.float32)


def tie_heavy_scores(rng: np.random.Generator, n: int, c: int, levels: int = 3) -> np.ndarray:
    return rng.integers(0, levels, size=(n, c)).astype(np.float32)


def labels_with_support(rng: np.random.Generator, support: list[int]) -> np.ndarray:
    y = np.repeat(np.arange(len(support)), support)
    return rng.permutation(y)


def ref_argmax(row, classes=None) -> int:
    """First (lowest-index) maximum of ``row`` over ``classes`` (all if None)."""
    classes = range(len(row)) if classes is None else sorted(classes)
    best = None
    for j in classes:
        if best is None or row[j] > row[best]:
            best = j
    return best


def ref_rank(row, y: int) -> int:
    return sum(1 for j in range(len(row)) if row[j] > row[y] or (row[j] == row[y] and j < y))


def frac(num: int, den: int) -> Fraction:
    return Fraction(int(num), int(den))


def stats_from_counts(support, correct):
    """Stats of one-hot scores where the first ``correct[c]`` samples of class c are right."""
    c = len(support)
    y = np.repeat(np.arange(c), support)
    pred = y.copy()
    for cls in range(c):
        pred[np.flatnonzero(y == cls)[correct[cls] :]] = (cls + 1) % c
    return compute_stats(np.eye(c)[pred], y)


# -------------------------------------------------------------------- sklearn agreement

SHAPES = [(1, 1, 0), (40, 2, 1), (200, 5, 2), (500, 10, 3), (37, 20, 4), (1000, 50, 5), (3, 8, 6)]


@pytest.mark.filterwarnings("ignore:A single label was found:UserWarning")
@pytest.mark.parametrize("n,c,seed", SHAPES)
@pytest.mark.parametrize("ties", [False, True])
def test_against_sklearn_argmax_metrics(n, c, seed, ties):
    rng = np.random.default_rng(seed)
    s = tie_heavy_scores(rng, n, c) if ties else tie_free_scores(rng, n, c)
    y = rng.integers(0, c, n)
    st = compute_stats(s, y)
    pred = np.argmax(s, axis=1)  # numpy: first maximum, our documented tie rule
    labels = list(range(c))

    np.testing.assert_array_equal(st.predictions, pred)
    np.testing.assert_array_equal(st.confusion, confusion_matrix(y, pred, labels=labels))
    np.testing.assert_array_equal(st.support, np.bincount(y, minlength=c))
    assert st.n_samples == n and st.n_classes == c
    assert wc.accuracy(st).value == pytest.approx(accuracy_score(y, pred), abs=1e-15)

    with np.errstate(all="ignore"):
        rec = recall_score(y, pred, labels=labels, average=None, zero_division=np.nan)
        prec = precision_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    np.testing.assert_allclose(wc.class_recall(st), rec, rtol=0, atol=1e-15, equal_nan=True)
    np.testing.assert_allclose(wc.class_precision(st), prec, rtol=0, atol=1e-15, equal_nan=True)

    w = wc.worst_class_accuracy(st)
    assert w.value == pytest.approx(np.nanmin(rec), abs=1e-15)
    assert w.classes == (int(np.flatnonzero(rec == np.nanmin(rec))[0]),)
    p = wc.worst_class_precision(st)
    assert p.value == pytest.approx(np.nanmin(prec), abs=1e-15)
    assert p.classes == (int(np.flatnonzero(prec == np.nanmin(prec))[0]),)
    assert p.details == {"n_excluded_never_predicted": int(np.isnan(prec).sum()), **_declared_ties(prec)}
    n_empty = int(np.isnan(rec).sum())
    assert w.details == {**({"n_classes_without_samples": n_empty} if n_empty else {}), **_declared_ties(rec)}


def _declared_ties(values: np.ndarray) -> dict:
    """What a worst-class metric declares of the classes at the minimum of ``values``."""
    tied = [int(c) for c in np.flatnonzero(values == np.nanmin(values))]
    return {"n_tied": len(tied), "tied": tied} if len(tied) > 1 else {}


@pytest.mark.parametrize("n,c,seed", [(200, 3, 0), (500, 10, 1), (300, 25, 2), (2000, 60, 3)])
def test_topk_against_sklearn_without_ties(n, c, seed):
    rng = np.random.default_rng(seed)
    s = tie_free_scores(rng, n, c)
    y = rng.integers(0, c, n)
    st = compute_stats(s, y)
    labels = list(range(c))
    for k in sorted({1, 2, min(5, c - 1), c - 1}):
        expected = top_k_accuracy_score(y, s, k=k, labels=labels)
        assert wc.topk_accuracy(st, k).value == pytest.approx(expected, abs=1e-15)
        per_class = wc.class_topk_recall(st, k)
        for cls in range(c):
            m = y == cls
            if m.any():
                exp_c = top_k_accuracy_score(y[m], s[m], k=k, labels=labels)
                assert per_class[cls] == pytest.approx(exp_c, abs=1e-15)
            else:
                assert np.isnan(per_class[cls])
        worst = wc.worst_class_topk_accuracy(st, k)
        assert worst.value == np.nanmin(per_class)
        assert worst.classes == (int(np.nanargmin(per_class)),)


# --------------------------------------------------------------------- stats, brute force


@pytest.mark.parametrize("seed", range(4))
def test_rank_and_pairwise_wins_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    n, c = 120, 6
    s = tie_heavy_scores(rng, n, c, levels=2 + seed)
    y = rng.integers(0, c, n)
    st = compute_stats(s, y, chunk_rows=17)
    ranks = [ref_rank(s[i], y[i]) for i in range(n)]
    np.testing.assert_array_equal(st.true_class_rank, ranks)
    wins = np.zeros((c, c), dtype=np.int64)
    for i in range(n):
        a = y[i]
        for b in range(c):
            if b != a and ref_argmax(s[i], {a, b}) == a:
                wins[a, b] += 1
    np.testing.assert_array_equal(st.pairwise_wins, wins)
    assert (st.true_class_rank == 0).tolist() == (st.predictions == y).tolist()


def _assert_same_stats(a: ClassificationStats, b: ClassificationStats) -> None:
    for f in ("labels", "predictions", "support", "true_class_rank", "pairwise_wins", "confusion"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def test_stats_invariant_to_chunking_order_dtype_and_layout():
    rng = np.random.default_rng(7)
    # one dominant class with > 255 rows per chunk exercises the byte-lane splitting
    y = np.concatenate([np.zeros(700, dtype=np.int64), rng.integers(0, 11, 300)])
    rng.shuffle(y)
    s = tie_heavy_scores(rng, y.shape[0], 11, levels=4)
    ref = compute_stats(s, y, chunk_rows=1)
    for chunk in (2, 255, 256, 999, 5000):
        _assert_same_stats(ref, compute_stats(s, y, chunk_rows=chunk))
    _assert_same_stats(ref, compute_stats(s.astype(np.float16), y))
    _assert_same_stats(ref, compute_stats(s.astype(np.float64), y.astype(np.int32)))
    _assert_same_stats(ref, compute_stats(np.asfortranarray(s), y))
    # labels already sorted takes the no-gather path
    order = np.argsort(y, kind="stable")
    st_sorted = compute_stats(s[order], y[order], chunk_rows=300)
    np.testing.assert_array_equal(st_sorted.pairwise_wins, ref.pairwise_wins)
    np.testing.assert_array_equal(st_sorted.true_class_rank, ref.true_class_rank[order])


def test_many_classes_rank_counts_more_than_255_words():
    # C > 8 * 255 columns: the per-row count is done in several uint64 blocks
    rng = np.random.default_rng(3)
    n, c = 40, 2100
    s = tie_heavy_scores(rng, n, c, levels=50)
    y = rng.integers(0, c, n)
    st = compute_stats(s, y)
    np.testing.assert_array_equal(st.true_class_rank, [ref_rank(s[i], y[i]) for i in range(n)])


def test_stats_frozen_read_only_and_input_untouched():
    y = np.array([0, 1, 1])
    s = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    st = compute_stats(s, y)
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.n_classes = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        st.labels[0] = 1
    assert y.flags.writeable and y.tolist() == [0, 1, 1]


# -------------------------------------------------------------------- hand-worked ties


def test_hand_worked_argmax_and_rank_ties():
    s = np.array(
        [
            [1.0, 1.0, 0.0],  # y=1: tie with class 0 -> predicted 0, rank 1
            [1.0, 1.0, 0.0],  # y=0: tie with class 1 -> predicted 0, rank 0
            [2.0, 2.0, 2.0],  # y=2: all tied -> rank 2
            [0.0, 3.0, 3.0],  # y=1: tie with class 2 (higher index) -> rank 0
        ],
        dtype=np.float32,
    )
    y = np.array([1, 0, 2, 1])
    st = compute_stats(s, y)
    assert st.predictions.tolist() == [0, 0, 0, 1]
    assert st.true_class_rank.tolist() == [1, 0, 2, 0]
    assert wc.accuracy(st).value == 0.5
    assert wc.topk_accuracy(st, 2).value == 0.75
    assert wc.topk_accuracy(st, 3).value == 1.0
    # wins[a, b]: samples of a where a beats b in {a, b}
    expected = np.zeros((3, 3), dtype=np.int64)
    expected[1, 0] = 1  # row 3 (s1 > s0); row 0 loses the 0/1 tie
    expected[1, 2] = 2  # row 0 (1 > 0) and row 3 (tie, 1 < 2)
    expected[0, 1] = 1  # row 1: tie, 0 < 1
    expected[0, 2] = 1  # row 1: 1 > 0
    # row 2 (y=2): ties with 0 and 1, both lower -> 2 wins neither pair
    np.testing.assert_array_equal(st.pairwise_wins, expected)


def test_hand_worked_topk_ties_go_to_lower_index():
    s = np.array([[0.0, 2.0, 2.0, 2.0]] * 3, dtype=np.float32)
    y = np.array([1, 2, 3])
    st = compute_stats(s, y)
    assert st.true_class_rank.tolist() == [0, 1, 2]
    rec2 = wc.class_topk_recall(st, 2)
    assert np.isnan(rec2[0]) and rec2[1:].tolist() == [1.0, 1.0, 0.0]
    r = wc.worst_class_topk_accuracy(st, 2)
    assert (r.value, r.classes) == (0.0, (3,))
    assert r.details == {"n_classes_without_samples": 1}
    assert wc.worst_class_topk_accuracy(st, 3).value == 1.0
    assert wc.topk_accuracy(st, 10).value == 1.0  # k >= C: everything is in the top k


def test_logits_are_compared_without_softmax():
    # float32 softmax of these rows underflows classes 1 and 2 to exactly 0 (a false tie)
    s = np.array([[0.0, -200.0, -210.0], [0.0, -200.0, -210.0]], dtype=np.float32)
    y = np.array([2, 1])
    st = compute_stats(s, y)
    assert st.true_class_rank.tolist() == [2, 1]
    assert st.pairwise_wins[1, 2] == 1 and st.pairwise_wins[2, 1] == 0


def test_infinite_scores_follow_the_tie_rule():
    s = np.array([[-np.inf, -np.inf, 0.0], [np.inf, np.inf, 0.0]])
    y = np.array([1, 1])
    st = compute_stats(s, y)
    assert st.true_class_rank.tolist() == [2, 1]
    assert st.predictions.tolist() == [2, 0]


def test_worst_ties_go_to_lowest_index_and_pair():
    # the true class always scores 0 and every other class 1: every recall, every
    # restricted pair accuracy and every predicted class's precision is 0.
    s = 1.0 - np.eye(3)[[0, 0, 1, 1, 2, 2]]
    y = np.array([0, 0, 1, 1, 2, 2])
    st = compute_stats(s, y)
    assert st.predictions.tolist() == [1, 1, 0, 0, 0, 0]
    assert wc.worst_class_accuracy(st).classes == (0,)
    # each tie is declared: the lowest index is the tie rule's pick, not a finding
    assert wc.worst_class_accuracy(st).details == {"n_tied": 3, "tied": [0, 1, 2]}
    wcp = wc.worst_class_precision(st)  # classes 0 and 1 at 0.0, class 2 never predicted
    assert (wcp.value, wcp.classes, wcp.details) == (0.0, (0,), {"n_excluded_never_predicted": 1, "n_tied": 2, "tied": [0, 1]})
    assert wc.worst_pair_accuracy(st).classes == (0, 1)
    assert wc.worst_pair_accuracy(st).details == {"n_tied": 3, "tied": [[0, 1], [0, 2], [1, 2]]}
    assert wc.worst_pair_accuracy(st, balanced=True).classes == (0, 1)
    assert wc.worst_n_class_recall(st, 2).classes == (0, 1)
    assert wc.worst_n_class_recall(st, 2).details == {"n_tied": 3, "tied": [0, 1, 2]}  # 2 of 3 tied at 0
    assert wc.worst_n_class_recall_exact(st, 2).classes == (0, 1)
    # reversed, the tie is between classes 1 and 2 (class 0 is now perfect)
    s2 = np.eye(3)[[0, 0, 2, 2, 1, 1]]
    st2 = compute_stats(s2, y)
    assert wc.worst_class_accuracy(st2).classes == (1,)
    assert wc.worst_pair_accuracy(st2).classes == (1, 2)


# -------------------------------------------------------------------- W2CA brute force


def brute_pair(s, y, balanced):
    c = s.shape[1]
    support = np.bincount(y, minlength=c)
    best = None
    for a, b in itertools.combinations(range(c), 2):
        if support[a] == 0 or support[b] == 0:
            continue
        correct = {a: 0, b: 0}
        for i in range(len(y)):
            if y[i] in (a, b) and ref_argmax(s[i], {a, b}) == y[i]:
                correct[y[i]] += 1
        if balanced:
            v = (frac(correct[a], support[a]) + frac(correct[b], support[b])) / 2
        else:
            v = frac(correct[a] + correct[b], support[a] + support[b])
        if best is None or v < best[0]:
            best = (v, (a, b), [[a, b]])
        elif v == best[0]:
            best[2].append([a, b])
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("balanced", [False, True])
def test_worst_pair_brute_force(seed, balanced):
    rng = np.random.default_rng(100 + seed)
    c = int(rng.integers(2, 8))
    support = rng.integers(0 if seed % 2 else 1, 6, c).tolist()
    support[0] = support[1] = max(support[0], 1)
    y = labels_with_support(rng, support)
    s = tie_heavy_scores(rng, y.shape[0], c, levels=3)
    st = compute_stats(s, y)
    value, pair, tied = brute_pair(s, y, balanced)
    got = wc.worst_pair_accuracy(st, balanced=balanced)
    assert got.value == float(value)
    assert got.classes == pair
    n_empty = support.count(0)
    declared = {"n_tied": len(tied), "tied": tied} if len(tied) > 1 else {}
    assert got.details == ({"n_classes_without_samples": n_empty} if n_empty else {}) | declared


def test_worst_pair_balanced_differs_from_pooled():
    # supports 1, 9, 1.  wins: (0,1): 0 and 9; (0,2): 1 and 1; (1,2): 5 and 1.
    s = np.array(
        [[1.0, 2.0, 0.0]]  # y=0: loses to 1, beats 2
        + [[0.0, 2.0, 1.0]] * 5  # y=1: beats 0 and 2
        + [[0.0, 1.0, 2.0]] * 4  # y=1: beats 0, loses to 2
        + [[0.0, 1.0, 2.0]]  # y=2: beats 0 and 1
    )
    y = np.array([0] + [1] * 9 + [2])
    st = compute_stats(s, y)
    pooled = wc.worst_pair_accuracy(st)  # pairs: 9/10, 2/2, 6/10
    assert (pooled.classes, pooled.value) == ((1, 2), 0.6)
    balanced = wc.worst_pair_accuracy(st, balanced=True)  # 1/2, 1, (5/9 + 1)/2
    assert (balanced.classes, balanced.value) == ((0, 1), 0.5)


# -------------------------------------------------------------- WnCR brute force


def brute_wncr(st, n, k):
    valid = [c for c in range(st.n_classes) if st.support[c] > 0]
    hits = [int(np.count_nonzero((st.labels == c) & (st.true_class_rank < k))) for c in range(st.n_classes)]
    best = min(frac(sum(hits[c] for c in sub), sum(int(st.support[c]) for c in sub)) for sub in itertools.combinations(valid, n))
    return best, hits


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("balanced", [False, True])
def test_wncr_exact_brute_force(seed, balanced):
    rng = np.random.default_rng(200 + seed)
    c = int(rng.integers(2, 8))
    support = [4] * c if balanced else rng.integers(1, 12, c).tolist()
    if not balanced and seed % 3 == 0:
        support[int(rng.integers(c))] = 0  # an empty class, excluded
    y = labels_with_support(rng, support)
    s = tie_heavy_scores(rng, y.shape[0], c, levels=3)
    st = compute_stats(s, y)
    n_valid = sum(1 for v in support if v > 0)
    for k in (1, 2):
        for n in range(1, n_valid + 1):
            best, hits = brute_wncr(st, n, k)
            exact = wc.worst_n_class_recall_exact(st, n, k)
            heur = wc.worst_n_class_recall(st, n, k)
            assert exact.value == float(best), (n, k)
            assert len(set(exact.classes)) == n
            assert frac(sum(hits[c] for c in exact.classes), sum(support[c] for c in exact.classes)) == best
            assert heur.value >= exact.value
            # heuristic: the n individually worst classes (recall, then index), pooled
            valid = [cl for cl in range(c) if support[cl] > 0]
            worst = sorted(valid, key=lambda cl: (frac(hits[cl], support[cl]), cl))[:n]
            assert heur.classes == tuple(worst)
            assert heur.value == float(frac(sum(hits[cl] for cl in worst), sum(support[cl] for cl in worst)))
            if balanced:
                assert heur.value == exact.value
                assert heur.classes == exact.classes


def test_wncr_heuristic_is_only_an_upper_bound_on_unbalanced_sets():
    # recalls 0 (100 samples), 0.1 (1000), 0.2 (5): the heuristic pools the two
    # individually worst classes (1/11); pooling the big bad class with the tiny one is worse.
    st = stats_from_counts([100, 1000, 5], [0, 100, 1])
    heur = wc.worst_n_class_recall(st, 2)
    exact = wc.worst_n_class_recall_exact(st, 2)
    assert (heur.classes, heur.value) == ((0, 1), 100 / 1100)
    assert (exact.classes, exact.value) == ((0, 2), 1 / 105)


@pytest.mark.parametrize("seed", range(5))
def test_wncr_exact_brute_force_widely_unbalanced(seed):
    # supports spanning two orders of magnitude: Dinkelbach needs several steps here
    rng = np.random.default_rng(400 + seed)
    c = 10
    support = (np.exp(rng.uniform(0, 5.5, c)).astype(int) + 1).tolist()
    correct = rng.binomial(support, rng.uniform(0, 1, c)).tolist()
    st = stats_from_counts(support, correct)
    for n in range(1, c + 1):
        best = min(
            frac(sum(correct[i] for i in sub), sum(support[i] for i in sub)) for sub in itertools.combinations(range(c), n)
        )
        exact = wc.worst_n_class_recall_exact(st, n)
        assert exact.value == float(best), n
        assert frac(sum(correct[i] for i in exact.classes), sum(support[i] for i in exact.classes)) == best


# ---------------------------------------------------------- superclasses brute force


@pytest.mark.parametrize("seed", range(6))
def test_superclasses_brute_force(seed):
    rng = np.random.default_rng(300 + seed)
    c = int(rng.integers(3, 8))
    support = rng.integers(0, 6, c).tolist()
    support[0] = max(support[0], 1)
    y = labels_with_support(rng, support)
    s = tie_heavy_scores(rng, y.shape[0], c, levels=3)
    st = compute_stats(s, y)
    supers = {}
    for i in range(int(rng.integers(1, 5))):
        size = int(rng.integers(1, c + 1))
        supers[f"s{i}"] = rng.choice(c, size=size, replace=False).tolist()
    supers["first"] = [0]  # guarantees one non-empty superclass
    best_a = best_r = None
    n_empty = 0
    for name, members in supers.items():
        rows = [i for i in range(len(y)) if y[i] in members]
        if not rows:
            n_empty += 1
            continue
        acc = frac(sum(ref_argmax(s[i], members) == y[i] for i in rows), len(rows))
        rec = frac(sum(ref_argmax(s[i]) == y[i] for i in rows), len(rows))
        assert rec <= acc
        if best_a is None or acc < best_a[0]:
            best_a = (acc, name, [name])
        elif acc == best_a[0]:
            best_a[2].append(name)
        if best_r is None or rec < best_r[0]:
            best_r = (rec, name, [name])
        elif rec == best_r[0]:
            best_r[2].append(name)
    got_a = wc.worst_superclass_accuracy(s, st, supers)
    got_r = wc.worst_superclass_recall(st, supers)
    assert (got_a.value, got_a.classes) == (float(best_a[0]), (best_a[1],))
    assert (got_r.value, got_r.classes) == (float(best_r[0]), (best_r[1],))
    expected_details = {"n_superclasses_without_samples": n_empty} if n_empty else {}
    for got, best in ((got_a, best_a), (got_r, best_r)):
        declared = {"n_tied": len(best[2]), "tied": best[2]} if len(best[2]) > 1 else {}
        assert got.details == expected_details | declared


def test_superclass_restricted_argmax_ties_and_pooling():
    # superclass {1, 2}; sample 0 (y=2) ties 1 and 2 -> restricted argmax 1 (miss);
    # samples 1-3 (y=1) have class 0 highest: unrestricted misses, restricted hits.
    s = np.array([[0.0, 5.0, 5.0], [9.0, 1.0, 0.0], [9.0, 1.0, 0.0], [9.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    y = np.array([2, 1, 1, 1, 0])
    st = compute_stats(s, y)
    supers = {"animals": [2, 1], "things": [0]}
    a = wc.worst_superclass_accuracy(s, st, supers)
    assert (a.value, a.classes) == (0.75, ("animals",))  # pooled 3/4, not mean(0, 1)
    r = wc.worst_superclass_recall(st, supers)
    assert (r.value, r.classes) == (0.0, ("animals",))


# ------------------------------------------------------------------------------ errors


def test_label_errors_are_informative():
    s = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(InputError, match=r"label 4 at position 1 is out of range.*< 4"):
        compute_stats(s, np.array([0, 4, 1]))
    with pytest.raises(InputError, match=r"label -1 .* out of range"):
        compute_stats(s, np.array([0, -1, 1]))
    with pytest.raises(InputError, match=r"3 rows but labels have length 2"):
        compute_stats(s, np.array([0, 1]))
    with pytest.raises(InputError, match=r"integer class indices, got dtype float64"):
        compute_stats(s, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(InputError, match=r"labels.*1-D"):
        compute_stats(s, np.zeros((3, 1), dtype=int))


def test_score_errors_are_informative():
    y = np.array([0, 1])
    with pytest.raises(InputError, match=r"2-D array.*got shape \(2,\)"):
        compute_stats(np.zeros(2), y)
    with pytest.raises(InputError, match=r"floating-point.*int64"):
        compute_stats(np.zeros((2, 2), dtype=np.int64), y)
    with pytest.raises(InputError, match=r"at least one sample"):
        compute_stats(np.zeros((0, 2)), np.zeros(0, dtype=int))
    with pytest.raises(InputError, match=r"row 1 contains NaN"):
        compute_stats(np.array([[0.0, 1.0], [np.nan, 0.0]]), y)
    with pytest.raises(InputError, match=r"2 columns but n_classes=3"):
        compute_stats(np.zeros((2, 2)), y, n_classes=3)
    with pytest.raises(InputError, match=r"chunk_rows"):
        compute_stats(np.zeros((2, 2)), y, chunk_rows=0)
    assert compute_stats(np.zeros((2, 2)), y, n_classes=2).n_classes == 2


def test_metric_argument_errors():
    s = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    st = compute_stats(s, np.array([0, 1]))
    with pytest.raises(InputError, match=r"superclass 'pets': class index 3 is out of range"):
        wc.worst_superclass_recall(st, {"ok": [0], "pets": [1, 3]})
    with pytest.raises(InputError, match=r"superclass 'pets': class index -1"):
        wc.worst_superclass_accuracy(s, st, {"pets": [-1]})
    with pytest.raises(InputError, match=r"superclass 'pets': class index 1 is listed more than once"):
        wc.worst_superclass_recall(st, {"pets": [1, 1]})
    with pytest.raises(InputError, match=r"superclass 'pets' has no classes"):
        wc.worst_superclass_recall(st, {"pets": []})
    with pytest.raises(InputError, match=r"no superclass has samples"):
        wc.worst_superclass_recall(st, {"empty": [2]})
    with pytest.raises(InputError, match=r"expected shape \(2, 3\)"):
        wc.worst_superclass_accuracy(s[:1], st, {"a": [0]})
    with pytest.raises(InputError, match=r"1 <= n <= 2"):
        wc.worst_n_class_recall(st, 3)
    with pytest.raises(InputError, match=r"1 <= n <= 2"):
        wc.worst_n_class_recall_exact(st, 0)
    with pytest.raises(InputError, match=r"integer >= 1"):
        wc.topk_accuracy(st, 0)
    one = compute_stats(s, np.array([0, 0]))
    with pytest.raises(InputError, match=r"at least 2 class\(es\) with samples, found 1"):
        wc.worst_pair_accuracy(one)


def test_empty_class_details_only_when_present():
    s = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    full = compute_stats(s, np.array([0, 1, 2]))
    assert wc.worst_class_accuracy(full).details == {}
    assert wc.worst_class_accuracy(full).classes == (2,)
    gap = compute_stats(s, np.array([0, 1, 1]))
    for r in (
        wc.worst_class_accuracy(gap),
        wc.worst_n_class_recall(gap, 2),
        wc.worst_n_class_recall_exact(gap, 2),
        wc.worst_pair_accuracy(gap),
    ):
        assert r.details == {"n_classes_without_samples": 1}
        assert 2 not in r.classes
    # both classes with samples have every sample's label in its top 2: a declared tie
    top2 = wc.worst_class_topk_accuracy(gap, 2)
    assert top2.details == {"n_classes_without_samples": 1, "n_tied": 2, "tied": [0, 1]} and 2 not in top2.classes
    assert np.isnan(wc.class_recall(gap)[2])
    # class 2 is never predicted: excluded from WCP
    assert wc.worst_class_precision(gap).details == {"n_excluded_never_predicted": 1}


def test_worst_n_class_rows_are_skipped_at_the_classes_that_hold_samples():
    """A folder with 3 of 6 classes: W{n}CR ranges over the 3, so n >= 3 is trivial and skipped,
    while the top-k rows still count the 6 columns."""
    from classwise.metrics.suite import skipped_worst_class_metrics, worst_class_family

    rng = np.random.default_rng(0)
    labels = np.repeat([0, 2, 4], 5)
    scores = rng.normal(size=(labels.size, 6))
    stats = compute_stats(scores, labels)
    family = worst_class_family(stats, scores, k=2, ns=(2, 3))
    skipped = skipped_worst_class_metrics(6, k=2, ns=(2, 3), with_samples=3)
    assert "W2CR" in family and "W3CR" not in family and "W3CR@2" not in family
    assert set(skipped) == {"W3CR", "W3CR_exact", "W3CR@2"}
    assert skipped["W3CR"].startswith("n = 3 >= 3 classes with samples")
    # the pooled recall of the 2 worst of the 3 classes, by hand
    predicted = scores.argmax(axis=1)
    recalls = sorted((np.mean(predicted[labels == c] == c), c) for c in (0, 2, 4))
    worst_two = [c for _, c in recalls[:2]]
    pooled = np.mean(predicted[np.isin(labels, worst_two)] == labels[np.isin(labels, worst_two)])
    assert family["W2CR"].value == pytest.approx(pooled)
