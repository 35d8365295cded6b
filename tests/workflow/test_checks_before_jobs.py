"""What the plan refuses before any job (classwise.pipeline.plan.check_runs, as the Snakefile calls
it at DAG-build time), which used to pass a dry run and stop inside a job or never: a
checkpoint's classifier head that does not fit num_classes, a predictions file whose ids or score
columns do not match its dataset, and a predictions file for a shift the config does not have.
Each message names the config, the field, the file and the offending values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from snakemake_runner import run_snakemake

from classwise.data.shift_sets import expand_shift_sets, merge_shifts
from classwise.data.stand_ins import image_folder_fixture
from classwise.errors import InputError
from classwise.models.sources import model_source, parse_model_spec
from classwise.models.state_dicts import check_fits
from classwise.pipeline.plan import check_runs
from classwise.shifts.spec import expand_shifts

# --------------------------------------------------------------------------- checkpoint heads


def _resnet18_weights(path: Path, classes: int) -> Path:
    import torchvision

    torch.save(torchvision.models.resnet18(num_classes=classes).state_dict(), path)
    return path


def _checkpoint_config(tmp_path: Path, weights: Path, **entry: Any) -> dict[str, Any]:
    pets = image_folder_fixture(tmp_path / "pets", ["cat", "dog", "eel", "owl"], per_class=1, size=(8, 8))
    model = {"source": "checkpoint", "path": str(weights), "architecture": "resnet18", "library": "torchvision", **entry}
    return {
        "datasets": {"pets": {"source": "image_folder", "root": str(pets)}},
        "models": {"net": model},
        "shifts": {"clean": True},
    }


def _plan(config: dict[str, Any]) -> Any:
    """The plan as the Snakefile makes it: the shifts of ``shifts:`` and of each dataset's shift sets."""
    shift_sets = expand_shift_sets(config["datasets"], source="my.yaml")
    shifts = merge_shifts(expand_shifts(config["shifts"]), shift_sets, source="my.yaml")
    return check_runs(config, shifts=shifts, source="my.yaml", shift_sets=shift_sets)


def _refusal(config: dict[str, Any]) -> InputError:
    with pytest.raises(InputError) as error:
        _plan(config)
    assert error.value.path == "my.yaml"
    return error.value


def test_a_head_of_other_classes_than_num_classes_is_refused_as_the_job_would_refuse_it(tmp_path: Path) -> None:
    import torchvision

    weights = _resnet18_weights(tmp_path / "pets.pt", classes=5)
    error = _refusal(_checkpoint_config(tmp_path, weights, num_classes=4))
    assert error.field == "models.net.num_classes"
    assert f"checkpoint {weights}: tensor 'fc.weight' has shape (5, 512), but num_classes 4 expects (4, 512)" in str(error)
    assert "set num_classes to 5" in str(error)
    # the infer job's own check, on the model it builds, names the same tensor and shapes
    with pytest.raises(InputError, match=r"parameter 'fc.weight' has shape \(5, 512\) but .* expects \(4, 512\)"):
        check_fits(torchvision.models.resnet18(num_classes=4), torch.load(weights), weights, what="resnet18")


