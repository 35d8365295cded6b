"""Per-class tests of a shift's change from clean, and ``classwise compare --class-drops``.

References: a loop over the classes that counts each class's 2 x 2 table from the samples and
calls scipy's ``binomtest`` / ``fisher_exact`` / ``boschloo_exact`` and statsmodels'
``multipletests``; the intervals' own references are in test_proportions.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from classwise.cli import main
from classwise.errors import InputError
from classwise.logits_io import load_outputs
from classwise.metrics import proportions
from classwise.metrics.class_drops import (
    COLUMNS,
    EXTRA_COLUMNS,
    DropTestSettings,
    adjust_families,
    class_changes,
    class_drops,
    drop_counts,
    significant_changes,
)
from classwise.metrics.outcomes import SampleOutcomes

C = 6


def _clean(rng: np.random.Generator, per_class: int = 30, prefix: str = "s") -> SampleOutcomes:
    labels = rng.permutation(np.repeat(np.arange(C), per_class))
    ids = np.array([f"{prefix}{i}" for i in range(labels.size)])
    return SampleOutcomes.from_correct(ids, labels, rng.random(labels.size) < 0.8)


def _shifted(rng: np.random.Generator, clean: SampleOutcomes, drops: dict[int, float]) -> SampleOutcomes:
    """The same samples with some classes' correct samples flipped to errors, and a few errors fixed."""
    correct = clean.correct.copy()
    for c, share in drops.items():
        correct &= ~((clean.labels == c) & (rng.random(clean.n_samples) < share))
    correct |= rng.random(clean.n_samples) < 0.03
    return SampleOutcomes.from_correct(clean.sample_ids, clean.labels, correct)


def _paired_reference(clean: SampleOutcomes, shift: SampleOutcomes) -> dict[str, list[float]]:
    """Per class by a loop: the shared samples' table, McNemar via binomtest, the interval."""
    where = {sid: i for i, sid in enumerate(clean.sample_ids)}
    out: dict[str, list[float]] = {"n": [], "b": [], "c": [], "p": [], "low": [], "high": [], "change": []}
    for cls in range(C):
        pairs = [
            (clean.correct[where[s]], shift.correct[j])
            for j, s in enumerate(shift.sample_ids)
            if s in where and shift.labels[j] == cls
        ]
        both = sum(a and b for a, b in pairs)
        b = sum(a and not s for a, s in pairs)  # right clean only
        c = sum(s and not a for a, s in pairs)  # right under the shift only
        n = len(pairs)
        out["n"].append(n)
        out["b"].append(b)
        out["c"].append(c)
        out["p"].append(stats.binomtest(b, b + c, 0.5).pvalue if b + c else (1.0 if n else np.nan))
        low, high = proportions.newcombe_paired_interval(both, c, b, n - both - b - c) if n else (np.nan, np.nan)
        out["low"].append(float(low))
        out["high"].append(float(high))
        out["change"].append((c - b) / n if n else np.nan)
    return out


def test_paired_tests_match_a_loop_over_classes_whatever_the_row_order():
    rng = np.random.default_rng(0)
    clean = _clean(rng)
    shift = _shifted(rng, clean, {1: 0.6, 4: 0.3})
    order = rng.permutation(shift.n_samples)
    shuffled = SampleOutcomes.from_correct(shift.sample_ids[order], shift.labels[order], shift.correct[order])
    table = class_changes(clean, shuffled, model="m", shift_name="fog")
    assert list(table.columns) == list(COLUMNS + EXTRA_COLUMNS)
    reference = _paired_reference(clean, shift)
    np.testing.assert_array_equal(table["n_clean"], reference["n"])
    np.testing.assert_array_equal(table["n_shift"], reference["n"])
    np.testing.assert_array_equal(table["clean_only_correct"].to_numpy(dtype=np.int64), reference["b"])
    np.testing.assert_array_equal(table["shift_only_correct"].to_numpy(dtype=np.int64), reference["c"])
    np.testing.assert_allclose(table["p_value"], reference["p"], rtol=1e-12)
    np.testing.assert_allclose(table["change"], reference["change"], rtol=1e-12)
    np.testing.assert_allclose(table["change_low"], reference["low"], rtol=1e-12)
    np.testing.assert_allclose(table["change_high"], reference["high"], rtol=1e-12)
    assert set(table["pairing"]) == {"paired"} and set(table["test"]) == {"mcnemar_exact"}
    assert set(table["interval_method"]) == {"newcombe_paired_score"}
    # the change is the shift's accuracy minus clean's, per class
    per_class_clean = [clean.correct[clean.labels == c].mean() for c in range(C)]
    np.testing.assert_allclose(table["accuracy_clean"], per_class_clean, rtol=1e-12)
    np.testing.assert_allclose(table["change"], table["accuracy_shift"] - table["accuracy_clean"], rtol=1e-12)
    # class 1 lost 60 % of its correct samples: a real drop
    assert table.loc[1, "significant"] and table.loc[1, "change"] < 0


