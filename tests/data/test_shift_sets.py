"""Published shift sets (classwise.data.shift_sets): expansion into shifts, the official layouts
built here in miniature, class subsets against a hand computation, downloads, and the CIFAR
families through inference and the worst-class step."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from archives import tar_bytes
from paths import SHARED_DATA
from PIL import Image

from classwise.class_subsets import restrict_superclasses, restrict_to_classes
from classwise.data.downloads import NetworkOptions
from classwise.data.imagefolder import imagenet1k_wnids
from classwise.data.shift_sets import SHIFT_FAMILIES, expand_shift_sets, merge_shifts, open_shift, prepare_shift_set
from classwise.data.shift_sets.base import COMMON_CORRUPTIONS
from classwise.data.shift_sets.cifar import CIFAR10_CLASSES, CIFAR100_CLASSES
from classwise.data.stand_ins import IMAGENET_WNIDS, image_folder_fixture, imagenet_c_fixture, imagenet_val_fixture
from classwise.errors import InputError
from classwise.pipeline.plan import check_runs, resolve_views
from classwise.shifts.spec import expand_shifts

SHARED_IMAGENET_LABELS = SHARED_DATA / "imagenet-labels"


def cifar10(**shift_sets: dict) -> dict:
    return {"source": "torchvision", "name": "cifar10", "root": "unused", "shift_sets": shift_sets}


def imagenet(root: Path, **shift_sets: dict) -> dict:
    return {"source": "imagenet_val", "root": str(root), "shift_sets": shift_sets}


# ------------------------------------------------------------------------------ expansion


def test_one_entry_brings_every_corruption_and_severity_as_its_own_shift() -> None:
    specs = expand_shift_sets({"c10": cifar10(cifar10c={})})["c10"]
    assert len(specs) == 19 * 5
    assert list(specs)[:6] == [f"cifar10c_gaussian_noise_s{s}" for s in range(1, 6)] + ["cifar10c_shot_noise_s1"]
    fog = specs["cifar10c_fog_s3"]
    assert fog.kind == "dataset" and fog.paired and not fog.restricted
    assert fog.params == {
        "family": "cifar10c", "set": "cifar10c", "root": "resources/data", "corruption": "fog", "severity": 3,
        "paired": True, "restricted": False,
    }  # fmt: skip
    chosen = expand_shift_sets({"c10": cifar10(c={"family": "cifar10c", "corruptions": ["snow"], "severities": [5, 1]})})
    assert list(chosen["c10"]) == ["c_snow_s5", "c_snow_s1"]
    natural = expand_shift_sets({"c10": cifar10(cifar10_1={})})["c10"]["cifar10_1"]
    assert not natural.paired and natural.params["version"] == "v6"


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ({"severities": [0, 6]}, "datasets.c10.shift_sets.cifar10c.severities[0]", "expected a severity 1-5"),
        ({"severities": [2, 7]}, "datasets.c10.shift_sets.cifar10c.severities[1]", "got 7"),
        ({"corruptions": ["fog", "rain"]}, "datasets.c10.shift_sets.cifar10c.corruptions[1]", "got 'rain'"),
        ({"variants": ["x"]}, "datasets.c10.shift_sets.cifar10c.variants", "unknown key 'variants'"),
        ({"family": "cifar10d"}, "datasets.c10.shift_sets.cifar10c.family", "unknown shift family 'cifar10d'"),
    ],
)
def test_bad_options_name_the_config_and_the_field(entry: dict, field: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as error:
        expand_shift_sets({"c10": cifar10(cifar10c=entry)}, source="my.yaml")
    assert str(error.value).startswith(f"my.yaml: field '{field}'")


def test_a_family_under_a_base_of_another_label_space_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"field 'datasets.c100.shift_sets.cifar10c'.*CIFAR-10's 10 classes.*has 100"):
        expand_shift_sets({"c100": {"source": "torchvision", "name": "cifar100", "root": "r", "shift_sets": {"cifar10c": {}}}})
    with pytest.raises(InputError, match="source imagenet_val, not 'torchvision'"):
        expand_shift_sets({"c10": cifar10(imagenet_r={})})
    with pytest.raises(InputError, match=r"holds 3 x 32 x 32 images, dataset 'd' has \(1, 8, 8\)"):
        expand_shift_sets({"d": {"source": "sklearn_digits", "shift_sets": {"cifar10c": {}}}})


def test_a_missing_corruption_file_of_a_present_copy_names_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "CIFAR-10-C"
    directory.mkdir()
    np.save(directory / "labels.npy", np.zeros(5, dtype=np.int64))
    np.save(directory / "fog.npy", np.zeros((5, 32, 32, 3), dtype=np.uint8))
    expand_shift_sets({"c10": cifar10(cifar10c={"root": str(tmp_path), "corruptions": ["fog"]})})
    with pytest.raises(InputError, match="snow.npy: field 'datasets.c10.shift_sets.cifar10c.corruptions': file missing"):
        expand_shift_sets({"c10": cifar10(cifar10c={"root": str(tmp_path), "corruptions": ["fog", "snow"]})})


def test_imagenet_directories_are_checked_before_any_job(tmp_path: Path) -> None:
    val = imagenet_val_fixture(tmp_path / "val", per_class=1)
    c_root = imagenet_c_fixture(tmp_path / "c", ["fog"], [1, 2])
    where = "datasets.imagenet.shift_sets.imagenet_c"
    assert (
        len(
            expand_shift_sets(
                {"imagenet": imagenet(val, imagenet_c={"root": str(c_root), "corruptions": ["fog"], "severities": [1, 2]})}
            )["imagenet"]
        )
        == 2
    )
    with pytest.raises(InputError, match=rf"{tmp_path / 'c'}: field '{where}.corruptions': missing fog/3/"):
        expand_shift_sets(
            {"imagenet": imagenet(val, imagenet_c={"root": str(c_root), "corruptions": ["fog"], "severities": [1, 3]})}
        )
    with pytest.raises(InputError, match=rf"field '{where}.root': directory does not exist"):
        expand_shift_sets({"imagenet": imagenet(val, imagenet_c={"root": str(tmp_path / "nowhere")})})
    with pytest.raises(InputError, match=rf"field '{where}.root': is required"):
        expand_shift_sets({"imagenet": imagenet(val, imagenet_c={})})
    (c_root / "fog" / "2" / "n09999999").mkdir()  # a class the base dataset does not have
    with pytest.raises(InputError, match=r"fog/2: field '.*\.root': class folders \['n09999999'\].*not classes of the base"):
        expand_shift_sets(
            {"imagenet": imagenet(val, imagenet_c={"root": str(c_root), "corruptions": ["fog"], "severities": [1, 2]})}
        )
    sketch = image_folder_fixture(tmp_path / "sketch", ["n01440764", "extras"], per_class=1)
    with pytest.raises(InputError, match=r"extras: field '.*imagenet_sketch.root': class folder 'extras' is not a wnid"):
        expand_shift_sets({"imagenet": imagenet(val, imagenet_sketch={"root": str(sketch)})})
    with pytest.raises(InputError, match=r"field '.*imagenet_r.classes': unknown wnids \['n00000001'\]"):
        expand_shift_sets({"imagenet": imagenet(val, imagenet_r={"classes": ["n01440764", "n00000001"]})})


def test_names_are_unique_across_the_config() -> None:
    on_the_fly = expand_shifts({"clean": True})
    sets = expand_shift_sets({"a": cifar10(cifar10_1={}), "b": cifar10(cifar10_1={})})
    assert list(merge_shifts(on_the_fly, sets)) == ["clean", "cifar10_1"]  # the same files: one shift
    other = expand_shift_sets({"a": cifar10(cifar10_1={}), "b": cifar10(cifar10_1={"root": "elsewhere"})})
    with pytest.raises(InputError, match="field 'datasets.b.shift_sets.cifar10_1': shift 'cifar10_1' of another dataset"):
        merge_shifts(on_the_fly, other)
    clash = expand_shift_sets({"a": cifar10(clean={"family": "cifar10_1"})})
    with pytest.raises(InputError, match="already a shift of `shifts:`"):
        merge_shifts(on_the_fly, clash)


def test_conditions_named_by_digits_are_shifts_named_by_their_decimal_strings(tmp_path: Path) -> None:
    """YAML reads ``1:`` as the integer 1: the config is read with every integer key as its string
    (:func:`names_as_strings`, as the workflow and ``classwise check-config`` read it), so
    condition 1 of shift set ``sev`` is shift ``sev_1``, and its severity and pairing keys follow."""
    import yaml

    from classwise.pipeline.config_checks import check_schema, names_as_strings
    from classwise.pipeline.config_file import REPO_SCHEMA

    (tmp_path / "labels.csv").write_text("sample_id,label\na,0\nb,1\nc,0\n")
    (tmp_path / "one.csv").write_text("sample_id,label\na,0\nb,1\n")
    text = f"""
    datasets:
      ids:
        source: labels
        path: {tmp_path / "labels.csv"}
        shift_sets:
          sev: {{family: labels, files: {{1: {tmp_path / "one.csv"}, 2: null}}, severities: {{1: 1, 2: 2}}, paired: {{2: false}}}}
    models: {{7: {{source: predictions, files: {{clean: a.csv}}}}}}
    shifts: {{clean: true}}
    """
    config = yaml.safe_load(text)
    assert list(config["datasets"]["ids"]["shift_sets"]["sev"]["files"]) == [1, 2]
    check_schema(config, REPO_SCHEMA, source="my.yaml")  # as YAML read it, and as the workflow reads it
    names_as_strings(config, source="my.yaml")
    assert list(config["models"]) == ["7"]
    check_schema(config, REPO_SCHEMA, source="my.yaml")
    shifts = expand_shift_sets(config["datasets"], source="my.yaml")["ids"]
    assert list(shifts) == ["sev_1", "sev_2"]
    assert [(s.params["condition"], s.params["severity"], s.params["paired"]) for s in shifts.values()] == [
        ("1", 1, True),
        ("2", 2, False),
    ]
    with pytest.raises(InputError) as error:
        names_as_strings(
            yaml.safe_load("datasets: {ids: {shift_sets: {sev: {files: {1: a.csv, '1': b.csv}}}}}"), source="my.yaml"
        )
    assert str(error.value) == (
        "my.yaml: field 'datasets.ids.shift_sets.sev.files': names '1' twice (once as the number 1, once as a string); keep one"
    )


def test_a_dataset_evaluates_its_own_sets_and_label_views_skip_other_samples() -> None:
    config = {
        "datasets": {
            "a": {**cifar10(cifar10_1={}, cifar10c={"corruptions": ["fog"], "severities": [1]}),
                  "label_views": {"v": {"kind": "cifar10_cleaned", "shifts": ["clean"]}}},
            "b": {"source": "torchvision", "name": "cifar10", "root": "r"},
        },
        "models": {"m": {"source": "robustbench", "name": "Standard", "dataset": "cifar10"}},
    }  # fmt: skip
    sets = expand_shift_sets(config["datasets"])
    shifts = merge_shifts(expand_shifts({"clean": True}), sets)
    plan = check_runs(config, shifts=shifts, shift_sets=sets)
    assert plan.shifts == {"a": ["clean", "cifar10_1", "cifar10c_fog_s1"], "b": ["clean"]}
    user = {"datasets": {"a": {"label_views": {"v": {"shifts": ["clean"]}}}, "b": {}}}
    resolve_views(plan, config, user, shifts=shifts)
    assert plan.view_shifts[("a", "original")] == ["clean", "cifar10_1", "cifar10c_fog_s1"]
    config["datasets"]["a"]["label_views"]["v"]["shifts"] = ["clean", "cifar10_1"]
    user["datasets"]["a"]["label_views"]["v"]["shifts"] = ["clean", "cifar10_1"]
    with pytest.raises(InputError, match=r"field 'datasets.a.label_views.v.shifts': names shift 'cifar10_1', a published set"):
        resolve_views(check_runs(config, shifts=shifts, shift_sets=sets), config, user, shifts=shifts)
    config["datasets"]["b"]["shifts"] = ["clean", "cifar10_1"]
    with pytest.raises(InputError, match=r"field 'datasets.b.shifts': names shift 'cifar10_1', a shift set of another dataset"):
        check_runs(config, shifts=shifts, shift_sets=sets)


# ------------------------------------------------------------------------------ readers


def _cifar_c_copy(directory: Path, corruptions: list[str], n: int, n_classes: int, seed: int = 0) -> np.ndarray:
    """``<corruption>.npy`` (5 n images, severity-major) and ``labels.npy``; returns the images."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True)
    labels = np.tile(rng.integers(0, n_classes, size=n), 5)
    np.save(directory / "labels.npy", labels)
    images = rng.integers(0, 256, size=(5 * n, 32, 32, 3), dtype=np.uint8)
    for corruption in corruptions:
        np.save(directory / f"{corruption}.npy", images)
    return images