def test_without_num_classes_the_head_is_compared_with_the_dataset(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    weights = tmp_path / "pets.safetensors"
    save_file({"conv1.weight": torch.zeros(8, 3, 3, 3), "fc.weight": torch.zeros(5, 8), "fc.bias": torch.zeros(5)}, str(weights))
    error = _refusal(_checkpoint_config(tmp_path, weights))
    assert error.field == "datasets.pets.models"
    assert f"model 'net': checkpoint {weights}: tensor 'fc.weight' has shape (5, 8), so the model scores 5 classes" in str(error)
    assert "dataset 'pets' has 4, which expects (4, 8)" in str(error)


def test_a_head_that_fits_or_cannot_be_told_apart_passes(tmp_path: Path) -> None:
    fits = tmp_path / "fits.pt"
    torch.save({"state_dict": {"module.fc.weight": torch.zeros(4, 8), "module.fc.bias": torch.zeros(4)}}, fits)
    config = _checkpoint_config(tmp_path, fits, num_classes=4)
    assert check_runs(config, shifts=expand_shifts(config["shifts"]), source="my.yaml").models == {"pets": ["net"]}
    unclear = tmp_path / "unclear.pt"  # two heads that disagree: the job decides
    torch.save({"fc.weight": torch.zeros(5, 8), "head.weight": torch.zeros(3, 8)}, unclear)
    config = _checkpoint_config(tmp_path / "again", unclear, num_classes=4)
    assert check_runs(config, shifts=expand_shifts(config["shifts"]), source="my.yaml").classes == {"pets": 4}


# --------------------------------------------------------------------------- predictions files

LABELS = "sample_id,label\na,0\nb,1\nc,2\nd,3\ne,4\n"
IDS = ["a", "b", "c", "d", "e"]


def _predictions_config(tmp_path: Path, files: dict[str, Any], **dataset: Any) -> dict[str, Any]:
    (tmp_path / "labels.csv").write_text(LABELS)
    return {
        "datasets": {"ids": {"source": "labels", "path": str(tmp_path / "labels.csv"), **dataset}},
        "models": {"net": {"source": "predictions", "files": files}},
        "shifts": {"clean": True},
    }


def _csv(path: Path, ids: list[str], classes: int = 5) -> str:
    rows = [",".join([i, *("1" if j == k % classes else "0" for j in range(classes))]) for k, i in enumerate(ids)]
    path.write_text("\n".join([",".join(["sample_id", *(f"score_{j}" for j in range(classes))]), *rows]) + "\n")
    return str(path)


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["e", "a", "b", "c"], "1 of the 5 samples of dataset 'ids' have no row in this file, e.g. ['d']"),
        ([*IDS, "x", "y"], "2 row(s) of this file name no sample of dataset 'ids', e.g. ['x', 'y']"),
        (["a", "b", "b", "c", "d", "e", "e"], "duplicate sample ids in this file: ['b', 'e'] (2 in all)"),
    ],
    ids=["missing", "extra", "repeated"],
)
def test_ids_that_do_not_match_a_labels_only_dataset_are_refused(tmp_path: Path, ids: list[str], expected: str) -> None:
    path = _csv(tmp_path / "net.csv", ids)
    error = _refusal(_predictions_config(tmp_path, {"clean": path}))
    assert error.field == "models.net.files.clean"
    assert f"my.yaml: field 'models.net.files.clean': {path}: field 'sample_id': {expected}" in str(error)


def test_the_ids_of_an_npz_and_of_an_image_folder(tmp_path: Path) -> None:
    np.savez(tmp_path / "net.npz", probs=np.full((4, 5), 0.2), sample_ids=np.array(["a", "b", "c", "z"]))
    error = _refusal(_predictions_config(tmp_path, {"ids": {"clean": str(tmp_path / "net.npz")}}))
    assert error.field == "models.net.files.ids.clean"
    assert "net.npz: field 'sample_id': 2 of the 5 samples of dataset 'ids' have no row in this file, e.g. ['d', 'e']" in str(
        error
    )
    # an image folder's ids (its files' relative paths) come from one listing, no image decoded
    pets = image_folder_fixture(tmp_path / "pets", ["cat", "dog"], per_class=2, size=(8, 8))
    listed = ["cat/00000.png", "cat/00001.png", "dog/00000.png"]  # dog/00001.png has no row
    config = {
        "datasets": {"pets": {"source": "image_folder", "root": str(pets)}},
        "models": {"net": {"source": "predictions", "files": {"clean": _csv(tmp_path / "pets.csv", listed, classes=2)}}},
        "shifts": {"clean": True},
    }
    assert "1 of the 4 samples of dataset 'pets' have no row in this file, e.g. ['dog/00001.png']" in str(_refusal(config))