def test_the_family_is_every_shift_and_class_of_one_model():
    rng = np.random.default_rng(1)
    clean = {"a": _clean(rng), "b": _clean(rng)}
    shifted = {
        shift: {model: _shifted(rng, clean[model], {2: 0.5 * k}) for model in clean} for k, shift in enumerate(["s1", "s2", "s3"])
    }
    for adjustment, method in (("bh", "fdr_bh"), ("holm", "holm")):
        table = class_drops(clean, shifted, tests=DropTestSettings(q=0.1, adjustment=adjustment))
        assert list(table["model"].unique()) == ["a", "b"] and list(table["shift"].unique()) == ["s1", "s2", "s3"]
        for _model, rows in table.groupby("model"):
            reject, expected, _, _ = multipletests(rows["p_value"], alpha=0.1, method=method)
            np.testing.assert_allclose(rows["p_adjusted"], expected, rtol=1e-12)
            np.testing.assert_array_equal(rows["significant"], reject)
            assert (rows["family_size"] == 3 * C).all()
        assert (table["adjustment"] == adjustment).all() and (table["q"] == 0.1).all()
    # per-shift tables concatenated and adjusted again: the same as one call
    parts = [class_changes(clean["a"], shifted[s]["a"], model="a", shift_name=s) for s in shifted]
    together = adjust_families(pd.concat(parts, ignore_index=True))
    pd.testing.assert_frame_equal(together, class_drops({"a": clean["a"]}, {s: {"a": shifted[s]["a"]} for s in shifted}))


def test_a_subset_or_a_partial_overlap_is_paired_on_the_shared_samples():
    rng = np.random.default_rng(2)
    clean = _clean(rng)
    shift = _shifted(rng, clean, {0: 0.5})
    keep = rng.random(clean.n_samples) < 0.4
    subset = SampleOutcomes.from_correct(shift.sample_ids[keep], shift.labels[keep], shift.correct[keep])
    extra = SampleOutcomes.from_correct(
        np.r_[subset.sample_ids, ["new0", "new1", "new2"]],
        np.r_[subset.labels, [0, 0, 5]],
        np.r_[subset.correct, [True, False, True]],
    )
    for outcomes, pairing, shift_extra in ((subset, "paired_subset", [0] * C), (extra, "paired_overlap", [2, 0, 0, 0, 0, 1])):
        table = class_changes(clean, outcomes)
        assert set(table["pairing"]) == {pairing}
        reference = _paired_reference(clean, outcomes)
        np.testing.assert_array_equal(table["n_clean"], reference["n"])
        np.testing.assert_allclose(table["p_value"], reference["p"], rtol=1e-12)
        np.testing.assert_array_equal(
            table["clean_left_out"], np.bincount(clean.labels, minlength=C) - np.asarray(reference["n"])
        )
        np.testing.assert_array_equal(table["shift_left_out"], shift_extra)


@pytest.mark.parametrize("test", ["fisher", "boschloo"])
def test_unpaired_shifts_use_every_sample_of_each_side(test):
    rng = np.random.default_rng(3)
    clean = _clean(rng, per_class=12)
    other = _clean(rng, per_class=9, prefix="o")
    table = class_changes(clean, other, tests=DropTestSettings(unpaired_test=test))
    assert set(table["pairing"]) == {"unpaired"} and set(table["test"]) == {f"{test}_exact"}
    assert table["clean_only_correct"].isna().all()
    reference = getattr(stats, f"{test}_exact")
    for cls in range(C):
        k_shift = int(other.correct[other.labels == cls].sum())
        k_clean = int(clean.correct[clean.labels == cls].sum())
        if test == "fisher":
            expected = reference([[k_shift, 9 - k_shift], [k_clean, 12 - k_clean]]).pvalue
        else:
            expected = reference([[k_shift, k_clean], [9 - k_shift, 12 - k_clean]]).pvalue
        assert table.loc[cls, "p_value"] == pytest.approx(expected, rel=1e-9)
        assert table.loc[cls, "change"] == pytest.approx(k_shift / 9 - k_clean / 12, rel=1e-12)
        low, high = proportions.newcombe_unpaired_interval(k_shift, 9, k_clean, 12)
        assert (table.loc[cls, "change_low"], table.loc[cls, "change_high"]) == pytest.approx((low, high), rel=1e-12)
    assert (table["n_clean"] == 12).all() and (table["n_shift"] == 9).all()


