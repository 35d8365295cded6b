"""Like with like: every comparison of two shifts or two models on the samples both hold,
matched by sample id, checked against numbers computed independently from the per-sample arrays
(dictionaries keyed by sample id, naive loops)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise import tables
from classwise.errors import InputError
from classwise.logits_io import ScoresFile, load_sample_ids, save_logits
from classwise.robustness.across_shifts import (
    class_shift_matrix,
    corruption_summary,
    shift_summary,
    shift_summary_display,
)
from classwise.robustness.pairing import (
    ArrayOutputs,
    CachedOutputs,
    pair_confusions,
    pairing_table,
    samples_note,
    shift_samples,
)
from classwise.robustness.targeted import targeted_success_table
from classwise.robustness.transfer import transfer_matrix

C = 3
NAMES = ["k0", "k1", "k2"]
N = 30
IDS = np.array([f"img{i:02d}" for i in range(N)])
LABELS = np.arange(N) % C
# the attacked subset: 2 samples per class, all of them right on clean for model a, whose clean
# accuracy over all 30 is lower; attacked out of a permuted order
SUBSET = np.array([27, 3, 4, 10, 2, 14])


def _clean_predictions(rng: np.random.Generator) -> np.ndarray:
    predicted = np.where(rng.random(N) < 0.6, LABELS, (LABELS + 1) % C)
    predicted[SUBSET] = LABELS[SUBSET]
    return predicted


def _by_id(ids: np.ndarray, values: np.ndarray) -> dict[str, int]:
    return {str(i): int(v) for i, v in zip(ids, values)}


def _accuracy(labels: dict[str, int], predicted: dict[str, int], ids: list[str]) -> float:
    return sum(labels[i] == predicted[i] for i in ids) / len(ids)


def _worst(labels: dict[str, int], predicted: dict[str, int], ids: list[str]) -> float:
    recall = []
    for c in range(C):
        of_class = [i for i in ids if labels[i] == c]
        if of_class:
            recall.append(sum(predicted[i] == c for i in of_class) / len(of_class))
    return min(recall)


@pytest.fixture
def evaluations() -> dict[str, dict[str, ArrayOutputs]]:
    """clean (30 images), gaussian_noise (the same 30, shuffled), autoattack (6 of them) and
    sketch (20 other images), for models a and b."""
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, ArrayOutputs]] = {"clean": {}, "gaussian_noise": {}, "autoattack": {}, "sketch": {}}
    for model in ("a", "b"):
        out["clean"][model] = ArrayOutputs(IDS, LABELS, _clean_predictions(rng), C, source=f"{model}/clean")
        order = rng.permutation(N)
        noisy = np.where(rng.random(N) < 0.5, LABELS, rng.integers(0, C, N))
        out["gaussian_noise"][model] = ArrayOutputs(IDS[order], LABELS[order], noisy[order], C)
        attacked = np.where(rng.random(SUBSET.size) < 0.3, LABELS[SUBSET], (LABELS[SUBSET] + 2) % C)
        out["autoattack"][model] = ArrayOutputs(IDS[SUBSET], LABELS[SUBSET], attacked, C)
        other = np.array([f"sketch/{i}" for i in range(20)])
        out["sketch"][model] = ArrayOutputs(other, np.arange(20) % C, rng.integers(0, C, 20), C)
    return out


def _arrays(o: ArrayOutputs) -> tuple[dict[str, int], dict[str, int]]:
    return _by_id(o.ids, o.labels), _by_id(o.ids, o.predicted)


def test_the_change_from_clean_of_a_subset_is_on_the_same_samples(evaluations) -> None:  # type: ignore[no-untyped-def]
    paired = pair_confusions(evaluations, unpaired=["sketch"])
    summary = shift_summary(paired.confusions, NAMES, references=paired.references)
    subset_ids = [str(i) for i in IDS[SUBSET]]
    for model in ("a", "b"):
        labels, clean = _arrays(evaluations["clean"][model])
        _, attacked = _arrays(evaluations["autoattack"][model])
        row = summary.loc[("autoattack", model)]
        on_subset = _accuracy(labels, clean, subset_ids)
        assert row["accuracy"] == pytest.approx(_accuracy(labels, attacked, subset_ids))
        assert row["reference_accuracy"] == pytest.approx(on_subset)
        assert row["accuracy_change"] == pytest.approx(_accuracy(labels, attacked, subset_ids) - on_subset)
        assert row["worst_class_accuracy_change"] == pytest.approx(
            _worst(labels, attacked, subset_ids) - _worst(labels, clean, subset_ids)
        )
        assert (row["n"], row["reference_n"], row["pairing"]) == (6, 30, "subset")
        # the case is one where the whole clean set would have given another answer
        assert on_subset == 1.0 and _accuracy(labels, clean, list(IDS)) < 1.0
        # a shuffled paired copy: every sample, matched by id, against the whole clean set
        _, noisy = _arrays(evaluations["gaussian_noise"][model])
        row = summary.loc[("gaussian_noise", model)]
        assert row["accuracy_change"] == pytest.approx(_accuracy(labels, noisy, list(IDS)) - _accuracy(labels, clean, list(IDS)))
        assert (row["n"], row["pairing"]) == (N, "same samples")
        # other images: compared with every clean image, and said to be unpaired
        sketch_labels, sketch = _arrays(evaluations["sketch"][model])
        row = summary.loc[("sketch", model)]
        assert row["accuracy_change"] == pytest.approx(
            _accuracy(sketch_labels, sketch, list(sketch)) - _accuracy(labels, clean, list(IDS))
        )
        assert (row["n"], row["pairing"]) == (20, "unpaired")


def test_the_display_and_the_captions_say_n_and_unpaired(evaluations) -> None:  # type: ignore[no-untyped-def]
    paired = pair_confusions(evaluations, unpaired=["sketch"])
    display = shift_summary_display(shift_summary(paired.confusions, NAMES, references=paired.references))
    assert list(display.columns[:2]) == ["n", "vs clean"]
    assert display.loc["autoattack", "n"] == "6" and display.loc["autoattack", "vs clean"] == "same 6 samples"
    assert display.loc["gaussian_noise", "vs clean"] == "same samples"
    assert display.loc["sketch", "vs clean"] == "unpaired: other images"
    assert display.loc["clean", "vs clean"] == "" and display.loc["clean", "n"] == "30"
    pairing = pairing_table(paired.confusions, paired.references)
    note = samples_note(pairing)
    assert "autoattack (n = 6 of 30)" in note and "sketch (n = 20)" in note and "gaussian_noise" not in note
    assert shift_samples(pairing, "autoattack") == "n = 6 of 30"
    assert shift_samples(pairing, "sketch") == "other images, n = 20"
    assert shift_samples(pairing, "gaussian_noise") == ""


def test_the_class_shift_matrix_holds_clean_on_the_subset(evaluations) -> None:  # type: ignore[no-untyped-def]
    paired = pair_confusions(evaluations, unpaired=["sketch"])
    matrix = class_shift_matrix(paired.confusions, NAMES, references=paired.references)
    assert list(matrix.columns) == ["clean", "gaussian_noise", "autoattack", "clean on autoattack", "sketch"]
    for model in ("a", "b"):
        labels, clean = _arrays(evaluations["clean"][model])
        for c in range(C):
            of_class = [str(i) for i in IDS[SUBSET] if labels[str(i)] == c]
            expected = sum(clean[i] == c for i in of_class) / len(of_class)
            assert matrix.loc[(model, c, NAMES[c]), "clean on autoattack"] == pytest.approx(expected)


def test_the_relative_drop_of_a_subset_copy_is_against_clean_on_its_samples(evaluations) -> None:  # type: ignore[no-untyped-def]
    paired = pair_confusions(evaluations, unpaired=["sketch"])
    summary = corruption_summary(paired.confusions, NAMES, ["gaussian_noise", "autoattack"], references=paired.references)
    for model in ("a", "b"):
        labels, clean = _arrays(evaluations["clean"][model])
        for c in range(C):
            accuracy, clean_on = [], []
            for shift in ("gaussian_noise", "autoattack"):
                _, shifted = _arrays(evaluations[shift][model])
                of_class = [i for i in shifted if labels[i] == c]
                accuracy.append(sum(shifted[i] == c for i in of_class) / len(of_class))
                clean_on.append(sum(clean[i] == c for i in of_class) / len(of_class))
            row = summary.loc[(model, c, NAMES[c])]
            assert row["mean_corruption_error"] == pytest.approx(1 - np.mean(accuracy))
            assert row["relative_drop"] == pytest.approx((np.mean(clean_on) - np.mean(accuracy)) / np.mean(clean_on))
            whole = [i for i in IDS if labels[str(i)] == c]
            assert row["clean_error"] == pytest.approx(1 - sum(clean[str(i)] == c for i in whole) / len(whole))


def test_models_of_one_shift_are_compared_on_the_samples_both_hold(evaluations) -> None:  # type: ignore[no-untyped-def]
    b = evaluations["autoattack"]["b"]
    evaluations["autoattack"]["b"] = ArrayOutputs(b.ids[1:], b.labels[1:], b.predicted[1:], C)  # b lacks one sample
    paired = pair_confusions(evaluations, unpaired=["sketch"])
    shared = [str(i) for i in IDS[SUBSET][1:]]
    for model in ("a", "b"):
        labels, attacked = _arrays(evaluations["autoattack"][model])
        _, clean = _arrays(evaluations["clean"][model])
        matrix = paired.confusions["autoattack"][model]
        assert matrix.sum() == 5
        assert np.trace(matrix) == sum(attacked[i] == labels[i] for i in shared)
        assert np.trace(paired.references["autoattack"][model]) == sum(clean[i] == labels[i] for i in shared)


def test_a_paired_shift_must_share_samples_and_labels(evaluations) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="shares no sample id with 'clean'"):
        pair_confusions(evaluations)  # sketch not declared unpaired
    a = evaluations["autoattack"]["a"]
    relabelled = a.labels.copy()
    relabelled[0] = (relabelled[0] + 1) % C  # one sample labelled otherwise: the class supports differ
    evaluations["autoattack"]["a"] = ArrayOutputs(a.ids, relabelled, a.predicted, C, source="aa.npz")
    with pytest.raises(InputError, match="labels differ") as info:
        pair_confusions(evaluations, unpaired=["sketch"])
    assert info.value.path == "aa.npz"


def _save(path: Path, o: ArrayOutputs) -> tuple[Path, Path]:
    logits = np.eye(C, dtype=np.float32)[o.predicted]
    save_logits(path, logits=logits, labels=o.labels, sample_ids=o.ids, class_names=np.array(NAMES), metadata={})
    confusion = path.with_suffix(".csv")
    pd.DataFrame(o.confusion(), index=NAMES, columns=NAMES).to_csv(confusion)
    return path, confusion


def test_cached_files_pair_like_arrays_and_read_scores_only_for_a_subset(tmp_path: Path, evaluations) -> None:  # type: ignore[no-untyped-def]
    cached = {
        shift: {model: CachedOutputs(*_save(tmp_path / f"{shift}_{model}.npz", o)) for model, o in by_model.items()}
        for shift, by_model in evaluations.items()
    }
    from_files = pair_confusions(cached, unpaired=["sketch"])
    from_arrays = pair_confusions(evaluations, unpaired=["sketch"])
    for shift, by_model in from_arrays.confusions.items():
        for model, matrix in by_model.items():
            np.testing.assert_array_equal(from_files.confusions[shift][model], matrix)
    for shift, by_model in from_arrays.references.items():
        for model, matrix in by_model.items():
            np.testing.assert_array_equal(from_files.references[shift][model], matrix)
    assert set(from_files.references) == {"gaussian_noise", "autoattack"}
    # the clean scores were read (for the subset), the shifts' never: their own confusion served
    assert cached["clean"]["a"]._rows is not None
    assert all(cached[shift][model]._rows is None for shift in ("gaussian_noise", "autoattack", "sketch") for model in "ab")


def test_sample_ids_alone(tmp_path: Path) -> None:
    o = ArrayOutputs(IDS[::-1], LABELS, LABELS, C)
    path, _ = _save(tmp_path / "x.npz", o)
    assert load_sample_ids(path).tolist() == IDS[::-1].tolist()
    np.savez(tmp_path / "bare.npz", logits=np.zeros((4, 2)), labels=np.zeros(4, int))
    assert load_sample_ids(tmp_path / "bare.npz").tolist() == ["0", "1", "2", "3"]
    np.savez(tmp_path / "twice.npz", logits=np.zeros((2, 2)), labels=np.zeros(2, int), sample_ids=np.array(["s", "s"]))
    with pytest.raises(InputError, match="duplicate"):
        load_sample_ids(tmp_path / "twice.npz")


def _scores(o: ArrayOutputs) -> ScoresFile:
    return ScoresFile(
        scores=np.eye(C, dtype=np.float32)[o.predicted],
        labels=np.asarray(o.labels),
        kind="logits",
        sample_ids=np.asarray(o.ids).astype(str),
        class_names=np.array(NAMES),
    )


def test_the_clean_rate_of_a_targeted_subset_is_on_its_samples(evaluations) -> None:  # type: ignore[no-untyped-def]
    clean = evaluations["clean"]["a"]
    labels, clean_predicted = _arrays(clean)
    rng = np.random.default_rng(4)
    ids = IDS[SUBSET]
    run = ArrayOutputs(ids, LABELS[SUBSET], rng.integers(0, C, SUBSET.size), C)
    # the clean model predicts class 1 for some samples outside the subset, never inside it
    predicted = np.array(clean.predicted)
    outside = np.setdiff1d(np.arange(N), SUBSET)[:4]
    predicted[outside] = 1
    clean = ArrayOutputs(IDS, LABELS, predicted, C)
    table = targeted_success_table({1: _scores(run)}, clean=_scores(clean))
    not_target = [str(i) for i in ids if labels[str(i)] != 1]
    expected = sum(int(predicted[list(IDS).index(i)] == 1) for i in not_target) / len(not_target)
    assert table.loc[1, "clean_rate"] == pytest.approx(expected)
    assert expected == 0.0 and np.mean(predicted[LABELS != 1] == 1) > 0  # the whole set would differ
    stranger = ArrayOutputs(np.array(["nobody"]), np.array([0]), np.array([1]), C)
    with pytest.raises(InputError, match="not in the clean outputs"):
        targeted_success_table({1: _scores(stranger)}, clean=_scores(clean))


def test_the_transfer_display_says_n(evaluations) -> None:  # type: ignore[no-untyped-def]
    clean = {model: _scores(evaluations["clean"][model]) for model in ("a", "b")}
    transferred = {("a", "pgd", target): _scores(evaluations["autoattack"][target]) for target in ("a", "b")}
    display = tables.transfer_matrix_table(transfer_matrix(clean, transferred), samples=True)
    assert list(display.columns) == ["a", "b", "n"] and display.loc["a / pgd", "n"] == "6"


def test_the_step_writes_n_in_the_tables_the_captions_and_the_panels(tmp_path: Path, evaluations) -> None:  # type: ignore[no-untyped-def]
    from metric_files import write_metric_files

    from classwise.plots.robustness import plot_classwise_robustness
    from classwise.steps.robustness import AcrossShiftsPaths, classwise_robustness_step

    files = {
        shift: {
            model: write_metric_files(tmp_path, f"{shift}_{model}", o.ids, o.labels, o.predicted, NAMES)
            for model, o in by_model.items()
        }
        for shift, by_model in evaluations.items()
    }

    def table(stem: str) -> dict[str, Path]:
        return {"markdown": tmp_path / f"{stem}.md", "csv": tmp_path / f"{stem}.csv", "latex": tmp_path / f"{stem}.tex"}

    classwise_robustness_step(
        files=files,
        attack_shifts=["autoattack"],
        unpaired_shifts=["sketch"],
        corrupted_shifts=["gaussian_noise"],
        title="t",
        figure_path=tmp_path / "fig.png",
        similarity_path=tmp_path / "sim.png",
        mean_confusion_dir=tmp_path / "mean",
        table_paths=table("classwise"),
        across_shifts=AcrossShiftsPaths(
            shift_summary=table("summary"),
            corruption_errors=table("errors"),
            class_shift_accuracy=tmp_path / "accuracy.csv",
            class_shift_cfps=tmp_path / "cfps.csv",
            worst_classes_figure=tmp_path / "worst.png",
            spread_figure=tmp_path / "spread.png",
        ),
    )
    markdown = (tmp_path / "summary.md").read_text()
    assert "| autoattack | 6 | same 6 samples |" in markdown and "| sketch | 20 | unpaired: other images |" in markdown
    assert "autoattack (n = 6 of 30)" in markdown and "sketch (n = 20)" in markdown  # the caption
    summary = pd.read_csv(tmp_path / "summary.csv", index_col=[0, 1])
    labels, clean = _arrays(evaluations["clean"]["a"])
    assert summary.loc[("autoattack", "a"), "reference_accuracy"] == pytest.approx(
        _accuracy(labels, clean, [str(i) for i in IDS[SUBSET]])
    )
    long = pd.read_csv(tmp_path / "classwise.csv")
    assert set(long.loc[long["shift"] == "autoattack", "n"]) == {6} and set(long.loc[long["shift"] == "clean", "n"]) == {30}
    assert "autoattack (n = 6 of 30)" in (tmp_path / "classwise.md").read_text()
    assert "clean on autoattack" in pd.read_csv(tmp_path / "cfps.csv", nrows=0).columns
    assert (tmp_path / "mean" / "autoattack.png").stat().st_size > 0
    paired = pair_confusions(evaluations, unpaired=["sketch"])
    pairing = pairing_table(paired.confusions, paired.references)
    notes = {shift: shift_samples(pairing, shift) for shift in paired.confusions}
    fig = plot_classwise_robustness(paired.confusions, NAMES, path=tmp_path / "panels.png", notes=notes)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["clean", "gaussian_noise", "autoattack (n = 6 of 30)", "sketch (other images, n = 20)"]


def test_a_file_of_hard_predictions_pairs_too(tmp_path: Path, evaluations) -> None:  # type: ignore[no-untyped-def]
    from classwise.logits_io import save_predictions

    cached: dict[str, dict[str, CachedOutputs]] = {}
    for shift in ("clean", "autoattack"):
        o = evaluations[shift]["a"]
        path = tmp_path / f"{shift}.npz"
        save_predictions(
            path, predictions=o.predicted, labels=o.labels, sample_ids=o.ids, class_names=np.array(NAMES), metadata={}
        )
        pd.DataFrame(o.confusion(), index=NAMES, columns=NAMES).to_csv(path.with_suffix(".csv"))
        cached[shift] = {"a": CachedOutputs(path, path.with_suffix(".csv"))}
    from_files = pair_confusions(cached)
    expected = pair_confusions({shift: {"a": evaluations[shift]["a"]} for shift in ("clean", "autoattack")})
    np.testing.assert_array_equal(from_files.references["autoattack"]["a"], expected.references["autoattack"]["a"])