def test_an_npz_of_four_score_columns_for_five_classes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "net.npz"
    np.savez(path, logits=np.zeros((5, 4), dtype=np.float32), sample_ids=np.array(IDS))
    error = _refusal(_predictions_config(tmp_path, {"clean": str(path)}, class_names=["v", "w", "x", "y", "z"]))
    assert error.field == "models.net.files.clean"
    assert f"{path}: field 'logits': has 4 score columns, dataset 'ids' has 5 classes" in str(error)


def test_score_columns_are_checked_where_the_ids_are_known_only_to_the_job(tmp_path: Path) -> None:
    """The digits' ids come from loading the set (the import job checks them); its 10 classes
    are known, so a CSV of 3 score columns stops the plan."""
    path = _csv(tmp_path / "digits.csv", ["digits-0001", "digits-0001"], classes=3)  # a repeated id: the job's to find
    config = {
        "datasets": {"digits": {"source": "sklearn_digits"}},
        "models": {"net": {"source": "predictions", "files": {"clean": path}}},
        "shifts": {"clean": True},
    }
    error = _refusal(config)
    assert f"{path}: field 'score_*': has 3 score columns, dataset 'digits' has 10 classes" in str(error)


@pytest.mark.parametrize(
    ("files", "field"),
    [
        ({"clean": "c100.csv", "c50": "c50.csv"}, "models.net.files.c50"),
        ({"ids": {"clean": "c100.csv", "c50": "c50.csv"}}, "models.net.files.ids.c50"),
    ],
)
def test_a_file_for_no_shift_of_the_config_is_refused(tmp_path: Path, files: dict[str, Any], field: str) -> None:
    config = _predictions_config(tmp_path, files)
    config["shifts"]["corruptions"] = ["gaussian_noise"]
    config["datasets"]["ids"]["shifts"] = ["clean"]
    error = _refusal(config)
    assert error.field == field
    assert "names shift 'c50', which is no shift of the config; expected one of ['clean', 'gaussian_noise_s3']" in str(error)


def test_shifts_are_those_the_plan_expands_so_a_dataset_s_shift_sets_count() -> None:
    entry = {"source": "predictions", "files": {"clean": "a.csv", "imagenet_r": "r.csv"}}
    datasets = {"ids": {"source": "labels", "path": "labels.csv"}}
    spec = parse_model_spec(entry, key="net", check_names=False)
    model_source(spec).check_run("net", spec, datasets, "my.yaml", shifts=["clean", "imagenet_r"])
    with pytest.raises(InputError, match=r"field 'models.net.files.imagenet_r': names shift 'imagenet_r'"):
        model_source(spec).check_run("net", spec, datasets, "my.yaml", shifts=["clean"])


@pytest.mark.workflow
def test_a_dry_run_stops_at_a_predictions_file_s_missing_id_and_writes_nothing(tmp_path: Path) -> None:
    config = _predictions_config(tmp_path, {"clean": _csv(tmp_path / "net.csv", ["a", "b", "c", "d"])})
    configfile = tmp_path / "my.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, configfile, "--dry-run")
    assert result.returncode != 0
    assert (
        f"{configfile}: field 'models.net.files.clean': {tmp_path / 'net.csv'}: field 'sample_id': 1 of the 5 samples "
        "of dataset 'ids' have no row in this file, e.g. ['e']"
    ) in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.workflow
@pytest.mark.parametrize(
    ("inference", "expected"), [({"precision": "fp64"}, "fp64"), ({"channels_last": "yes"}, "yes")], ids=["precision", "layout"]
)
def test_a_dry_run_stops_at_a_bad_precision_or_layout_and_writes_nothing(
    tmp_path: Path, inference: dict[str, Any], expected: str
) -> None:
    config = _predictions_config(tmp_path, {"clean": _csv(tmp_path / "net.csv", IDS)})
    config["inference"] = inference
    configfile = tmp_path / "my.yaml"
    configfile.write_text(yaml.safe_dump(config))
    result = run_snakemake(tmp_path, configfile, "--dry-run")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert f"{configfile}: field 'inference.{next(iter(inference))}': " in output and expected in output
    assert not (tmp_path / "results").exists()


# ------------------------------------------------- predictions on shifts (issue 28): bad input


