"""The coverage simulation of classwise.metrics.coverage: its known truth and its statistics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from classwise.metrics import coverage as cov


def test_world_truth_matches_brute_force():
    world = cov.World.draw(12, 50, np.random.default_rng(0))
    c, k = 12, cov.CONFUSERS
    bits = (np.arange(2**k)[:, None] >> np.arange(k)[None, :]) & 1
    rate = np.zeros((c, c))  # rate[a, b]: a sample of a ranks b ahead
    for a in range(c):
        for j, b in enumerate(world.confusers[a]):
            rate[a, b] = (world.patterns[a] * bits[:, j]).sum()  # marginal of confuser j
    np.testing.assert_allclose(world.patterns.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.prod(1 - rate, axis=1), world.accuracy)
    pairs = [1 - (rate[a, b] + rate[b, a]) / 2 for a, b in itertools.combinations(range(c), 2)]
    assert world.truth["W2CA"] == pytest.approx(min(pairs))
    assert world.truth["WCA"] == pytest.approx(world.accuracy.min())
    assert world.truth["W10CR"] == pytest.approx(np.sort(world.accuracy)[:10].mean())


def test_statistics_from_pattern_counts_match_sample_by_sample_counting():
    rng = np.random.default_rng(1)
    world = cov.World.draw(15, 20, rng)
    counts = world.sample(rng)
    hits, losses = cov._statistics(world, counts)
    loss = np.zeros((15, 15), dtype=int)  # loss[a, b]: samples of a that rank b ahead
    for a in range(15):
        patterns = np.repeat(np.arange(2**cov.CONFUSERS), counts[a])  # one entry per sample
        assert hits[a] == np.count_nonzero(patterns == 0)
        for j, b in enumerate(world.confusers[a]):
            loss[a, b] += np.count_nonzero((patterns >> j) & 1)
    expected = [loss[a, b] + loss[b, a] for a, b in zip(world.pair_a, world.pair_b, strict=True)]
    np.testing.assert_array_equal(losses, expected)
    assert (loss + loss.T)[np.triu_indices(15, 1)].sum() == losses.sum()  # no confusion left out


def test_a_small_simulation_reports_every_interval():
    result = cov.simulate(30, per_class=20, repetitions=6, replicates=40, confidence=0.9, seed=3)
    for metric in cov.METRICS:
        for name in cov.INTERVALS:
            entry = result["intervals"][metric][name]
            assert entry["coverage"] + entry["missed_below"] + entry["missed_above"] == pytest.approx(1.0)
            assert entry["mean_width"] >= 0
