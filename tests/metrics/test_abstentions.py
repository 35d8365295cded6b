"""Abstentions and hard top-k predictions in the metrics: a hand-worked example, and random
files against a loop over samples and classes written without the library (issue #28)."""

from __future__ import annotations

import numpy as np
import pytest

from classwise.logits_io import ranked_scores
from classwise.metrics.catalogue import HARD_PREDICTIONS_REASON, MetricParameters
from classwise.metrics.stats import compute_stats
from classwise.metrics.suite import evaluate, per_class_table


def _evaluate(predictions: np.ndarray, labels: np.ndarray, c: int, **options):
    scores, abstained = ranked_scores(predictions, c)
    top_k = 1 if predictions.ndim == 1 else predictions.shape[1]
    return evaluate(scores, labels, top_k=top_k, abstained=abstained, **options)


def test_a_hand_worked_example_with_two_abstentions() -> None:
    # classes cat 0, dog 1, eel 2; two samples each; the model abstains on b (dog) and d (cat)
    #   a cat->cat  b dog->?  c eel->dog  d cat->?  e dog->dog  f eel->eel
    labels = np.array([0, 1, 2, 0, 1, 2])
    predictions = np.array([0, -1, 1, -1, 1, 2])
    evaluation = _evaluate(predictions, labels, 3, parameters=MetricParameters(k=2, ns=(1, 2)))
    metrics = evaluation.metrics
    # 3 of 6 right: both abstentions are errors
    assert metrics["A"].value == 3 / 6
    # recall: cat 1/2 (d abstained), dog 1/2 (b abstained), eel 1/2 (c wrong): all tie at 1/2
    assert metrics["WCA"].value == 1 / 2 and metrics["WCA"].classes == (0,)
    # precision over the samples that name a class: cat 1/1, dog 1/2 (a right, c wrong), eel 1/1
    assert metrics["WCP"].value == 1 / 2 and metrics["WCP"].classes == (1,)
    # one misclassification (c, as dog): dog has every false positive; abstentions are not errors of a class
    assert metrics["CFPS_max"].value == 1.0 and metrics["CFPS_max"].classes == (1,)
    assert metrics["CFPS_max"].details["n_errors"] == 1
    stats = evaluation.stats
    np.testing.assert_array_equal(stats.confusion, [[1, 0, 0], [0, 1, 0], [0, 1, 1]])  # b and d are in no cell
    assert stats.n_abstained == 2 and stats.predictions.tolist() == [0, -1, 1, -1, 1, 2]
    document = evaluation.to_json()
    assert document["coverage"] == {"value": 4 / 6, "n_abstained": 2}
    for name in ("W2CA", "A@2", "WCA@2", "decisiveness"):
        assert document["skipped"][name] == HARD_PREDICTIONS_REASON
    table = per_class_table(stats, k=2)
    assert table["coverage"].tolist() == [1 / 2, 1 / 2, 1.0]
    assert table["predicted"].tolist() == [1, 2, 1]
    assert table["cfps"].tolist() == [0.0, 1.0, 0.0]


def _reference(labels: np.ndarray, predictions: np.ndarray, c: int, k: int) -> dict[str, float]:
    """The metrics by a loop over the samples: an abstention (-1, the whole row) is wrong and no
    prediction; a top-k hit is the label among the first k named classes."""
    first = predictions if predictions.ndim == 1 else predictions[:, 0]
    named = [list(row) for row in (predictions[:, None] if predictions.ndim == 1 else predictions)]
    right = [first[i] == labels[i] for i in range(labels.size)]
    in_top = [labels[i] in named[i][:k] and first[i] != -1 for i in range(labels.size)]
    recall, topk, precision, false_positives = {}, {}, {}, {}
    for cls in range(c):
        members = [i for i in range(labels.size) if labels[i] == cls]
        if members:
            recall[cls] = sum(right[i] for i in members) / len(members)
            topk[cls] = sum(in_top[i] for i in members) / len(members)
        predicted = [i for i in range(labels.size) if first[i] == cls]
        if predicted:
            precision[cls] = sum(labels[i] == cls for i in predicted) / len(predicted)
        false_positives[cls] = sum(labels[i] != cls for i in predicted)
    misclassified = sum(first[i] != -1 and first[i] != labels[i] for i in range(labels.size))
    return {
        "A": sum(right) / labels.size,
        "WCA": min(recall.values()),
        "WCP": min(precision.values()),
        "CFPS_max": max(false_positives.values()) / misclassified if misclassified else 0.0,
        "A@k": sum(in_top) / labels.size,
        "WCA@k": min(topk.values()),
        "coverage": sum(first[i] != -1 for i in range(labels.size)) / labels.size,
    }


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ranked", [1, 3])
def test_random_abstaining_models_agree_with_a_loop_over_the_samples(seed: int, ranked: int) -> None:
    rng = np.random.default_rng(seed)
    n, c, k = 120, 6, 2
    labels = rng.integers(0, c, n)
    rows = []
    for label in labels:  # a ranking of the classes, the label first in about half the rows
        order = [int(x) for x in rng.permutation(c)]
        if rng.random() < 0.5:
            order.remove(label)
            order.insert(0, int(label))
        rows.append(order[:ranked])
    predictions = np.array(rows) if ranked > 1 else np.array(rows)[:, 0]
    predictions[rng.random(n) < 0.15] = -1
    document = _evaluate(predictions, labels, c, parameters=MetricParameters(k=k, ns=(2,))).to_json()
    expected = _reference(labels, predictions, c, k)
    metrics = document["metrics"]
    for name in ("A", "WCA", "WCP", "CFPS_max"):
        assert metrics[name]["value"] == pytest.approx(expected[name], abs=1e-12), name
    assert document["coverage"]["value"] == pytest.approx(expected["coverage"])
    if ranked >= k:  # the top-k metrics need only the set of the k first classes
        assert metrics["A@2"]["value"] == pytest.approx(expected["A@k"], abs=1e-12)
        assert metrics["WCA@2"]["value"] == pytest.approx(expected["WCA@k"], abs=1e-12)
        assert "W2CA" in document["skipped"] and "decisiveness" in document["skipped"]
    else:
        assert "A@2" not in metrics and document["skipped"]["A@2"] == HARD_PREDICTIONS_REASON


