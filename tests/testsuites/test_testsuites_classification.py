"""Subset metrics of classwise.testsuites.classification against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from classwise.errors import InputError
from classwise.testsuites.classification import (
    SUBSET_METRICS,
    SubsetEvaluator,
    classification_metrics,
    positive_prediction_rates,
    to_probabilities,
)


def _random_set(seed: int, n: int, c: int, *, n_label_classes: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logits with signal, labels possibly drawn from only the first classes."""
    rng = np.random.default_rng(seed)
    k = c if n_label_classes is None else n_label_classes
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, c)).astype(np.float32)
    logits[np.arange(n), y] += rng.uniform(0, 2.5)
    return logits, y, to_probabilities(logits)


def _reference_sklearn(y: np.ndarray, p: np.ndarray, label_set: str) -> dict[str, float]:
    c = p.shape[1]
    pred = p.argmax(axis=1)
    labels = None if label_set == "present" else np.arange(c)
    out = {
        "macro_f1": skm.f1_score(y, pred, average="macro", labels=labels, zero_division=0),
        "macro_precision": skm.precision_score(y, pred, average="macro", labels=labels, zero_division=0),
        "macro_recall": skm.recall_score(y, pred, average="macro", labels=labels, zero_division=0),
        "accuracy": skm.accuracy_score(y, pred),
        "positive_prediction_rate": np.bincount(pred, minlength=c).max() / len(y),
        "average_uncertainty": np.mean(1.0 - p.max(axis=1)),
    }
    if np.unique(y).size >= 2:
        if c == 2:
            out["auc_ovo"] = skm.roc_auc_score(y, p[:, 1])
        else:
            out["auc_ovo"] = skm.roc_auc_score(y, p, multi_class="ovo", labels=np.arange(c))
    return out


@pytest.mark.parametrize("label_set", ["present", "all"])
@pytest.mark.parametrize(
    ("seed", "n", "c", "n_label_classes"),
    [(0, 60, 3, None), (1, 200, 7, None), (2, 40, 12, 6), (3, 500, 2, None), (4, 25, 5, 3), (5, 200, 15, None)],
)
def test_metrics_match_sklearn(seed: int, n: int, c: int, n_label_classes: int | None, label_set: str) -> None:
    _, y, p = _random_set(seed, n, c, n_label_classes=n_label_classes)
    got = classification_metrics(p, y, label_set=label_set)
    want = _reference_sklearn(y, p, label_set)
    assert set(got) == set(SUBSET_METRICS)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_with_ties_matches_sklearn(seed: int) -> None:
    """Rows drawn from a few prototypes, so every column is full of exact ties."""
    rng = np.random.default_rng(seed)
    c = 4
    protos = rng.dirichlet(np.ones(c), size=5)
    p = protos[rng.integers(0, 5, 150)]
    y = rng.integers(0, c, 150)
    got = classification_metrics(p, y)["auc_ovo"]
    assert got == pytest.approx(skm.roc_auc_score(y, p, multi_class="ovo", labels=np.arange(c)), abs=1e-12)


