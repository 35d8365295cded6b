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
    dataset_classes,
    dataset_image_shape,
    dataset_source,
    job_parameters,
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
