"""Sharded inference (issue #16): a shift's inference split into S jobs whose files merge into the
cached logits file and sidecar of an unsharded run, byte for byte; the config's `shards`; the
merge's refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from config_matrix import checkpoint_entry, write_checkpoint, write_image_folder

from classwise.errors import InputError
from classwise.inference.sharding import Shard, ShardPosition, load_shard, merge_shards, save_shard, shard_range
from classwise.pipeline.config_checks import shift_shards
from classwise.shifts.spec import expand_shifts, shard_counts
from classwise.steps.models import InferenceSettings, InferTarget, infer_step, merge_shards_step, train_step

DIGITS = {"source": "sklearn_digits"}
SHIFTS = expand_shifts(
    {
        "clean": True,
        "pgd": [{"norm": "linf", "eps": 0.1, "steps": 2, "step_size": 0.05, "random_start": True, "per_class": 5}],
        "autoattack": [{"norm": "linf", "eps": 0.3, "per_class": 2}],
        "transfer": [{"source": "lin", "attack": "pgd_linf_eps0.1"}],
    }
)


@pytest.fixture(scope="module")
def digits_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Path]]:
    """Two models trained for one epoch on the digits (the pipeline's train step)."""
    folder = tmp_path_factory.mktemp("models")
    models = {}
    for name, architecture in (("lin", "linear"), ("mlp", "mlp")):
        cfg = {"source": "train", "architecture": architecture, "epochs": 1, "seed": 0}
        train_step(
            model_name=name, model_cfg=cfg, dataset_name="digits", dataset_cfg=DIGITS, checkpoint_path=folder / f"{name}.pt"
        )
        models[name] = (cfg, folder / f"{name}.pt")
    return models


def _infer(out: Path, model: str, models: dict[str, Any], shift: str, batch_size: int, shard=None, dataset_cfg=DIGITS) -> Path:  # type: ignore[no-untyped-def]
    cfg, weights = models[model]
    spec = SHIFTS[shift]
    source = spec.params.get("source")
    settings = InferenceSettings(
        dataset_name="digits", dataset=dataset_cfg, shift=spec.to_json(), seed=7, batch_size=batch_size, device="cpu",
        source_model=None if source is None else models[source][0],
    )  # fmt: skip
    infer_step(
        model=InferTarget(model, cfg, weights, out), settings=settings, threads=1, shard=shard,
        source_weights=None if source is None else models[source][1],
    )  # fmt: skip
    return out


def _sharded(tmp_path: Path, count: int, infer) -> Path:  # type: ignore[no-untyped-def]
    """Run shards 1..count (in reverse order: the merge sorts them) and merge them."""
    shards = [infer(tmp_path / "shards" / f"{k}-of-{count}.npz", (k, count)) for k in range(count, 0, -1)]
    merged = tmp_path / "merged" / "logits.npz"
    merge_shards_step(shard_paths=shards, logits_path=merged)
    return merged


def _assert_same_bytes(merged: Path, unsharded: Path) -> None:
    assert merged.read_bytes() == unsharded.read_bytes()
    assert merged.with_suffix(".json").read_bytes() == unsharded.with_suffix(".json").read_bytes()


@pytest.mark.parametrize(
    ("model", "shift", "batch_size", "count", "rows"),
    [
        ("lin", "clean", 256, 3, [256, 256, 387]),  # 4 batches in 3 shards: the last the larger
        ("lin", "pgd_linf_eps0.1", 16, 2, [32, 18]),  # random start per sample, a per_class subset
        ("mlp", "autoattack_linf_eps0.3", 6, 3, [6, 6, 8]),  # random draws per batch (reseeded)
        ("mlp", "transfer_lin_pgd_linf_eps0.1", 20, 4, [0, 20, 20, 10]),  # 3 batches, 4 shards: one empty
    ],
)
def test_sharded_inference_merges_into_the_bytes_of_an_unsharded_run(
    tmp_path: Path, digits_models, model: str, shift: str, batch_size: int, count: int, rows: list[int]
) -> None:  # type: ignore[no-untyped-def]
    def infer(out: Path, shard=None) -> Path:  # type: ignore[no-untyped-def]
        return _infer(out, model, digits_models, shift, batch_size, shard)

    unsharded = infer(tmp_path / "unsharded" / "logits.npz")
    merged = _sharded(tmp_path, count, infer)
    _assert_same_bytes(merged, unsharded)
    files = [load_shard(tmp_path / "shards" / f"{k}-of-{count}.npz") for k in range(1, count + 1)]
    assert [f.labels.shape[0] for f in files] == rows
    assert all(f.position.start % batch_size == 0 for f in files)  # whole batches


def test_shards_of_an_image_folder_skip_the_same_unreadable_image(tmp_path: Path) -> None:
    """Image files decoded batch by batch, one unreadable (on_bad_image: skip): the merged
    sidecar lists it once, as the unsharded one does; 3 batches in 4 shards leave one empty."""
    root = tmp_path / "data"
    write_image_folder(root, 2, per_class=4, seed=0)
    (root / "class_01" / "img_1.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    write_checkpoint(tmp_path / "net.pth", 2, seed=0)
    models = {"net": (checkpoint_entry(tmp_path / "net.pth", 2), tmp_path / "net.pth")}
    dataset = {"source": "image_folder", "root": str(root), "on_bad_image": "skip"}

    def infer(out: Path, shard=None) -> Path:  # type: ignore[no-untyped-def]
        return _infer(out, "net", models, "clean", 3, shard, dataset_cfg=dataset)

    unsharded = infer(tmp_path / "unsharded" / "logits.npz")
    merged = _sharded(tmp_path, 4, infer)
    _assert_same_bytes(merged, unsharded)
    assert len(json.loads(merged.with_suffix(".json").read_text())["skipped_images"]) == 1


def test_shards_of_a_published_set_of_a_class_subset_merge_into_the_unsharded_bytes(tmp_path: Path) -> None:
    """ImageNet-R over an ImageNet stand-in scores only its classes (class_indices, logits restricted
    per shard before the merge): 10 images in 4 batches of 3, 5 shards, one of them empty."""
    from classwise.data.imagefolder import imagenet_val
    from classwise.data.shift_sets import expand_shift_sets
    from classwise.data.stand_ins import IMAGENET_WNIDS, image_folder_fixture, imagenet_val_fixture

    val = imagenet_val_fixture(tmp_path / "val", per_class=1)
    image_folder_fixture(tmp_path / "r" / "imagenet-r", [IMAGENET_WNIDS[2], IMAGENET_WNIDS[0]], per_class=5, suffix=".jpg")
    dataset = {"source": "imagenet_val", "root": str(val), "shift_sets": {"imagenet_r": {"root": str(tmp_path / "r")}}}
    n_classes = len(imagenet_val(val).class_names)
    write_checkpoint(tmp_path / "net.pth", n_classes, seed=0)
    entry = checkpoint_entry(tmp_path / "net.pth", n_classes)
    shift = expand_shift_sets({"imagenet": dataset})["imagenet"]["imagenet_r"].to_json()

    def infer(out: Path, shard=None) -> Path:  # type: ignore[no-untyped-def]
        settings = InferenceSettings(dataset_name="imagenet", dataset=dataset, shift=shift, seed=3, batch_size=3, device="cpu")
        infer_step(model=InferTarget("net", entry, tmp_path / "net.pth", out), settings=settings, threads=1, shard=shard)
        return out

    unsharded = infer(tmp_path / "unsharded" / "logits.npz")
    merged = _sharded(tmp_path, 5, infer)
    _assert_same_bytes(merged, unsharded)
    with np.load(merged) as archive:
        assert archive["class_indices"].tolist() == [0, 2] and archive["logits"].shape == (10, 2)
    rows = [load_shard(tmp_path / "shards" / f"{k}-of-5.npz").labels.shape[0] for k in range(1, 6)]
    assert rows == [0, 3, 3, 3, 1]


@pytest.mark.parametrize(
    ("samples", "batch_size", "count"), [(899, 256, 3), (20, 6, 3), (10, 4, 2), (5, 10, 3), (0, 4, 2), (1000, 1, 7)]
)
def test_shard_ranges_tile_the_set_in_whole_batches(samples: int, batch_size: int, count: int) -> None:
    ranges = [shard_range(samples, batch_size, (k, count)) for k in range(1, count + 1)]
    covered = np.concatenate([np.arange(start, stop) for start, stop in ranges])
    assert covered.tolist() == list(range(samples))  # in order, no gap, no overlap
    assert all(start % batch_size == 0 for start, _ in ranges)
    batches = [-(-(stop - start) // batch_size) for start, stop in ranges]
    assert max(batches) - min(batches) <= 1  # balanced to a batch


def test_shard_counts_default_to_inference_shards_and_an_entry_overrides_them() -> None:
    shifts = {
        "corruptions": ["contrast_decrease"],
        "severities": [2],
        "pgd": [{"norm": "linf", "eps": 0.1, "shards": 4}],
        "pgd_targeted": {"norm": "linf", "eps": 0.2, "targets": [0, 1], "shards": 2},
        "autoattack": [{"norm": "l2", "eps": 0.5}],
        "transfer": [{"source": "a", "attack": "pgd_linf_eps0.1", "shards": 3}],
    }
    names = [*expand_shifts(shifts), "imagenet_r"]  # a published shift set takes the default
    assert "shards" not in json.dumps([spec.to_json() for spec in expand_shifts(shifts).values()])  # no part of a shift
    assert shard_counts(shifts, names, default=5) == {
        "clean": 5,
        "contrast_decrease_s2": 5,
        "pgd_linf_eps0.1": 4,
        "pgd_targeted_0": 2,
        "pgd_targeted_1": 2,
        "autoattack_l2_eps0.5": 5,
        "transfer_a_pgd_linf_eps0.1": 3,
        "imagenet_r": 5,
    }


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"shifts": {"pgd": [{"norm": "linf", "eps": 0.1, "shards": 0}]}}, "shifts.pgd[0].shards"),
        ({"shifts": {"autoattack": [{"norm": "linf", "eps": 0.1, "shards": "2"}]}}, "shifts.autoattack[0].shards"),
        (
            {
                "shifts": {
                    "pgd": [{"norm": "linf", "eps": 0.1}],
                    "transfer": [{"source": "a", "attack": "pgd_linf_eps0.1", "shards": 1.5}],
                }
            },
            "shifts.transfer[0].shards",
        ),  # fmt: skip
        ({"shifts": {}, "inference": {"shards": True}}, "inference.shards"),
    ],
)
def test_a_bad_shards_value_names_the_file_and_field(config: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        shift_shards(config, list(expand_shifts(config["shifts"])), source="config/paper.yaml")
    assert (info.value.path, info.value.field) == ("config/paper.yaml", field)
    assert "expected an integer >= 1" in str(info.value)


def test_the_schema_rejects_a_bad_shards_value_naming_the_file_and_field() -> None:
    from paths import REPO

    from classwise.pipeline.config_checks import check_schema

    schema = REPO / "workflow" / "schemas" / "config.schema.yaml"
    config = {"datasets": {"d": {"source": "sklearn_digits"}}, "models": {"m": {"source": "train", "architecture": "linear"}}}
    with pytest.raises(InputError) as info:
        check_schema({**config, "shifts": {"pgd": [{"norm": "linf", "eps": 0.1, "shards": 0}]}}, schema, source="c.yaml")
    assert (info.value.path, info.value.field) == ("c.yaml", "shifts.pgd[0].shards")
    with pytest.raises(InputError) as info:
        check_schema({**config, "shifts": {}, "inference": {"shards": 0}}, schema, source="c.yaml")
    assert (info.value.path, info.value.field) == ("c.yaml", "inference.shards")
    with pytest.raises(InputError) as info:  # a transfer's inline attack is no entry of its own
        attack = {"norm": "linf", "eps": 0.1, "shards": 2}
        check_schema({**config, "shifts": {"transfer": [{"source": "m", "attack": attack}]}}, schema, source="c.yaml")
    assert info.value.path == "c.yaml"


# --------------------------------------------------------------------------- the merge refuses


def _write(path: Path, index: int, count: int, *, samples: int = 10, batch_size: int = 2, seed: int = 0, start=None) -> Path:  # type: ignore[no-untyped-def]
    lo, hi = shard_range(samples, batch_size, (index, count))
    lo = lo if start is None else start
    rows = np.arange(lo, hi)
    save_shard(
        path, position=ShardPosition(Shard(index, count), lo, hi, samples, batch_size),
        logits=np.stack([rows, -rows], axis=1).astype(np.float32), labels=rows % 2,
        sample_ids=np.array([f"s{r}" for r in rows]), class_names=np.array(["a", "b"]),
        metadata={"seed": seed, "skipped_images": [], "preprocessing": {"input_shape": [1, 2, 2]}},
    )  # fmt: skip
    return path


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([(1, 3), (3, 3)], "shard(s) 2-of-3 missing"),
        ([(1, 2), (2, 2), (2, 2)], "shard 2-of-2 is given twice"),
        ([(1, 2), (2, 3), (3, 3)], "shards of different counts"),
        ([(1, 2), (2, 2, {"seed": 1})], "'seed' differs"),
        ([(1, 2), (2, 2, {"samples": 12})], "shards of different runs"),
        ([(1, 2), (2, 2, {"start": 2})], "covers samples [2, 10), but shard 2-of-2"),  # overlaps shard 1
    ],
    ids=["missing", "repeated", "mixed-counts", "other-seed", "other-set", "overlapping"],
)
def test_the_merge_refuses_shards_that_are_not_one_run(tmp_path: Path, files, message: str) -> None:  # type: ignore[no-untyped-def]
    paths = []
    for i, (index, count, *options) in enumerate(files):
        paths.append(_write(tmp_path / f"{i}.npz", index, count, **(options[0] if options else {})))
    out = tmp_path / "merged.npz"
    with pytest.raises(InputError) as info:
        merge_shards(paths, out)
    assert message in str(info.value) and info.value.field == "shards"
    assert not out.exists() and not out.with_suffix(".json").exists()
    merge_shards([_write(tmp_path / "a.npz", 1, 2), _write(tmp_path / "b.npz", 2, 2)], out)  # the two of a run merge
    assert np.load(out)["sample_ids"].tolist() == [f"s{r}" for r in range(10)]