def test_a_set_named_unpaired_is_compared_unpaired_whatever_its_sample_ids():
    """ImageNet-V2 numbers its images as a set of its own might: ids equal to clean's are other
    images all the same, which the caller says with ``unpaired``."""
    rng = np.random.default_rng(5)
    clean = _clean(rng, per_class=12)
    other = _clean(rng, per_class=9, prefix="o")
    renumbered = SampleOutcomes.from_correct(np.char.replace(other.sample_ids, "o", "s"), other.labels, other.correct)
    assert np.isin(renumbered.sample_ids, clean.sample_ids).all()
    with pytest.raises(InputError, match="has label"):  # paired by id, the labels disagree
        class_drops({"m": clean}, {"v2": {"m": renumbered}})
    table = class_drops({"m": clean}, {"v2": {"m": renumbered}}, unpaired=["v2"])
    expected = class_drops({"m": clean}, {"v2": {"m": other}})
    pd.testing.assert_frame_equal(table, expected)
    assert set(table["pairing"]) == {"unpaired"}


def test_abstentions_are_errors_and_classes_without_samples_are_not_tested():
    ids = np.array([f"s{i}" for i in range(12)])
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    clean = SampleOutcomes.from_predictions(ids, labels, labels.copy(), n_classes=4)
    # the shift abstains on every sample of class 0: four errors (McNemar: b = 4, c = 0, p = 2 / 16)
    predicted = np.where(labels == 0, -1, labels)
    shift = SampleOutcomes.from_predictions(ids, labels, predicted, n_classes=4)
    table = class_changes(clean, shift, tests=DropTestSettings(q=0.5))
    assert table.loc[0, "accuracy_shift"] == 0.0 and table.loc[0, "clean_only_correct"] == 4
    assert table.loc[0, "p_value"] == pytest.approx(2 / 16)
    # class 3 has no sample: no test, not significant, outside the family of 3
    row = table.loc[3]
    assert np.isnan(row["p_value"]) and np.isnan(row["p_adjusted"]) and not row["significant"]
    assert row["test"] == "none" and row["interval_method"] == "none" and row["n_clean"] == 0
    assert (table["family_size"] == 3).all()
    # a class with clean samples only, against other images, is not tested either
    other = SampleOutcomes.from_correct(["o1", "o2"], [1, 1], [True, False], n_classes=4)
    unpaired = class_changes(clean, other)
    assert unpaired["p_value"].notna().tolist() == [False, True, False, False]


def test_inputs_that_cannot_be_compared_are_refused():
    rng = np.random.default_rng(4)
    clean = _clean(rng)
    relabelled = SampleOutcomes.from_correct(clean.sample_ids, (clean.labels + 1) % C, clean.correct, source="shift.npz")
    with pytest.raises(InputError, match="labels") as error:
        class_changes(clean, relabelled)
    assert "shift.npz" in str(error.value)
    with pytest.raises(InputError, match="model 'b'"):
        class_drops({"a": clean}, {"fog": {"b": clean}})
    twice = SampleOutcomes.from_correct(["x", "x", "y"], [0, 1, 1], [True, False, True], source="twice.npz")
    for first, second in ((twice, clean), (clean, twice)):  # duplicate ids are refused where samples are matched
        with pytest.raises(InputError, match="duplicate") as error:
            class_changes(first, second)
        assert "twice.npz" in str(error.value)
    with pytest.raises(InputError, match="q"):
        class_changes(clean, clean, tests=DropTestSettings(q=0.0))


@pytest.mark.parametrize(
    ("bad", "field"),
    [({"q": 0.0}, "q"), ({"adjustment": "bonferroni"}, "adjustment"), ({"unpaired_test": "chi2"}, "unpaired_test"),
     ({"confidence": 1.0}, "confidence"), ({"q": 2.0, "confidence": 0.0}, "confidence")],
)  # fmt: skip
def test_bad_test_settings_are_refused_naming_the_bad_one(bad, field):
    # several bad: the one class_drops named first when it took them one by one
    with pytest.raises(InputError) as error:
        DropTestSettings(**bad)
    assert error.value.field == field


