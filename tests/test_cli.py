"""``classwise metrics``: output layout, agreement with independent references, and errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_softmax, softmax
from sklearn.metrics import accuracy_score, precision_score, recall_score, top_k_accuracy_score

from classwise.cli import _SUBCOMMAND_MODULES, main
from classwise.metrics.arguments import help_text

REPORTED = ["decisiveness", "geometric_accuracy", "robustness"]
MEASURED = [f"{name}_measured" for name in REPORTED] + ["calibration_slope"]


def _write(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def _random_logits(n: int, c: int, seed: int, signal: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(c), n // c)
    logits = rng.normal(size=(labels.size, c)).astype(np.float32)
    logits[np.arange(labels.size), labels] += signal * rng.random(labels.size).astype(np.float32)
    return logits, labels.astype(np.int64)


def _run(tmp_path: Path, npz: Path, *extra: str) -> dict:
    out = tmp_path / "metrics.json"
    assert main(["metrics", str(npz), "--out", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_output_names_follow_the_issue(tmp_path):
    logits, labels = _random_logits(1200, 120, seed=0)
    result = _run(tmp_path, _write(tmp_path / "s.npz", logits=logits, labels=labels))
    expected = {
        "A", "WCA", "WCP", "W10CR", "W100CR", "W10CR_exact", "W100CR_exact", "W2CA", "W2CA_balanced",
        "A@5", "WCA@5", "W10CR@5", "W100CR@5", "CFPS_max", *REPORTED, *MEASURED,
    }  # fmt: skip
    assert set(result["metrics"]) == expected
    assert result["n_samples"] == 1200 and result["n_classes"] == 120
    for name, entry in result["metrics"].items():
        if name != "calibration_slope":
            assert 0.0 <= entry["value"] <= 1.0, name


def test_n_at_least_the_class_count_is_skipped_and_k_follows_the_flag(tmp_path):
    logits, labels = _random_logits(200, 10, seed=1)
    result = _run(tmp_path, _write(tmp_path / "s.npz", logits=logits, labels=labels), "--k", "3", "--n", "2", "10")
    names = set(result["metrics"])
    assert {"W2CR", "W2CR_exact", "W2CR@3", "A@3", "WCA@3"} <= names
    assert not any(name.startswith("W10CR") for name in names)
    assert "A@5" not in names


def test_values_agree_with_scikit_learn_and_brute_force(tmp_path):
    logits, labels = _random_logits(600, 12, seed=2)
    result = _run(tmp_path, _write(tmp_path / "s.npz", logits=logits, labels=labels), "--n", "3")
    metrics = result["metrics"]
    predictions = logits.argmax(axis=1)
    recalls = recall_score(labels, predictions, average=None, labels=np.arange(12), zero_division=0)
    assert metrics["A"]["value"] == pytest.approx(accuracy_score(labels, predictions))
    assert metrics["WCA"]["value"] == pytest.approx(recalls.min())
    assert metrics["WCA"]["classes"] == [int(np.argmin(recalls))]
    predicted = np.bincount(predictions, minlength=12) > 0
    precisions = precision_score(labels, predictions, average=None, labels=np.arange(12), zero_division=0)
    assert metrics["WCP"]["value"] == pytest.approx(precisions[predicted].min())
    assert metrics["A@5"]["value"] == pytest.approx(
        top_k_accuracy_score(labels, logits.astype(np.float64), k=5, labels=np.arange(12))
    )
    # Balanced set: W3CR is the mean of the three smallest recalls.
    assert metrics["W3CR"]["value"] == pytest.approx(np.sort(recalls)[:3].mean())
    # CFPS_max: false positives of a class over all false positives.
    wrong = predictions != labels
    cfps = np.bincount(predictions[wrong], minlength=12) / wrong.sum()
    assert metrics["CFPS_max"]["value"] == pytest.approx(cfps.max())
    assert metrics["CFPS_max"]["classes"] == [int(np.argmax(cfps))]
    # Reported metrics: generalized means of the clipped correct-class probability.
    p = np.maximum(softmax(logits.astype(np.float64), axis=1)[np.arange(labels.size), labels], 0.005)
    assert metrics["decisiveness"]["value"] == pytest.approx(p.mean(), rel=1e-6)
    assert metrics["geometric_accuracy"]["value"] == pytest.approx(np.exp(np.log(p).mean()), rel=1e-6)
    assert metrics["robustness"]["value"] == pytest.approx(np.mean(p ** (-2 / 3)) ** (-3 / 2), rel=1e-6)


def test_probabilities_input_gives_the_same_argmax_metrics(tmp_path):
    logits, labels = _random_logits(400, 8, seed=3)
    from_logits = _run(tmp_path, _write(tmp_path / "l.npz", logits=logits, labels=labels), "--n", "2")
    probs = softmax(logits.astype(np.float64), axis=1)
    from_probs = _run(tmp_path, _write(tmp_path / "p.npz", probs=probs, labels=labels), "--n", "2")
    for name in ["A", "WCA", "WCP", "W2CR", "W2CA", "A@5", "WCA@5", "CFPS_max", *REPORTED]:
        assert from_probs["metrics"][name]["value"] == pytest.approx(from_logits["metrics"][name]["value"], rel=1e-6)
    # Probability metrics use the probabilities themselves, not a re-softmax of them.
    p = np.maximum(np.exp(log_softmax(logits.astype(np.float64), axis=1))[np.arange(labels.size), labels], 0.005)
    assert from_probs["metrics"]["decisiveness"]["value"] == pytest.approx(p.mean(), rel=1e-6)


def test_superclasses_add_the_superclass_metrics(tmp_path):
    logits, labels = _random_logits(300, 6, seed=4)
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"low": [0, 1, 2], "high": [3, 4, 5]}))
    result = _run(tmp_path, _write(tmp_path / "s.npz", logits=logits, labels=labels), "--superclasses", str(groups))
    metrics = result["metrics"]
    predictions = logits.argmax(axis=1)
    fine_correct = predictions == labels
    super_of = np.array([0, 0, 0, 1, 1, 1])
    # WSupCR: the unrestricted argmax equals the true fine class, pooled per superclass.
    per_group = [fine_correct[super_of[labels] == g].mean() for g in (0, 1)]
    assert metrics["WSupCR"]["value"] == pytest.approx(min(per_group))
    assert metrics["WSupCR"]["classes"] == [["low", "high"][int(np.argmin(per_group))]]
    assert metrics["WSupCR"]["value"] <= metrics["WSupCA"]["value"] + 1e-12


def test_per_class_csv_matches_scikit_learn(tmp_path):
    logits, labels = _random_logits(300, 5, seed=5)
    npz = _write(tmp_path / "s.npz", logits=logits, labels=labels, class_names=np.array(list("abcde")))
    csv = tmp_path / "per_class.csv"
    _run(tmp_path, npz, "--per-class", str(csv), "--k", "2", "--n", "2")
    table = pd.read_csv(csv)
    assert list(table["name"]) == list("abcde")
    assert {"support", "recall", "precision", "top2_recall", "cfps"} <= set(table.columns)
    predictions = logits.argmax(axis=1)
    np.testing.assert_allclose(table["recall"], recall_score(labels, predictions, average=None), atol=1e-6)
    np.testing.assert_array_equal(table["support"], np.bincount(labels, minlength=5))
    assert table["cfps"].sum() == pytest.approx(1.0, abs=1e-5)


def test_writes_to_standard_output_without_out(tmp_path, capsys):
    logits, labels = _random_logits(100, 4, seed=6)
    assert main(["metrics", str(_write(tmp_path / "s.npz", logits=logits, labels=labels)), "--n", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["n_classes"] == 4


def _bad_logits(tmp_path: Path) -> dict[str, tuple[dict[str, np.ndarray], str]]:
    logits, labels = _random_logits(40, 4, seed=7)
    with_nan = logits.copy()
    with_nan[[3, 17]] = np.nan
    with_inf = logits.copy()
    with_inf[5, 1] = np.inf
    out_of_range = labels.copy()
    out_of_range[9] = 4
    return {
        "missing labels": ({"logits": logits}, "labels"),
        "missing scores": ({"labels": labels}, "logits"),
        "nan rows": ({"logits": with_nan, "labels": labels}, "3, 17"),
        "infinite": ({"logits": with_inf, "labels": labels}, "5"),
        "label range": ({"logits": logits, "labels": out_of_range}, "[0, 4)"),
        "shape mismatch": ({"logits": logits, "labels": labels[:-1]}, "40"),
        "one-dimensional": ({"logits": logits[:, 0], "labels": labels}, "logits"),
    }


@pytest.mark.parametrize(
    "case", ["missing labels", "missing scores", "nan rows", "infinite", "label range", "shape mismatch", "one-dimensional"]
)
def test_bad_input_fails_clearly_and_writes_nothing(tmp_path, capsys, case):
    arrays, must_mention = _bad_logits(tmp_path)[case]
    npz = _write(tmp_path / "bad.npz", **arrays)
    out, per_class = tmp_path / "m.json", tmp_path / "pc.csv"
    status = main(["metrics", str(npz), "--out", str(out), "--per-class", str(per_class)])
    message = capsys.readouterr().err
    assert status != 0
    assert str(npz) in message and must_mention in message, message
    assert not out.exists() and not per_class.exists()
    assert list(tmp_path.iterdir()) == [npz]


def test_superclass_index_out_of_range_fails_clearly(tmp_path, capsys):
    logits, labels = _random_logits(40, 4, seed=8)
    npz = _write(tmp_path / "s.npz", logits=logits, labels=labels)
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"a": [0, 1], "b": [2, 7]}))
    out = tmp_path / "m.json"
    assert main(["metrics", str(npz), "--superclasses", str(groups), "--out", str(out)]) != 0
    message = capsys.readouterr().err
    assert str(groups) in message and "7" in message and "b" in message
    assert not out.exists()


def test_missing_file_fails_clearly(tmp_path, capsys):
    missing = tmp_path / "nope.npz"
    assert main(["metrics", str(missing), "--out", str(tmp_path / "m.json")]) != 0
    assert str(missing) in capsys.readouterr().err


def test_version_is_the_installed_distributions(capsys):
    import importlib.metadata
    import subprocess
    import sys

    from classwise.cli import main

    expected = f"classwise {importlib.metadata.version('classwise')}\n"
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == expected
    done = subprocess.run([sys.executable, "-m", "classwise.cli", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout == expected


def test_version_without_installed_metadata(monkeypatch):
    import importlib.metadata

    from classwise import cli

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cli.installed_version().startswith("unknown")


def test_per_class_csv_is_at_the_full_precision_of_the_json(tmp_path):
    logits, labels = _random_logits(301, 7, seed=8)  # 301 samples: recalls such as 15/43, not 6-decimal numbers
    npz = _write(tmp_path / "s.npz", logits=logits, labels=labels)
    csv = tmp_path / "per_class.csv"
    metrics = _run(tmp_path, npz, "--per-class", str(csv), "--k", "2", "--n", "2")["metrics"]
    table = pd.read_csv(csv)
    # read back, the CSV's numbers are the JSON's bit for bit (no rounding to 6 decimals)
    assert table["recall"].min() == metrics["WCA"]["value"]
    assert table["precision"].min() == metrics["WCP"]["value"]
    assert table.loc[metrics["WCA"]["classes"][0], "recall"] == metrics["WCA"]["value"]
    assert any(len(repr(value).split(".")[1]) > 6 for value in table["recall"])  # the case the old CSV rounded


@pytest.mark.parametrize("command", [None, "metrics", *_SUBCOMMAND_MODULES])
def test_help_is_plain_text_without_docstring_markup(command, capsys):
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"] if command else ["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: classwise{' ' + command if command else ''}")
    assert "``" not in text and not re.search(r":[a-z]+:`", text), text
    assert "`" not in text.split("\n\n", 2)[1]  # the description, from a docstring for most commands


def test_help_text_drops_roles_and_literals():
    doc = "The ``classwise`` command: :func:`~classwise.tables.to_csv` beside :class:`classwise.errors.InputError`, `x`.\n\nMore."
    assert help_text(doc) == "The classwise command: to_csv beside classwise.errors.InputError, x."
    assert help_text(None) == "" and help_text("  \n") == ""


# ------------------------------------------------- issue #39 item 5: the seams of the command line


def _probabilities(n: int, c: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    logits, labels = _random_logits(n, c, seed=seed, signal=3.0)
    return softmax(logits.astype(np.float64), axis=1), labels


def _ids(n: int) -> np.ndarray:
    return np.array([f"s{i:03d}" for i in range(n)])


def _labels_csv(path: Path, labels: np.ndarray, order: np.ndarray) -> Path:
    pd.DataFrame({"sample_id": _ids(labels.size)[order], "label": labels[order]}).to_csv(path, index=False)
    return path


def _scores_csv(path: Path, scores: np.ndarray, labels: np.ndarray | None = None, *, decimals: int | None = None) -> Path:
    frame = pd.DataFrame(scores if decimals is None else np.round(scores, decimals))
    frame.columns = [f"score_{j}" for j in range(scores.shape[1])]
    if labels is not None:
        frame.insert(0, "label", labels)
    frame.insert(0, "sample_id", _ids(scores.shape[0]))
    frame.to_csv(path, index=False)
    return path


def test_rows_in_messages_are_a_csv_s_lines_and_other_files_0_based_data_rows(tmp_path, capsys):
    logits, labels = _random_logits(20, 4, seed=26)
    with_nan = logits.astype(np.float64)
    with_nan[[2, 9]] = np.nan
    csv = _scores_csv(tmp_path / "nan.csv", with_nan, labels)
    npz = _write(tmp_path / "nan.npz", logits=with_nan, labels=labels)
    out = tmp_path / "m.json"
    assert main(["metrics", str(csv), "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert "lines 4, 11" in message and "rows 2" not in message, message
    assert main(["metrics", str(npz), "--out", str(out)]) == 2
    assert "data rows 2, 9 (0-based)" in capsys.readouterr().err
    bad_labels = labels.copy()
    bad_labels[6] = 9
    truth = _labels_csv(tmp_path / "labels.csv", bad_labels, np.arange(labels.size))
    unlabelled = _scores_csv(tmp_path / "scores.csv", logits.astype(np.float64))
    assert main(["metrics", str(unlabelled), "--labels", str(truth), "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert f"{truth}: field 'labels': " in message and "label 9 at line 8" in message, message
    assert not out.exists()


def _accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(scores.argmax(axis=1) == labels))


def test_an_npy_beside_labels_with_sample_ids_is_refused_unless_the_order_is_given(tmp_path, capsys):
    """The user's report: probs.npy with a shuffled sample_id,label CSV gave A 0.117 (by row)."""
    probs, labels = _probabilities(120, 4, seed=20)
    npy = tmp_path / "probs.npy"
    np.save(npy, probs)
    shuffled = _labels_csv(tmp_path / "labels.csv", labels, np.random.default_rng(0).permutation(labels.size))
    out = tmp_path / "m.json"
    assert main(["metrics", str(npy), "--labels", str(shuffled), "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert f"{npy}: field 'sample_id': " in message and str(shuffled) in message and "--match-by-row" in message, message
    assert not out.exists()
    in_order = _labels_csv(tmp_path / "ordered.csv", labels, np.arange(labels.size))
    assert main(["metrics", str(npy), "--labels", str(in_order), "--match-by-row", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["metrics"]["A"]["value"] == pytest.approx(_accuracy(probs, labels))


def test_a_file_with_sample_ids_beside_labels_in_row_order_is_refused_unless_the_order_is_given(tmp_path, capsys):
    probs, labels = _probabilities(120, 4, seed=21)
    csv = _scores_csv(tmp_path / "scores.csv", probs)
    np.save(tmp_path / "labels.npy", labels)
    out = tmp_path / "m.json"
    arguments = ["metrics", str(csv), "--labels", str(tmp_path / "labels.npy"), "--out", str(out)]
    assert main(arguments) == 2
    message = capsys.readouterr().err
    assert f"{csv}: field 'sample_id': " in message and "--match-by-row" in message, message
    assert main([*arguments, "--match-by-row"]) == 0
    assert json.loads(out.read_text())["metrics"]["A"]["value"] == pytest.approx(_accuracy(probs, labels))


def test_sample_ids_on_both_sides_pair_by_id_even_with_match_by_row(tmp_path):
    probs, labels = _probabilities(120, 4, seed=22)
    csv = _scores_csv(tmp_path / "scores.csv", probs)
    shuffled = _labels_csv(tmp_path / "labels.csv", labels, np.random.default_rng(1).permutation(labels.size))
    for extra in ([], ["--match-by-row"]):
        out = tmp_path / "m.json"
        assert main(["metrics", str(csv), "--labels", str(shuffled), "--out", str(out), *extra]) == 0
        assert json.loads(out.read_text())["metrics"]["A"]["value"] == pytest.approx(_accuracy(probs, labels))


@pytest.mark.parametrize("command", ["metrics", "compare"])
def test_match_by_row_and_kind_are_documented_in_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--match-by-row" in text and "same order" in text, text
    assert "--kind {probs,logits}" in text and "renormalises" in text, text


def _rounded_case(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray, int]:
    """Probabilities written with 2 decimals: rows sum to 0.98-1.02, most outside 1e-3."""
    probs, labels = _probabilities(200, 4, seed=23)
    rounded = np.round(probs, 2)
    sums = rounded.sum(axis=1)
    assert 1e-3 < np.abs(sums - 1).max() <= 0.02
    return _scores_csv(tmp_path / "rounded.csv", probs, labels, decimals=2), rounded, labels, int(np.abs(sums - 1).argmax())


def test_rounded_probabilities_read_as_logits_are_said_so_with_a_warning(tmp_path, capsys):
    csv, rounded, _, worst = _rounded_case(tmp_path)
    out = tmp_path / "m.json"
    assert main(["metrics", str(csv), "--out", str(out)]) == 0
    scores = json.loads(out.read_text())["scores"]
    line = f"line {worst + 2}"  # the header is line 1
    worst_sum = f"{rounded[worst].sum():.6g}"
    assert scores["read_as"] == "logits"
    assert line in scores["why"] and worst_sum in scores["why"] and "0.001" in scores["why"], scores
    warning = capsys.readouterr().err
    assert "warning" in warning and str(csv) in warning and line in warning and worst_sum in warning, warning
    assert "renormalise" in warning and "--kind probs" in warning, warning


def test_kind_probs_reads_rounded_probabilities_renormalised(tmp_path, capsys):
    csv, rounded, labels, _ = _rounded_case(tmp_path)
    exact = _scores_csv(tmp_path / "renormalised.csv", rounded / rounded.sum(axis=1, keepdims=True), labels)
    out, reference = tmp_path / "m.json", tmp_path / "reference.json"
    assert main(["metrics", str(csv), "--kind", "probs", "--out", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["metrics", str(exact), "--out", str(reference)]) == 0
    document, expected = json.loads(out.read_text()), json.loads(reference.read_text())
    assert document["scores"]["read_as"] == "probabilities" and "renormalised" in document["scores"]["why"]
    assert expected["scores"] == {"read_as": "probabilities", "why": "every row is non-negative and sums to 1 within 0.001"}
    for name in ("decisiveness", "calibration_slope", "A"):
        assert document["metrics"][name]["value"] == pytest.approx(expected["metrics"][name]["value"], rel=1e-9), name


def test_files_that_say_their_kind_or_are_plainly_logits_are_read_as_before_without_a_warning(tmp_path, capsys):
    logits, labels = _random_logits(80, 4, seed=24)
    npz = _write(tmp_path / "s.npz", logits=logits, labels=labels)
    csv = _scores_csv(tmp_path / "logits.csv", logits.astype(np.float64), labels)
    out = tmp_path / "m.json"
    assert main(["metrics", str(npz), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["scores"] == {"read_as": "logits", "why": "the file says logits (its array 'logits')"}
    assert main(["metrics", str(csv), "--out", str(out)]) == 0
    scores = json.loads(out.read_text())["scores"]
    assert scores["read_as"] == "logits" and "negative" in scores["why"], scores
    assert capsys.readouterr().err == ""


def test_every_output_of_several_files_says_how_their_scores_were_read(tmp_path, capsys):
    csv, _, labels, _ = _rounded_case(tmp_path)
    probs, _ = _probabilities(200, 4, seed=23)
    exact = _scores_csv(tmp_path / "exact.csv", probs, labels)
    out = tmp_path / "out"
    assert main(["metrics", str(csv), str(exact), "--out-dir", str(out), "--compare", "--bootstrap", "10"]) == 0
    assert "warning" in capsys.readouterr().err
    summary = pd.read_csv(out / "summary.csv").set_index("name")
    assert summary["scores_read_as"].to_dict() == {"rounded": "logits", "exact": "probabilities"}
    pair = json.loads((out / "compare.json").read_text())["pairs"][0]
    assert (pair["scores"]["a"]["read_as"], pair["scores"]["b"]["read_as"]) == ("logits", "probabilities")
    compared = tmp_path / "c.json"
    assert main(["compare", str(csv), str(exact), "--bootstrap", "10", "--out", str(compared)]) == 0
    scores = json.loads(compared.read_text())["scores"]
    assert scores["a"]["read_as"] == "logits" and scores["b"]["read_as"] == "probabilities"
    assert "line" in scores["a"]["why"] and str(csv) in capsys.readouterr().err


def test_kind_that_contradicts_the_file_or_the_values_is_refused(tmp_path, capsys):
    logits, labels = _random_logits(40, 4, seed=25)
    npz = _write(tmp_path / "s.npz", logits=logits, labels=labels)
    out = tmp_path / "m.json"
    assert main(["metrics", str(npz), "--kind", "probs", "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert f"{npz}: field 'kind': " in message and "'logits'" in message, message
    far = np.abs(logits.astype(np.float64))
    far[7] *= 10  # not probabilities at all: no renormalising makes them so
    csv = _scores_csv(tmp_path / "far.csv", far / far.sum(axis=1, keepdims=True), labels)
    frame = pd.read_csv(csv)
    frame.loc[7, [f"score_{j}" for j in range(4)]] *= 3
    frame.to_csv(csv, index=False)
    assert main(["metrics", str(csv), "--kind", "probs", "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert f"{csv}: field 'kind': " in message and "line 9" in message and "sums to 3" in message, message
    assert not out.exists()


def _several_files_case(tmp_path: Path, case: str) -> tuple[list[str], list[str]]:
    """The arguments of a call of several files that fails, and what its message must hold."""
    n = 12
    labels = np.arange(n) % 3
    wide = _scores_csv(tmp_path / "wide.csv", np.random.default_rng(0).normal(size=(n, 4)))
    narrow = _scores_csv(tmp_path / "narrow.csv", np.random.default_rng(1).normal(size=(n, 3)))
    truth = _labels_csv(tmp_path / "labels.csv", labels, np.arange(n))
    if case == "a label beyond one file's classes":
        with_class_3 = labels.copy()
        with_class_3[5] = 3
        labels_3 = _labels_csv(tmp_path / "labels3.csv", with_class_3, np.arange(n))
        return [str(wide), str(narrow), "--labels", str(labels_3)], [f"{narrow} has 3 classes", "line 7"]
    if case == "an id twice in the labels":
        twice = _labels_csv(tmp_path / "twice.csv", labels, np.r_[np.arange(n - 1), 0])
        return [str(wide), str(narrow), "--labels", str(twice)], [f"{twice}: field 'sample_id': duplicate sample ids"]
    if case == "a file shorter than the labels":
        np.save(tmp_path / "labels.npy", labels)
        short = _scores_csv(tmp_path / "short.csv", np.random.default_rng(2).normal(size=(n - 1, 3)))
        arguments = [str(narrow), str(short), "--labels", str(tmp_path / "labels.npy"), "--match-by-row"]
        return arguments, [f"{short}: ", "has 11 rows"]
    if case == "an unknown class name":
        (tmp_path / "names.txt").write_text("ant\nbee\ncat\n")
        good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
        pd.DataFrame({"sample_id": _ids(n), "prediction": np.array(["ant", "bee", "cat"])[labels]}).to_csv(good, index=False)
        pd.DataFrame({"sample_id": _ids(n), "prediction": ["ant"] * 4 + ["cow"] + ["bee"] * 7}).to_csv(bad, index=False)
        arguments = [str(good), str(bad), "--labels", str(truth), "--classes", str(tmp_path / "names.txt")]
        return arguments, [f"{bad}: field 'prediction': 'cow' is no class of the class names (--classes)", "line 6"]
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"x": [0, 3], "y": [1]}))
    return [str(wide), str(narrow), "--labels", str(truth), "--superclasses", str(groups)], [f"{narrow}: field 'superclasses'"]


@pytest.mark.parametrize("command", ["metrics", "compare"])
@pytest.mark.parametrize(
    "case",
    [
        "a label beyond one file's classes",
        "an id twice in the labels",
        "a file shorter than the labels",
        "an unknown class name",
        "a superclass beyond one file's classes",
    ],
)
def test_an_error_in_a_call_of_several_files_names_the_file(tmp_path, capsys, case, command):
    arguments, expected = _several_files_case(tmp_path, case)
    if command == "compare" and case == "a superclass beyond one file's classes":
        expected = [f"{arguments[1]}: ", "has 3 classes"]  # compare refuses files of other class counts first
    out = tmp_path / "out"
    assert main([command, *arguments, "--out-dir" if command == "metrics" else "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert all(text in message for text in expected), message
    assert not out.exists()