@pytest.mark.parametrize(
    ("family", "folder", "prefix", "classes"),
    [("cifar10c", "CIFAR-10-C", "cifar10", CIFAR10_CLASSES), ("cifar100c", "CIFAR-100-C", "cifar100", CIFAR100_CLASSES)],
)
def test_cifar_c_reads_the_rows_of_one_severity_with_the_clean_ids(
    tmp_path: Path, family: str, folder: str, prefix: str, classes: tuple
) -> None:
    images = _cifar_c_copy(tmp_path / folder, ["fog"], n=4, n_classes=len(classes))
    spec = expand_shift_sets(
        {
            "b": {
                "source": "torchvision",
                "name": prefix,
                "root": "r",
                "shift_sets": {family: {"root": str(tmp_path), "corruptions": ["fog"], "severities": [3]}},
            }
        }
    )["b"][f"{family}_fog_s3"]
    opened = open_shift(spec, {"source": "torchvision"}).images
    assert opened.sample_ids.tolist() == [f"{prefix}-test-{i:05d}" for i in range(4)]
    np.testing.assert_array_equal(opened.images, images[8:12].transpose(0, 3, 1, 2) / np.float32(255))
    np.testing.assert_array_equal(opened.labels, np.load(tmp_path / folder / "labels.npy")[8:12])
    assert opened.class_names == classes


