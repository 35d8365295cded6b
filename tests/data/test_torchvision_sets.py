"""GTSRB through torchvision's dataset class on a generated copy of its on-disk layout, and the
never-download rule of every loader. (CIFAR-10 and CIFAR-10-C prepare+load: test_downloads.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from classwise.data import torchvision_sets
from classwise.errors import InputError


def _ppm(path: Path, size: tuple[int, int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)).save(path, format="PPM")


@pytest.fixture
def gtsrb_root(tmp_path: Path) -> Path:
    """torchvision's GTSRB layout: 43 training class folders, a test folder and GT-final_test.csv."""
    base = tmp_path / "gtsrb"
    for k in range(43):
        _ppm(base / "GTSRB" / "Training" / f"{k:05d}" / f"00000_{k:05d}.ppm", (20 + k % 5, 22), k)
    rows = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
    for i, label in enumerate([14, 1, 42]):
        _ppm(base / "GTSRB" / "Final_Test" / "Images" / f"{i:05d}.ppm", (30, 25 + i), 100 + i)
        rows.append(f"{i:05d}.ppm;30;{25 + i};1;1;20;20;{label}")
    (base / "GT-final_test.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


def test_gtsrb_lazy_and_in_memory(gtsrb_root: Path) -> None:
    train = torchvision_sets.gtsrb_dataset(gtsrb_root, "train")
    assert len(train) == 43 and train.labels.tolist() == list(range(43))
    assert train.sample_ids[5] == "GTSRB/Training/00005/00000_00005.ppm"
    assert train.class_names[42] == "00042"
    test = torchvision_sets.load_gtsrb_split(gtsrb_root, "test", image_size=16)
    assert test.images.shape == (3, 3, 16, 16) and test.labels.tolist() == [14, 1, 42]
    assert test.sample_ids.tolist() == [f"GTSRB/Final_Test/Images/{i:05d}.ppm" for i in range(3)]
    assert 0.0 <= test.images.min() and test.images.max() <= 1.0


def test_loaders_never_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a loader tried to download")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    for call in (
        lambda: torchvision_sets.load_cifar_split("cifar10", tmp_path, "test"),
        lambda: torchvision_sets.load_cifar_split("cifar100", tmp_path, "train"),
        lambda: torchvision_sets.gtsrb_dataset(tmp_path, "test"),
        lambda: torchvision_sets.load_cifar10c(tmp_path, "fog", 1),
    ):
        with pytest.raises(InputError, match="download step") as info:
            call()
        assert str(tmp_path) in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_argument_checks(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="split"):
        torchvision_sets.load_cifar_split("cifar10", tmp_path, "val")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="cifar10"):
        torchvision_sets.load_cifar_split("mnist", tmp_path, "test")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="unknown torchvision data set"):
        torchvision_sets.prepare_torchvision_dataset("mnist", tmp_path)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="image_size"):
        torchvision_sets.load_gtsrb_split(tmp_path, "test", image_size=0)


def test_published_defaults_are_well_formed() -> None:
    from classwise.data.downloads import check_sha256

    for archives in torchvision_sets.ARCHIVES.values():
        for archive in archives:
            assert archive.url.startswith("https://")
            assert check_sha256(archive.sha256) == archive.sha256
    assert len(torchvision_sets.CIFAR10C_CORRUPTIONS) == 19