def test_a_shard_whose_logits_do_not_match_its_classes_is_named_before_the_merge(tmp_path: Path) -> None:
    """A shard with another number of score columns than class names (a hand-made or truncated
    file) is refused by the reader, naming that shard, not by numpy's concatenation."""
    good = _write(tmp_path / "1.npz", 1, 2)
    lo, hi = shard_range(10, 2, (2, 2))
    bad = tmp_path / "2.npz"
    save_shard(
        bad, position=ShardPosition(Shard(2, 2), lo, hi, 10, 2),
        logits=np.zeros((hi - lo, 3), dtype=np.float32), labels=np.arange(lo, hi) % 2,
        sample_ids=np.array([f"s{r}" for r in range(lo, hi)]), class_names=np.array(["a", "b"]),
        metadata={"seed": 0, "skipped_images": [], "preprocessing": {"input_shape": [1, 2, 2]}},
    )  # fmt: skip
    with pytest.raises(InputError) as info:
        merge_shards([good, bad], tmp_path / "merged.npz")
    assert (info.value.path, info.value.field) == (str(bad), "logits")
    assert "3 columns" in str(info.value) and "2 class names" in str(info.value)


def test_an_empty_shard_record_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    from classwise.logits_io import write_npz_deterministic

    path = _write(tmp_path / "1.npz", 1, 1)
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    write_npz_deterministic(path, {**arrays, "shard.json": np.array([], dtype=str)})
    with pytest.raises(InputError) as info:
        load_shard(path)
    assert (info.value.path, info.value.field) == (str(path), "shard.json")


