"""Property-based tests (hypothesis) for the worst-class metrics: the relations the paper
states between them, on small random score matrices with many ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from classwise.metrics import worst_class as wc
from classwise.metrics.stats import compute_stats

SETTINGS = settings(max_examples=150, deadline=None)


@st.composite
def problems(draw):
    """(scores, labels): 1-6 classes, 1-30 samples, integer-valued scores (ties likely)."""
    c = draw(st.integers(1, 6))
    n = draw(st.integers(1, 30))
    levels = draw(st.integers(1, 4))
    flat = draw(st.lists(st.integers(0, levels - 1), min_size=n * c, max_size=n * c))
    labels = draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n))
    return np.array(flat, dtype=np.float32).reshape(n, c), np.array(labels, dtype=np.int64)


@SETTINGS
@given(problems())
def test_n_class_recall_relations(problem):
    scores, labels = problem
    s = compute_stats(scores, labels)
    a = wc.accuracy(s).value
    wca = wc.worst_class_accuracy(s)
    assert wca.value <= a
    m = int(np.count_nonzero(s.support))
    # W1CR = WCA (both variants, same class) and W|C|CR = A
    for fn in (wc.worst_n_class_recall, wc.worst_n_class_recall_exact):
        one = fn(s, 1)
        assert (one.value, one.classes) == (wca.value, wca.classes)
        full = fn(s, m)
        assert full.value == a
        assert sorted(full.classes) == np.flatnonzero(s.support).tolist()
    previous = -1.0
    for n in range(1, m + 1):
        exact = wc.worst_n_class_recall_exact(s, n).value
        heur = wc.worst_n_class_recall(s, n).value
        assert exact <= heur
        assert exact >= previous  # non-decreasing in n
        previous = exact
        if n == 2:  # WnCR <= WnCA (paper, Sec. 2) with n = 2
            assert exact <= wc.worst_pair_accuracy(s).value


@SETTINGS
@given(problems())
def test_topk_relations(problem):
    scores, labels = problem
    s = compute_stats(scores, labels)
    c = s.n_classes
    assert wc.topk_accuracy(s, 1).value == wc.accuracy(s).value
    w1 = wc.worst_class_topk_accuracy(s, 1)
    w = wc.worst_class_accuracy(s)
    assert (w1.value, w1.classes) == (w.value, w.classes)
    prev_a, prev_w = -1.0, -1.0
    for k in range(1, c + 1):
        a_k = wc.topk_accuracy(s, k).value
        w_k = wc.worst_class_topk_accuracy(s, k).value
        assert a_k >= prev_a and w_k >= prev_w and w_k <= a_k
        prev_a, prev_w = a_k, w_k
        m = int(np.count_nonzero(s.support))
        assert wc.worst_n_class_recall_exact(s, m, k).value == a_k
    assert prev_a == 1.0  # k = C: the true class is always in the top C


@SETTINGS
@given(problems(), st.data())
def test_superclass_recall_at_most_accuracy(problem, data):
    scores, labels = problem
    s = compute_stats(scores, labels)
    c = s.n_classes
    members = data.draw(st.lists(st.sets(st.integers(0, c - 1), min_size=1), min_size=1, max_size=4))
    supers = {f"s{i}": sorted(m) for i, m in enumerate(members)}
    supers["covering"] = list(range(c))  # every sample: never all empty
    acc = wc.worst_superclass_accuracy(scores, s, supers)
    rec = wc.worst_superclass_recall(s, supers)
    assert rec.value <= acc.value
    # per superclass too: restricting the argmax can only help
    for name, idx in supers.items():
        one = {name: idx}
        if np.isin(labels, idx).any():
            assert wc.worst_superclass_recall(s, one).value <= wc.worst_superclass_accuracy(scores, s, one).value
    # the all-classes superclass: recall is A and restricted accuracy is A too
    allc = {"all": list(range(c))}
    assert wc.worst_superclass_recall(s, allc).value == wc.accuracy(s).value
    assert wc.worst_superclass_accuracy(scores, s, allc).value == wc.accuracy(s).value


@SETTINGS
@given(problems(), st.integers(1, 40))
def test_stats_do_not_depend_on_chunking(problem, chunk_rows):
    scores, labels = problem
    a = compute_stats(scores, labels)
    b = compute_stats(scores, labels, chunk_rows=chunk_rows)
    for f in ("predictions", "true_class_rank", "pairwise_wins", "confusion"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    # consistency between the tables
    assert ((a.true_class_rank == 0) == (a.predictions == labels)).all()
    wins = a.pairwise_wins
    # for a != b, wins[a, b] counts samples of a: at most support[a]
    assert (wins <= a.support[:, None]).all() and (np.diagonal(wins) == 0).all()
