"""Robust fairness (classwise.metrics.robust_fairness, ``classwise robust-fairness``): a
hand-worked example, a naive per-sample reference, the dispersion formulas against their
textbook definitions, sample-id matching and the command line."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from classwise.cli import main
from classwise.errors import InputError
from classwise.metrics import robust_fairness
from classwise.metrics.robust_fairness import gini, load_clean_and_attacked, robust_fairness_of_files
from classwise.shifts.spec import PgdSettings, ShiftSpec, corruption_spec, pgd_spec


def _one_hot(predictions: list[int], n_classes: int) -> np.ndarray:
    """Scores whose argmax is ``predictions`` (logits of a confident model)."""
    return 5.0 * np.eye(n_classes)[predictions]


# Four classes; class 3 has no samples. Per sample (label: clean prediction -> attacked):
#   class 0: 0->0, 0->1, 0->2, 1->0   (the last: wrong on clean, right under attack)
#   class 1: 1->3, 1->1
#   class 2: 2->3, 0->0
LABELS = [0, 0, 0, 0, 1, 1, 2, 2]
CLEAN = [0, 0, 0, 1, 1, 1, 2, 0]
ATTACKED = [0, 1, 2, 0, 3, 1, 3, 0]


def test_a_hand_worked_example():
    result = robust_fairness(_one_hot(CLEAN, 4), _one_hot(ATTACKED, 4), np.array(LABELS))
    # clean hits 3/4, 2/2, 1/2 -> clean errors 1/4, 0, 1/2
    np.testing.assert_allclose(result.clean_error[:3], [1 / 4, 0, 1 / 2])
    # attacked hits: class 0 samples 1 and 4 (2/4), class 1 one of two, class 2 none
    np.testing.assert_allclose(result.robust_error[:3], [1 / 2, 1 / 2, 1])
    # correct on clean, wrong under attack: class 0 samples 2, 3 (2/4); class 1 the first; class 2 the first
    np.testing.assert_allclose(result.boundary_error[:3], [1 / 2, 1 / 2, 1 / 2])
    # class 0's robust error 1/2 < clean 1/4 + boundary 1/2: its fourth sample recovered under attack
    assert np.isnan(result.clean_error[3]) and np.isnan(result.robust_error[3]) and np.isnan(result.boundary_error[3])
    # attacked predictions 0,1,2,0,3,1,3,0: class 0 three times, 1 twice, 2 once, 3 twice, of 8
    np.testing.assert_allclose(result.attracted, [3 / 8, 2 / 8, 1 / 8, 2 / 8])
    assert result.worst_class_clean_accuracy.to_json() == {"value": 0.5, "class": 2}
    assert result.worst_class_robust_accuracy.to_json() == {"value": 0.0, "class": 2}
    # robust errors of the classes with samples: 1/2, 1/2, 1; mean 2/3; squared deviations
    # 1/36 + 1/36 + 4/36 = 1/6, over m = 3: variance 1/18
    assert result.robust_error_sd == pytest.approx(math.sqrt(1 / 18))
    assert result.robust_error_nsd == pytest.approx(math.sqrt(1 / 18) / (2 / 3))
    # |differences| over the 9 ordered pairs: 0, 1/2, 1/2 twice each -> 2; 2 / (2 * 9 * 2/3) = 1/6
    assert result.robust_error_gini == pytest.approx(1 / 6)
    assert result.accuracy == pytest.approx(6 / 8) and result.robust_accuracy == pytest.approx(3 / 8)
    # a three-way tie (1/2 each): the lowest index, and the tie declared
    assert result.worst_boundary_error().to_json() == {"value": 0.5, "class": 0, "n_tied": 3}


def test_the_json_has_exactly_the_fields_of_the_issue():
    document = robust_fairness(_one_hot(CLEAN, 4), _one_hot(ATTACKED, 4), np.array(LABELS)).to_json()
    assert set(document) == {
        "worst_class_clean_accuracy", "worst_class_robust_accuracy", "robust_error_sd", "robust_error_nsd",
        "robust_error_gini", "per_class",
    }  # fmt: skip
    assert [row["class"] for row in document["per_class"]] == [0, 1, 2, 3]
    assert all(
        set(row) == {"class", "clean_error", "robust_error", "boundary_error", "attracted"} for row in document["per_class"]
    )
    assert document["per_class"][3] == {
        "class": 3, "clean_error": None, "robust_error": None, "boundary_error": None, "attracted": 0.25,
    }  # fmt: skip
    json.dumps(document, allow_nan=False)  # no NaN reaches the JSON


def _naive(clean: np.ndarray, attacked: np.ndarray, labels: np.ndarray) -> dict:
    """Sample by sample in plain Python, from the definitions."""
    n, c = clean.shape
    rows = []
    for k in range(c):
        members = [i for i in range(n) if labels[i] == k]
        clean_right = [int(np.argmax(clean[i])) == k for i in members]
        robust_right = [int(np.argmax(attacked[i])) == k for i in members]
        attracted = sum(int(np.argmax(attacked[i])) == k for i in range(n)) / n
        if not members:
            rows.append((k, None, None, None, attracted))
            continue
        boundary = sum(a and not b for a, b in zip(clean_right, robust_right))
        rows.append(
            (k, 1 - sum(clean_right) / len(members), 1 - sum(robust_right) / len(members), boundary / len(members), attracted)
        )
    present = [row for row in rows if row[1] is not None]
    errors = [row[2] for row in present]
    mean = sum(errors) / len(errors)
    sd = math.sqrt(sum((e - mean) ** 2 for e in errors) / len(errors))
    worst_clean = min(present, key=lambda row: (1 - row[1], row[0]))
    worst_robust = min(present, key=lambda row: (1 - row[2], row[0]))
    return {
        "rows": rows,
        "worst_clean": (1 - worst_clean[1], worst_clean[0]),
        "worst_robust": (1 - worst_robust[2], worst_robust[0]),
        "sd": sd,
        "nsd": sd / mean,
        "accuracy": sum(int(np.argmax(clean[i])) == labels[i] for i in range(n)) / n,
        "robust_accuracy": sum(int(np.argmax(attacked[i])) == labels[i] for i in range(n)) / n,
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_a_naive_per_sample_loop(seed):
    rng = np.random.default_rng(seed)
    n, c = 300, 9
    labels = rng.choice([0, 1, 2, 4, 5, 6, 7, 8], size=n)  # class 3 without samples
    clean = rng.normal(size=(n, c))
    clean[np.arange(n), labels] += 1.5
    attacked = clean + rng.normal(scale=1.5, size=(n, c))
    result = robust_fairness(clean, attacked, labels)
    reference = _naive(clean, attacked, labels)
    for k, clean_error, robust_error, boundary_error, attracted in reference["rows"]:
        row = result.to_json()["per_class"][k]
        assert row["class"] == k
        for name, expected in (("clean_error", clean_error), ("robust_error", robust_error), ("boundary_error", boundary_error)):
            assert row[name] == (None if expected is None else pytest.approx(expected)), (k, name)
        assert row["attracted"] == pytest.approx(attracted)
    assert (result.worst_class_clean_accuracy.value, result.worst_class_clean_accuracy.class_index) == pytest.approx(
        reference["worst_clean"]
    )
    assert (result.worst_class_robust_accuracy.value, result.worst_class_robust_accuracy.class_index) == pytest.approx(
        reference["worst_robust"]
    )
    assert result.robust_error_sd == pytest.approx(reference["sd"])
    assert result.robust_error_nsd == pytest.approx(reference["nsd"])
    assert result.accuracy == pytest.approx(reference["accuracy"])
    assert result.robust_accuracy == pytest.approx(reference["robust_accuracy"])
    assert sum(row["attracted"] for row in result.to_json()["per_class"]) == pytest.approx(1.0)


def _gini_double_loop(values: list[float]) -> float:
    m = len(values)
    mean = sum(values) / m
    return sum(abs(a - b) for a, b in itertools.product(values, values)) / (2 * m * m * mean)


def test_gini_against_the_double_loop_definition():
    rng = np.random.default_rng(3)
    for m in (1, 2, 5, 40):
        values = rng.random(m)
        assert gini(values) == pytest.approx(_gini_double_loop(values.tolist()))
    # all of the error on one class of m: (m - 1) / m; equal errors: 0
    assert gini(np.array([0.0, 0.0, 0.0, 0.6])) == pytest.approx(3 / 4)
    assert gini(np.full(7, 0.3)) == 0.0


def test_the_gini_and_sd_of_robust_fairness_are_those_of_the_class_errors():
    rng = np.random.default_rng(4)
    labels = np.repeat(np.arange(6), 20)
    clean = rng.normal(size=(labels.size, 6))
    attacked = rng.normal(size=(labels.size, 6))
    result = robust_fairness(clean, attacked, labels)
    errors = result.robust_error.tolist()
    assert result.robust_error_gini == pytest.approx(_gini_double_loop(errors))
    assert result.robust_error_sd == pytest.approx(statistics.pstdev(errors))  # population SD
    assert result.robust_error_sd == pytest.approx(np.std(errors, ddof=0))
    assert result.robust_error_nsd == pytest.approx(statistics.pstdev(errors) / statistics.mean(errors))


def test_a_model_robust_on_every_sample_has_no_disparity():
    labels = np.array([0, 1, 2, 2])
    scores = _one_hot([0, 1, 2, 2], 3)
    result = robust_fairness(scores, scores, labels)
    assert result.robust_error_sd == 0.0 and result.robust_error_nsd == 0.0 and result.robust_error_gini == 0.0
    assert result.robust_accuracy == 1.0 and result.worst_boundary_error().value == 0.0


def test_mismatched_score_matrices_fail_clearly():
    labels = np.array([0, 1, 1])
    with pytest.raises(InputError, match="attacked_scores.*shape"):
        robust_fairness(_one_hot([0, 1, 1], 2), _one_hot([0, 1], 2), labels)
    with pytest.raises(InputError, match="labels"):
        robust_fairness(_one_hot([0, 1, 1], 2), _one_hot([0, 1, 1], 2), np.array([0, 1, 2]))
    broken = _one_hot([0, 1, 1], 2)
    broken[1, 0] = np.nan
    with pytest.raises(InputError, match="clean_scores.*rows 1"):
        robust_fairness(broken, _one_hot([0, 1, 1], 2), labels)


def _write(path: Path, predictions: list[int], labels: list[int], ids: list[str], n_classes: int = 4) -> Path:
    np.savez(
        path,
        logits=_one_hot(predictions, n_classes).astype(np.float32),
        labels=np.array(labels),
        sample_ids=np.array(ids),
        class_names=np.array([f"class{c}" for c in range(n_classes)]),
    )
    return path


IDS = [f"s{i}" for i in range(len(LABELS))]


def test_files_are_matched_by_sample_id(tmp_path):
    clean = _write(tmp_path / "clean.npz", CLEAN, LABELS, IDS)
    order = np.random.default_rng(5).permutation(len(IDS))
    attacked = _write(
        tmp_path / "attacked.npz", [ATTACKED[i] for i in order], [LABELS[i] for i in order], [IDS[i] for i in order]
    )
    result, clean_file = robust_fairness_of_files(clean, attacked)
    expected = robust_fairness(_one_hot(CLEAN, 4), _one_hot(ATTACKED, 4), np.array(LABELS))
    assert result.to_json() == expected.to_json()
    assert clean_file.class_names.tolist() == ["class0", "class1", "class2", "class3"]


def test_a_sample_id_mismatch_names_the_file_and_the_ids(tmp_path):
    clean = _write(tmp_path / "clean.npz", CLEAN, LABELS, IDS)
    attacked = _write(tmp_path / "attacked.npz", ATTACKED, LABELS, [*IDS[:-1], "stranger"])
    with pytest.raises(InputError) as info:
        load_clean_and_attacked(clean, attacked)
    message = str(info.value)
    assert str(attacked) in message and "sample_ids" in message
    assert "'s7'" in message and "'stranger'" in message  # the missing and the extra id
    relabelled = _write(tmp_path / "relabelled.npz", ATTACKED, [1, *LABELS[1:]], IDS)
    with pytest.raises(InputError, match="'s0' has label 1 here but 0"):
        load_clean_and_attacked(clean, relabelled)


def test_the_command_line_writes_the_json(tmp_path):
    clean = _write(tmp_path / "clean.npz", CLEAN, LABELS, IDS)
    attacked = _write(tmp_path / "attacked.npz", ATTACKED, LABELS, IDS)
    out = tmp_path / "rf.json"
    assert main(["robust-fairness", str(clean), str(attacked), "--out", str(out)]) == 0
    expected = robust_fairness(_one_hot(CLEAN, 4), _one_hot(ATTACKED, 4), np.array(LABELS)).to_json()
    assert json.loads(out.read_text()) == json.loads(json.dumps(expected))


def test_the_command_line_fails_clearly_and_writes_nothing(tmp_path, capsys):
    clean = _write(tmp_path / "clean.npz", CLEAN, LABELS, IDS)
    attacked = _write(tmp_path / "attacked.npz", ATTACKED, LABELS, IDS[::-1][:5] + ["x", "y", "z"])
    out = tmp_path / "rf.json"
    assert main(["robust-fairness", str(clean), str(attacked), "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert message.startswith("classwise robust-fairness: error:") and str(attacked) in message and "'x'" in message
    assert not out.exists()


def test_the_adversarial_shifts_are_the_untargeted_attacks():
    assert pgd_spec(PgdSettings("linf", 0.1)).adversarial
    assert not pgd_spec(PgdSettings("linf", 0.1), target=2).adversarial
    assert not ShiftSpec("clean", "clean").adversarial
    assert not corruption_spec("gaussian_noise", 1).adversarial


def test_the_step_writes_the_table_the_figure_and_the_json(tmp_path):
    from classwise.steps.robustness import robust_fairness_step

    clean = _write(tmp_path / "clean.npz", CLEAN, LABELS, IDS)
    attacked = _write(tmp_path / "attacked.npz", ATTACKED, LABELS, IDS)
    unharmed = _write(tmp_path / "unharmed.npz", CLEAN, LABELS, IDS)
    paths = {name: tmp_path / f"rf.{ext}" for name, ext in (("markdown", "md"), ("csv", "csv"), ("latex", "tex"))}
    robust_fairness_step(
        clean_paths={"attacked": clean, "unharmed": clean},
        attacked_paths={"attacked": attacked, "unharmed": unharmed},
        shift="pgd",
        caption="Robust fairness.",
        title="pets",
        table_paths=paths,
        figure_path=tmp_path / "rf.png",
        json_path=tmp_path / "rf.json",
    )
    import pandas as pd

    data = pd.read_csv(paths["csv"], index_col="model")
    assert data.loc["attacked", "robust_accuracy"] == pytest.approx(3 / 8)
    assert data.loc["unharmed", "robust_accuracy"] == pytest.approx(6 / 8)  # the clean predictions again
    assert data.loc["attacked", "worst_class_robust_accuracy_class"] == "class2"
    assert data.loc["attacked", "worst_boundary_error"] == pytest.approx(0.5)
    markdown = paths["markdown"].read_text()
    assert "| attacked | 75.00 | 37.50 | 50.00 (class2) | 0.00 (class2) | 50.00 (class0; 3 tied) |" in markdown
    assert (tmp_path / "rf.png").read_bytes().startswith(b"\x89PNG")
    document = json.loads((tmp_path / "rf.json").read_text())
    assert document["models"]["attacked"]["robust_accuracy"] == pytest.approx(3 / 8)
    assert document["class_names"] == ["class0", "class1", "class2", "class3"]


def test_the_figure_names_the_worst_classes_and_reads_at_a_thousand_classes(tmp_path):
    from classwise.plots.robustness import plot_clean_vs_robust

    rng = np.random.default_rng(6)
    labels = np.repeat(np.arange(1000), 2)
    clean = rng.normal(size=(labels.size, 1000)).astype(np.float32)
    clean[np.arange(labels.size), labels] += 4.0
    attacked = clean.copy()
    attacked[labels == 17, 17] -= 10.0  # class 17 breaks under the attack
    result = robust_fairness(clean, attacked, labels)
    names = [f"n{c}" for c in range(1000)]
    fig = plot_clean_vs_robust({"net": result}, names, path=tmp_path / "f.png", named=3)
    ax = fig.axes[0]
    assert len(ax.collections[0].get_offsets()) == 1000
    assert "n17" in [text.get_text() for text in ax.texts]
    assert (tmp_path / "f.png").is_file()