def test_top_k_predictions_of_fewer_than_k_classes_skip_the_top_k_metrics_saying_why() -> None:
    labels = np.array([0, 1, 2, 3] * 5)
    predictions = np.stack([labels, (labels + 1) % 4], axis=1)
    document = _evaluate(predictions, labels, 4, parameters=MetricParameters(k=3, ns=(2,))).to_json()
    assert "A@3" not in document["metrics"]
    assert document["skipped"]["A@3"] == "hard top-2 predictions: the top-3 metrics need the 3 top-ranked classes of each sample"
    assert "coverage" not in document  # nothing abstained


def test_without_abstentions_the_statistics_are_those_of_the_one_hot_encoding() -> None:
    rng = np.random.default_rng(3)
    labels, predictions = rng.integers(0, 5, 200), rng.integers(0, 5, 200)
    scores, abstained = ranked_scores(predictions, 5)
    assert abstained is None
    one_hot = np.eye(5, dtype=np.float32)[predictions]
    np.testing.assert_array_equal(scores, one_hot)
    plain, masked = compute_stats(one_hot, labels), compute_stats(one_hot, labels, abstained=np.zeros(200, dtype=bool))
    for field in ("predictions", "true_class_rank", "pairwise_wins", "confusion", "support"):
        np.testing.assert_array_equal(getattr(plain, field), getattr(masked, field))


def test_an_abstention_ranks_behind_every_class_and_loses_every_pair() -> None:
    labels = np.array([0, 0, 1])
    scores = np.array([[5.0, 1.0], [0.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    stats = compute_stats(scores, labels, abstained=np.array([False, True, False]))
    assert stats.true_class_rank.tolist() == [0, 2, 0]
    assert stats.pairwise_wins[0, 1] == 1  # sample 0 beats class 1; the abstained sample 1 does not
    assert stats.errors == 1 and stats.misclassified == 0


def test_the_worst_class_step_reports_coverage_of_an_abstaining_model(tmp_path) -> None:
    import json

    import pandas as pd

    from classwise.logits_io import save_predictions
    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    labels = np.array([0, 1, 2, 0, 1, 2])
    predictions = np.array([0, -1, 1, -1, 1, 2])  # the hand-worked example above
    cache = tmp_path / "hard.npz"
    ids, names = np.array([f"s{i}" for i in range(6)]), np.array(["cat", "dog", "eel"])
    save_predictions(cache, predictions=predictions, labels=labels, sample_ids=ids, class_names=names, metadata={})
    out = {name: tmp_path / name for name in ("m.json", "pc.csv", "confusion.csv")}
    worst_class_step(
        logits_path=cache, label_view="original", view_labels_path=None, settings=WorstClassSettings(superclasses={}, k=2, n=[1]),
        metrics_path=out["m.json"], per_class_path=out["pc.csv"], confusion_path=out["confusion.csv"],
    )  # fmt: skip
    document = json.loads(out["m.json"].read_text())
    assert document["coverage"] == {"value": 4 / 6, "n_abstained": 2}
    assert document["metrics"]["A"]["value"] == 3 / 6 and document["metrics"]["WCP"]["value"] == 1 / 2
    assert pd.read_csv(out["pc.csv"])["coverage"].tolist() == [1 / 2, 1 / 2, 1.0]
    assert pd.read_csv(out["confusion.csv"], index_col=0).to_numpy().sum() == 4  # the abstentions are in no cell