def test_significant_changes_and_drop_counts():
    rng = np.random.default_rng(5)
    clean = _clean(rng, per_class=40)
    shifted = {
        "mild": {"m": _shifted(rng, clean, {1: 0.5})},
        "strong": {"m": _shifted(rng, clean, {1: 0.9, 3: 0.7})},
    }
    table = class_drops({"m": clean}, shifted)
    drops = significant_changes(table)
    assert drops["significant"].all() and (drops["change"] < 0).all()
    assert np.all(np.diff(drops["change"].to_numpy()) >= 0)  # largest drop first
    assert {(s, c) for s, c in zip(drops["shift"], drops["class"])} >= {("strong", 1), ("strong", 3), ("mild", 1)}
    counts = drop_counts(table).set_index("class")
    for cls in range(C):
        rows = table[table["class"] == cls]
        assert counts.loc[cls, "n_shifts_dropped"] == int((rows["significant"] & (rows["change"] < 0)).sum())
        assert counts.loc[cls, "n_shifts_tested"] == 2
    assert counts.loc[1, "n_shifts_dropped"] == 2
    assert counts.loc[1, "largest_drop"] == table[(table["class"] == 1) & (table["shift"] == "strong")]["change"].iloc[0]
    assert drop_counts(table)["class"].iloc[0] == 1  # most dropped first
    with pytest.raises(InputError):
        significant_changes(table, direction="up")


# ----------------------------------------------------------------------------- files and the CLI


def _predictions_file(path: Path, outcomes: SampleOutcomes, rng: np.random.Generator) -> Path:
    """An npz of hard predictions with the outcomes' correctness (a wrong class where wrong)."""
    wrong = (outcomes.labels + rng.integers(1, C, outcomes.n_samples)) % C
    predictions = np.where(outcomes.correct, outcomes.labels, wrong)
    names = np.array([f"class{c}" for c in range(C)])
    np.savez(path, predictions=predictions, labels=outcomes.labels, sample_ids=outcomes.sample_ids, class_names=names)
    return path


def test_files_are_read_with_their_class_names(tmp_path):
    rng = np.random.default_rng(6)
    clean = _clean(rng)
    shift = _shifted(rng, clean, {2: 0.7})
    a = _predictions_file(tmp_path / "clean.npz", clean, rng)
    b = _predictions_file(tmp_path / "fog.npz", shift, rng)
    from_paths = class_changes(a, b)
    from_files = class_changes(load_outputs(a), load_outputs(b))
    from_outcomes = class_changes(clean, shift, class_names=[f"class{c}" for c in range(C)])
    pd.testing.assert_frame_equal(from_paths, from_files)
    pd.testing.assert_frame_equal(from_paths, from_outcomes)
    assert from_paths["class_name"].tolist() == [f"class{c}" for c in range(C)]


def test_cli_writes_the_table_and_says_how_many_classes_drop(tmp_path, capsys):
    rng = np.random.default_rng(7)
    clean = _clean(rng, per_class=40)
    shift = _shifted(rng, clean, {1: 0.8, 4: 0.8})
    keep = np.arange(clean.n_samples) % 2 == 0
    half = SampleOutcomes.from_correct(shift.sample_ids[keep], shift.labels[keep], shift.correct[keep])
    a = _predictions_file(tmp_path / "clean.npz", clean, rng)
    b = _predictions_file(tmp_path / "fog.npz", half, rng)
    out = tmp_path / "drops.csv"
    assert main(["compare", str(a), str(b), "--class-drops", str(out), "--adjustment", "holm", "--model", "resnet"]) == 0
    printed = capsys.readouterr().out
    written = pd.read_csv(out)
    assert list(written.columns) == list(COLUMNS + EXTRA_COLUMNS)
    expected = class_changes(a, b, model="resnet", shift_name="fog", tests=DropTestSettings(adjustment="holm"))
    np.testing.assert_allclose(written["p_adjusted"], expected["p_adjusted"], rtol=1e-12)
    assert written["shift"].eq("fog").all() and written["model"].eq("resnet").all()
    assert written["pairing"].eq("paired_subset").all()
    dropped = int((expected["significant"] & (expected["change"] < 0)).sum())
    assert dropped >= 1
    assert f"{dropped} of {C} tested classes drop significantly" in printed
    assert f"on the {half.n_samples} samples both hold" in printed and str(out) in printed
    # labels that differ on a shared sample: status 2, nothing written
    relabelled = SampleOutcomes.from_correct(half.sample_ids, (half.labels + 1) % C, half.correct)
    c = _predictions_file(tmp_path / "bad.npz", relabelled, rng)
    bad_out = tmp_path / "bad.csv"
    assert main(["compare", str(a), str(c), "--class-drops", str(bad_out)]) == 2
    assert "labels" in capsys.readouterr().err and not bad_out.exists()