def _labels_shift_config(tmp_path: Path, files: dict[str, Any], shift_labels: str = "sample_id,label\na,0\nb,1\nc,2\n") -> dict:
    """A labels-only dataset of five samples with one shift ``contrast_c50`` of its own labels file."""
    config = _predictions_config(tmp_path, files)
    (tmp_path / "c50.csv").write_text(shift_labels)
    config["datasets"]["ids"]["shift_sets"] = {"contrast": {"family": "labels", "files": {"c50": str(tmp_path / "c50.csv")}}}
    return config


def _hard(path: Path, rows: list[tuple[str, str]]) -> str:
    path.write_text("sample_id,prediction\n" + "".join(f"{i},{p}\n" for i, p in rows))
    return str(path)


def test_a_predicted_class_name_that_is_no_class_name_is_refused_with_its_rows(tmp_path: Path) -> None:
    path = _hard(tmp_path / "net.csv", [("a", "v"), ("b", "w"), ("c", "owl"), ("d", "y"), ("e", "cat")])
    config = _predictions_config(tmp_path, {"clean": path}, class_names=["v", "w", "x", "y", "z"])
    error = _refusal(config)
    assert error.field == "models.net.files.clean"
    assert (
        f"{path}: field 'prediction': 'owl' is no class of dataset 'ids': unknown classes in lines 4, 6 (sample ids ['c', 'e'])"
        in str(error)
    )


def test_a_predicted_class_beyond_the_class_count_is_refused_with_its_rows(tmp_path: Path) -> None:
    path = _hard(tmp_path / "net.csv", [("a", "0"), ("b", "9"), ("c", "2"), ("d", "3"), ("e", "4")])
    error = _refusal(_predictions_config(tmp_path, {"clean": path}))
    assert f"{path}: field 'prediction': names class 9, but dataset 'ids' has 5 classes" in str(error)
    assert "line 3 (sample ids ['b'])" in str(error)


def test_a_shift_s_file_of_another_dataset_s_ids_names_the_shift_and_the_rows(tmp_path: Path) -> None:
    clean = _csv(tmp_path / "net.csv", IDS)
    other = _hard(tmp_path / "net_c50.csv", [("a", "0"), ("mnist-1", "1"), ("mnist-2", "2")])
    error = _refusal(_labels_shift_config(tmp_path, {"clean": clean, "contrast_c50": other}))
    assert error.field == "models.net.files.contrast_c50"
    assert f"{other}: field 'sample_id': 2 of the 3 samples of shift 'contrast_c50' of dataset 'ids' have no row" in str(error)
    assert (
        "2 row(s) of this file name no sample of shift 'contrast_c50' of dataset 'ids', e.g. ['mnist-1', 'mnist-2'] (lines 3, 4)"
        in (str(error))
    )
    # the shift's own samples are its labels file's: the same ids as the clean file are refused there too
    error = _refusal(_labels_shift_config(tmp_path, {"clean": clean, "contrast_c50": _csv(tmp_path / "all.csv", IDS)}))
    assert "2 row(s) of this file name no sample of shift 'contrast_c50' of dataset 'ids', e.g. ['d', 'e']" in str(error)


def test_a_file_for_a_labels_shift_the_config_does_not_declare_is_refused(tmp_path: Path) -> None:
    clean = _csv(tmp_path / "net.csv", IDS)
    error = _refusal(_labels_shift_config(tmp_path, {"clean": clean, "contrast_c70": clean}))
    assert error.field == "models.net.files.contrast_c70"
    assert "names shift 'contrast_c70', which is no shift of the config; expected one of ['clean', 'contrast_c50']" in str(error)


