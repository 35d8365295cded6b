"""The model source registry (classwise.models.sources): one module per source, one dictionary,
and the workflow's questions answered without torch."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

from classwise.errors import InputError
from classwise.models.sources import MODEL_SOURCES, model_source, parse_model_spec
from classwise.models.sources.base import ModelSource
from classwise.models.spec import ModelSpec

ROOT = REPO
ENTRIES = {
    "timm": {"source": "timm", "name": "resnet18"},
    "torchvision": {"source": "torchvision", "name": "resnet18", "weights": "IMAGENET1K_V1"},
    "robustbench": {"source": "robustbench", "name": "Standard", "dataset": "cifar100"},
    "checkpoint": {"source": "checkpoint", "path": "ckpt.pt", "architecture": "cnn", "num_classes": 7},
    "train": {"source": "train", "architecture": "cnn", "train_on": "digits"},
    "finetune": {"source": "finetune", "architecture": "resnet18", "weights": None, "train_on": "digits"},
    "prototype": {"source": "prototype", "backbone": {"source": "timm", "name": "resnet18"}, "train_on": "digits"},
    "predictions": {"source": "predictions", "files": {"clean": "net_clean.npz"}},
}
DATASETS = {"digits": {"source": "sklearn_digits"}}


def _spec(entry: dict[str, object]) -> ModelSpec:
    """The entry as the workflow asks its source with it: parsed once (names not looked up)."""
    return parse_model_spec(entry, key="m", check_names=False)


def test_every_source_answers_the_whole_protocol() -> None:
    wanted = {name for name, _ in inspect.getmembers(ModelSource) if not name.startswith("_")}
    wanted |= set(ModelSource.__annotations__)
    for name, source in MODEL_SOURCES.items():
        assert source.name == name
        missing = sorted(m for m in wanted if not hasattr(source, m))
        assert not missing, (name, missing)
    assert set(ENTRIES) == set(MODEL_SOURCES)  # a new source gets a row here


def test_rules_that_make_models_exist() -> None:
    rules = (ROOT / "workflow" / "rules" / "models.smk").read_text(encoding="utf-8")
    made = {source.made_by for source in MODEL_SOURCES.values()} - {None}
    assert made == {"train_model", "finetune_model", "compute_prototypes"}
    for rule in made:
        assert f"rule {rule}:" in rules


def test_rules_that_cache_outputs_exist() -> None:
    rules = (ROOT / "workflow" / "rules" / "inference.smk").read_text(encoding="utf-8")
    cached = {source.cached_by for source in MODEL_SOURCES.values()}
    assert cached == {"infer", "import_predictions"}
    for rule in cached:
        assert f"rule {rule}:" in rules


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("timm", "res/models/m/manifest.json"),
        ("torchvision", "res/models/m/manifest.json"),
        ("robustbench", "res/models/m/manifest.json"),
        ("checkpoint", "ckpt.pt"),
        ("train", "out/models/m.pt"),
        ("finetune", "out/models/m.pt"),
        ("prototype", "out/models/m.pt"),
        ("predictions", None),
    ],
)
def test_the_file_inference_reads(source: str, expected: str | None) -> None:
    entry = ENTRIES[source]
    assert model_source(entry).weights_input("m", _spec(entry), models_dir="out/models", resources="res") == expected


def test_random_torchvision_weights_read_no_file() -> None:
    entry = {"source": "torchvision", "name": "resnet18", "weights": None}
    assert model_source(entry).weights_input("m", _spec(entry), models_dir="out", resources="res") is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("timm", None),
        ("torchvision", 1000),
        ("robustbench", 100),
        ("checkpoint", 7),
        ("train", 10),
        ("finetune", 10),
        ("prototype", 10),
        ("predictions", None),
    ],
)
def test_classes_scored(source: str, expected: int | None) -> None:
    entry = ENTRIES[source]
    assert model_source(entry).classes_scored(_spec(entry), DATASETS, {"digits": 10}) == expected


def test_an_unknown_source_names_the_field_and_every_source() -> None:
    with pytest.raises(
        InputError, match=r"field 'models.m.source': expected one of \['timm', .*'finetune', 'prototype', 'predictions'\]"
    ):
        parse_model_spec({"source": "keras"}, key="m", check_names=False)


def test_the_pipeline_s_models_are_not_downloaded(tmp_path: Path) -> None:
    from classwise.models.zoo import download_weights

    for name in ("train", "finetune", "prototype"):
        spec = parse_model_spec(ENTRIES[name], check_names=False)
        with pytest.raises(InputError, match=f"source '{name}' are trained by the pipeline"):
            download_weights(spec, tmp_path / name)
        assert not (tmp_path / name).exists()


@pytest.mark.parametrize(
    ("backbone", "expected"),
    [
        ({"source": "timm", "name": "resnet18"}, "res/models/m/backbone/manifest.json"),
        ({"source": "torchvision", "name": "resnet18", "weights": "IMAGENET1K_V1"}, "res/models/m/backbone/manifest.json"),
        ({"source": "torchvision", "name": "resnet18", "weights": None}, None),
        ({"source": "checkpoint", "path": "b.pth", "architecture": "resnet18", "library": "timm"}, "b.pth"),
    ],
)
def test_the_file_a_prototype_classifier_reads_its_backbone_from(backbone: dict[str, object], expected: str | None) -> None:
    from classwise.models.sources.prototype import backbone_input

    assert backbone_input("m", _spec({"source": "prototype", "backbone": backbone}), resources="res") == expected


def test_the_workflow_s_questions_import_no_model_library() -> None:
    code = (
        "import sys\n"
        "from classwise.models.sources import model_source, parse_model_spec\n"
        f"entries = {ENTRIES!r}; datasets = {DATASETS!r}\n"
        "for name, entry in entries.items():\n"
        "    source = model_source(entry)\n"
        "    spec = parse_model_spec(entry, key=name, check_names=False)\n"
        "    source.weights_input(name, spec, models_dir='out', resources='res')\n"
        "    source.classes_scored(spec, datasets, {'digits': 10})\n"
        "    source.check_fit(name, spec, 'digits', datasets, 'hint', 'config')\n"
        "    source.cached_by\n"
        "print(sorted(m for m in ('torch', 'timm', 'torchvision', 'albumentations') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def _predictions(files: object) -> dict[str, object]:
    return {"source": "predictions", "files": files}


@pytest.mark.parametrize(
    ("files", "field", "text"),
    [
        ({}, "models.m.files", "expected a mapping shift -> file"),
        ({"clean": 3}, "models.m.files.clean", "expected the path of a file"),
        ({"clean": "net.xlsx"}, "models.m.files.clean", "expected a .npz file (the logits-file format) or a .csv file"),
        ({"clean": "a.npz", "d": {"clean": "b.npz"}}, "models.m.files.clean", "expected every value to be a file"),
        ({"d": {"clean": "b.txt"}}, "models.m.files.d.clean", "expected a .npz file"),
    ],
)
def test_a_bad_predictions_entry_names_the_field(files: object, field: str, text: str) -> None:
    with pytest.raises(InputError, match=rf"field '{re.escape(field)}': {re.escape(text)}"):
        parse_model_spec(_predictions(files), key="m", check_names=False)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (
            "preds/{model}_{shfit}.csv",
            "unknown placeholder {shfit} in 'preds/{model}_{shfit}.csv'; known: {model}, {dataset}, {shift}",
        ),
        ("preds/{0}_{shift}.csv", "unknown placeholder {0} in"),
        ("preds/{shift:>8}.csv", "unknown placeholder {shift:>8} in"),
        ("preds/{model}.csv", "expected a pattern that names {shift} (one file per shift"),
        ("preds/{model_{shift}.csv", "expected a pattern whose placeholders are some of {model}, {dataset}, {shift}"),
        ("preds/{model}_{shift}.txt", "expected a .npz file"),
    ],
    ids=["misspelt", "positional", "format-spec", "no-shift", "lone-brace", "suffix"],
)
def test_a_bad_files_pattern_names_the_field_and_the_known_placeholders(pattern: str, text: str) -> None:
    with pytest.raises(InputError) as error:
        parse_model_spec(_predictions(pattern), key="m", config_path="my.yaml", check_names=False)
    assert error.value.path == "my.yaml" and error.value.field == "models.m.files"
    assert text in error.value.message


def test_a_files_pattern_gives_each_dataset_and_shift_its_file() -> None:
    from classwise.models.sources.predictions import outputs_file

    spec = _spec(_predictions("preds/{dataset}/{model}_{shift}.csv"))
    assert outputs_file(spec, "contrast", "contrast_c50", "s01") == "preds/contrast/s01_contrast_c50.csv"
    assert outputs_file(_spec(_predictions("{{raw}}/{shift}.npz")), "d", "clean", "m") == "{raw}/clean.npz"


def test_files_per_dataset_must_name_datasets_of_the_config() -> None:
    entry = _predictions({"mnist": {"clean": "a.npz"}})
    with pytest.raises(InputError, match=r"field 'models.m.files.mnist': names dataset 'mnist', expected one of \['digits'\]"):
        model_source(entry).check_run("m", _spec(entry), DATASETS, "config.yaml")


def test_whether_a_model_has_scores_is_read_from_each_file_s_header(tmp_path: Path) -> None:
    import numpy as np

    scores, hard = tmp_path / "s.npz", tmp_path / "h.csv"
    np.savez(scores, probs=np.full((2, 2), 0.5), sample_ids=np.array(["a", "b"]))
    hard.write_text("sample_id,prediction\na,0\nb,1\n")
    entry = _predictions({"digits": {"clean": str(scores), "noise": str(hard)}})
    source = model_source(entry)
    assert source.cached_by == "import_predictions"
    assert source.has_scores("m", _spec(entry), "digits", "clean", "c.yaml")
    assert not source.has_scores("m", _spec(entry), "digits", "noise", "c.yaml")
    with pytest.raises(
        InputError, match=r"c.yaml: field 'models.m.files.digits.pgd': no file of model 'm'.s outputs on shift 'pgd'"
    ):
        source.has_scores("m", _spec(entry), "digits", "pgd", "c.yaml")
    flat = _predictions({"clean": str(tmp_path / "gone.npz")})
    with pytest.raises(InputError, match=r"field 'models.m.files.clean': .*gone.npz: file does not exist"):
        source.has_scores("m", _spec(flat), "digits", "clean", "c.yaml")


def test_a_model_given_by_its_outputs_is_neither_downloaded_nor_run(tmp_path: Path) -> None:
    from classwise.models.zoo import download_weights

    entry = ENTRIES["predictions"]
    spec = parse_model_spec(entry, check_names=False)
    assert not model_source(entry).needs_download(spec)
    with pytest.raises(InputError, match="nothing is downloaded"):
        download_weights(spec, tmp_path / "m")
    with pytest.raises(InputError, match="rule import_predictions reads its outputs"):
        model_source(entry).inference_model("m", spec, None, "cpu")


def _config_with(models: dict[str, object]) -> dict[str, object]:
    import yaml

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text(encoding="utf-8"))
    config["models"] = models
    for dataset in config["datasets"].values():
        dataset.pop("models", None)
    return config


def _checked_before_any_job(config: dict[str, object], *, check_names: bool = True) -> None:
    """What the workflow checks of ``models:`` before any job: the schema, then each source
    (``check_models``; without the lookup of names in the model libraries when not ``check_names``)."""
    from classwise.pipeline.config_checks import check_models, check_schema

    check_schema(config, ROOT / "workflow" / "schemas" / "config.schema.yaml", source="c.yaml")
    if check_names:
        check_models(config, source="c.yaml")
        return
    models = config["models"]
    assert isinstance(models, dict)
    for name, entry in models.items():
        parse_model_spec(entry, key=name, config_path="c.yaml", check_names=False)


def test_a_new_source_is_its_module_and_one_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A source with a key of its own that no other source takes: the schema needs no edit.
    from classwise.models.sources.base import ZooSource
    from classwise.models.spec import ModelSpec, check_keys, common_fields

    class HubSource(ZooSource):
        name = "hub"

        def parse(self, given: dict[str, object], where: str, config_path: str | Path | None) -> ModelSpec:
            check_keys(self.name, given, frozenset({"name"}), frozenset({"revision"}), where, config_path)
            values = common_fields({k: v for k, v in given.items() if k != "revision"}, where, config_path)
            return ModelSpec(source=self.name, label=f"hub:{values['name']}", **values)

        def check_names(self, spec: ModelSpec) -> None:
            return None

    monkeypatch.setitem(MODEL_SOURCES, "hub", HubSource())
    _checked_before_any_job(_config_with({"m": {"source": "hub", "name": "net", "revision": "v2"}}))
    with pytest.raises(InputError, match=r"c.yaml: field 'models.m.revison': unknown key for source 'hub'"):
        _checked_before_any_job(_config_with({"m": {"source": "hub", "name": "net", "revison": "v2"}}))


@pytest.mark.parametrize("source", sorted(ENTRIES))
def test_each_source_names_a_missing_or_unknown_key_before_any_job(source: str) -> None:
    # The names are not looked up (ENTRIES' RobustBench name is not one of cifar100's): the keys are the subject.
    entry = dict(ENTRIES[source])
    _checked_before_any_job(_config_with({"m": entry}), check_names=False)
    required = next(key for key in entry if key != "source")
    missing = {key: value for key, value in entry.items() if key != required}
    with pytest.raises(InputError, match=rf"c.yaml: field 'models.m.{required}': source '{source}' needs this key"):
        _checked_before_any_job(_config_with({"m": missing}), check_names=False)
    with pytest.raises(InputError, match=rf"c.yaml: field 'models.m.epoch': unknown key for source '{source}'"):
        _checked_before_any_job(_config_with({"m": {**entry, "epoch": 3}}), check_names=False)


def test_an_unknown_source_stops_the_run_before_any_job() -> None:
    with pytest.raises(InputError, match=r"c.yaml: field 'models.m.source': expected one of \['timm', .*\], got 'keras'"):
        _checked_before_any_job(_config_with({"m": {"source": "keras", "name": "resnet"}}))


def test_a_robustbench_entry_without_dataset_scores_cifar10_s_classes() -> None:
    # The parsed entry's default dataset (cifar10) answers the class count at DAG build, so a
    # mismatch with the dataset evaluated stops the run before the inference job.
    entry = {"source": "robustbench", "name": "Standard"}
    assert _spec(entry).dataset == "cifar10"
    assert model_source(entry).classes_scored(_spec(entry), DATASETS, {"digits": 10}) == 10
