"""Intervals, the stratified bootstrap and ``classwise compare``.

References: scipy's binomial intervals; for the bootstrap, a naive loop that indexes the
scores with the same draws and calls the metric functions on the resampled data.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from classwise.cli import main
from classwise.errors import InputError
from classwise.logits_io import ScoresFile
from classwise.metrics import bootstrap as boot
from classwise.metrics import cfps, intervals
from classwise.metrics import decisiveness as nelson
from classwise.metrics.bootstrap import BootstrapSettings
from classwise.metrics.catalogue import MetricParameters
from classwise.metrics.compare import align, compare, compare_models, paired_p_value
from classwise.metrics.pair_losses import PairLosses
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.stats import compute_stats
from classwise.metrics.suite import evaluate, worst_class_family, worst_class_shares

NAMES_WITH_WORST = {"WCA", "WCP", "WSupCA", "WSupCR", "W2CA", "W2CA_balanced", "CFPS_max"}


def names_a_worst(name: str) -> bool:
    """Metrics that name a worst class, superclass or pair (WCA@k too)."""
    return name in NAMES_WITH_WORST or name.startswith("WCA@")


FLOAT_SUMS = {"decisiveness", "geometric_accuracy", "robustness", "calibration_slope"}


def _scores(rng: np.random.Generator, support: list[int], signal: float, ties: bool = False):
    labels = rng.permutation(np.repeat(np.arange(len(support)), support))
    logits = rng.normal(size=(labels.size, len(support))).astype(np.float32)
    logits[np.arange(labels.size), labels] += signal * rng.random(labels.size).astype(np.float32)
    if ties:
        logits = np.round(logits)
    return logits, labels.astype(np.int64)


# ----------------------------------------------------------------------------- intervals


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_clopper_pearson_and_wilson_match_scipy(confidence):
    cases = [(0, 1), (1, 1), (0, 10), (10, 10), (3, 50), (49, 50), (17, 23), (250, 1000)]
    k = np.array([c[0] for c in cases])
    n = np.array([c[1] for c in cases])
    low, high = intervals.clopper_pearson(k, n, confidence)
    w_low, w_high = intervals.wilson(k, n, confidence)
    for i, (kk, nn) in enumerate(cases):
        exact = binomtest(kk, nn).proportion_ci(confidence_level=confidence, method="exact")
        score = binomtest(kk, nn).proportion_ci(confidence_level=confidence, method="wilson")
        assert low[i] == pytest.approx(exact.low, abs=1e-9) and high[i] == pytest.approx(exact.high, abs=1e-9)
        assert w_low[i] == pytest.approx(score.low, abs=1e-12) and w_high[i] == pytest.approx(score.high, abs=1e-12)


def test_interval_edge_cases_and_bad_input():
    low, high = intervals.clopper_pearson([0, 2], [0, 4])
    assert np.isnan(low[0]) and np.isnan(high[0]) and 0 < low[1] < 0.5 < high[1] < 1
    for bad in (0, 1, 1.5, -0.1, "x", True):
        with pytest.raises(InputError, match="strictly between 0 and 1"):
            intervals.clopper_pearson(1, 2, bad)
    with pytest.raises(InputError, match="successes <= trials"):
        intervals.clopper_pearson(3, 2)
    with pytest.raises(InputError, match="clopper-pearson, wilson"):
        intervals.proportion_interval(1, 2, 0.95, "agresti")


def test_minimum_bound_of_one_item_is_its_exact_interval_and_brackets_the_minimum():
    low, high = intervals.minimum_bound([7], [20], 0.9)
    exact = binomtest(7, 20).proportion_ci(confidence_level=0.9, method="exact")
    assert (low, high) == pytest.approx((exact.low, exact.high))
    k, n = np.array([40, 31, 45, 38]), np.full(4, 50)
    low, high = intervals.minimum_bound(k, n, 0.95)
    assert low < 31 / 50 < high
    pooled_low, pooled_high = intervals.minimum_bound(k, n, 0.95, n_smallest=2)
    assert pooled_low < (31 + 38) / 100 < pooled_high


# ----------------------------------------------------------------------------- fast = naive


def _naive(logits, labels, draws, replicate, *, superclasses, k, ns, edges):
    idx = draws.indices(replicate)
    scores, y = logits[idx], labels[idx]
    stats = compute_stats(scores, y, n_classes=logits.shape[1])
    out = dict(worst_class_family(stats, scores, superclasses=superclasses, k=k, ns=ns))
    out["CFPS_max"] = cfps.cfps_max(stats.confusion)
    probs = Probabilities.from_scores(scores, "logits")
    reported = nelson.reported_metrics(probs.correct_class_log_prob(y))
    measured = nelson.measured_metrics(probs, y, edges=edges).metrics
    for name in ("decisiveness", "geometric_accuracy", "robustness"):
        out[name] = getattr(reported, name)
        out[f"{name}_measured"] = getattr(measured, name)
    out["calibration_slope"] = nelson.calibration_slope(reported, measured)
    return out


SCENARIOS = {
    "unequal supports, empty classes, ties, superclasses": {
        "support": [5, 9, 0, 12, 7, 1, 6, 0, 4],
        "signal": 1.0,
        "ties": True,
        "superclasses": {"x": [0, 1, 2], "y": [3, 4], "z": [5, 6, 1, 8]},
    },
    "equal supports, many pairs": {"support": [6] * 90, "signal": 3.0, "ties": False, "superclasses": None},
    "unequal supports, many pairs": {"support": [3, 5, 8] * 30, "signal": 4.0, "ties": False, "superclasses": None},
    # 4 of 7 classes have samples: W5CR is trivial (the suite skips it), though 5 < C
    "fewer classes with samples than the n of W{n}CR": {
        "support": [6, 0, 5, 7, 0, 4, 0],
        "signal": 1.0,
        "ties": True,
        "superclasses": None,
    },
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_fast_bootstrap_equals_the_naive_loop(scenario):
    spec = SCENARIOS[scenario]
    rng = np.random.default_rng(len(scenario))
    logits, labels = _scores(rng, spec["support"], spec["signal"], spec["ties"])
    k, ns, seed, b = 2, (2, 5), 11, 12
    stats = compute_stats(logits, labels)
    probs = Probabilities.from_scores(logits, "logits")
    reps = boot.bootstrap_replicates(
        logits,
        stats,
        probs,
        superclasses=spec["superclasses"],
        parameters=MetricParameters(k=k, ns=ns),
        bootstrap=BootstrapSettings(b, seed=seed),
    )
    assert set(reps) == set(
        evaluate(logits, labels, superclasses=spec["superclasses"], parameters=MetricParameters(k=k, ns=ns)).metrics
    )
    draws = boot.StratifiedDraws.from_labels(labels, logits.shape[1], seed)
    edges = nelson.bin_edges(probs.correct_class_prob(labels), gamma=0.005, n_bins=10)
    for r in range(b):
        naive = _naive(logits, labels, draws, r, superclasses=spec["superclasses"], k=k, ns=ns, edges=edges)
        for name, expected in naive.items():
            value = getattr(expected, "value", expected)
            got = reps[name].values[r]
            if name in FLOAT_SUMS:
                assert got == pytest.approx(value, rel=1e-12, nan_ok=True), (name, r)
            else:
                assert got == value, (name, r)
            if reps[name].worst is not None:
                assert reps[name].worst[r] == tuple(expected.classes), (name, r)
    assert {name for name, rep in reps.items() if rep.worst is not None} == {n for n in reps if names_a_worst(n)}


def test_bootstrap_leaves_out_the_n_of_wncr_the_suite_skips_for_classes_without_samples():
    # 4 of 7 classes have samples: W5CR pools every class with samples, so the suite skips it
    # (5 >= 4), and the bootstrap and its exact bounds must not try it (they compared n with C)
    rng = np.random.default_rng(7)
    logits, labels = _scores(rng, [6, 0, 5, 7, 0, 4, 0], 1.0, ties=True)
    evaluation = evaluate(logits, labels, parameters=MetricParameters(k=2, ns=(2, 5)), bootstrap=BootstrapSettings(20, seed=3))
    assert "W5CR" in evaluation.skipped and "W5CR" not in evaluation.metrics
    assert evaluation.bootstrap is not None and set(evaluation.bootstrap) == set(evaluation.metrics)
    hits, support = evaluation.stats.hits[[0, 2, 3, 5]], evaluation.stats.support[[0, 2, 3, 5]]
    low, high = evaluation.bootstrap["W2CR"].ci_bound or (np.nan, np.nan)
    assert (low, high) == intervals.minimum_bound(hits, support, 0.95, n_smallest=2)


@pytest.mark.parametrize("table_factor", [0, 10**9])  # level-2 bounds pair by pair, or from the table
def test_w2ca_candidates_are_pruned_and_stay_exact(monkeypatch, table_factor):
    monkeypatch.setattr("classwise.metrics.pair_losses.TABLE_FACTOR", table_factor)
    rng = np.random.default_rng(5)
    logits, labels = _scores(rng, [8] * 120, 5.0)
    stats = compute_stats(logits, labels)
    pairs = PairLosses(logits, stats)
    draws = boot.StratifiedDraws.from_labels(labels, 120, 3)
    weights = np.stack([draws.weights(r) for r in range(6)], axis=1)[pairs.misclassified]
    result = pairs.replicates(weights)
    assert result.n_candidates[0] < 120 * 119 // 2 / 4  # most pairs were ruled out by the bounds
    for r in range(6):
        idx = draws.indices(r)
        expected = worst_class_family(compute_stats(logits[idx], labels[idx]), logits[idx], ns=())["W2CA"]
        assert (result.pooled[r], tuple(result.pooled_pairs[r])) == (expected.value, expected.classes)


def test_same_seed_same_replicates_whatever_the_threads_and_blocks(monkeypatch):
    rng = np.random.default_rng(2)
    logits, labels = _scores(rng, [7, 4, 9, 5, 6], 1.5)
    stats = compute_stats(logits, labels)
    probs = Probabilities.from_scores(logits, "logits")

    def run(workers, seed=4):
        reps = boot.bootstrap_replicates(
            logits,
            stats,
            probs,
            parameters=MetricParameters(ns=(2,)),
            bootstrap=BootstrapSettings(40, seed=seed),
            workers=workers,
        )
        return {name: rep.values for name, rep in reps.items()}

    one = run(1)
    monkeypatch.setattr(boot, "BLOCK", 7)
    for other in (run(2), run(3)):
        for name in one:
            np.testing.assert_array_equal(one[name], other[name])
    assert not np.array_equal(one["A"], run(1, seed=5)["A"])


def _evaluate_ci(logits, labels, **kwargs):
    ev = evaluate(logits, labels, parameters=MetricParameters(ns=(3,)), bootstrap=BootstrapSettings(200, seed=1), **kwargs)
    return {name: s.ci for name, s in ev.bootstrap.items()}


def test_intervals_shrink_as_samples_per_class_grow():
    rng = np.random.default_rng(8)
    widths = []
    for per_class in (20, 320):
        logits, labels = _scores(rng, [per_class] * 6, 2.0)
        widths.append({name: high - low for name, (low, high) in _evaluate_ci(logits, labels).items()})
    for name in ("A", "WCA", "W3CR", "W2CA", "WCP", "decisiveness", "robustness", "CFPS_max"):
        assert widths[1][name] < widths[0][name] / 2, name


def test_a_metric_without_variance_has_a_zero_width_interval():
    labels = np.repeat(np.arange(5), 8)
    logits = np.eye(5, dtype=np.float32)[labels] * 6.0  # every sample alike and correct
    for name, (low, high) in _evaluate_ci(logits, labels).items():
        if name != "calibration_slope":  # 0/0: reported decisiveness equals robustness
            assert low == high, name


@pytest.mark.parametrize(
    ("arguments", "field"), [((0,), "bootstrap"), ((5, 1.0), "confidence"), ((5, 0.95, -1), "seed"), ((True,), "bootstrap")]
)
def test_bad_bootstrap_settings_are_refused_naming_the_bad_one(arguments, field):
    with pytest.raises(InputError, match=field) as error:
        BootstrapSettings(*arguments)
    assert error.value.field == field


def test_bootstrap_settings_hold_plain_numbers():
    # what a run's JSON writes: numpy integers would not serialise
    settings = BootstrapSettings(np.int64(20), 0.9, np.int64(3))
    assert settings == BootstrapSettings(20, 0.9, 3) and type(settings.replicates) is int and type(settings.seed) is int
    assert settings.to_json()["replicates"] == 20 and BootstrapSettings() == BootstrapSettings(1000, 0.95, 0)


# ----------------------------------------------------------------------------- CLI and compare


def _npz(path: Path, logits, labels, ids=None) -> Path:
    arrays = {"logits": logits, "labels": labels}
    if ids is not None:
        arrays["sample_ids"] = np.asarray(ids)
    np.savez(path, **arrays)
    return path


def test_metrics_cli_bootstrap_output_and_per_class_intervals(tmp_path):
    logits, labels = _scores(np.random.default_rng(3), [15, 12, 18, 10], 1.5)
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"lo": [0, 1], "hi": [2, 3]}))
    npz = _npz(tmp_path / "s.npz", logits, labels)
    out, csv = tmp_path / "m.json", tmp_path / "pc.csv"
    args = ["metrics", str(npz), "--n", "2", "--superclasses", str(groups), "--out", str(out)]
    assert main([*args, "--bootstrap", "50", "--seed", "3", "--per-class", str(csv), "--confidence", "0.9"]) == 0
    result = json.loads(out.read_text())
    assert result["bootstrap"]["replicates"] == 50 and result["bootstrap"]["seed"] == 3
    for name, entry in result["metrics"].items():
        low, high = entry["ci"]
        assert low <= high, name
        shares = entry.get("worst_probability")
        assert (shares is not None) == names_a_worst(name), name
        if shares:
            assert 1 <= len(shares) <= 5 and sum(s["probability"] for s in shares) <= 1 + 1e-12
            assert [s["probability"] for s in shares] == sorted((s["probability"] for s in shares), reverse=True)
    assert result["metrics"]["WSupCA"]["worst_probability"][0]["classes"][0] in ("lo", "hi")
    table = pd.read_csv(csv)
    hits = np.array([np.sum((logits.argmax(1) == labels) & (labels == c)) for c in range(4)])
    for c in range(4):
        exact = binomtest(int(hits[c]), int(table["support"][c])).proportion_ci(confidence_level=0.9)
        assert table["recall_ci_low"][c] == pytest.approx(exact.low, abs=2e-6)
        assert table["recall_ci_high"][c] == pytest.approx(exact.high, abs=2e-6)
        exact = binomtest(int(hits[c]), int(table["predicted"][c])).proportion_ci(confidence_level=0.9)
        assert table["precision_ci_low"][c] == pytest.approx(exact.low, abs=2e-6)
    # Without --bootstrap nothing is added.
    assert main(args) == 0
    plain = json.loads(out.read_text())
    assert "bootstrap" not in plain and not any("ci" in e for e in plain["metrics"].values())


@pytest.mark.parametrize("flags", [["--bootstrap", "0"], ["--bootstrap", "5", "--confidence", "1"], ["--confidence", "0"]])
def test_bad_cli_arguments_exit_2_and_write_nothing(tmp_path, capsys, flags):
    logits, labels = _scores(np.random.default_rng(4), [5, 5, 5], 1.0)
    npz = _npz(tmp_path / "s.npz", logits, labels)
    out, csv = tmp_path / "m.json", tmp_path / "pc.csv"
    assert main(["metrics", str(npz), "--n", "2", "--out", str(out), "--per-class", str(csv), *flags]) == 2
    assert not out.exists() and not csv.exists()
    assert "error" in capsys.readouterr().err


def _scores_file(logits, labels, ids, path="x.npz") -> ScoresFile:
    return ScoresFile(logits, labels, "logits", np.asarray(ids), np.arange(logits.shape[1]).astype(str), path)


def test_compare_with_itself_gives_zero_difference_and_p_value_one():
    logits, labels = _scores(np.random.default_rng(6), [9, 7, 8, 6], 1.5)
    ids = [f"s{i}" for i in range(labels.size)]
    result = compare(
        _scores_file(logits, labels, ids),
        _scores_file(logits, labels, ids),
        parameters=MetricParameters(ns=(2,)),
        bootstrap=BootstrapSettings(60),
    )
    for name, m in result.metrics.items():
        if np.isfinite(m.a):
            assert m.difference == 0.0 and m.p_value == 1.0 and m.ci == (0.0, 0.0), name


def test_compare_matches_samples_by_id_and_pairs_the_draws():
    rng = np.random.default_rng(7)
    logits, labels = _scores(rng, [10, 12, 9], 1.0)
    better = logits.copy()
    better[np.arange(labels.size), labels] += 3.0
    ids = np.array([f"s{i}" for i in range(labels.size)])
    perm = rng.permutation(labels.size)
    a = _scores_file(logits, labels, ids)
    shuffled = _scores_file(better[perm], labels[perm], ids[perm])
    in_order = _scores_file(better, labels, ids)
    np.testing.assert_array_equal(align(a, shuffled).scores, better)
    first = compare(a, shuffled, parameters=MetricParameters(ns=(2,)), bootstrap=BootstrapSettings(80, seed=2))
    second = compare(a, in_order, parameters=MetricParameters(ns=(2,)), bootstrap=BootstrapSettings(80, seed=2))
    assert first.to_json() == second.to_json()
    accuracy = first.metrics["A"]
    assert accuracy.difference > 0 and accuracy.ci[0] > 0 and accuracy.p_value < 0.05


def test_paired_p_value():
    assert paired_p_value(np.zeros(9)) == 1.0
    assert paired_p_value(np.ones(99)) == pytest.approx(2 / 100)
    assert paired_p_value(np.r_[-np.ones(30), np.ones(70)]) == pytest.approx(2 * 31 / 101)


def test_compare_cli_refuses_different_samples_and_writes_nothing(tmp_path, capsys):
    logits, labels = _scores(np.random.default_rng(9), [4, 4, 4], 1.0)
    a = _npz(tmp_path / "a.npz", logits, labels, [f"s{i}" for i in range(12)])
    b = _npz(tmp_path / "b.npz", logits, labels, [f"t{i}" for i in range(12)])
    c = _npz(tmp_path / "c.npz", logits, (labels + 1) % 3, [f"s{i}" for i in range(12)])
    out = tmp_path / "cmp.json"
    for other, field in ((b, "sample_ids"), (c, "labels")):
        assert main(["compare", str(a), str(other), "--n", "2", "--bootstrap", "20", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert field in err and str(other) in err and not out.exists()
    assert main(["compare", str(a), str(a), "--n", "2", "--bootstrap", "0", "--out", str(out)]) == 2
    assert "bootstrap" in capsys.readouterr().err and not out.exists()
    assert main(["compare", str(a), str(a), "--n", "2", "--bootstrap", "20", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["A"]["p_value"] == 1.0


def test_compare_models_pairs_every_model_on_the_same_draws_as_a_naive_loop():
    rng = np.random.default_rng(9)
    logits, labels = _scores(rng, [8, 11, 7, 9], 1.0)
    ids = np.array([f"s{i}" for i in range(labels.size)])
    models = {"lin": logits, "mid": logits + 0.8 * np.eye(4)[labels], "top": logits + 2.0 * np.eye(4)[labels]}
    perm = rng.permutation(labels.size)  # the third file in another row order: matched by id
    files = {
        "lin": _scores_file(models["lin"], labels, ids),
        "mid": _scores_file(models["mid"], labels, ids),
        "top": _scores_file(models["top"][perm], labels[perm], ids[perm]),
    }
    b, seed = 30, 5
    result = compare_models(
        files, parameters=MetricParameters(ns=(2,)), bootstrap=BootstrapSettings(b, confidence=0.9, seed=seed)
    )
    assert list(result) == [("lin", "mid"), ("lin", "top"), ("mid", "top")]
    draws = boot.StratifiedDraws.from_labels(labels, 4, seed)
    resampled = {name: [] for name in models}
    for r in range(b):
        idx = draws.indices(r)
        for name, scores in models.items():
            stats = compute_stats(scores[idx], labels[idx], n_classes=4)
            resampled[name].append({m: v.value for m, v in worst_class_family(stats, scores[idx], ns=(2,)).items()})
    for (a, b_name), comparison in result.items():
        for metric in ("A", "WCA", "W2CR", "W2CA"):
            d = np.array([rb[metric] - ra[metric] for ra, rb in zip(resampled[a], resampled[b_name])])
            got = comparison.metrics[metric]
            assert got.ci == intervals.percentile_interval(d, 0.9), (a, b_name, metric)
            assert got.p_value == paired_p_value(d), (a, b_name, metric)
    assert result[("lin", "top")].metrics["A"].difference > 0
    with pytest.raises(InputError, match="at least two models"):
        compare_models({"lin": files["lin"]}, bootstrap=BootstrapSettings(5))


def test_worst_class_shares_count_each_class_over_the_replicates():
    rng = np.random.default_rng(10)
    logits, labels = _scores(rng, [10, 10, 10, 10], 0.8)
    stats = compute_stats(logits, labels)
    b, seed = 40, 3
    reps = boot.bootstrap_replicates(
        logits,
        stats,
        Probabilities.from_scores(logits, "logits"),
        parameters=MetricParameters(ns=(2,)),
        bootstrap=BootstrapSettings(b, seed=seed),
    )
    shares = worst_class_shares(reps, 4)
    draws = boot.StratifiedDraws.from_labels(labels, 4, seed)
    worst_recall, worst_precision = np.zeros(4), np.zeros(4)
    for r in range(b):
        idx = draws.indices(r)
        family = worst_class_family(compute_stats(logits[idx], labels[idx], n_classes=4), logits[idx], ns=(2,))
        # a replicate in which t classes tie counts 1/t for each (the naive loop reads the ties
        # the whole-sample metric declares)
        for metric, shares_of in (("WCA", worst_recall), ("WCP", worst_precision)):
            tied = family[metric].details.get("tied", list(family[metric].classes))
            shares_of[tied] += 1 / (b * len(tied))
    np.testing.assert_allclose(shares["worst_recall_probability"], worst_recall)
    np.testing.assert_allclose(shares["worst_precision_probability"], worst_precision)
    assert (shares["worst_recall_probability"] > 0).sum() >= 2  # the worst class is not certain here
    with pytest.raises(InputError, match="one worst class index"):
        boot.worst_shares(reps["W2CA"], 4)


def test_leaving_out_the_pairs_leaves_every_other_replicate_unchanged():
    logits, labels = _scores(np.random.default_rng(12), [6, 9, 7, 8], 1.2)
    stats = compute_stats(logits, labels)
    probs = Probabilities.from_scores(logits, "logits")
    every = boot.bootstrap_replicates(
        logits, stats, probs, parameters=MetricParameters(ns=(2,)), bootstrap=BootstrapSettings(20, seed=2)
    )
    without = boot.bootstrap_replicates(
        logits, stats, probs, parameters=MetricParameters(ns=(2,)), bootstrap=BootstrapSettings(20, seed=2), pairs=False
    )
    assert set(every) - set(without) == {"W2CA", "W2CA_balanced"}
    for name, rep in without.items():
        np.testing.assert_array_equal(rep.values, every[name].values, err_msg=name)


def test_the_bootstrap_of_hard_predictions_resamples_only_what_they_can_give():
    # evaluate leaves out what hard predictions cannot give (the score metrics; the top-k ones
    # when fewer than k classes are ranked): their replicates are not computed either, and the
    # others are those of the same draws without top_k, value for value
    rng = np.random.default_rng(11)
    logits, labels = _scores(rng, [9, 7, 8, 6], 1.0)
    one_hot = np.eye(4)[logits.argmax(axis=1)]
    stats = compute_stats(one_hot, labels)
    probabilities = Probabilities.from_scores(one_hot, "logits")
    every = boot.bootstrap_replicates(
        one_hot,
        stats,
        probabilities,
        parameters=MetricParameters(k=2, ns=(2,)),
        bootstrap=BootstrapSettings(30, seed=4),
        pairs=False,
    )
    hard = boot.bootstrap_replicates(
        one_hot,
        stats,
        probabilities,
        parameters=MetricParameters(k=2, ns=(2,)),
        bootstrap=BootstrapSettings(30, seed=4),
        pairs=False,
        top_k=1,
    )
    evaluation = evaluate(
        one_hot, labels, parameters=MetricParameters(k=2, ns=(2,)), top_k=1, bootstrap=BootstrapSettings(30, seed=4)
    )
    assert set(hard) == set(evaluation.metrics) and set(hard) < set(every)
    for name, replicates in hard.items():
        np.testing.assert_array_equal(replicates.values, every[name].values)