def test_a_shift_s_labels_file_naming_another_class_or_relabelling_a_paired_sample_is_refused(tmp_path: Path) -> None:
    clean = _csv(tmp_path / "net.csv", IDS)
    names = "sample_id,label,class_name\na,0,v\nb,1,dog\n"
    config = _labels_shift_config(tmp_path, {"clean": clean}, shift_labels=names)
    config["datasets"]["ids"]["class_names"] = ["v", "w", "x", "y", "z"]
    with pytest.raises(InputError) as error:
        _plan(config)
    assert error.value.path == str(tmp_path / "c50.csv") and error.value.field == "class_name"
    assert "names class 1 'dog', dataset 'ids' 'w' (rows 1)" in str(error.value)
    config = _labels_shift_config(tmp_path, {"clean": clean}, shift_labels="sample_id,label\na,0\nb,3\n")
    with pytest.raises(InputError, match=r"labels differ from those of the dataset's labels file .* on 1 shared sample ids"):
        _plan(config)


def test_a_timm_file_of_another_class_count_is_refused(tmp_path: Path) -> None:
    top1 = tmp_path / "timm_top1.csv"
    top1.write_text("filename,index,prob\na,0,0.9\nb,1,0.8\nc,7,0.7\nd,3,0.9\ne,4,0.9\n")
    error = _refusal(_predictions_config(tmp_path, {"clean": str(top1)}))
    assert error.field == "models.net.files.clean"
    assert f"{top1}: field 'index*': names class 7, but dataset 'ids' has 5 classes (indices 0 to 4" in str(error)
    assert "line 4 (sample ids ['c'])" in str(error)
    logits = tmp_path / "timm_logits.csv"
    logits.write_text(
        "filename,"
        + ",".join(f"logit_{j}" for j in range(10))
        + "\n"
        + "".join(f"{i}," + ",".join(["0.1"] * 10) + "\n" for i in IDS)
    )
    error = _refusal(_predictions_config(tmp_path, {"clean": str(logits)}))
    assert f"{logits}: field 'logit* / prob*': has 10 score columns, dataset 'ids' has 5 classes" in str(error)


def test_the_model_s_abstention_token_is_no_unknown_class_name(tmp_path: Path) -> None:
    path = _hard(tmp_path / "net.csv", [("a", "v"), ("b", "?"), ("c", ""), ("d", "-1"), ("e", "z")])
    config = _predictions_config(tmp_path, {"clean": path}, class_names=["v", "w", "x", "y", "z"])
    config["models"]["net"]["abstain"] = "?"
    assert _plan(config).models["ids"] == ["net"]
    del config["models"]["net"]["abstain"]
    assert "'?' is no class of dataset 'ids': unknown classes in line 3 (sample ids ['b'])" in str(_refusal(config))


# ------------------------------------ files of predictions by one pattern, names as digits (issue 42)

STUDY_SHIFTS = {"clean": IDS, "contrast_c50": IDS[:3], "contrast_c30": IDS[:3]}


def _study_config(tmp_path: Path, files: Any) -> dict[str, Any]:
    """Two observers (``s01`` hard predictions, ``s02`` scores) on a labels-only dataset and its
    two conditions, each model's files given by ``files``; the files under ``tmp_path/ids/``."""
    config = _predictions_config(tmp_path, files)
    for condition in ("c50", "c30"):
        (tmp_path / f"{condition}.csv").write_text("sample_id,label\na,0\nb,1\nc,2\n")
    config["datasets"]["ids"]["shift_sets"] = {
        "contrast": {"family": "labels", "files": {c: str(tmp_path / f"{c}.csv") for c in ("c50", "c30")}}
    }
    config["models"] = {model: {"source": "predictions", "files": files} for model in ("s01", "s02")}
    (tmp_path / "ids").mkdir(exist_ok=True)
    for shift, ids in STUDY_SHIFTS.items():
        _hard(tmp_path / "ids" / f"s01_{shift}.csv", [(i, "0") for i in ids])
        _csv(tmp_path / "ids" / f"s02_{shift}.csv", ids)
    return config


