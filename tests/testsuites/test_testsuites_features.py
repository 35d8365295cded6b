"""Image features against direct per-image formulas, and the metadata join."""

from __future__ import annotations

import colorsys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import ndimage

from classwise.errors import InputError
from classwise.testsuites.features import image_features, laplacian_variance, load_metadata


def _images(seed: int, n: int, c: int, h: int, w: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, c, h, w)).astype(np.float32)


@pytest.mark.parametrize(("seed", "n", "h", "w"), [(0, 4, 7, 9), (1, 3, 1, 5), (2, 5, 16, 16)])
def test_rgb_features_match_direct_formulas(seed: int, n: int, h: int, w: int) -> None:
    x = _images(seed, n, 3, h, w)
    x[0, :, 0, 0] = 0.0  # a black pixel: saturation 0 by convention
    got = image_features(x, chunk_size=2)
    assert list(got.columns) == ["brightness", "contrast", "saturation", "sharpness", "height", "width", "aspect_ratio"]
    for i in range(n):
        img = x[i].astype(np.float64)
        lum = 0.299 * img[0] + 0.587 * img[1] + 0.114 * img[2]
        assert got.loc[i, "brightness"] == pytest.approx(lum.mean(), rel=1e-12)
        assert got.loc[i, "contrast"] == pytest.approx(np.sqrt(np.mean((lum - lum.mean()) ** 2)), rel=1e-10, abs=1e-15)
        assert got.loc[i, "sharpness"] == pytest.approx(ndimage.laplace(lum).var(), rel=1e-10, abs=1e-15)
        sat = [colorsys.rgb_to_hsv(*img[:, r, q])[1] for r in range(h) for q in range(w)]
        assert got.loc[i, "saturation"] == pytest.approx(np.mean(sat), rel=1e-10)
    np.testing.assert_array_equal(got["height"], h)
    np.testing.assert_array_equal(got["width"], w)
    np.testing.assert_allclose(got["aspect_ratio"], w / h)


def test_grey_images_have_no_saturation_and_sizes_are_used() -> None:
    x = _images(3, 3, 1, 6, 5)
    sizes = np.array([[480, 640], [100, 50], [7, 7]])
    got = image_features(x, original_sizes=sizes, sample_ids=["a", "b", "c"])
    assert "saturation" not in got.columns
    assert got["sample_id"].tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(got["aspect_ratio"], [640 / 480, 0.5, 1.0])
    for i in range(3):
        lum = x[i, 0].astype(np.float64)
        assert got.loc[i, "brightness"] == pytest.approx(lum.mean())
        assert got.loc[i, "sharpness"] == pytest.approx(ndimage.laplace(lum).var(), rel=1e-10)


def test_laplacian_variance_is_zero_on_linear_ramps_and_positive_on_edges() -> None:
    ramp = np.tile(np.linspace(0, 1, 8), (8, 1))
    edge = np.zeros((8, 8))
    edge[:, 4:] = 1.0
    got = laplacian_variance(np.stack([np.full((8, 8), 0.3), edge]))
    assert got[0] == 0.0
    assert got[1] > 0
    # a linear ramp: the interior Laplacian is zero; only the reflected borders contribute
    assert laplacian_variance(ramp[None])[0] == pytest.approx(ndimage.laplace(ramp).var())


def test_chunking_does_not_change_features() -> None:
    x = _images(4, 7, 3, 5, 6)
    pd.testing.assert_frame_equal(image_features(x, chunk_size=1), image_features(x, chunk_size=100))


@pytest.mark.parametrize(
    ("images", "kwargs", "field"),
    [
        (np.zeros((2, 3, 4)), {}, "images"),
        (np.zeros((2, 2, 4, 4)), {}, "images"),
        (np.zeros((2, 3, 4, 4), dtype=np.uint8), {}, "images"),
        (np.full((2, 3, 4, 4), 1.5), {}, "images"),
        (np.zeros((2, 3, 4, 4)), {"original_sizes": np.array([[1, 2]])}, "original_sizes"),
        (np.zeros((2, 3, 4, 4)), {"original_sizes": np.array([[1, 2], [0, 2]])}, "original_sizes"),
        (np.zeros((2, 3, 4, 4)), {"sample_ids": ["a"]}, "sample_ids"),
    ],
)
def test_bad_images_raise_input_error(images: np.ndarray, kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        image_features(images, **kwargs)
    assert err.value.field == field


def test_load_metadata_joins_in_sample_order(tmp_path: Path) -> None:
    csv = tmp_path / "meta.csv"
    csv.write_text("camera,sample_id,iso\nA,007,100\nB,003,200\nA,010,400\nC,999,800\n")
    got = load_metadata(csv, np.array(["010", "007", "003"]))
    assert got["sample_id"].tolist() == ["010", "007", "003"]  # ids compared as strings: "007" kept
    assert got["camera"].tolist() == ["A", "A", "B"]
    assert got["iso"].tolist() == [400, 100, 200]
    assert list(got.columns) == ["sample_id", "camera", "iso"]


def test_load_metadata_errors(tmp_path: Path) -> None:
    csv = tmp_path / "meta.csv"
    csv.write_text("id,camera\n1,A\n")
    with pytest.raises(InputError, match="missing key column") as err:
        load_metadata(csv, ["1"])
    assert err.value.field == "sample_id" and err.value.path == str(csv)
    csv.write_text("sample_id,camera\n1,A\n2,B\n")
    with pytest.raises(InputError, match="1 of 2 sample ids are missing"):
        load_metadata(csv, ["1", "3"])
    csv.write_text("sample_id,camera\n1,A\n1,B\n")
    with pytest.raises(InputError, match="duplicate"):
        load_metadata(csv, ["1"])
    with pytest.raises(InputError, match="not found"):
        load_metadata(tmp_path / "absent.csv", ["1"])
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match="cannot parse"):
        load_metadata(tmp_path / "empty.csv", ["1"])