def test_a_shard_missing_rows_its_skipped_images_do_not_account_for_is_refused(tmp_path: Path) -> None:
    """Every position of a shard's range is a row or a skipped image: a shard that lost rows
    otherwise (a truncated or hand-made file) would merge into a silently smaller set."""
    good = _write(tmp_path / "1.npz", 1, 2)
    lo, hi = shard_range(10, 2, (2, 2))
    rows = np.arange(lo, hi - 1)  # the last sample neither inferred nor listed as skipped
    short = tmp_path / "2.npz"
    save_shard(
        short, position=ShardPosition(Shard(2, 2), lo, hi, 10, 2),
        logits=np.stack([rows, -rows], axis=1).astype(np.float32), labels=rows % 2,
        sample_ids=np.array([f"s{r}" for r in rows]), class_names=np.array(["a", "b"]),
        metadata={"seed": 0, "skipped_images": [], "preprocessing": {"input_shape": [1, 2, 2]}},
    )  # fmt: skip
    out = tmp_path / "merged.npz"
    with pytest.raises(InputError) as info:
        merge_shards([good, short], out)
    assert (info.value.path, info.value.field) == (str(short), "logits")
    assert f"holds {hi - lo - 1} rows and 0 skipped images, but its range [{lo}, {hi})" in str(info.value)
    assert not out.exists()


