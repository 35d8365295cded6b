"""ImageNet and CIFAR-10 label-cleaned views: on the shared label-errors files when present, and on
small synthetic label-errors directories always."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from paths import SHARED_DATA

from classwise.errors import InputError
from classwise.labels import cli as labels_cli
from classwise.labels.imagenet_cleaned import (
    CIFAR10_FILES,
    IMAGENET_FILES,
    REMOVED,
    aligned_imagenet_labels,
    build_cifar10_view,
    build_imagenet_view,
    misaligned_rule_labels,
    read_index_to_filepath,
    read_label_file,
    read_mturk,
    read_original_labels,
    view_for_samples,
    view_summary,
    write_label_file,
)
from classwise.labels.views import aligned_labels, build_view, write_view

SHARED = SHARED_DATA
IMAGENET_DIR = SHARED / "imagenet-labels"
CIFAR10_DIR = SHARED / "cifar10-labels"
needs_imagenet = pytest.mark.skipif(
    not (IMAGENET_DIR / IMAGENET_FILES["mturk"]).is_file(), reason=f"label-errors ImageNet files not in {IMAGENET_DIR}"
)
needs_cifar10 = pytest.mark.skipif(
    not (CIFAR10_DIR / CIFAR10_FILES["mturk"]).is_file(), reason=f"label-errors CIFAR-10 files not in {CIFAR10_DIR}"
)


def _run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="classwise")
    commands = parser.add_subparsers(dest="command", required=True)
    labels_cli.add_parser(commands)
    args = parser.parse_args(argv)
    return int(args.handler(args))


# --------------------------------------------------------------------------- shared data


@pytest.fixture(scope="module")
def imagenet() -> dict[str, object]:
    votes = read_mturk(IMAGENET_DIR / IMAGENET_FILES["mturk"])
    filepaths = read_index_to_filepath(IMAGENET_DIR / IMAGENET_FILES["index_to_filepath"])
    original = read_original_labels(IMAGENET_DIR / IMAGENET_FILES["original_labels"], n_expected=50_000)
    return {
        "votes": votes,
        "filepaths": filepaths,
        "original": original,
        "aligned": build_imagenet_view(IMAGENET_DIR, "aligned"),
        "paper": build_imagenet_view(IMAGENET_DIR, "paper"),
    }


@needs_imagenet
def test_both_variants_keep_46044(imagenet: dict) -> None:
    for variant in ("paper", "aligned"):
        view = imagenet[variant]
        assert view.shape == (50_000,) and view.dtype == np.int64
        assert int((view != REMOVED).sum()) == 46_044
        assert view.min() >= REMOVED and view.max() < 1000


@needs_imagenet
def test_aligned_removes_and_relabels_only_flagged_images(imagenet: dict) -> None:
    votes, filepaths, original, aligned = (imagenet[k] for k in ("votes", "filepaths", "original", "aligned"))
    flagged = {Path(p).name for p in votes.files.tolist()}
    row_files = [Path(p).name for p in filepaths]
    removed = np.flatnonzero(aligned == REMOVED)
    changed = np.flatnonzero((aligned != REMOVED) & (aligned != original))
    assert removed.size == 3_956 and changed.size == 468
    assert all(row_files[r] in flagged for r in removed)
    assert all(row_files[r] in flagged for r in changed)
    # each removed row is a flagged image without a 5/5 vote; each changed row has 5/5 "guessed"
    by_file = {f: v for f, v in zip(votes.files.tolist(), votes.votes.tolist())}
    assert all(by_file[row_files[r]][0] < 5 and by_file[row_files[r]][1] < 5 for r in removed)
    assert all(by_file[row_files[r]][1] == 5 for r in changed)


@needs_imagenet
def test_paper_file_is_the_rule_applied_at_misaligned_rows(imagenet: dict) -> None:
    votes, original, paper, aligned = (imagenet[k] for k in ("votes", "original", "paper", "aligned"))
    np.testing.assert_array_equal(misaligned_rule_labels(votes, original), paper)
    flagged = np.isin([Path(p).name for p in imagenet["filepaths"]], votes.files)
    assert flagged.sum() == len(votes) == 5_440
    assert flagged[aligned == REMOVED].all()
    # most removed rows of the published file are not flagged images
    assert flagged[paper == REMOVED].sum() < (paper == REMOVED).sum() // 2


@needs_imagenet
@pytest.mark.parametrize("variant", ["paper", "aligned"])
def test_cli_writes_the_label_view_format(imagenet: dict, tmp_path: Path, variant: str) -> None:
    out = tmp_path / "out" / f"{variant}.csv"
    assert (
        _run_cli(["imagenet-cleaned-labels", "--label-errors-dir", str(IMAGENET_DIR), "--variant", variant, "--out", str(out)])
        == 0
    )
    ids = np.array([p.removeprefix("val/") for p in imagenet["filepaths"]])
    assert out.read_text().startswith(f"sample_id,label\n{ids[0]},")
    np.testing.assert_array_equal(aligned_labels(out, ids), imagenet[variant])  # what the workflow reads
    assert list(out.parent.iterdir()) == [out]  # atomic: no temporary left


@needs_cifar10
def test_cifar10_cleaned_view() -> None:
    view = build_cifar10_view(CIFAR10_DIR)
    original = read_original_labels(CIFAR10_DIR / CIFAR10_FILES["original_labels"])
    assert view_summary(view, original) == {"images": 10_000, "kept": 9_810, "removed": 190, "relabelled": 3}


# --------------------------------------------------------------------------- synthetic fixtures

WNIDS = ["n01", "n02", "n03"]  # stand-ins; only their sorted order matters


def _entry(number: int, wnid: str, given: int, guessed: int, votes: tuple[int, int, int, int]) -> dict:
    return {
        "id": number,
        "url": f"https://example.invalid//static/imagenet/val/{wnid}/ILSVRC2012_val_{number:08d}.JPEG",
        "given_original_label": given,
        "our_guessed_label": guessed,
        "mturk": dict(zip(("given", "guessed", "neither", "both"), votes)),
    }


def _synthetic_dir(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """12 images, 4 per wnid, file numbers shuffled so that id != row; 4 flagged entries."""
    numbers = [7, 2, 11, 5, 1, 9, 12, 3, 4, 8, 10, 6]
    paths = sorted(f"val/{WNIDS[i // 4]}/ILSVRC2012_val_{n:08d}.JPEG" for i, n in enumerate(numbers))
    original = np.array([WNIDS.index(p.split("/")[1]) for p in paths], dtype=np.uint16)
    row = {int(p[-13:-5]): i for i, p in enumerate(paths)}
    wnid_of = {int(p[-13:-5]): p.split("/")[1] for p in paths}

    def entry(number: int, guessed: int, votes: tuple[int, int, int, int]) -> dict:
        return _entry(number, wnid_of[number], int(original[row[number]]), guessed, votes)

    entries = [
        entry(7, 2, (5, 0, 0, 0)),  # kept
        entry(9, 0, (0, 5, 0, 0)),  # relabelled
        entry(3, 1, (2, 2, 1, 0)),  # removed
        entry(6, 0, (0, 4, 0, 1)),  # removed
    ]
    directory = tmp_path / "label-errors"
    directory.mkdir()
    (directory / IMAGENET_FILES["mturk"]).write_text(json.dumps(entries))
    (directory / IMAGENET_FILES["index_to_filepath"]).write_text(json.dumps(paths))
    np.save(directory / IMAGENET_FILES["original_labels"], original)
    expected = original.astype(np.int64)
    expected[row[9]] = 0
    expected[row[3]] = REMOVED
    expected[row[6]] = REMOVED
    return directory, expected


def test_synthetic_aligned_view(tmp_path: Path) -> None:
    directory, expected = _synthetic_dir(tmp_path)
    np.testing.assert_array_equal(build_imagenet_view(directory, "aligned"), expected)


def test_synthetic_cli_writes_the_label_view_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory, expected = _synthetic_dir(tmp_path)
    out = tmp_path / "aligned.csv"
    argv = ["imagenet-cleaned-labels", "--label-errors-dir", str(directory), "--variant", "aligned", "--out", str(out)]
    assert _run_cli(argv) == 0
    paths = read_index_to_filepath(directory / IMAGENET_FILES["index_to_filepath"])
    ids = [p.removeprefix("val/") for p in paths]
    assert out.read_text() == "sample_id,label\n" + "".join(f"{i},{v}\n" for i, v in zip(ids, expected.tolist(), strict=True))
    # the same bytes as the workflow's label view of the same config
    workflow_view = tmp_path / "view.csv"
    write_view(workflow_view, *build_view({"kind": "imagenet_cleaned", "variant": "aligned"}, label_errors_dir=directory))
    assert out.read_bytes() == workflow_view.read_bytes()
    assert "10 kept" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _run_cli(["imagenet-cleaned-labels", "--label-errors-dir", str(directory), "--variant", "other", "--out", str(out)])


def test_cli_refuses_a_paper_file_for_the_aligned_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from classwise.cli import main

    directory, _ = _synthetic_dir(tmp_path)
    paper_file = tmp_path / "new_labels.csv"
    write_label_file(paper_file, np.zeros(50_000, dtype=np.int64))
    out = tmp_path / "aligned.csv"
    argv = [
        "imagenet-cleaned-labels",
        "--label-errors-dir",
        str(directory),
        "--variant",
        "aligned",
        "--paper-file",
        str(paper_file),
        "--out",
        str(out),
    ]
    with pytest.raises(InputError) as info:
        _run_cli(argv)
    assert info.value.field == "--paper-file" and "--variant paper" in str(info.value)
    assert main(argv) == 2  # through the command line: status 2 and the message
    assert "--paper-file" in capsys.readouterr().err
    assert not out.exists()


def test_synthetic_paper_variant_reads_the_published_file(tmp_path: Path) -> None:
    # paper: a 50,000-line file read as published, wherever it lies; ids from the index list
    directory = tmp_path / "label-errors"
    directory.mkdir()
    paths = [f"val/{WNIDS[i * 3 // 50_000]}/ILSVRC2012_val_{i + 1:08d}.JPEG" for i in range(50_000)]
    (directory / IMAGENET_FILES["index_to_filepath"]).write_text(json.dumps(paths))
    published = np.full(50_000, 3, dtype=np.int64)
    published[::7] = REMOVED
    paper_file = tmp_path / "elsewhere.csv"
    write_label_file(paper_file, published)
    out = tmp_path / "paper.csv"
    argv = [
        "imagenet-cleaned-labels",
        "--label-errors-dir",
        str(directory),
        "--variant",
        "paper",
        "--paper-file",
        str(paper_file),
        "--out",
        str(out),
    ]
    assert _run_cli(argv) == 0
    ids = np.array([p.removeprefix("val/") for p in paths])
    np.testing.assert_array_equal(aligned_labels(out, ids), published)
    with pytest.raises(InputError, match="worst_classes_new_labels.csv"):
        build_imagenet_view(directory, "paper")  # no default file in the directory
    (directory / IMAGENET_FILES["index_to_filepath"]).write_text(json.dumps(paths[:10]))
    with pytest.raises(InputError, match="lists 10 images, the paper view has 50000 labels") as info:
        _run_cli(argv)
    assert info.value.path == str(directory / IMAGENET_FILES["index_to_filepath"])


def test_synthetic_misalignment_is_detected(tmp_path: Path) -> None:
    directory, _ = _synthetic_dir(tmp_path)
    votes = read_mturk(directory / IMAGENET_FILES["mturk"])
    paths = read_index_to_filepath(directory / IMAGENET_FILES["index_to_filepath"])
    original = read_original_labels(directory / IMAGENET_FILES["original_labels"])
    wrong = original.copy()
    wrong[paths.index(next(p for p in paths if p.endswith("00000007.JPEG")))] = 2
    with pytest.raises(InputError, match="sorted-wnid index"):
        aligned_imagenet_labels(votes, paths, wrong)
    with pytest.raises(InputError, match="sorted ImageFolder order"):
        aligned_imagenet_labels(votes, paths[::-1], original[::-1])
    entries = json.loads((directory / IMAGENET_FILES["mturk"]).read_text())
    entries[0]["given_original_label"] = 2
    (directory / IMAGENET_FILES["mturk"]).write_text(json.dumps(entries))
    with pytest.raises(InputError, match="not aligned") as info:
        build_imagenet_view(directory, "aligned")
    assert IMAGENET_FILES["mturk"] in str(info.value)


def test_malformed_inputs_name_file_and_field(tmp_path: Path) -> None:
    mturk = tmp_path / "m.json"
    mturk.write_text(json.dumps([{"id": 1, "url": "u"}]))
    with pytest.raises(InputError, match="field '\\[0\\]'") as info:
        read_mturk(mturk)
    assert str(mturk) in str(info.value)
    labels = tmp_path / "labels.csv"
    labels.write_text("1\n-1\nx\n")
    with pytest.raises(InputError, match="line 3"):
        read_label_file(labels)
    labels.write_text("1\n-2\n")
    with pytest.raises(InputError, match="lines \\[2\\]"):
        read_label_file(labels, n_classes=10)
    with pytest.raises(InputError, match="expected 5 lines"):
        read_label_file(labels, n_expected=5)


def test_synthetic_cifar10(tmp_path: Path) -> None:
    original = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.uint16)
    entries = [
        {
            "id": 1,
            "url": "https://x/static/cifar10/1.png",
            "given_original_label": 1,
            "our_guessed_label": 7,
            "mturk": {"given": 5, "guessed": 0, "neither": 0, "both": 0},
        },
        {
            "id": 4,
            "url": "https://x/static/cifar10/4.png",
            "given_original_label": 5,
            "our_guessed_label": 7,
            "mturk": {"given": 0, "guessed": 5, "neither": 0, "both": 0},
        },
        {
            "id": 6,
            "url": "https://x/static/cifar10/6.png",
            "given_original_label": 2,
            "our_guessed_label": 0,
            "mturk": {"given": 3, "guessed": 0, "neither": 0, "both": 2},
        },
    ]
    (tmp_path / CIFAR10_FILES["mturk"]).write_text(json.dumps(entries))
    np.save(tmp_path / CIFAR10_FILES["original_labels"], original)
    assert build_cifar10_view(tmp_path).tolist() == [3, 1, 4, 1, 7, 9, -1, 6]
    entries[2]["url"] = "https://x/static/cifar10/7.png"
    (tmp_path / CIFAR10_FILES["mturk"]).write_text(json.dumps(entries))
    with pytest.raises(InputError, match="names file 7.png"):
        build_cifar10_view(tmp_path)


def test_view_for_samples_selects_rows_by_id() -> None:
    view = np.array([5, -1, 7, 2])
    ids = np.array(["a/1", "a/2", "b/1", "b/2"])
    assert view_for_samples(view, ids, np.array(["b/2", "a/1", "a/2"])).tolist() == [2, 5, -1]
    with pytest.raises(InputError, match="no row in the view"):
        view_for_samples(view, ids, np.array(["a/1", "c/9"]))
