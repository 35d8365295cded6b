"""Lazy image datasets on generated JPEGs in ImageNet's two layouts (ImageFolder and flat + devkit)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from classwise.data.imagefolder import (
    ImageFileDataset,
    ResizeCenterCrop,
    image_folder,
    imagenet1k_wnids,
    imagenet_class_names,
    imagenet_val,
    read_imagenet_devkit,
)
from classwise.errors import InputError

# Three real ImageNet-1k wnids (class indices 0, 10 and 151: tench, brambling, Chihuahua).
WNIDS = ("n01440764", "n01530575", "n02085620")
# Their ILSVRC2012_IDs in our fake meta.mat: deliberately not in wnid order, as in the devkit.
ILSVRC_ID = {"n02085620": 1, "n01440764": 2, "n01530575": 3}
# Validation image number -> wnid (the ground truth), 9 images.
GROUND_TRUTH = [
    "n01530575",
    "n01440764",
    "n02085620",
    "n01440764",
    "n02085620",
    "n01530575",
    "n01440764",
    "n01530575",
    "n02085620",
]


def _jpeg(path: Path, seed: int, size: tuple[int, int], mode: str = "RGB") -> None:
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "L": 1, "CMYK": 4}[mode]
    pixels = rng.integers(0, 256, size=(size[1], size[0], channels), dtype=np.uint8)
    image = Image.fromarray(pixels.squeeze(-1) if channels == 1 else pixels, mode=mode)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="JPEG", quality=90)


def _sizes(i: int) -> tuple[int, int]:
    return [(40, 30), (30, 44), (36, 36)][i % 3]


def _modes(i: int) -> str:
    return {4: "L", 7: "CMYK"}.get(i, "RGB")


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    """``flat/`` with ILSVRC2012_val_0000000{1..9}.JPEG and ``devkit/data/`` (meta.mat, ground truth)."""
    from scipy.io import savemat

    root = tmp_path / "flat"
    for i, _ in enumerate(GROUND_TRUTH, start=1):
        _jpeg(root / f"ILSVRC2012_val_{i:08d}.JPEG", i, _sizes(i), _modes(i))
    data = tmp_path / "devkit" / "data"
    data.mkdir(parents=True)
    dtype = [("ILSVRC2012_ID", "O"), ("WNID", "O"), ("words", "O"), ("num_children", "O")]
    rows = [(ILSVRC_ID[w], w, f"words of {w}", 0) for w in WNIDS] + [(4, "n00001740", "entity", 2)]
    synsets = np.array(rows, dtype=dtype)
    savemat(data / "meta.mat", {"synsets": synsets})
    (data / "ILSVRC2012_validation_ground_truth.txt").write_text("".join(f"{ILSVRC_ID[w]}\n" for w in GROUND_TRUTH))
    return root


@pytest.fixture
def folder(tmp_path: Path, flat: Path) -> Path:
    """The same images in the ImageFolder layout: ``imagenet/val/<wnid>/<file>``."""
    root = tmp_path / "imagenet"
    for i, wnid in enumerate(GROUND_TRUTH, start=1):
        name = f"ILSVRC2012_val_{i:08d}.JPEG"
        (root / "val" / wnid).mkdir(parents=True, exist_ok=True)
        shutil.copy(flat / name, root / "val" / wnid / name)
    return root


def _expected_ids() -> list[str]:
    return sorted(f"{w}/ILSVRC2012_val_{i:08d}.JPEG" for i, w in enumerate(GROUND_TRUTH, start=1))


def test_imagefolder_layout_order_labels_names(folder: Path) -> None:
    data = imagenet_val(folder)  # finds folder/val
    assert data.root == folder / "val"
    assert data.sample_ids.tolist() == _expected_ids()
    assert data.files.tolist() == _expected_ids()
    assert data.labels.tolist() == [WNIDS.index(s.split("/")[0]) for s in _expected_ids()]
    assert data.class_ids == WNIDS
    if imagenet1k_wnids() is not None:
        assert data.class_names == ("tench", "brambling", "Chihuahua")
        wide = imagenet_val(folder, label_space="imagenet1k")
        assert wide.n_classes == 1000 and sorted(set(wide.labels.tolist())) == [0, 10, 151]
        assert wide.class_names[151] == "Chihuahua"


def test_flat_layout_matches_imagefolder_layout(folder: Path, flat: Path) -> None:
    by_folder = imagenet_val(folder, layout="imagefolder")
    by_devkit = imagenet_val(flat, layout="flat", devkit=flat.parent / "devkit")
    assert by_devkit.sample_ids.tolist() == by_folder.sample_ids.tolist()
    assert by_devkit.labels.tolist() == by_folder.labels.tolist()
    assert by_devkit.class_ids == by_folder.class_ids and by_devkit.class_names == by_folder.class_names
    assert by_devkit.files.tolist() == [s.split("/")[1] for s in by_folder.sample_ids]
    a = by_folder.to_imageset(ResizeCenterCrop(16, 18))
    b = by_devkit.to_imageset(ResizeCenterCrop(16, 18))
    np.testing.assert_array_equal(a.images, b.images)
    # explicit files instead of the devkit folder; "auto" detects the flat layout
    data = flat.parent / "devkit" / "data"
    explicit = imagenet_val(flat, meta=data / "meta.mat", ground_truth=data / "ILSVRC2012_validation_ground_truth.txt")
    assert explicit.sample_ids.tolist() == by_folder.sample_ids.tolist()


def test_devkit_maps_ilsvrc_ids_to_sorted_wnid_index(flat: Path) -> None:
    data = flat.parent / "devkit" / "data"
    wnids, labels = read_imagenet_devkit(data / "meta.mat", data / "ILSVRC2012_validation_ground_truth.txt")
    assert wnids == WNIDS  # the non-leaf synset is not a class
    assert labels.tolist() == [WNIDS.index(w) for w in GROUND_TRUTH]


def test_flat_layout_errors(flat: Path, tmp_path: Path) -> None:
    devkit = flat.parent / "devkit"
    with pytest.raises(InputError, match="devkit"):
        imagenet_val(flat)  # no devkit given
    (flat / "ILSVRC2012_val_00000004.JPEG").unlink()
    with pytest.raises(InputError, match="missing 1"):
        imagenet_val(flat, devkit=devkit)
    gt = devkit / "data" / "ILSVRC2012_validation_ground_truth.txt"
    gt.write_text("1\n7\n")
    with pytest.raises(InputError, match="ILSVRC2012_IDs not among") as info:
        imagenet_val(flat, devkit=devkit)
    assert str(gt) in str(info.value)
    with pytest.raises(InputError, match="neither wnid folders"):
        imagenet_val(tmp_path / "devkit")


def test_batches_resize_and_workers(folder: Path) -> None:
    data = imagenet_val(folder)
    transform = ResizeCenterCrop(16, 20, "bicubic")
    batches = list(data.iter_batches(4, transform))
    assert [len(b) for b in batches] == [4, 4, 1]
    assert all(b.images.shape[1:] == (3, 16, 16) for b in batches)
    images = np.concatenate([b.images for b in batches])
    assert images.dtype == np.float32 and 0.0 <= images.min() and images.max() <= 1.0
    threaded = np.concatenate([b.images for b in data.iter_batches(4, transform, workers=3)])
    np.testing.assert_array_equal(images, threaded)
    assert np.concatenate([b.sample_ids for b in batches]).tolist() == data.sample_ids.tolist()


def test_resize_center_crop_equals_torchvision(folder: Path) -> None:
    from torchvision import transforms

    data = imagenet_val(folder)
    for interpolation, mode in (
        ("bilinear", transforms.InterpolationMode.BILINEAR),
        ("bicubic", transforms.InterpolationMode.BICUBIC),
    ):
        ours = ResizeCenterCrop(21, 25, interpolation)
        theirs = transforms.Compose([transforms.Resize(25, mode), transforms.CenterCrop(21), transforms.ToTensor()])
        for i in range(len(data)):
            image = data.load_image(i)
            np.testing.assert_array_equal(ours(image), theirs(image).numpy())
    assert ResizeCenterCrop.from_crop_pct(224, 0.875) == ResizeCenterCrop(224, 256)


def _truncate(path: Path) -> None:
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])


def test_truncated_image_is_an_error_naming_it(folder: Path) -> None:
    data = imagenet_val(folder)
    bad = data.path(3)
    _truncate(bad)
    with pytest.raises(InputError) as info:
        list(data.iter_batches(4, ResizeCenterCrop(16, 18)))
    assert str(bad) in str(info.value) and "on_bad_image" in str(info.value)
    with pytest.raises(InputError, match=bad.name):
        data.load_image(3)


def test_skip_mode_records_and_leaves_out_bad_images(folder: Path) -> None:
    data = imagenet_val(folder, on_bad_image="skip")
    _truncate(data.path(3))
    data.path(5).write_bytes(b"not an image at all")
    batches = list(data.iter_batches(4, ResizeCenterCrop(16, 18), workers=2))
    kept = np.concatenate([b.sample_ids for b in batches]).tolist()
    assert kept == [s for i, s in enumerate(data.sample_ids.tolist()) if i not in (3, 5)]
    assert [s.sample_id for s in data.skipped] == [data.sample_ids[3], data.sample_ids[5]]
    assert all(s.path.endswith(".JPEG") and s.reason for s in data.skipped)
    assert data.load_image(0) is not None


def test_generic_image_folder_with_config_classes(tmp_path: Path) -> None:
    root = tmp_path / "shapes"
    for cls, count in (("square", 2), ("circle", 3), ("triangle", 1)):
        for i in range(count):
            _jpeg(root / cls / f"img{i}.jpg", i, (8, 8))
    (root / "circle" / "notes.txt").write_text("ignored: not an image")
    (root / "circle" / "nested").mkdir()
    _jpeg(root / "circle" / "nested" / "deep.png", 9, (8, 8))
    data = image_folder(root, classes=["triangle", "square", "circle"], class_names=["T", "S", "C"])
    # sorted folder order, labels from the configured list
    assert data.sample_ids.tolist() == [
        "circle/img0.jpg",
        "circle/img1.jpg",
        "circle/img2.jpg",
        "circle/nested/deep.png",
        "square/img0.jpg",
        "square/img1.jpg",
        "triangle/img0.jpg",
    ]
    assert data.labels.tolist() == [2, 2, 2, 2, 1, 1, 0]
    assert data.class_names == ("T", "S", "C")
    assert data.to_imageset().images.shape == (7, 3, 8, 8)
    assert image_folder(root).class_ids == ("circle", "square", "triangle")
    with pytest.raises(InputError, match="unexpected \\['triangle'\\]"):
        image_folder(root, classes=["square", "circle"])
    with pytest.raises(InputError, match="missing \\['hexagon'\\]"):
        image_folder(root, classes=["square", "circle", "triangle", "hexagon"])
    with pytest.raises(InputError, match="class names"):
        image_folder(root, class_names=["a"])


def test_subset_and_validation(folder: Path) -> None:
    data = imagenet_val(folder)
    sub = data.subset([2, 0])
    assert sub.sample_ids.tolist() == [data.sample_ids[2], data.sample_ids[0]]
    with pytest.raises(InputError, match="on_bad_image"):
        imagenet_val(folder, on_bad_image="ignore")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="batch_size"):
        next(data.iter_batches(0))
    assert isinstance(data, ImageFileDataset) and len(data) == 9


def test_imagenet_class_names_ship_offline() -> None:
    names = imagenet_class_names()
    assert len(names) == 1000 and names[0] == "tench" and names[999] == "toilet tissue"
    wnids = imagenet1k_wnids()
    if wnids is not None:
        assert len(wnids) == 1000 and list(wnids) == sorted(wnids) and wnids[0] == "n01440764"
        assert imagenet_class_names(wnids) == names