def test_cifar100_names_are_the_published_fine_labels_in_order() -> None:
    assert len(CIFAR100_CLASSES) == 100 == len(set(CIFAR100_CLASSES))
    assert list(CIFAR100_CLASSES) == sorted(CIFAR100_CLASSES)  # the meta file lists them alphabetically
    assert CIFAR100_CLASSES[:3] == ("apple", "aquarium_fish", "baby") and CIFAR100_CLASSES[-1] == "worm"


def test_a_cifar_c_file_of_the_wrong_shape_names_itself(tmp_path: Path) -> None:
    _cifar_c_copy(tmp_path / "CIFAR-10-C", ["fog"], n=2, n_classes=10)
    np.save(tmp_path / "CIFAR-10-C" / "fog.npy", np.zeros((7, 32, 32, 3), dtype=np.uint8))
    spec = expand_shift_sets({"b": cifar10(cifar10c={"root": str(tmp_path), "corruptions": ["fog"], "severities": [1]})})["b"][
        "cifar10c_fog_s1"
    ]
    with pytest.raises(InputError, match=r"fog.npy: field 'shape': expected uint8 images of shape \(5 n, 32, 32, 3\)"):
        open_shift(spec, {})


def test_cifar10_1_has_ids_of_its_own(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    directory = tmp_path / "CIFAR-10.1"
    directory.mkdir()
    np.save(directory / "cifar10.1_v6_data.npy", rng.integers(0, 256, size=(3, 32, 32, 3), dtype=np.uint8))
    np.save(directory / "cifar10.1_v6_labels.npy", np.array([9, 0, 4]))
    spec = expand_shift_sets({"b": cifar10(cifar10_1={"root": str(tmp_path)})})["b"]["cifar10_1"]
    opened = open_shift(spec, {}).images
    assert opened.sample_ids.tolist() == ["cifar10.1-v6-0000", "cifar10.1-v6-0001", "cifar10.1-v6-0002"]
    assert opened.labels.tolist() == [9, 0, 4]


def test_imagenet_families_map_their_folders_to_the_base_classes(tmp_path: Path) -> None:
    val = imagenet_val_fixture(tmp_path / "val", per_class=1)  # classes: the first three wnids, found on disk
    image_folder_fixture(tmp_path / "sketch" / "sketch", IMAGENET_WNIDS[::-1], per_class=1, suffix=".JPEG")
    image_folder_fixture(tmp_path / "v2" / "imagenetv2-top-images-format-val", ["2", "0"], per_class=2, suffix=".jpeg")
    image_folder_fixture(tmp_path / "r" / "imagenet-r", [IMAGENET_WNIDS[2], IMAGENET_WNIDS[0]], per_class=1, suffix=".jpg")
    c_root = imagenet_c_fixture(tmp_path / "c", ["fog"], [2])
    base = imagenet(
        val,
        imagenet_sketch={"root": str(tmp_path / "sketch")},
        imagenet_v2={"root": str(tmp_path / "v2"), "variants": ["top-images"]},
        imagenet_r={"root": str(tmp_path / "r")},
        imagenet_c={"root": str(c_root), "corruptions": ["fog"], "severities": [2]},
        mine={"family": "imagenet_folder", "root": str(tmp_path / "r" / "imagenet-r"), "classes": [IMAGENET_WNIDS[2]]},
    )
    specs = expand_shift_sets({"imagenet": base})["imagenet"]
    assert list(specs) == ["imagenet_sketch", "imagenet_v2_top_images", "imagenet_r", "imagenet_c_fog_s2", "mine"]
    sketch = open_shift(specs["imagenet_sketch"], base)
    assert sketch.classes is None and sketch.images.labels.tolist() == [0, 1, 2]
    assert sketch.images.sample_ids[0] == f"imagenet-sketch/{IMAGENET_WNIDS[0]}/00000.JPEG"
    v2 = open_shift(specs["imagenet_v2_top_images"], base).images
    assert v2.labels.tolist() == [0, 0, 2, 2]  # folder "0" is class index 0, "2" is 2
    assert v2.sample_ids[0] == "imagenetv2-top-images/0/00000.jpeg"
    r = open_shift(specs["imagenet_r"], base)
    assert r.classes.tolist() == [0, 2] and r.images.labels.tolist() == [0, 2]
    assert specs["imagenet_r"].restricted and not specs["imagenet_r"].paired
    c = open_shift(specs["imagenet_c_fog_s2"], base).images
    from classwise.data.imagefolder import imagenet_val as read_val

    np.testing.assert_array_equal(c.sample_ids, read_val(val).sample_ids)  # paired: the clean ids
    np.testing.assert_array_equal(c.labels, read_val(val).labels)
    mine = open_shift(specs["mine"], base)
    assert mine.classes.tolist() == [2] and mine.images.sample_ids.tolist() == [f"mine/{IMAGENET_WNIDS[2]}/00000.jpg"]


@pytest.mark.skipif(not SHARED_IMAGENET_LABELS.is_dir(), reason="../shared/data/imagenet-labels is not present")
def test_the_wnid_order_is_imagenets_class_index() -> None:
    import json

    paths = json.loads((SHARED_IMAGENET_LABELS / "imagenet_val_set_index_to_filepath.json").read_text())
    labels = np.load(SHARED_IMAGENET_LABELS / "imagenet_val_set_original_labels.npy")
    wnid_of_label = {int(label): path.split("/")[-2] for path, label in zip(paths, labels)}
    assert tuple(wnid_of_label[i] for i in range(1000)) == imagenet1k_wnids()


# ------------------------------------------------------------------------------ class subsets


def test_restricting_to_a_class_subset_takes_the_argmax_among_its_classes() -> None:
    # 4 classes, subset {1, 3}. By hand: sample 0 (label 1) scores class 0 highest (wrong without
    # the restriction), but 1 beats 3 -> right. Sample 1 (label 3): 3 > 1 -> right. Sample 2
    # (label 3): 1 > 3 -> wrong. Sample 3 (label 1): 1 is its best overall -> right.
    logits = np.array([[9.0, 2.0, 0.0, 1.0], [0.0, 1.0, 9.0, 3.0], [0.0, 5.0, 0.0, 4.0], [0.0, 8.0, 0.0, 1.0]])
    labels = np.array([1, 3, 3, 1])
    sub, renumbered = restrict_to_classes(logits, labels, np.array([1, 3]))
    np.testing.assert_array_equal(sub, logits[:, [1, 3]])
    assert renumbered.tolist() == [0, 1, 1, 0]
    predicted = sub.argmax(axis=1)
    assert predicted.tolist() == [0, 1, 0, 0]
    recall = [np.mean(predicted[renumbered == k] == k) for k in (0, 1)]
    assert recall == [1.0, 0.5]  # class 1: 2 of 2; class 3: 1 of 2 -> WCA over the subset = 0.5
    from classwise.metrics.suite import evaluate

    metrics = evaluate(sub, renumbered, kind="logits").metrics
    assert metrics["WCA"].value == 0.5 and metrics["A"].value == 0.75
    assert np.mean(logits.argmax(axis=1) == labels) == 0.25  # unrestricted: 0 -> 0, 1 -> 2, 2 -> 1 wrong
    with pytest.raises(InputError, match="1 samples have labels outside the class subset"):
        restrict_to_classes(logits, np.array([1, 3, 2, 1]), np.array([1, 3]))
    with pytest.raises(InputError, match="strictly increasing"):
        restrict_to_classes(logits, labels, np.array([3, 1]))


def test_superclasses_follow_the_subset_columns() -> None:
    assert restrict_superclasses({"a": [0, 1], "b": [2], "c": [3, 5]}, np.array([1, 3, 5])) == {"a": [0], "c": [1, 2]}


# ------------------------------------------------------------------------------ downloads


def _jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.zeros((8, 8, 3), dtype=np.uint8)).save(buffer, format="JPEG")
    return buffer.getvalue()


