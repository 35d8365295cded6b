"""Transformation tests and targeted success rates over cached logits files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from classwise.errors import InputError
from classwise.logits_io import ScoresFile, save_logits
from classwise.robustness import (
    STATUSES,
    Thresholds,
    classwise_table,
    confusion_of,
    macro_f1,
    mean_confusion,
    prediction_flip_rate,
    similarity_table,
    target_of_shift,
    targeted_shift_name,
    targeted_success_rates,
    targeted_success_table,
    transformation_test_table,
)
from classwise.robustness.transformation_tests import COLUMNS, Limits, align_to_reference

NAMES = [f"c{i}" for i in range(4)]


def _scores(predicted, labels, ids=None, n_classes: int = 4) -> ScoresFile:  # type: ignore[no-untyped-def]
    """Logits whose argmax is ``predicted``."""
    predicted = np.asarray(predicted)
    logits = np.zeros((predicted.size, n_classes), np.float32)
    logits[np.arange(predicted.size), predicted] = 1.0
    ids = np.arange(predicted.size).astype(str) if ids is None else np.asarray(ids).astype(str)
    return ScoresFile(
        scores=logits,
        labels=np.asarray(labels, np.int64),
        kind="logits",
        sample_ids=ids,
        class_names=np.asarray(NAMES[:n_classes]),
    )


# ----------------------------------------------------------------------------- macro F1, flips


@pytest.mark.parametrize("seed", range(6))
def test_macro_f1_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 60)), int(rng.integers(2, 9))
    y = rng.integers(0, c, n)
    p = np.where(rng.random(n) < 0.5, y, rng.integers(0, c + 2, n))  # some predicted classes lack labels
    assert macro_f1(y, p) == pytest.approx(f1_score(y, p, average="macro", zero_division=0), abs=1e-12)


def test_macro_f1_hand_cases() -> None:
    assert macro_f1(np.array([0, 1, 2]), np.array([0, 1, 2])) == 1.0
    # class 0: TP 1, FN 1 -> F1 2/3; class 1: TP 0, FP 1 -> 0; mean 1/3
    assert macro_f1(np.array([0, 0]), np.array([0, 1])) == pytest.approx(1 / 3)
    # a class absent from labels and predictions does not count
    assert macro_f1(np.array([0, 5]), np.array([0, 5])) == 1.0


def test_flip_rate() -> None:
    assert prediction_flip_rate(np.array([0, 1, 2, 3]), np.array([0, 1, 3, 2])) == 0.5
    with pytest.raises(InputError, match="length"):
        prediction_flip_rate(np.array([0, 1]), np.array([0]))


# ----------------------------------------------------------------------------- thresholds


def test_status_boundaries_are_strict() -> None:
    limits = Limits(warn=0.1, fail=0.2)
    assert [limits.status(v) for v in (-0.5, 0.1, 0.1001, 0.2, 0.2001)] == [
        "pass",
        "pass",
        "warn",
        "warn",
        "fail",
    ]


def test_thresholds_from_config() -> None:
    t = Thresholds.from_config({"flip_rate": {"warn": 0.2, "fail": 0.3}, "accuracy_drop": {"fail": 0.5}})
    assert t.flip_rate == Limits(0.2, 0.3)
    assert t.accuracy_drop == Limits(0.05, 0.5)
    assert t.macro_f1_drop == Thresholds().macro_f1_drop
    assert Thresholds.from_config(t.to_json()) == t
    assert Thresholds.from_config(None) == Thresholds()
    for section, field in (
        ({"flips": {}}, "thresholds.flips"),
        ({"flip_rate": {"warn": 0.5, "fail": 0.1}}, "thresholds.flip_rate"),
        ({"flip_rate": {"warn": "high"}}, "thresholds.flip_rate.warn"),
        ({"flip_rate": {"bad": 1}}, "thresholds.flip_rate.bad"),
        ({"flip_rate": 0.1}, "thresholds.flip_rate"),
    ):
        with pytest.raises(InputError) as info:
            Thresholds.from_config(section)
        assert info.value.field == field


# ----------------------------------------------------------------------------- the table


def test_table_against_sklearn_and_by_hand() -> None:
    labels = np.array([0, 0, 1, 1, 2, 2, 3, 3, 0, 1])
    clean_pred = labels.copy()
    clean_pred[9] = 0  # clean: 9/10 correct
    blur_pred = clean_pred.copy()
    blur_pred[[0, 2]] = [3, 3]  # two more errors, two flips
    flip_pred = clean_pred.copy()
    flip_pred[[9, 4, 5, 6]] = [1, 1, 1, 1]  # fixes one, breaks three: 4 flips
    clean = _scores(clean_pred, labels)
    # the shifted files list the samples in another order: rows are matched by sample id
    order = np.random.default_rng(0).permutation(labels.size)
    blur = _scores(blur_pred[order], labels[order], ids=np.arange(10)[order])
    table = transformation_test_table(clean, {"blur_s3": blur, "flip_s1": _scores(flip_pred, labels)})
    assert list(table.index) == ["blur_s3", "flip_s1"] and table.index.name == "shift"
    assert list(table.columns) == list(COLUMNS)
    blur_row, flip_row = table.loc["blur_s3"], table.loc["flip_s1"]
    assert blur_row["n_samples"] == 10
    assert blur_row["clean_accuracy"] == pytest.approx(0.9)
    assert blur_row["accuracy"] == pytest.approx(accuracy_score(labels, blur_pred)) == pytest.approx(0.7)
    assert blur_row["accuracy_drop"] == pytest.approx(0.2)
    assert blur_row["macro_f1"] == pytest.approx(f1_score(labels, blur_pred, average="macro"))
    assert blur_row["clean_macro_f1"] == pytest.approx(f1_score(labels, clean_pred, average="macro"))
    assert blur_row["macro_f1_drop"] == pytest.approx(blur_row["clean_macro_f1"] - blur_row["macro_f1"])
    assert blur_row["flip_rate"] == pytest.approx(0.2)
    assert flip_row["flip_rate"] == pytest.approx(0.4)
    assert flip_row["accuracy_drop"] == pytest.approx(0.2)
    # default thresholds: accuracy drop 0.2 > fail 0.10, flip rate 0.2 > warn 0.10 (not > fail 0.20)
    assert blur_row["accuracy_drop_status"] == "fail" and blur_row["flip_rate_status"] == "warn"
    assert blur_row["status"] == "fail" and "accuracy_drop 0.200 > fail 0.1" in blur_row["reason"]
    assert set(table["status"]) <= set(STATUSES)


def test_statuses_follow_the_configured_thresholds() -> None:
    labels = np.arange(20) % 4
    shifted = labels.copy()
    shifted[:2] = (shifted[:2] + 1) % 4  # 10 % flipped, accuracy down 0.10
    clean, moved = _scores(labels, labels), _scores(shifted, labels)
    lenient = Thresholds.from_config(
        {
            "accuracy_drop": {"warn": 0.2, "fail": 0.3},
            "macro_f1_drop": {"warn": 0.2, "fail": 0.3},
            "flip_rate": {"warn": 0.1, "fail": 0.3},
        }
    )
    row = transformation_test_table(clean, {"s": moved}, thresholds=lenient).loc["s"]
    assert row["status"] == "pass" and row["reason"] == ""  # 0.10 is not above warn 0.10
    strict = Thresholds.from_config({"flip_rate": {"warn": 0.0, "fail": 0.05}})
    row = transformation_test_table(clean, {"s": moved}, thresholds=strict).loc["s"]
    assert row["flip_rate_status"] == "fail"
    same = transformation_test_table(clean, {"s": clean}).loc["s"]
    assert same["status"] == "pass" and same["flip_rate"] == 0.0 and same["accuracy_drop"] == 0.0


def test_misaligned_files_are_rejected(tmp_path: Path) -> None:
    labels = np.array([0, 1, 2, 3])
    clean = _scores(labels, labels)
    with pytest.raises(InputError, match="lacks 1 clean sample id"):
        transformation_test_table(clean, {"s": _scores(labels[:3], labels[:3])})
    with pytest.raises(InputError, match="not in the clean file"):
        transformation_test_table(clean, {"s": _scores(labels, labels, ids=["0", "1", "2", "x"])})
    with pytest.raises(InputError, match="labels differ"):
        transformation_test_table(clean, {"s": _scores(labels, [1, 1, 2, 3])})
    with pytest.raises(InputError, match="duplicate"):
        align_to_reference(np.array(["a", "b"]), np.array(["a", "a"]))
    with pytest.raises(InputError, match="classes"):
        transformation_test_table(clean, {"s": _scores(labels, labels, n_classes=5)})
    # files on disk work the same, and errors name the file
    path = tmp_path / "s.npz"
    bad = _scores(labels[:3], labels[:3])
    save_logits(
        path,
        logits=bad.scores,
        labels=bad.labels,
        sample_ids=bad.sample_ids,
        class_names=bad.class_names,
        metadata={},
    )
    with pytest.raises(InputError) as info:
        transformation_test_table(clean, {"s": path})
    assert info.value.path == str(path)


def test_a_shift_of_its_own_samples_is_compared_with_clean_on_the_ids_both_hold() -> None:
    """A labels shift holds 4 of clean's 6 samples (in another order) and one of its own: the
    test is made on the 4 shared ids, clean's predictions of those 4 beside the shift's."""
    labels = np.array([0, 1, 2, 3, 0, 1])
    clean = _scores([0, 1, 2, 0, 0, 1], labels)  # ids "0".."5"; sample "3" wrong
    shifted = _scores([1, 1, 0, 2, 3], [0, 3, 2, 1, 2], ids=["0", "3", "2", "1", "x"])
    row = transformation_test_table(clean, {"c50": shifted}, subsets=["c50"]).loc["c50"]
    # shared: 0 (clean 0, shift 1), 3 (clean 0, shift 1), 2 (clean 2, shift 0), 1 (clean 1, shift 2)
    y, before, after = np.array([0, 3, 2, 1]), np.array([0, 0, 2, 1]), np.array([1, 1, 0, 2])
    assert row["n_samples"] == 4
    assert row["clean_accuracy"] == pytest.approx(accuracy_score(y, before))
    assert row["accuracy"] == pytest.approx(accuracy_score(y, after))
    assert row["macro_f1"] == pytest.approx(f1_score(y, after, average="macro"))
    assert row["flip_rate"] == pytest.approx(np.mean(before != after))
    with pytest.raises(InputError, match="lacks 2 clean sample id"):  # outside subsets, the same samples as clean
        transformation_test_table(clean, {"c50": shifted})
    with pytest.raises(InputError, match="shares no sample id with the clean file"):
        transformation_test_table(clean, {"c50": _scores([0], [0], ids=["y"])}, subsets=["c50"])


# ----------------------------------------------------------------------------- targeted success


def test_targeted_success_rates_and_table(tmp_path: Path) -> None:
    labels = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    runs = {
        1: _scores([1, 1, 1, 0, 1, 2, 1, 3], labels),  # non-1 samples: 0,1,4,5,6,7 -> 4 of 6 predicted 1
        3: _scores([3, 0, 1, 3, 3, 3, 3, 3], labels),  # non-3 samples: 6 -> 4 predicted 3
    }
    rates = targeted_success_rates(runs)
    assert rates.shape == (4,)
    np.testing.assert_allclose(rates, [np.nan, 4 / 6, np.nan, 4 / 6], equal_nan=True)
    clean = _scores(labels, labels)
    table = targeted_success_table(runs, clean=clean)
    assert list(table.index) == [1, 3]
    assert table.loc[1, "class_name"] == "c1"
    assert table.loc[1, "n_attacked"] == 6 and table.loc[1, "n_success"] == 4
    assert table.loc[3, "success_rate"] == pytest.approx(4 / 6)
    assert (table["clean_rate"] == 0).all()
    # from files: the target comes from the sidecar (else from the file name)
    paths = []
    for target, scores in runs.items():
        path = tmp_path / f"run{target}.npz"
        shift = {"name": targeted_shift_name(target), "kind": "pgd", "params": {"target": target}}
        save_logits(
            path,
            logits=scores.scores,
            labels=scores.labels,
            sample_ids=scores.sample_ids,
            class_names=scores.class_names,
            metadata={"shift": shift},
        )
        paths.append(path)
    np.testing.assert_allclose(targeted_success_rates(paths), rates, equal_nan=True)
    (tmp_path / "run1.json").write_text(json.dumps({}))
    with pytest.raises(InputError, match="target class"):
        targeted_success_rates(paths)
    with pytest.raises(InputError, match="target 7"):
        targeted_success_rates({7: runs[1]})


def test_target_of_shift() -> None:
    assert target_of_shift("pgd_targeted_12") == 12
    assert target_of_shift("pgd_linf_eps0.1") is None
    assert target_of_shift({"name": "x", "params": {"target": 4}}) == 4
    assert target_of_shift({"name": "pgd_targeted_2", "params": {}}) == 2
    assert targeted_shift_name(5) == "pgd_targeted_5"
    with pytest.raises(InputError):
        targeted_shift_name(-1)


# ----------------------------------------------------------------------------- figure numbers


def test_classwise_numbers() -> None:
    labels = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    a = confusion_of(_scores([0, 1, 1, 1, 2, 2, 3, 0], labels))
    assert a.sum() == 8 and a[0, 1] == 1 and a[3, 0] == 1 and np.trace(a) == 6
    b = confusion_of(_scores(labels, labels))
    table = classwise_table({"clean": {"m1": a, "m2": b}}, NAMES)
    assert len(table) == 8 and list(table.columns) == [
        "shift",
        "model",
        "class",
        "class_name",
        "accuracy",
        "cfps",
    ]
    m1 = table[table.model == "m1"]
    np.testing.assert_allclose(m1.accuracy, [0.5, 1.0, 1.0, 0.5])
    np.testing.assert_allclose(m1.cfps, [0.5, 0.5, 0.0, 0.0])  # errors: 0 -> 1 and 3 -> 0
    np.testing.assert_allclose(mean_confusion({"m1": a, "m2": b}), (a + b) / 2)
    sim = similarity_table({"m1": a, "m1_again": a})
    assert sim.loc["m1", "m1_again"] == pytest.approx(1.0)