def test_a_files_pattern_plans_what_the_hand_written_mapping_plans(tmp_path: Path) -> None:
    from classwise.models.sources.predictions import outputs_file

    pattern = _study_config(tmp_path, str(tmp_path / "{dataset}" / "{model}_{shift}.csv"))
    mapping = _study_config(tmp_path, None)
    for model, entry in mapping["models"].items():
        entry["files"] = {shift: str(tmp_path / "ids" / f"{model}_{shift}.csv") for shift in STUDY_SHIFTS}
    planned, written = _plan(pattern), _plan(mapping)
    assert planned == written  # the same models, shifts, hard predictions and notes
    assert planned.shifts["ids"] == list(STUDY_SHIFTS) and planned.hard_predictions == {("ids", "s01", s) for s in STUDY_SHIFTS}
    for model in ("s01", "s02"):
        by_pattern = parse_model_spec(pattern["models"][model], key=model, check_names=False)
        by_mapping = parse_model_spec(mapping["models"][model], key=model, check_names=False)
        for shift in STUDY_SHIFTS:
            assert outputs_file(by_pattern, "ids", shift, model) == outputs_file(by_mapping, "ids", shift, model)


def test_every_file_a_pattern_misses_is_named_with_its_shift(tmp_path: Path) -> None:
    config = _study_config(tmp_path, str(tmp_path / "ids" / "{model}_{shift}.csv"))
    (tmp_path / "ids" / "s02_clean.csv").unlink()
    (tmp_path / "ids" / "s02_contrast_c30.csv").unlink()
    error = _refusal(config)
    assert error.field == "models.s02.files"
    assert (
        f"2 of the 3 files the pattern '{tmp_path}/ids/{{model}}_{{shift}}.csv' gives on dataset 'ids' do not exist "
        f"(relative paths are relative to the working directory): {tmp_path}/ids/s02_clean.csv (shift 'clean'); "
        f"{tmp_path}/ids/s02_contrast_c30.csv (shift 'contrast_c30')"
    ) in str(error)


def test_a_file_a_pattern_names_says_which_shift_it_was_expanded_for(tmp_path: Path) -> None:
    config = _study_config(tmp_path, str(tmp_path / "ids" / "{model}_{shift}.csv"))
    _csv(tmp_path / "ids" / "s02_contrast_c50.csv", ["a", "b", "x"])
    error = _refusal(config)
    assert error.field == "models.s02.files"
    assert "field 'sample_id': 1 of the 3 samples of shift 'contrast_c50' of dataset 'ids' have no row" in str(error)
    assert str(error).endswith(
        f"(the file the pattern '{tmp_path}/ids/{{model}}_{{shift}}.csv' gives for shift 'contrast_c50' of dataset 'ids')"
    )


@pytest.mark.workflow
def test_a_dry_run_names_the_file_a_pattern_misses_on_a_condition_named_by_digits(tmp_path: Path) -> None:
    """The config as YAML writes it: conditions 1 and 2 (integers to YAML) are shifts sev_1 and
    sev_2, the pattern is expanded over them, and the file it misses stops the run before any job."""
    (tmp_path / "labels.csv").write_text(LABELS)
    (tmp_path / "sev1.csv").write_text("sample_id,label\na,0\nb,1\nc,2\n")
    (tmp_path / "sev2.csv").write_text("sample_id,label\na,0\nb,1\nd,3\n")
    (tmp_path / "preds").mkdir()
    _csv(tmp_path / "preds" / "net_clean.csv", IDS)
    _csv(tmp_path / "preds" / "net_sev_1.csv", ["a", "b", "c"])
    configfile = tmp_path / "my.yaml"
    configfile.write_text(
        "datasets:\n"
        "  ids:\n"
        "    source: labels\n"
        "    path: labels.csv\n"
        "    shift_sets:\n"
        "      sev: {family: labels, files: {1: sev1.csv, 2: sev2.csv}, severities: {1: 1, 2: 2}}\n"
        "models:\n"
        '  net: {source: predictions, files: "preds/{model}_{shift}.csv"}\n'
        "shifts: {clean: true}\n"
    )
    result = run_snakemake(tmp_path, configfile, "--dry-run")
    assert result.returncode != 0
    assert (
        f"{configfile}: field 'models.net.files': 1 of the 3 files the pattern 'preds/{{model}}_{{shift}}.csv' gives on "
        "dataset 'ids' do not exist (relative paths are relative to the working directory): preds/net_sev_2.csv (shift 'sev_2')"
    ) in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()