@pytest.mark.parametrize(("seed", "n", "c"), [(0, 80, 4), (1, 120, 9), (2, 50, 2)])
def test_resampled_rows_match_sklearn(seed: int, n: int, c: int) -> None:
    """Each row of an index matrix (with repeats, as a bootstrap draws) is scored like the
    materialised resample; subsets often miss classes."""
    _, y, p = _random_set(seed, n, c)
    rng = np.random.default_rng(seed + 10)
    idx = rng.integers(0, n, size=(5, n // 3))
    ev = SubsetEvaluator(p, y)
    got = ev.evaluate(idx)
    for r in range(idx.shape[0]):
        want = _reference_sklearn(y[idx[r]], p[idx[r]], "present")
        for k, v in want.items():
            assert got[k][r] == pytest.approx(v, abs=1e-12), (k, r)
        if "auc_ovo" not in want:
            assert np.isnan(got["auc_ovo"][r])


def test_small_blocks_give_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    import classwise.testsuites.classification as mod

    _, y, p = _random_set(7, 90, 6)
    idx = np.random.default_rng(0).integers(0, 90, size=(11, 30))
    whole = SubsetEvaluator(p, y).evaluate(idx)
    monkeypatch.setattr(mod, "_TARGET_BLOCK_ELEMENTS", 64)
    blocked = SubsetEvaluator(p, y).evaluate(idx)
    for k in SUBSET_METRICS:
        np.testing.assert_allclose(blocked[k], whole[k], rtol=0, atol=1e-12)


def test_document_worked_example_follows_sklearn() -> None:
    """The document's example: its 0.78 "macro F1" is the weighted F1, its 0.67 macro
    recall the weighted recall; its 0.67 precision and 0.75 AUC agree with scikit-learn."""
    p = np.array([[0.9, 0.1, 0.0], [0.1, 0.9, 0.0], [0.2, 0.1, 0.7]])
    y = np.array([0, 0, 2])
    got = classification_metrics(p, y)
    assert got["macro_f1"] == pytest.approx(5 / 9)
    assert got["macro_precision"] == pytest.approx(2 / 3)
    assert got["macro_recall"] == pytest.approx(1 / 2)
    assert got["auc_ovo"] == pytest.approx(0.75)
    assert got["accuracy"] == pytest.approx(2 / 3)
    assert got["average_uncertainty"] == pytest.approx(np.mean([0.1, 0.1, 0.3]))
    assert got["positive_prediction_rate"] == pytest.approx(1 / 3)
    assert skm.f1_score(y, p.argmax(1), average="weighted") == pytest.approx(0.78, abs=0.005)
    assert skm.recall_score(y, p.argmax(1), average="weighted", zero_division=0) == pytest.approx(0.67, abs=0.005)


def test_auc_undefined_with_one_class_and_ppr_vector() -> None:
    _, y, p = _random_set(3, 30, 4)
    y1 = np.zeros_like(y)
    assert np.isnan(classification_metrics(p, y1)["auc_ovo"])
    pred = p.argmax(axis=1)
    rates = positive_prediction_rates(pred, 4)
    np.testing.assert_allclose(rates, np.bincount(pred, minlength=4) / 30)
    assert rates.sum() == pytest.approx(1.0)
    assert classification_metrics(p, y)["positive_prediction_rate"] == pytest.approx(rates.max())


def test_from_scores_uses_argmax_of_logits() -> None:
    logits, y, p = _random_set(11, 70, 5)
    ev = SubsetEvaluator.from_scores(logits, y, "logits")
    np.testing.assert_array_equal(ev.predictions, logits.argmax(axis=1))
    assert ev.evaluate_all() == pytest.approx(classification_metrics(p, y))
    ev2 = SubsetEvaluator.from_scores(p, y, "probs")
    assert ev2.evaluate_all() == pytest.approx(classification_metrics(p, y))


@pytest.mark.parametrize(
    ("probs", "labels", "field"),
    [
        (np.full((3, 2), 0.7), np.array([0, 1, 0]), "probs"),  # rows do not sum to 1
        (np.full((3, 2), 0.5), np.array([0, 2, 0]), "labels"),  # label out of range
        (np.full((3, 2), 0.5), np.array([0.0, 1.0, 0.0]), "labels"),  # float labels
        (np.full((3, 2), 0.5), np.array([0, 1]), "labels"),  # wrong length
        (np.full((3,), 0.5), np.array([0, 1, 0]), "probs"),  # 1-D
    ],
)
def test_bad_inputs_raise_input_error(probs: np.ndarray, labels: np.ndarray, field: str) -> None:
    with pytest.raises(InputError) as err:
        classification_metrics(probs, labels)
    assert err.value.field == field


def test_bad_options_raise_input_error() -> None:
    _, y, p = _random_set(0, 20, 3)
    with pytest.raises(InputError):
        classification_metrics(p, y, metrics=["f1"])
    with pytest.raises(InputError):
        classification_metrics(p, y, label_set="weighted")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        SubsetEvaluator(p, y).evaluate(np.array([[0, 20]]))
    with pytest.raises(InputError):
        to_probabilities(np.array([[np.nan, 1.0]]), "logits")
