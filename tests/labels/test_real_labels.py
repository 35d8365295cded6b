"""ImageNet ReaL labels as a label view (classwise.labels.real): correctness is membership in
the image's set, images with an empty set are removed, per-class figures use the original label."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise.data.downloads import download
from classwise.errors import InputError
from classwise.labels.real import (
    REAL_IMAGES,
    LabelSets,
    best_set_rank,
    download_real,
    read_real_json,
    read_real_view,
    real_file_ids,
    write_real_view,
)
from classwise.logits_io import save_logits
from classwise.metrics.stats import compute_stats, with_label_sets
from classwise.metrics.suite import LABEL_SETS_REASON, class_false_positive_scores, worst_class_family
from classwise.pipeline.plan import Plan, resolve_views
from classwise.shifts.spec import expand_shifts


def _random_sets(rng: np.random.Generator, n: int, c: int, *, empty: bool = False) -> list[list[int]]:
    low = 0 if empty else 1
    return [sorted(rng.choice(c, size=rng.integers(low, 4), replace=False).tolist()) for _ in range(n)]


def _naive_best_rank(row: np.ndarray, members: list[int]) -> int:
    # the order of compute_stats: score descending, ties to the lower class index
    order = sorted(range(row.shape[0]), key=lambda j: (-row[j], j))
    return min(order.index(s) for s in members)


def test_membership_and_best_rank_match_a_naive_loop() -> None:
    rng = np.random.default_rng(0)
    n, c = 300, 9
    scores = np.round(rng.normal(size=(n, c)) * 2) / 2  # coarse values: many ties
    lists = _random_sets(rng, n, c)
    sets = LabelSets.from_lists(lists)
    predictions = scores.argmax(axis=1)
    assert sets.contains(predictions).tolist() == [int(p) in s for p, s in zip(predictions, lists)]
    rank = best_set_rank(scores, sets, chunk_entries=7)  # chunks cut through sets
    assert rank.tolist() == [_naive_best_rank(scores[i], lists[i]) for i in range(n)]
    labels = rng.integers(0, c, size=n)
    stats = with_label_sets(compute_stats(scores, labels), rank)
    for k in (1, 3):
        hit = [any(j in s for j in sorted(range(c), key=lambda j: (-scores[i, j], j))[:k]) for i, s in enumerate(lists)]
        assert (rank < k).tolist() == hit
    correct = np.array([int(p) in s for p, s in zip(predictions, lists)])
    assert stats.hits.tolist() == [int(correct[labels == y].sum()) for y in range(c)]
    assert stats.precision_hits.tolist() == [int(correct[predictions == y].sum()) for y in range(c)]


def test_sets_of_the_label_alone_give_the_one_label_metrics() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(120, 6))
    labels = rng.integers(0, 6, size=120)
    plain = compute_stats(scores, labels)
    sets = with_label_sets(plain, best_set_rank(scores, LabelSets.from_lists([[int(y)] for y in labels])))
    assert np.array_equal(sets.true_class_rank, plain.true_class_rank)
    assert np.array_equal(plain.hits, np.diagonal(plain.confusion))
    one = {name: r.to_json() for name, r in worst_class_family(plain, scores, k=2, ns=(2,)).items()}
    assert {name: r.to_json() for name, r in worst_class_family(sets, scores, k=2, ns=(2,)).items()} == one


def test_take_and_normalising_keep_each_set() -> None:
    sets = LabelSets.from_lists([[3, 1], [], [2, 2, 0], [5]])
    assert sets.take(np.array([3, 0, 2])).as_lists() == [[5], [3, 1], [2, 2, 0]]


# ------------------------------------------------------------------ the worst-class step


# file number -> (original label, prediction, second choice, ReaL set): worked out by hand below
CASES = {
    1: (0, 0, 1, [0]),  # correct
    2: (0, 1, 0, [0, 1]),  # correct: the prediction is another correct label
    3: (0, 2, 0, [0]),  # wrong; top-2 hit
    4: (0, 0, 1, []),  # removed: no ReaL label
    5: (1, 1, 2, [2]),  # wrong although it predicts the original label; top-2 hit
    6: (1, 2, 1, [2]),  # correct although not the original label
    7: (2, 2, 1, [2]),  # correct
    8: (2, 0, 2, [1]),  # wrong; top-2 miss
}


def _imagenet_logits(path: Path) -> None:
    logits = np.full((len(CASES), 1000), -5.0, dtype=np.float32)
    labels, ids = [], []
    for row, (number, (label, first, second, _)) in enumerate(CASES.items()):
        logits[row, first], logits[row, second] = 5.0, 4.0
        labels.append(label)
        ids.append(f"n0144076{label}/ILSVRC2012_val_{number:08d}.JPEG")
    names = np.array([f"class{c}" for c in range(1000)])
    save_logits(path, logits=logits, labels=np.array(labels), sample_ids=np.array(ids), class_names=names, metadata={})


def _step(tmp_path: Path, view: Path) -> tuple[dict, pd.DataFrame]:
    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    logits = tmp_path / "clean.npz"
    _imagenet_logits(logits)
    out = {
        "metrics_path": tmp_path / "out" / "worst_class.json",
        "per_class_path": tmp_path / "out" / "per_class.csv",
        "confusion_path": tmp_path / "out" / "confusion.csv",
    }
    settings = WorstClassSettings(superclasses={}, k=2, n=[2])
    worst_class_step(logits_path=logits, label_view="real", view_labels_path=view, settings=settings, **out)
    return json.loads(out["metrics_path"].read_text()), pd.read_csv(out["per_class_path"])


def test_worst_class_metrics_under_real_labels_worked_out_by_hand(tmp_path: Path) -> None:
    view = tmp_path / "real.csv"
    write_real_view(view, LabelSets.from_lists([case[3] for case in CASES.values()]))
    document, per_class = _step(tmp_path, view)
    metrics = document["metrics"]
    assert document["n_samples"] == 7  # image 4 removed
    # kept: class 0 = images 1, 2, 3 (2 correct); class 1 = 5, 6 (1); class 2 = 7, 8 (1)
    assert metrics["A"]["value"] == pytest.approx(4 / 7)
    assert metrics["WCA"]["value"] == pytest.approx(1 / 2) and metrics["WCA"]["classes"] == [1]
    # predictions of 0: images 1 (in set), 8 (not); of 1: 2 (in), 5 (not); of 2: 3 (not), 6, 7 (in)
    assert metrics["WCP"]["value"] == pytest.approx(1 / 2) and metrics["WCP"]["classes"] == [0]
    assert metrics["W2CR"]["value"] == pytest.approx(2 / 4)
    # top 2: images 3 and 5 become hits, 8 stays a miss
    assert metrics["A@2"]["value"] == pytest.approx(6 / 7)
    assert metrics["WCA@2"]["value"] == pytest.approx(1 / 2) and metrics["WCA@2"]["classes"] == [2]
    # errors: images 3, 5, 8, false positives of classes 2, 1, 0
    assert metrics["CFPS_max"]["value"] == pytest.approx(1 / 3) and metrics["CFPS_max"]["details"]["n_errors"] == 3
    assert "W2CA" not in metrics and document["skipped"]["W2CA"] == LABEL_SETS_REASON
    first = per_class.set_index("class").loc[[0, 1, 2]]
    assert first["support"].tolist() == [3, 2, 2]  # grouped by the original label
    assert first["recall"].tolist() == pytest.approx([2 / 3, 1 / 2, 1 / 2])
    assert first["precision"].tolist() == pytest.approx([1 / 2, 1 / 2, 2 / 3])
    assert first["cfps"].tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])


def test_steps_needing_one_label_refuse_a_real_view(tmp_path: Path) -> None:
    from classwise.steps.metrics import load_view

    logits = tmp_path / "clean.npz"
    _imagenet_logits(logits)
    view = tmp_path / "real.csv"
    write_real_view(view, LabelSets.from_lists([case[3] for case in CASES.values()]))
    with pytest.raises(InputError, match="several correct labels per image") as error:
        load_view(logits, "real", view)
    assert error.value.path == str(view)


def test_a_view_lacking_an_evaluated_image_names_the_file(tmp_path: Path) -> None:
    view = tmp_path / "real.csv"
    write_real_view(view, LabelSets.from_lists([[1], [2]]))
    with pytest.raises(InputError, match="1 of 2 samples") as error:
        read_real_view(view, np.array(["n01/ILSVRC2012_val_00000002.JPEG", "n01/ILSVRC2012_val_00000003.JPEG"]), n_classes=10)
    assert error.value.path == str(view)
    sets = read_real_view(view, np.array(["n9/ILSVRC2012_val_00000002.JPEG", "ILSVRC2012_val_00000001.JPEG"]), n_classes=10)
    assert sets.as_lists() == [[2], [1]]  # matched by file name, in the samples' order


# ----------------------------------------------------------------------------- bad files


def _write(path: Path, entries: object) -> Path:
    path.write_text(json.dumps(entries))
    return path


@pytest.mark.parametrize(
    ("entries", "field", "text"),
    [
        ([[1]] * 3, "length", "expected 50000 entries"),
        ({"0": [1]}, None, "expected a JSON list"),
        ([[1]] * 7 + [3] + [[1]] * (REAL_IMAGES - 8), "[7]", "expected a list of integer class indices"),
        ([[1]] * 5 + [["7"]] + [[1]] * (REAL_IMAGES - 6), "[5]", "expected a list of integer class indices"),
        ([[1]] * 2 + [[True]] + [[1]] * (REAL_IMAGES - 3), "[2]", "expected a list of integer class indices"),
        ([[1]] * 9 + [[4, 1000]] + [[1]] * (REAL_IMAGES - 10), "[9]", "ILSVRC2012_val_00000010.JPEG"),
        ([[1]] * 9 + [[-1]] + [[1]] * (REAL_IMAGES - 10), "[9]", "must lie in [0, 1000)"),
    ],
    ids=["short", "not-a-list", "entry-not-a-list", "string", "bool", "above-999", "negative"],
)
def test_a_bad_real_file_names_the_file_and_the_entry(tmp_path: Path, entries: object, field: str | None, text: str) -> None:
    path = _write(tmp_path / "real.json", entries)
    with pytest.raises(InputError) as error:
        read_real_json(path)
    assert error.value.path == str(path) and error.value.field == field and text in str(error.value)


def test_a_valid_file_reads_in_file_number_order_with_empty_sets(tmp_path: Path) -> None:
    entries = [[]] * REAL_IMAGES
    entries[0], entries[49_999] = [3, 1, 3], [999]
    sets = read_real_json(_write(tmp_path / "real.json", entries))
    assert len(sets) == REAL_IMAGES and sets.as_lists()[0] == [1, 3] and sets.as_lists()[-1] == [999]
    assert real_file_ids(2).tolist() == ["ILSVRC2012_val_00000001.JPEG", "ILSVRC2012_val_00000002.JPEG"]


def test_a_real_view_on_a_dataset_of_other_classes_or_a_bad_file_stops_the_plan(tmp_path: Path) -> None:
    shifts = expand_shifts({"clean": True})

    def resolve(classes: int, view: dict) -> Plan:
        config = {"datasets": {"in": {"label_views": {"real": {"kind": "real", "shifts": ["clean"], **view}}}}}
        plan = Plan(models={"in": []}, classes={"in": classes}, shifts={"in": ["clean"]})
        return resolve_views(plan, config, config, shifts=shifts, source="my.yaml")

    with pytest.raises(InputError, match="1000 ImageNet-1k classes") as error:
        resolve(10, {})
    assert error.value.field == "datasets.in.label_views.real.kind"
    bad = _write(tmp_path / "real.json", [[1]] * 3)
    with pytest.raises(InputError, match="expected 50000 entries") as error:
        resolve(1000, {"file": str(bad)})
    assert error.value.path == str(bad)
    plan = resolve(1000, {})
    assert plan.label_set_views == {("in", "real")} and any("W2CA" in note for note in plan.notes)


# ------------------------------------------------------------------------------ download


def test_download_records_the_digest_of_the_first_download_and_checks_it_later(tmp_path: Path) -> None:
    (tmp_path / "published").mkdir()
    source = _write(tmp_path / "published" / "real.json", [[0]] * REAL_IMAGES)
    url = source.as_uri()
    dest = tmp_path / "resources" / "real" / "real.json"
    assert download_real(dest, url=url) == dest
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert Path(f"{dest}.sha256").read_text().strip() == digest
    dest.write_text("[]")  # damaged in place: fetched again and checked against the record
    download_real(dest, url=url)
    assert dest.read_bytes() == source.read_bytes()
    dest.unlink()
    _write(source, [[1]] * REAL_IMAGES)  # the published file changed: refused, nothing kept
    with pytest.raises(InputError, match="checksum mismatch"):
        download_real(dest, url=url)
    assert not dest.exists()


def test_download_with_a_given_digest_and_a_bad_download(tmp_path: Path) -> None:
    (tmp_path / "published").mkdir()
    good = _write(tmp_path / "published" / "real.json", [[2]] * REAL_IMAGES)
    dest = tmp_path / "real.json"
    download_real(dest, url=good.as_uri(), sha256=hashlib.sha256(good.read_bytes()).hexdigest())
    assert not Path(f"{dest}.sha256").exists()  # a given digest is not recorded
    short = _write(tmp_path / "published" / "short.json", [[2]] * 3)
    with pytest.raises(InputError, match="expected 50000 entries"):
        download_real(tmp_path / "other.json", url=short.as_uri())
    assert not (tmp_path / "other.json").exists() and not (tmp_path / "other.json.sha256").exists()
    with pytest.raises(InputError, match="sha256"):
        download(good.as_uri(), tmp_path / "x.json", sha256=None)  # no digest without record=True


def test_class_false_positive_scores_match_the_confusion_formula_with_one_label() -> None:
    from classwise.metrics.cfps import class_false_positive_score

    rng = np.random.default_rng(2)
    scores = rng.normal(size=(80, 5))
    stats = compute_stats(scores, rng.integers(0, 5, size=80))
    assert np.array_equal(class_false_positive_scores(stats), class_false_positive_score(stats.confusion))


def test_the_bootstrap_resamples_real_correctness(tmp_path: Path) -> None:
    """The bootstrap runs on a ReaL view: each interval holds its value, the worst classes are
    classes with kept images, and the pair metrics are left out."""
    from classwise.steps.metrics import WorstClassSettings, worst_class_step

    logits = tmp_path / "clean.npz"
    _imagenet_logits(logits)
    view = tmp_path / "real.csv"
    write_real_view(view, LabelSets.from_lists([case[3] for case in CASES.values()]))
    out = tmp_path / "worst_class.json"
    bootstrap = {"replicates": 200, "confidence": 0.9, "seed": 0}
    worst_class_step(
        logits_path=logits, label_view="real", view_labels_path=view,
        settings=WorstClassSettings(superclasses={}, k=2, n=[2], bootstrap=bootstrap), metrics_path=out,
        per_class_path=tmp_path / "per_class.csv", confusion_path=tmp_path / "confusion.csv", workers=1,
    )  # fmt: skip
    metrics = json.loads(out.read_text())["metrics"]
    for name in ("A", "WCA", "WCP", "CFPS_max"):
        low, high = metrics[name]["ci"]
        assert low <= metrics[name]["value"] <= high, name
    assert "W2CA" not in metrics and {w["classes"][0] for w in metrics["WCA"]["worst_probability"]} <= {0, 1, 2}


def test_a_gate_on_a_metric_a_real_view_lacks_is_an_error_before_any_job() -> None:
    from classwise.pipeline.gates import gate_runs

    plan = Plan(
        models={"in": ["net"]},
        classes={"in": 1000},
        view_shifts={("in", "original"): ["clean"], ("in", "real"): ["clean"]},
        label_set_views={("in", "real")},
    )
    views = {"in": ["original", "real"]}
    for metric in ("W2CA", "decisiveness"):
        with pytest.raises(InputError, match="needs one correct label per image") as error:
            gate_runs({metric: {"min": 0.1}}, plan, views=views, k=2, ns=[2], source="my.yaml")
        assert error.value.field == f"gates.{metric}"
    runs = gate_runs({"WCA": {"min": 0.1}, "W2CA": {"min": 0.1, "label_views": ["original"]}}, plan, views=views, k=2, ns=[2])
    assert {(run["labels"], run["scored"]) for run in runs} == {("original", "yes"), ("real", "no")}