def test_a_downloaded_family_is_fetched_checked_and_unpacked_once(tmp_path: Path) -> None:
    body = tar_bytes({f"imagenet-r/{IMAGENET_WNIDS[1]}/a.jpg": _jpeg(), "imagenet-r/README.txt": b"x"})
    served = tmp_path / "served.tar"
    served.write_bytes(body)
    sha = hashlib.sha256(body).hexdigest()
    entry = {"root": str(tmp_path / "data"), "downloads": {"imagenet-r.tar": {"url": served.as_uri(), "sha256": sha}}}
    records = prepare_shift_set(entry, dataset="imagenet", key="imagenet_r", network=NetworkOptions(backoff=0))
    assert records == [{"file": "imagenet-r.tar", "url": served.as_uri(), "sha256": sha, "unpacked": "imagenet-r"}]
    assert sorted(p.name for p in (tmp_path / "data" / "imagenet-r").iterdir()) == ["README.txt", IMAGENET_WNIDS[1]]
    assert not (tmp_path / "data" / "imagenet-r.tar").exists()
    served.unlink()  # a second run finds the folder and downloads nothing
    assert prepare_shift_set(entry, dataset="imagenet", key="imagenet_r")[0]["unpacked"] == "imagenet-r"
    served.write_bytes(body)
    bad = {"root": str(tmp_path / "other"), "downloads": {"imagenet-r.tar": {"url": served.as_uri(), "sha256": "0" * 64}}}
    with pytest.raises(InputError, match="checksum mismatch"):
        prepare_shift_set(bad, dataset="imagenet", key="imagenet_r", network=NetworkOptions(backoff=0))
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == []  # nothing half-written


