"""The steps of classwise.steps.resources (the local rules that fetch what inference needs, and
the label views), on files made here in the official layouts: downloads from file:// URLs (no
network), each output against what went in or a hand-worked example."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from archives import npy_bytes, tar_bytes

from classwise.errors import InputError
from classwise.steps import resources

# ---------------------------------------------------------------------------- helpers


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _published(folder: Path, name: str, data: bytes) -> tuple[str, str]:
    """``data`` as a published file: its file:// URL and its sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return (folder / name).as_uri(), _sha(data)


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


# ---------------------------------------------------------------------------- prepare_dataset_step


def _cifar10c_archive() -> tuple[bytes, dict[str, np.ndarray]]:
    """CIFAR-10-C.tar in its published layout, one image per severity (10,000 in the real one)."""
    from classwise.data.torchvision_sets import CIFAR10C_CORRUPTIONS

    rng = np.random.default_rng(0)
    arrays = {"labels": np.arange(5, dtype=np.uint8) % 10}
    for corruption in CIFAR10C_CORRUPTIONS:
        arrays[corruption] = rng.integers(0, 256, size=(5, 32, 32, 3), dtype=np.uint8)
    return tar_bytes({f"CIFAR-10-C/{name}.npy": npy_bytes(array) for name, array in arrays.items()}), arrays


def test_prepare_dataset_step_unpacks_cifar10c_and_writes_the_marker_last(tmp_path: Path) -> None:
    body, arrays = _cifar10c_archive()
    url, sha = _published(tmp_path / "mirror", "CIFAR-10-C.tar", body)
    root = tmp_path / "data"
    config = {"source": "cifar10c", "root": str(root), "corruption": "fog", "severity": 2, "url": url, "sha256": sha}
    marker = tmp_path / "markers" / "c10c.json"
    resources.prepare_dataset_step(dataset_name="c10c", dataset_cfg=config, marker_path=marker)
    assert json.loads(marker.read_text()) == {"dataset": "c10c", "prepared": str(root / "CIFAR-10-C"), "config": config}
    assert _listing(root) == ["CIFAR-10-C", *sorted(f"CIFAR-10-C/{name}.npy" for name in arrays)]  # the archive removed
    for name, array in arrays.items():
        np.testing.assert_array_equal(np.load(root / "CIFAR-10-C" / f"{name}.npy"), array)


def test_prepare_dataset_step_refuses_a_wrong_archive_and_a_source_without_downloads_writing_no_marker(tmp_path: Path) -> None:
    body, _ = _cifar10c_archive()
    url, sha = _published(tmp_path / "mirror", "CIFAR-10-C.tar", body)
    root = tmp_path / "data"
    marker = tmp_path / "markers" / "d.json"
    wrong = {"source": "cifar10c", "root": str(root), "corruption": "fog", "severity": 2, "url": url, "sha256": "0" * 64}
    with pytest.raises(InputError, match="checksum mismatch") as raised:
        resources.prepare_dataset_step(dataset_name="d", dataset_cfg=wrong, marker_path=marker)
    assert "CIFAR-10-C.tar" in str(raised.value) and sha in str(raised.value)
    assert _listing(root) == [] and not marker.exists()
    folder = {"source": "image_folder", "root": str(tmp_path)}
    with pytest.raises(InputError, match="has nothing to download") as raised:
        resources.prepare_dataset_step(dataset_name="mine", dataset_cfg=folder, marker_path=marker)
    assert raised.value.field == "datasets.mine.source"
    with pytest.raises(InputError, match="is required") as raised:
        resources.prepare_dataset_step(dataset_name="d", dataset_cfg={"source": "cifar10c", "root": "x"}, marker_path=marker)
    assert raised.value.field == "datasets.d.corruption"
    assert not marker.exists()


# ---------------------------------------------------------------------------- prepare_shift_set_step


