"""The dataset source registry (classwise.data.sources): one module per source, one dictionary,
and the workflow's questions answered without torch or decoding an image."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from classwise.data.sources import (
    DATASET_SOURCES,
    DOWNLOADED_SOURCES,
    TRAIN_SPLIT_SOURCES,
    check_dataset_paths,
    dataset_classes,
    dataset_image_shape,
    dataset_source,
    has_images,
    input_files,
    job_parameters,
    load_split,
    open_split,
    prepare_dataset,
)
from classwise.data.sources.base import DatasetSource
from classwise.errors import InputError

ENTRIES = {
    "sklearn_digits": {"source": "sklearn_digits"},
    "imagenet_val": {"source": "imagenet_val", "root": "no/such/dir", "label_space": "imagenet1k"},
    "image_folder": {"source": "image_folder", "root": "no/such/dir", "classes": ["a", "b", "c"]},
    "torchvision": {"source": "torchvision", "name": "cifar100", "root": "data/cifar"},
    "cifar10c": {"source": "cifar10c", "root": "data/c", "corruption": "fog", "severity": 3},
    "labels": {"source": "labels", "path": "no/such.csv", "class_names": ["a", "b"]},
}


def test_every_source_answers_the_whole_protocol() -> None:
    wanted = {name for name, _ in inspect.getmembers(DatasetSource) if not name.startswith("_")}
    wanted |= set(DatasetSource.__annotations__)
    for name, source in DATASET_SOURCES.items():
        assert source.name == name
        assert not sorted(m for m in wanted if not hasattr(source, m)), name
    assert set(ENTRIES) == set(DATASET_SOURCES)  # a new source gets a row here


def test_the_source_lists_the_workflow_reads() -> None:
    assert DOWNLOADED_SOURCES == ("torchvision", "cifar10c")
    assert TRAIN_SPLIT_SOURCES == ("sklearn_digits", "torchvision")


@pytest.mark.parametrize(
    ("source", "classes", "shape"),
    [
        ("sklearn_digits", 10, (1, 8, 8)),
        ("imagenet_val", 1000, None),
        ("image_folder", 3, None),
        ("torchvision", 100, (3, 32, 32)),
        ("cifar10c", 10, (3, 32, 32)),
        ("labels", 2, None),
    ],
)
def test_class_count_and_image_shape_from_the_config(source: str, classes: int, shape: tuple[int, ...] | None) -> None:
    assert dataset_classes("d", ENTRIES[source]) == classes
    assert dataset_image_shape(ENTRIES[source]) == shape


def test_an_image_folder_without_classes_counts_its_class_directories(tmp_path: Path) -> None:
    for name in ("cat", "dog", ".hidden"):
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert dataset_classes("d", {"source": "image_folder", "root": str(tmp_path)}) == 2


def test_job_parameters_are_sorted_and_the_digits_carry_their_split_convention() -> None:
    from classwise.data.digits import SPLIT_CONVENTION

    params = job_parameters({"source": "torchvision", "root": "r", "name": "cifar10"})
    assert list(params) == ["name", "root", "source"]
    assert job_parameters({"source": "sklearn_digits"})["split_convention"] == SPLIT_CONVENTION


def test_missing_keys_and_unknown_sources_name_the_field() -> None:
    with pytest.raises(InputError, match=r"field 'datasets.c.severity': is required for source 'cifar10c'"):
        dataset_source({"source": "cifar10c", "root": "r", "corruption": "fog"}, "c")
    with pytest.raises(InputError, match=r"field 'datasets.x.source': unknown source 'mnist'"):
        dataset_source({"source": "mnist"}, "x")


def test_evaluation_sets_have_no_train_split_and_user_sets_nothing_to_download() -> None:
    with pytest.raises(InputError, match="'imagenet_val' is an evaluation set without a train split"):
        open_split(ENTRIES["imagenet_val"], "train", name="inet")
    with pytest.raises(InputError, match=r"field 'datasets.f.source': source 'image_folder' has nothing to download"):
        prepare_dataset(ENTRIES["image_folder"], name="f")


def test_the_workflow_s_questions_import_no_torch() -> None:
    code = (
        "import sys\n"
        "from classwise.data.sources import dataset_source, dataset_classes, dataset_image_shape, job_parameters\n"
        f"entries = {ENTRIES!r}\n"
        "for name, entry in entries.items():\n"
        "    dataset_source(entry, name).downloaded\n"
        "    dataset_classes(name, entry); dataset_image_shape(entry); job_parameters(entry)\n"
        "print(sorted(m for m in ('torch', 'torchvision', 'PIL', 'albumentations') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _label_file(path: Path, rows: str) -> Path:
    path.write_text("sample_id,label,class_name\n" + rows, encoding="utf-8")
    return path


def test_a_label_file_gives_the_samples_and_the_classes_without_images(tmp_path: Path) -> None:
    path = _label_file(tmp_path / "labels.csv", "b,2,two\na,0,zero\nc,2,two\n")
    entry = {"source": "labels", "path": str(path)}
    assert not has_images(entry) and has_images(ENTRIES["sklearn_digits"])
    assert input_files(entry) == [str(path)] and input_files(ENTRIES["image_folder"]) == []
    assert dataset_classes("d", entry) == 3  # the largest label + 1: class 1 has no sample
    split = open_split(entry, "test", name="d")
    assert split.sample_ids.tolist() == ["b", "a", "c"]
    assert split.labels.tolist() == [2, 0, 2]
    assert split.class_names == ("zero", "1", "two")
    named = open_split({**entry, "class_names": ["zero", "one", "two", "three"]}, "test", name="d")
    assert named.class_names == ("zero", "one", "two", "three")
    assert dataset_classes("d", {**entry, "class_names": ["zero", "one", "two", "three"]}) == 4


@pytest.mark.parametrize(
    ("rows", "class_names", "expected"),
    [
        ("a,0,x\na,1,y\n", None, "field 'sample_id': duplicate sample ids ['a']"),
        ("a,0,x\nb,one,y\n", None, "field 'label': expected class indices (integers >= 0); rows 1 are not (e.g. 'one')"),
        ("a,0,x\nb,-1,y\n", None, "field 'label': expected class indices"),
        ("a,0,x\nb,0,y\n", None, "field 'class_name': label 0 has several names: ['x', 'y']"),
        ("a,0,x\nb,2,y\n", ["x", "y"], "field 'label': label 2 is not a class of the 2 class_names"),
        ("a,0,x\nb,1,z\n", ["x", "y"], "field 'class_name': names class 1 'z', the config's class_names 'y'"),
    ],
)
def test_a_bad_label_file_stops_the_run_naming_the_file_and_the_column(
    tmp_path: Path, rows: str, class_names: list[str] | None, expected: str
) -> None:
    path = _label_file(tmp_path / "labels.csv", rows)
    entry = {"source": "labels", "path": str(path), **({"class_names": class_names} if class_names else {})}
    with pytest.raises(InputError) as info:
        check_dataset_paths(entry, "d")
    assert expected in str(info.value) and str(path) in str(info.value)


def test_a_missing_label_file_names_the_config_key(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"field 'datasets.d.path': file does not exist"):
        check_dataset_paths({"source": "labels", "path": str(tmp_path / "nope.csv")}, "d")


def test_a_set_of_labels_has_no_images_to_load(tmp_path: Path) -> None:
    path = _label_file(tmp_path / "labels.csv", "a,0,x\n")
    with pytest.raises(InputError, match="holds labels, no images"):
        load_split({"source": "labels", "path": str(path)}, "test", name="d")
