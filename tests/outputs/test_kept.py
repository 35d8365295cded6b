"""What a merged job keeps of its items' files and when it takes them back (classwise.outputs.kept),
the one bookkeeping of the decode groups (tests/inference/test_stream_overlap.py runs one) and
the shift batches (tests/pipeline/test_shift_batches.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from classwise.outputs.kept import RECORD, KeptFiles, fingerprint, prune, share_file


def test_fingerprints_ignore_key_order_and_follow_every_value() -> None:
    base = {"model": {"a": 1, "b": [1, 2]}, "seed": 0}
    assert fingerprint(base) == fingerprint({"seed": 0, "model": {"b": [1, 2], "a": 1}})
    assert fingerprint(base) != fingerprint({**base, "seed": 1})
    assert fingerprint(base) != fingerprint({**base, "model": {"a": 1, "b": [2, 1]}})


def _outputs(tmp_path: Path, text: str = "logits") -> list[Path]:
    # two outputs of one file name in different folders: their copies must not collide
    paths = [tmp_path / "out" / "a" / "x.npz", tmp_path / "out" / "b" / "x.npz"]
    for index, path in enumerate(paths):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{text} {index}")
    return paths


def test_kept_files_come_back_byte_for_byte_after_snakemake_removed_them(tmp_path: Path) -> None:
    outputs = _outputs(tmp_path)
    kept = KeptFiles.of(tmp_path / "keep" / "s1", outputs)
    kept.keep("made-1")
    assert sorted(path.name for path in kept.folder.iterdir()) == ["0-x.npz", "1-x.npz", RECORD]
    assert json.loads((kept.folder / RECORD).read_text()) == {"made_from": "made-1", "outputs": [str(p) for p in outputs]}
    assert os.stat(kept.copies[0]).st_ino == os.stat(outputs[0]).st_ino  # a link, not a second copy
    for path in outputs:  # as Snakemake does before a job runs
        path.unlink()
    assert kept.why_stale("made-1") is None
    kept.take_back()
    assert [path.read_text() for path in outputs] == ["logits 0", "logits 1"]


def test_each_reason_not_to_take_files_back(tmp_path: Path) -> None:
    outputs = _outputs(tmp_path)
    kept = KeptFiles.of(tmp_path / "keep" / "m", outputs)
    assert kept.why_stale("made") == "no record of what its files were made from"
    kept.keep("made")
    assert kept.why_stale("made") is None
    assert kept.why_stale("other") == "made from other parameters"
    assert KeptFiles.of(kept.folder, outputs[:1]).why_stale("made") == "made for other files"
    assert KeptFiles.of(kept.folder, [outputs[1], outputs[0]]).why_stale("made") == "made for other files"
    # an input newer than the oldest copy (a retrained model's weights); one older is no reason
    made = min(copy.stat().st_mtime for copy in kept.copies)
    weights, images = tmp_path / "weights.pt", tmp_path / "images.npz"
    for path, when in ((weights, made + 10), (images, made - 10)):
        path.write_text(path.name)
        os.utime(path, (when, when))
    assert kept.why_stale("made", [images]) is None
    assert kept.why_stale("made", [images, weights, tmp_path / "absent"]) == f"{weights} is newer"
    kept.copies[1].unlink()
    assert kept.why_stale("made") == "no copy of x.npz"
    (kept.folder / RECORD).write_text("{not json")
    assert kept.why_stale("made") == "no record of what its files were made from"
    (kept.folder / RECORD).write_text(json.dumps(["made"]))
    assert kept.why_stale("made") == "made from other parameters"


def test_keeping_again_replaces_the_folder_and_records_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = _outputs(tmp_path)
    kept = KeptFiles.of(tmp_path / "keep" / "m", outputs)
    kept.keep("first")
    (kept.folder / ".0-x.npz.123.tmp").write_text("a killed job's temporary file")
    outputs = _outputs(tmp_path, "new logits")
    kept.keep("second")
    assert sorted(path.name for path in kept.folder.iterdir()) == ["0-x.npz", "1-x.npz", RECORD]
    assert kept.copies[0].read_text() == "new logits 0" and kept.why_stale("second") is None

    # a job killed while copying leaves no record: nothing of it is taken back
    import classwise.outputs.kept as module

    def killed(source: object, target: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "share_file", killed)
    with pytest.raises(KeyboardInterrupt):
        kept.keep("third")
    assert kept.why_stale("third") == "no record of what its files were made from"
    assert kept.why_stale("second") == "no record of what its files were made from"


def test_a_shared_file_is_the_same_bytes_survives_the_source_and_replaces_the_target(tmp_path: Path) -> None:
    source, target = tmp_path / "a" / "x.npz", tmp_path / "b" / "x.npz"
    source.parent.mkdir()
    source.write_bytes(b"logits")
    share_file(source, target)
    assert target.read_bytes() == b"logits" and os.stat(target).st_ino == os.stat(source).st_ino  # a link here
    source.unlink()  # Snakemake removes the output: the kept copy stays
    assert target.read_bytes() == b"logits"
    other = tmp_path / "other.npz"
    other.write_bytes(b"new")
    share_file(other, target)
    assert target.read_bytes() == b"new" and sorted(p.name for p in target.parent.iterdir()) == ["x.npz"]


def test_pruning_leaves_the_folders_of_the_items_only(tmp_path: Path) -> None:
    for name in ["a", "gone", "a.npz"]:  # an item, one no longer among them, a file of an older layout
        (tmp_path / name).mkdir() if "." not in name else (tmp_path / name).write_text(name)
    (tmp_path / "a" / RECORD).write_text("{}")
    (tmp_path / "gone" / RECORD).write_text("{}")
    (tmp_path / RECORD).write_text("{}")
    prune(tmp_path, ["a", "b"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a"]
    assert (tmp_path / "a" / RECORD).is_file()
    prune(tmp_path / "none", ["a"])  # no folder yet: nothing to do