def test_prepare_shift_set_step_unpacks_the_named_archive_and_records_it_in_the_marker(tmp_path: Path) -> None:
    from classwise.data.stand_ins import IMAGENET_WNIDS

    members = {f"imagenet-r/{IMAGENET_WNIDS[2]}/a.jpg": b"not decoded here", "imagenet-r/README.txt": b"x"}
    url, sha = _published(tmp_path / "mirror", "imagenet-r.tar", tar_bytes(members))
    root = tmp_path / "data"
    entry = {"root": str(root), "downloads": {"imagenet-r.tar": {"url": url, "sha256": sha}}}
    marker = tmp_path / "markers" / "imagenet_r.json"
    resources.prepare_shift_set_step(
        dataset_name="in1k", key="imagenet_r", archive="imagenet-r.tar", entry=entry, marker_path=marker
    )
    assert json.loads(marker.read_text()) == {
        "dataset": "in1k",
        "shift_set": "imagenet_r",
        "files": [{"file": "imagenet-r.tar", "url": url, "sha256": sha, "unpacked": "imagenet-r"}],
    }
    assert _listing(root) == sorted(["imagenet-r", f"imagenet-r/{IMAGENET_WNIDS[2]}", *members])  # the archive removed
    for name, data in members.items():
        assert (root / name).read_bytes() == data


def test_prepare_shift_set_step_refuses_an_archive_its_family_does_not_download(tmp_path: Path) -> None:
    marker = tmp_path / "marker.json"
    with pytest.raises(InputError, match="downloads no file 'imagenet-a.tar'") as info:
        resources.prepare_shift_set_step(
            dataset_name="in1k",
            key="imagenet_r",
            archive="imagenet-a.tar",
            entry={"root": str(tmp_path / "data")},
            marker_path=marker,
        )
    assert info.value.field == "datasets.in1k.shift_sets.imagenet_r.archive"
    assert not marker.exists() and not (tmp_path / "data").exists()


def test_prepare_shift_set_step_refuses_a_wrong_digest_and_a_family_that_is_not_downloaded(tmp_path: Path) -> None:
    url, sha = _published(tmp_path / "mirror", "imagenet-r.tar", tar_bytes({"imagenet-r/x.txt": b"x"}))
    root = tmp_path / "data"
    marker = tmp_path / "marker.json"
    wrong = {"root": str(root), "downloads": {"imagenet-r.tar": {"url": url, "sha256": "1" * 64}}}
    with pytest.raises(InputError, match="checksum mismatch") as raised:
        resources.prepare_shift_set_step(
            dataset_name="in1k", key="r", archive="imagenet-r.tar", entry={**wrong, "family": "imagenet_r"}, marker_path=marker
        )
    assert sha in str(raised.value)
    assert _listing(root) == [] and not marker.exists()
    with pytest.raises(InputError, match="is not downloaded") as raised:
        resources.prepare_shift_set_step(
            dataset_name="in1k", key="imagenet_sketch", archive="sketch.tar", entry={"root": str(root)}, marker_path=marker
        )
    assert raised.value.field == "datasets.in1k.shift_sets.imagenet_sketch.root"
    assert not marker.exists()


# ---------------------------------------------------------------------------- download_label_files_step