def test_every_downloaded_family_names_a_published_sha256() -> None:
    for family in SHIFT_FAMILIES.values():
        archives = family.archives({})
        assert bool(archives) == family.downloaded, family.name
        for archive in archives:
            assert len(archive.sha256) == 64 and archive.url.startswith("https://"), family.name


def test_the_corruption_list_is_the_benchmarks_fifteen_then_four_extra() -> None:
    assert len(COMMON_CORRUPTIONS) == 19 == len(set(COMMON_CORRUPTIONS))
    assert COMMON_CORRUPTIONS[15:] == ("speckle_noise", "gaussian_blur", "spatter", "saturate")


def test_expanding_and_checking_shift_sets_imports_no_torch(tmp_path: Path) -> None:
    import subprocess
    import sys

    val = imagenet_val_fixture(tmp_path / "val", per_class=1)
    c_root = imagenet_c_fixture(tmp_path / "c", ["fog"], [1])
    datasets = {
        "imagenet": imagenet(
            val, imagenet_c={"root": str(c_root), "corruptions": ["fog"], "severities": [1]}, imagenet_v2={}, imagenet_r={}
        ),
        "c10": cifar10(cifar10c={}, cifar10_1={}),
    }
    code = (
        "import sys\n"
        "from classwise.data.shift_sets import expand_shift_sets\n"
        f"print(len(expand_shift_sets({datasets!r})['imagenet']))\n"
        "print(sorted(m for m in ('torch', 'timm', 'torchvision', 'albumentations') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["5", "[]"]  # fog_s1, three V2 variants, R


# ------------------------------------------------------------------------------ source: cifar10c


def test_an_old_cifar10c_dataset_reads_the_shift_set_s_images_and_says_so(tmp_path: Path) -> None:
    """A ``source: cifar10c`` dataset (kept for old configs) is read by the cifar10c family's
    reader: the same pixels, ids, labels and classes as the shift set's shift of that file; the
    plan's notes (results/README.md) name that shift."""
    import torch
    from torch import nn

    from classwise.data.sources import dataset_classes, open_split

    _cifar_c_copy(tmp_path / "CIFAR-10-C", ["fog"], n=4, n_classes=10)
    old = {"source": "cifar10c", "root": str(tmp_path), "corruption": "fog", "severity": 3}
    spec = expand_shift_sets({"b": cifar10(cifar10c={"root": str(tmp_path), "corruptions": ["fog"], "severities": [3]})})["b"][
        "cifar10c_fog_s3"
    ]
    as_dataset, as_shift = open_split(old, "test", name="c"), open_shift(spec, {}).images
    np.testing.assert_array_equal(as_dataset.images, as_shift.images)
    assert as_dataset.sample_ids.tolist() == as_shift.sample_ids.tolist() == [f"cifar10-test-{i:05d}" for i in range(4)]
    np.testing.assert_array_equal(as_dataset.labels, as_shift.labels)
    assert as_dataset.class_names == as_shift.class_names == CIFAR10_CLASSES
    assert dataset_classes("c", old) == len(CIFAR10_CLASSES)

    torch.save(nn.Linear(2, 10).state_dict(), tmp_path / "net.pt")
    config = {
        "datasets": {"c": old},
        "models": {
            "net": {
                "source": "checkpoint",
                "path": str(tmp_path / "net.pt"),
                "architecture": "x",
                "library": "timm",
                "num_classes": 10,
            }
        },
    }
    plan = check_runs(config, shifts=expand_shifts({}), shift_sets={"c": {}})
    assert [note for note in plan.notes if note.startswith("dataset c (source: cifar10c)")] == [
        "dataset c (source: cifar10c): CIFAR-10-C's fog at severity 3, read as the cifar10c shift set reads it; a CIFAR-10 "
        "dataset with shift_sets: {cifar10c: {}} evaluates the same images as its shift cifar10c_fog_s3, paired with its clean "
        "test images (docs/shifts.md)"
    ]


def test_the_cifar10c_dataset_and_shift_set_download_the_one_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One definition of CIFAR-10-C: the dataset source's download asks for the url and sha256 the
    shift set's download record holds, and both know the same 19 corruptions."""
    from classwise.data import torchvision_sets
    from classwise.data.shift_sets import archive_record

    asked = {}

    def download(url: str, path: Path, *, sha256: str, **options: object) -> Path:
        asked.update(url=url, sha256=sha256, file=path.name)
        raise InputError("no network in tests", field="url")

    monkeypatch.setattr(torchvision_sets, "download", download)
    with pytest.raises(InputError, match="no network"):
        torchvision_sets.prepare_cifar10c(tmp_path)
    record = archive_record({}, "cifar10c", "CIFAR-10-C.tar")
    assert asked == {"url": record["url"], "sha256": record["sha256"], "file": record["file"]}
    assert record["url"] == "https://zenodo.org/records/2535967/files/CIFAR-10-C.tar"
    assert sorted(torchvision_sets.CIFAR10C_CORRUPTIONS) == sorted(COMMON_CORRUPTIONS) and len(COMMON_CORRUPTIONS) == 19