def test_a_shard_that_is_not_an_npz_archive_is_named(tmp_path: Path) -> None:
    path = tmp_path / "1-of-2.npz"
    path.write_text("interrupted copy")
    with pytest.raises(InputError, match="not a readable .npz archive") as raised:
        load_shard(path)
    assert raised.value.path == str(path)
    with pytest.raises(InputError, match="does not exist"):
        load_shard(tmp_path / "2-of-2.npz")


def test_a_transfer_between_models_of_other_preprocessing_is_refused(
    tmp_path: Path, digits_models, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The source's adversarial images are fed to the target as they are: both must preprocess
    alike (data config), or the job stops before any attack."""
    import classwise.steps.models as steps
    from classwise.models.data_config import DataConfig

    def config(mean: float) -> DataConfig:
        return DataConfig((1, 8, 8), "bilinear", 1.0, "center", (mean,), (1.0,), (8, 8))

    original = steps.load_inference_model

    def with_config(name, cfg, weights, device):  # type: ignore[no-untyped-def]
        model, meta, _ = original(name, cfg, weights, device)
        return model, meta, {"lin": config(0.0), "mlp": config(0.5)}[name]

    monkeypatch.setattr(steps, "load_inference_model", with_config)
    with pytest.raises(InputError, match="preprocesses images otherwise") as raised:
        _infer(tmp_path / "x.npz", "mlp", digits_models, "transfer_lin_pgd_linf_eps0.1", 8)
    assert raised.value.field == "shifts.transfer" and not (tmp_path / "x.npz").exists()