def test_download_label_files_step_fetches_each_named_file_verified_and_not_again_when_present(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from classwise.labels import views

    published = {
        "cifar10_mturk.json": json.dumps([{"id": 1}]).encode(),
        "cifar10_test_set_original_labels.npy": npy_bytes(np.array([3, 1, 4], dtype=np.uint16)),
    }
    for name, data in published.items():
        monkeypatch.setitem(views.LABEL_FILES, name, _published(tmp_path / "mirror", name, data))
    dest = tmp_path / "resources" / "label_errors"
    resources.download_label_files_step(names=list(published), dest_dir=dest)
    assert _listing(dest) == sorted(published)
    for name, data in published.items():
        assert (dest / name).read_bytes() == data
    for name in published:  # gone from the mirror: the verified copies are kept, nothing fetched
        (tmp_path / "mirror" / name).unlink()
    resources.download_label_files_step(names=list(published), dest_dir=dest)
    assert all((dest / name).read_bytes() == data for name, data in published.items())


def test_download_label_files_step_refuses_an_unknown_name_and_a_file_of_another_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from classwise.labels import views

    dest = tmp_path / "labels"
    with pytest.raises(InputError, match="unknown label file 'cifar10.json'") as raised:
        resources.download_label_files_step(names=["cifar10.json"], dest_dir=dest)
    assert raised.value.field == "files"
    url, _ = _published(tmp_path / "mirror", "cifar10_mturk.json", b"[]")
    published_digest = _sha(b"[{}]")
    monkeypatch.setitem(views.LABEL_FILES, "cifar10_mturk.json", (url, published_digest))
    with pytest.raises(InputError, match="checksum mismatch") as raised:
        resources.download_label_files_step(names=["cifar10_mturk.json"], dest_dir=dest)
    assert published_digest in str(raised.value) and _sha(b"[]") in str(raised.value)
    assert _listing(dest) == []


# ---------------------------------------------------------------------------- download_real_step


def _real_json(sets: list[list[int]]) -> bytes:
    return json.dumps(sets).encode()


REAL = [[i % 1000] for i in range(50_000)]


def test_download_real_step_records_the_first_digest_and_checks_a_given_one(tmp_path: Path) -> None:
    url, sha = _published(tmp_path / "mirror", "real.json", _real_json(REAL))
    dest = tmp_path / "resources" / "real.json"
    resources.download_real_step(dest=dest, url=url, sha256=None)
    assert dest.read_bytes() == _real_json(REAL)
    assert Path(f"{dest}.sha256").read_text().strip() == sha  # no digest published: the first one kept
    other = tmp_path / "given" / "real.json"
    resources.download_real_step(dest=other, url=url, sha256=sha)
    assert other.read_bytes() == _real_json(REAL) and not Path(f"{other}.sha256").exists()
    with pytest.raises(InputError, match="checksum mismatch"):
        resources.download_real_step(dest=tmp_path / "wrong" / "real.json", url=url, sha256="2" * 64)
    assert not (tmp_path / "wrong" / "real.json").exists()


def test_download_real_step_removes_a_file_that_is_not_a_real_json(tmp_path: Path) -> None:
    url, _ = _published(tmp_path / "mirror", "real.json", _real_json(REAL[:10]))
    dest = tmp_path / "real.json"
    with pytest.raises(InputError, match="expected 50000 entries") as raised:
        resources.download_real_step(dest=dest, url=url, sha256=None)
    assert raised.value.path == str(dest)
    assert not dest.exists() and not Path(f"{dest}.sha256").exists()


# ---------------------------------------------------------------------------- download_model_step


def test_download_model_step_fetches_the_weights_of_its_config_entry_and_writes_the_manifest(tmp_path: Path) -> None:
    import timm
    import torch
    from safetensors.torch import save as safetensors_save

    torch.manual_seed(0)
    reference = timm.create_model("test_resnet", pretrained=False).eval()
    data = safetensors_save({k: v.contiguous() for k, v in reference.state_dict().items()})
    url, sha = _published(tmp_path / "mirror", "weights.safetensors", data)
    entry = {"source": "timm", "name": "test_resnet.r160_in1k", "url": url, "sha256": sha}
    dest = tmp_path / "resources" / "models" / "tiny"
    resources.download_model_step(model_name="tiny", model_cfg=entry, dest_dir=dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    (record,) = manifest["files"]
    assert record["url"] == url and record["sha256"] == sha and record["size"] == len(data)
    assert (dest / record["path"]).read_bytes() == data
    from classwise.models.zoo import parse_model_spec

    assert manifest["spec"] == parse_model_spec(entry, key="tiny").to_dict()


def test_download_model_step_names_the_model_s_config_field_and_leaves_no_manifest(tmp_path: Path) -> None:
    dest = tmp_path / "m"
    with pytest.raises(InputError, match="close matches") as raised:
        resources.download_model_step(model_name="mine", model_cfg={"source": "timm", "name": "resnet5"}, dest_dir=dest)
    assert raised.value.field == "models.mine.name"
    url, sha = _published(tmp_path / "mirror", "w.safetensors", b"not weights")
    entry = {"source": "timm", "name": "test_resnet.r160_in1k", "url": url, "sha256": "3" * 64}
    with pytest.raises(InputError, match="checksum mismatch") as raised:
        resources.download_model_step(model_name="mine", model_cfg=entry, dest_dir=dest)
    assert sha in str(raised.value)
    with pytest.raises(InputError, match="trained by the pipeline"):
        resources.download_model_step(
            model_name="cnn", model_cfg={"source": "train", "architecture": "cnn", "train_on": "digits"}, dest_dir=dest
        )
    assert _listing(dest) == []  # neither the refused weights nor a manifest


# ---------------------------------------------------------------------------- build_label_view_step


def _view(path: Path) -> list[tuple[str, int]]:
    frame = pd.read_csv(path, dtype={"sample_id": str}, keep_default_na=False)
    assert list(frame.columns) == ["sample_id", "label"]
    return list(zip(frame["sample_id"], frame["label"].astype(int)))


def _vote(number: int, url: str, given: int, guessed: int, votes: tuple[int, int, int, int]) -> dict:
    """One entry of label-errors' *_mturk.json."""
    return {
        "id": number,
        "url": url,
        "given_original_label": given,
        "our_guessed_label": guessed,
        "mturk": dict(zip(("given", "guessed", "neither", "both"), votes)),
    }


def test_build_label_view_step_writes_the_cifar10_cleaned_view_of_the_vote_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "label_errors"
    directory.mkdir()
    original = np.array([3, 1, 4, 1, 5, 9], dtype=np.uint16)
    np.save(directory / "cifar10_test_set_original_labels.npy", original)
    votes = [
        _vote(1, "https://x/static/cifar10/1.png", 1, 7, (5, 0, 0, 0)),  # the given label confirmed: kept
        _vote(3, "https://x/static/cifar10/3.png", 1, 2, (0, 5, 0, 0)),  # 5/5 for the guess: relabelled
        _vote(4, "https://x/static/cifar10/4.png", 5, 0, (3, 0, 0, 2)),  # split: removed
    ]
    (directory / "cifar10_mturk.json").write_text(json.dumps(votes))
    view = tmp_path / "views" / "cifar10" / "cleaned.csv"
    resources.build_label_view_step(
        dataset_name="cifar10",
        view_name="cleaned",
        view_cfg={"kind": "cifar10_cleaned"},
        label_errors_dir=directory,
        reference_logits=None,
        view_path=view,
    )
    ids = [f"cifar10-test-{i:05d}" for i in range(6)]
    assert _view(view) == list(zip(ids, [3, 1, 4, 2, -1, 9]))
    assert "cifar10/cleaned: 5 of 6 samples kept" in capsys.readouterr().out


def test_build_label_view_step_keys_the_imagenet_view_by_file_path_without_val(tmp_path: Path) -> None:
    directory = tmp_path / "label_errors"
    directory.mkdir()
    # two classes of three images; file numbers out of row order, as in the real validation set
    numbers = {"n01": [4, 1, 6], "n02": [2, 5, 3]}
    paths = sorted(f"val/{wnid}/ILSVRC2012_val_{n:08d}.JPEG" for wnid, ns in numbers.items() for n in ns)
    original = np.array([0 if "/n01/" in p else 1 for p in paths], dtype=np.uint16)
    (directory / "imagenet_val_set_index_to_filepath.json").write_text(json.dumps(paths))
    np.save(directory / "imagenet_val_set_original_labels.npy", original)
    url = "https://x/static/imagenet/{}/ILSVRC2012_val_{:08d}.JPEG".format
    votes = [
        _vote(4, url("val/n01", 4), 0, 1, (0, 5, 0, 0)),  # relabelled to n02
        _vote(6, url("val/n01", 6), 0, 1, (5, 0, 0, 0)),  # kept
        _vote(3, url("val/n02", 3), 1, 0, (2, 2, 1, 0)),  # removed
    ]
    (directory / "imagenet_mturk.json").write_text(json.dumps(votes))
    view = tmp_path / "aligned.csv"
    resources.build_label_view_step(
        dataset_name="in1k",
        view_name="aligned",
        view_cfg={"kind": "imagenet_cleaned", "variant": "aligned"},
        label_errors_dir=directory,
        reference_logits=None,
        view_path=view,
    )
    expected = {
        "n01/ILSVRC2012_val_00000001.JPEG": 0,
        "n01/ILSVRC2012_val_00000004.JPEG": 1,
        "n01/ILSVRC2012_val_00000006.JPEG": 0,
        "n02/ILSVRC2012_val_00000002.JPEG": 1,
        "n02/ILSVRC2012_val_00000003.JPEG": -1,
        "n02/ILSVRC2012_val_00000005.JPEG": 1,
    }
    assert _view(view) == list(expected.items())


def test_build_label_view_step_removes_the_samples_confident_learning_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scipy.special import softmax

    from classwise.labels import confident_learning
    from classwise.logits_io import save_logits

    # the numpy backend (tests/labels/test_confident_learning.py checks it against cleanlab's):
    # importing cleanlab alone takes seconds
    monkeypatch.setattr(confident_learning, "cleanlab_available", lambda: False)
    rng = np.random.default_rng(0)
    n, c = 60, 3
    truth = np.arange(n) % c
    logits = rng.normal(size=(n, c)).astype(np.float32)
    logits[np.arange(n), truth] += 6.0  # a confident model, right on every image
    labels = truth.copy()
    wrong = [7, 30, 44]  # three images given another class than they show, one of each class
    labels[wrong] = (truth[wrong] + 1) % c
    ids = np.array([f"img{i:02d}" for i in range(n)])
    reference = tmp_path / "reference.npz"
    save_logits(reference, logits=logits, labels=labels, sample_ids=ids, class_names=np.array(["a", "b", "c"]), metadata={})
    view = tmp_path / "cl.csv"
    resources.build_label_view_step(
        dataset_name="d",
        view_name="cl",
        view_cfg={"kind": "confident_learning"},
        label_errors_dir=None,
        reference_logits=reference,
        view_path=view,
    )
    expected = labels.copy()
    expected[wrong] = -1  # the mislabelled images, and only they, removed
    assert _view(view) == list(zip(ids.tolist(), expected.tolist()))
    library = confident_learning.cleaned_cl_labels(labels, softmax(logits.astype(np.float64), axis=1))
    np.testing.assert_array_equal(library, expected)


def test_build_label_view_step_writes_a_real_view_as_label_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sets = [[] if i % 10 == 0 else [i % 1000, 999] if i % 7 == 0 else [i % 1000] for i in range(50_000)]
    sets[3] = [5, 2, 5]  # repeated and unsorted: read as {2, 5}
    real = tmp_path / "real.json"
    real.write_text(json.dumps(sets))
    view = tmp_path / "real.csv"
    resources.build_label_view_step(
        dataset_name="in1k",
        view_name="real",
        view_cfg={"kind": "real"},
        label_errors_dir=None,
        reference_logits=None,
        view_path=view,
        real_file=real,
    )
    lines = view.read_text().splitlines()
    assert lines[0] == "sample_id,real" and len(lines) == 50_001
    expected = [f"ILSVRC2012_val_{i + 1:08d}.JPEG,{' '.join(map(str, sorted(set(s))))}" for i, s in enumerate(sets)]
    assert lines[1:] == expected
    assert lines[4] == "ILSVRC2012_val_00000004.JPEG,2 5" and lines[1] == "ILSVRC2012_val_00000001.JPEG,"
    kept = sum(1 for s in sets if s)
    assert f"in1k/real: {kept} of 50000 images have a ReaL label" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("view_cfg", "field"),
    [
        ({"kind": "real"}, "datasets.d.label_views.v.file"),
        ({"kind": "confident_learning"}, "datasets.d.label_views.v.reference_model"),
        ({"kind": "cifar10_cleaned"}, "datasets.d.label_views.v.label_errors_dir"),
        ({"kind": "imagenet_cleaned", "variant": "both"}, "datasets.d.label_views.v.variant"),
        ({"kind": "cleaned"}, "datasets.d.label_views.v.kind"),
    ],
)
def test_build_label_view_step_names_the_view_s_config_field_of_what_is_missing(
    tmp_path: Path, view_cfg: dict, field: str
) -> None:
    view = tmp_path / "view.csv"
    with pytest.raises(InputError) as raised:
        resources.build_label_view_step(
            dataset_name="d", view_name="v", view_cfg=view_cfg, label_errors_dir=None, reference_logits=None, view_path=view
        )
    assert raised.value.field == field
    assert not view.exists()
