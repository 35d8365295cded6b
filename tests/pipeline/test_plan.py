"""The config resolved before any job (classwise.pipeline.plan): errors for what the user set
that cannot apply, adapted or skipped defaults for the rest."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from classwise.errors import InputError
from classwise.models.pickled import pickled_model_class
from classwise.pipeline.plan import (
    check_runs,
    dataset_classes,
    resolve_analyses,
    resolve_comparisons,
    resolve_robustness,
    resolve_views,
)
from classwise.shifts.spec import expand_shifts

ANALYSES = {
    "subset_tests": {"enabled": True, "shift": "clean"},
    "reference_tests": {"enabled": True, "reference": "clean"},
    "extrapolation": {"enabled": True, "shift": "clean", "k1": 5},
}


def _folder(root: Path, n_classes: int) -> str:
    for label in range(n_classes):
        (root / f"c{label}").mkdir(parents=True)
    (root / "Thumbs.db").write_bytes(b"\x00")  # a stray file is no class
    return str(root)


def _state_dict(tmp_path: Path) -> Path:
    path = tmp_path / "net.pt"
    if not path.exists():
        torch.save(nn.Linear(2, 3).state_dict(), path)
    return path


def _config(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "datasets": {
            "digits": {"source": "sklearn_digits"},
            "pets": {"source": "image_folder", "root": _folder(tmp_path / "pets", 3), "models": ["net"]},
        },
        "models": {
            "lin": {"source": "train", "train_on": "digits", "architecture": "linear"},
            "net": {
                "source": "checkpoint",
                "path": str(_state_dict(tmp_path)),
                "architecture": "x",
                "library": "timm",
                "num_classes": 3,
            },
        },
        "shifts": {"clean": True, "pgd_targeted": {"norm": "linf", "eps": 0.1, "targets": [1]}},
    }
    config["datasets"]["digits"]["models"] = ["lin"]
    config.update(overrides)
    return config


def _plan(config: dict[str, Any]):
    return check_runs(config, shifts=expand_shifts(config["shifts"]), source="my.yaml")


def test_class_counts_come_from_the_config_and_one_directory_listing(tmp_path: Path) -> None:
    assert dataset_classes("d", {"source": "sklearn_digits"}) == 10
    assert dataset_classes("f", {"source": "image_folder", "root": _folder(tmp_path / "f", 3)}) == 3
    assert dataset_classes("f", {"source": "image_folder", "root": "x", "classes": ["a", "b"]}) == 2
    assert dataset_classes("c", {"source": "torchvision", "name": "cifar100"}) == 100
    assert dataset_classes("i", {"source": "imagenet_val", "root": "x"}) is None  # only loading tells


def test_autoattack_rand_runs_on_three_classes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["shifts"]["autoattack"] = [{"norm": "l2", "eps": 0.5, "version": "rand"}]
    assert "autoattack_rand_l2_eps0.5" in _plan(config).shifts["pets"]


def test_each_dataset_runs_its_own_models(tmp_path: Path) -> None:
    plan = _plan(_config(tmp_path))
    assert plan.models == {"digits": ["lin"], "pets": ["net"]}
    assert plan.classes == {"digits": 10, "pets": 3}


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        (
            lambda c: c["datasets"]["pets"].pop("models"),
            "datasets.pets.models",
            "model 'lin' scores 10 classes, dataset 'pets' has 3",
        ),
        (lambda c: c["datasets"]["pets"].update(models=["nope"]), "datasets.pets.models", "names models ['nope']"),
        (lambda c: c["models"]["lin"].update(train_on="pets"), "models.lin.train_on", "evaluation set without a train split"),
        (
            lambda c: c["shifts"]["pgd_targeted"].update(targets=[3]),
            "shifts.pgd_targeted.targets",
            "target class 3 is not a class of dataset 'pets'",
        ),
        (
            lambda c: c["shifts"].update(autoattack=[{"norm": "linf", "eps": 0.1}]),
            "shifts.autoattack",
            "shift 'autoattack_linf_eps0.1': AutoAttack standard needs at least 4 classes",
        ),
        (
            lambda c: c["datasets"]["pets"].update(superclasses={"big": [0, 5]}),
            "datasets.pets.superclasses",
            "superclass 'big' names classes [5]",
        ),
    ],
)
def test_what_cannot_run_is_an_error_naming_the_field(tmp_path: Path, change, field: str, text: str) -> None:
    config = _config(tmp_path)
    change(config)
    with pytest.raises(InputError) as error:
        _plan(config)
    assert text in str(error.value)
    assert error.value.path == "my.yaml" and error.value.field == field


def test_a_digits_model_is_refused_on_images_of_another_shape(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["datasets"]["pets"]["models"] = ["lin"]
    config["datasets"]["pets"]["classes"] = [f"c{i}" for i in range(3)]
    config["datasets"]["pets"]["root"] = _folder(tmp_path / "ten", 10)
    config["datasets"]["pets"]["classes"] = [f"c{i}" for i in range(10)]
    with pytest.raises(InputError, match=r"trained on 'digits' images of shape \(1, 8, 8\)"):
        _plan(config)


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)


def test_a_whole_model_in_the_legacy_format_is_told_apart_from_a_state_dict(tmp_path: Path) -> None:
    """The zip format is tested in test_checkpoint_files.py; torch's legacy format is a chain of
    pickles, the object last."""
    model = _Net()
    torch.save(model, tmp_path / "module.pt", _use_new_zipfile_serialization=False)
    torch.save(model.state_dict(), tmp_path / "state.pt", _use_new_zipfile_serialization=False)
    assert pickled_model_class(tmp_path / "module.pt") is not None
    assert pickled_model_class(tmp_path / "state.pt") is None


def test_a_checkpoint_saved_as_a_module_stops_the_plan_saying_to_save_the_state_dict(tmp_path: Path) -> None:
    torch.save(_Net(), tmp_path / "module.pt")
    config = _config(tmp_path)
    config["models"]["net"] = {
        "source": "checkpoint",
        "path": str(tmp_path / "module.pt"),
        "architecture": "resnet18",
        "library": "torchvision",
    }
    with pytest.raises(
        InputError, match=r"whole model saved with torch.save\(model\) .*torch.save\(model.state_dict\(\), path\)"
    ) as error:
        _plan(config)
    assert error.value.field == "models.net.path"


def _resolved(tmp_path: Path, config: dict[str, Any], user_analyses: dict[str, Any]):
    shifts = expand_shifts(config["shifts"])
    user = copy.deepcopy(config)
    for dataset in config["datasets"].values():  # the schema's default
        for view in dataset.get("label_views", {}).values():
            view.setdefault("shifts", ["clean"])
    plan = _plan(config)
    resolve_views(plan, config, user, shifts=shifts, source="my.yaml")
    analyses = copy.deepcopy(ANALYSES)
    for section, values in user_analyses.items():
        analyses[section].update(values)
    return resolve_analyses(
        plan,
        analyses,
        user_analyses,
        dataset_shifts={d: plan.view_shifts[(d, "original")] for d in config["datasets"]},
        source="my.yaml",
    )


def test_a_default_k1_shrinks_below_the_class_count_and_says_so(tmp_path: Path) -> None:
    plan = _resolved(tmp_path, _config(tmp_path), {})
    assert plan.analyses["digits"]["extrapolation"]["k1"] == 5
    assert plan.analyses["pets"]["extrapolation"]["k1"] == 2
    assert "extrapolation on pets: k1 = 2 instead of the default 5, below its 3 classes" in plan.notes


def test_a_k1_the_user_set_is_kept_or_refused_never_changed(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match="expected 2 <= k1 < C, the 3 classes of dataset 'pets' that hold images; got 3"
    ) as error:
        _resolved(tmp_path, _config(tmp_path), {"extrapolation": {"k1": 3}})
    assert error.value.field == "analyses.extrapolation.k1"


def test_several_k1_and_a_k2_are_checked_against_each_dataset(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["datasets"] = {"digits": config["datasets"]["digits"]}  # 10 classes
    plan = _resolved(tmp_path, config, {"extrapolation": {"k1": [2, 3], "k2": 8}})
    assert plan.analyses["digits"]["extrapolation"]["k1"] == [2, 3]
    assert not any(note.startswith("extrapolation") for note in plan.notes)
    with pytest.raises(InputError, match=r"expected 2 <= k1 < k2 = 8; got \[2, 8\]") as error:
        _resolved(tmp_path, config, {"extrapolation": {"k1": [2, 8], "k2": 8}})
    assert error.value.field == "analyses.extrapolation.k1"
    with pytest.raises(
        InputError, match="expected k2 <= C, the 10 classes of dataset 'digits' that hold images; got 11"
    ) as error:
        _resolved(tmp_path, config, {"extrapolation": {"k1": [2], "k2": 11}})
    assert error.value.field == "analyses.extrapolation.k2"
    plan = _resolved(tmp_path, config, {"extrapolation": {"k2": 4}})  # the default k1 = 5 adapts
    assert plan.analyses["digits"]["extrapolation"]["k1"] == 3
    assert "extrapolation on digits: k1 = 3 instead of the default 5, below k2 = 4" in plan.notes


def test_two_classes_skip_extrapolation(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["datasets"]["pets"]["root"] = _folder(tmp_path / "two", 2)
    config["models"]["net"]["num_classes"] = 2
    plan = _resolved(tmp_path, config, {})
    assert plan.analyses["pets"]["extrapolation"] is None
    assert "extrapolation on pets: skipped, it needs 3 or more classes (it has 2)" in plan.notes


def test_without_clean_the_default_analyses_skip_and_label_views_move_to_the_shifts_there_are(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["shifts"] = {"clean": False, "corruptions": ["gaussian_noise"]}
    config["datasets"]["digits"]["label_views"] = {"files": {"kind": "cifar10_cleaned"}}
    plan = _resolved(tmp_path, config, {})
    assert all(section is None for section in plan.analyses["digits"].values())
    assert plan.view_shifts[("digits", "files")] == ["gaussian_noise_s3"]
    assert any(
        note.startswith("subset tests on digits: skipped, the shift 'clean' (the default) is not evaluated on it")
        for note in plan.notes
    )
    assert any(note.startswith("label view files of digits: evaluated on ['gaussian_noise_s3']") for note in plan.notes)


def test_confident_learning_without_clean_images_is_an_error(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["shifts"] = {"clean": False, "corruptions": ["gaussian_noise"]}
    config["datasets"]["digits"]["label_views"] = {"cl": {"kind": "confident_learning", "reference_model": "lin"}}
    with pytest.raises(InputError, match="reads the reference model's clean probabilities") as error:
        _resolved(tmp_path, config, {})
    assert error.value.field == "datasets.digits.label_views.cl.kind"


def _predictions_config(tmp_path: Path) -> dict[str, Any]:
    """A labels-only dataset evaluated by two models given by files: one with scores, one with
    hard predictions (the plan reads their headers and ids, never their values)."""
    (tmp_path / "labels.csv").write_text("sample_id,label\na,0\nb,1\nc,2\n")
    (tmp_path / "scores.csv").write_text("sample_id,score_0,score_1,score_2\nc,0,0,1\na,1,0,0\nb,0,1,0\n")
    (tmp_path / "hard.csv").write_text("sample_id,prediction\nb,1\nc,2\na,0\n")
    return {
        "datasets": {"ids": {"source": "labels", "path": str(tmp_path / "labels.csv")}},
        "models": {
            "soft": {"source": "predictions", "files": {"clean": str(tmp_path / "scores.csv")}},
            "hard": {"source": "predictions", "files": {"clean": str(tmp_path / "hard.csv")}},
        },
        "shifts": {"clean": True},
    }


def test_hard_predictions_are_found_before_any_job_and_skip_what_needs_scores(tmp_path: Path) -> None:
    plan = _resolved(tmp_path, _predictions_config(tmp_path), {})
    assert plan.classes["ids"] == 3 and plan.with_images == {"ids": False}
    assert plan.hard_predictions == {("ids", "hard", "clean")}
    assert plan.scored_models("ids", ["clean"]) == ["soft"]
    assert any(note.startswith("model hard on ids: hard predictions only on ['clean'] (no scores)") for note in plan.notes)
    assert plan.analyses["ids"]["subset_tests"] is None
    assert "subset tests on ids: skipped, they split the samples by image features and it has no images" in plan.notes
    assert plan.analysis_models[("ids", "extrapolation")] == ["soft"]
    assert "extrapolation on ids: run without ['hard'], which have hard predictions only on ['clean']" in plan.notes


def test_an_analysis_with_only_hard_predictions_to_read_is_skipped_with_a_note(tmp_path: Path) -> None:
    config = _predictions_config(tmp_path)
    del config["models"]["soft"]
    plan = _resolved(tmp_path, config, {})
    assert plan.analyses["ids"]["extrapolation"] is None
    assert "extrapolation on ids: skipped, its models have hard predictions only (no scores) on ['clean']" in plan.notes


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        (
            lambda c, t: c["models"].update(
                net={
                    "source": "checkpoint",
                    "path": str(_state_dict(t)),
                    "architecture": "x",
                    "library": "timm",
                    "num_classes": 3,
                }
            ),
            "datasets.ids.models",
            "model 'net' (source checkpoint) runs on images, and dataset 'ids' (source labels) has labels, no images",
        ),
        (
            lambda c, t: (
                c["datasets"].update(digits={"source": "sklearn_digits"}),
                c["models"].update(lin={"source": "train", "architecture": "linear", "train_on": "digits"}),
            ),
            "datasets.ids.models",
            "model 'lin' (source train) runs on images, and dataset 'ids' (source labels) has labels, no images",
        ),
        (
            lambda c, t: c["shifts"].update(corruptions=["gaussian_noise"]),
            "datasets.ids.shifts",
            "shift 'gaussian_noise_s3' (corruption) perturbs images, and dataset 'ids' (source labels) has labels",
        ),
        (
            lambda c, t: (  # a file for a shift of the config that is not evaluated on the dataset
                c["shifts"].update(corruptions=["gaussian_noise"]),
                c["datasets"]["ids"].update(shifts=["clean"]),
                c["models"]["soft"].update(files={"gaussian_noise_s3": str(t / "scores.csv")}),
            ),
            "models.soft.files.clean",
            "no file of model 'soft''s outputs on shift 'clean' of dataset 'ids'",
        ),
        (
            lambda c, t: c["models"]["soft"].update(files={"clean": str(t / "gone.csv")}),
            "models.soft.files.clean",
            "file does not exist",
        ),
    ],
)
def test_what_a_labels_only_dataset_cannot_do_is_an_error_naming_the_field(tmp_path: Path, change, field: str, text: str) -> None:
    config = _predictions_config(tmp_path)
    change(config, tmp_path)
    with pytest.raises(InputError) as error:
        _plan(config)
    assert error.value.field == field
    assert text in str(error.value) and "my.yaml" in str(error.value)


def test_confident_learning_refuses_a_reference_model_with_hard_predictions(tmp_path: Path) -> None:
    config = _predictions_config(tmp_path)
    config["datasets"]["ids"]["label_views"] = {"cl": {"kind": "confident_learning", "reference_model": "hard"}}
    with pytest.raises(InputError, match="whose clean outputs on dataset 'ids' are hard predictions") as error:
        _resolved(tmp_path, config, {})
    assert error.value.field == "datasets.ids.label_views.cl.reference_model"
    config["datasets"]["ids"]["label_views"]["cl"]["reference_model"] = "soft"
    assert _resolved(tmp_path, config, {}).view_shifts[("ids", "cl")] == ["clean"]


def test_a_model_given_by_files_gives_a_file_for_a_published_shift_set_too(tmp_path: Path) -> None:
    """Issue 28: a published shift set's outputs of a model given by files are read from its file,
    matched to the set's samples by id in the import job (before, the plan refused the pair)."""
    from classwise.shifts.spec import ShiftSpec

    config = _predictions_config(tmp_path)
    config["datasets"]["digits"] = {"source": "sklearn_digits", "models": ["soft"]}
    config["datasets"]["ids"]["models"] = ["soft"]
    shifts = {**expand_shifts(config["shifts"]), "v2": ShiftSpec(name="v2", kind="dataset", params={"set": "v2"})}
    with pytest.raises(InputError, match="no file of model 'soft''s outputs on shift 'v2' of dataset 'digits'") as error:
        check_runs(config, shifts=shifts, source="my.yaml", shift_sets={"digits": {"v2": shifts["v2"]}})
    assert error.value.field == "models.soft.files.v2"


def test_models_are_compared_on_datasets_of_two_or_more_with_the_bootstrap_on(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config["datasets"]["digits"]["models"] = ["lin", "lin2"]
    config["models"]["lin2"] = dict(config["models"]["lin"], seed=1)
    plan = resolve_comparisons(_plan(config), {"replicates": 10, "confidence": 0.95, "seed": 0})
    assert plan.compared == ["digits"]
    assert plan.notes == ["model comparison on pets: skipped, it evaluates one model (net)"]
    off = resolve_comparisons(_plan(config), {"replicates": 0, "confidence": 0.95, "seed": 0})
    assert off.compared == []
    assert off.notes == ["intervals, worst-class probabilities and model comparisons: off (metrics.bootstrap.replicates is 0)"]


# --- robustness (resolve_robustness) ------------------------------------------------------------

ROBUST_SHIFTS = {
    "clean": True,
    "corruptions": ["gaussian_noise"],
    "severities": [3],
    "pgd": [{"norm": "linf", "eps": 0.1}],
    "pgd_targeted": {"norm": "linf", "eps": 0.1, "targets": [1]},
    "transfer": [{"source": "lin", "attack": "pgd_linf_eps0.1"}],
}


def _robustness(shifts: dict[str, Any], targeted_models: list[str]):
    config = {
        "datasets": {"digits": {"source": "sklearn_digits"}},
        "models": {name: {"source": "train", "train_on": "digits", "architecture": name} for name in ("lin", "mlp")},
        "shifts": shifts,
    }
    expanded = expand_shifts(shifts)
    plan = _plan(config)
    resolve_views(plan, config, copy.deepcopy(config), shifts=expanded, source="my.yaml")
    runs = resolve_robustness(
        plan, {"targeted_models": targeted_models}, shifts=expanded, models=list(config["models"]), source="my.yaml"
    )
    return plan, runs["digits"]


def test_robustness_runs_each_analysis_over_the_shifts_it_reads() -> None:
    plan, runs = _robustness(ROBUST_SHIFTS, ["mlp"])
    attack, transfer = "pgd_linf_eps0.1", "transfer_lin_pgd_linf_eps0.1"
    assert runs.full_label_space == ["clean", "gaussian_noise_s3", attack, transfer]  # never the targeted attacks
    assert runs.attacked == [attack, transfer] and runs.adversarial == runs.robust_fairness == [attack]
    assert runs.corruptions == runs.transformed == ["gaussian_noise_s3"]
    assert runs.transfers == [("lin", "lin", transfer), ("lin", "mlp", transfer)]
    assert runs.targeted == ["pgd_targeted_1"] and runs.targeted_models == ["mlp"]
    assert (
        runs.classwise and runs.corruption_grid and runs.transformation_tests and runs.transfer_matrix and runs.targeted_attacks
    )
    # per label view: every shift of the view but clean, each class tested against clean
    assert runs.class_drops == {"original": ["gaussian_noise_s3", attack, transfer]}
    assert plan.notes == []


def test_without_clean_the_analyses_comparing_with_it_are_skipped_with_a_note() -> None:
    plan, runs = _robustness({**ROBUST_SHIFTS, "clean": False}, ["mlp"])
    assert runs.classwise and runs.corruption_grid  # these read no clean images
    assert runs.robust_fairness == [] and not runs.transformation_tests and not runs.transfer_matrix and not runs.targeted_attacks
    assert runs.class_drops == {}
    assert [note.split(":")[0] for note in plan.notes] == [
        "class-drop tests on digits (original labels)",
        "transformation tests on digits",
        "robust fairness on digits",
        "transfer matrix on digits",
        "targeted attacks on digits",
    ]
    assert all("clean is not evaluated on it" in note or "which is not evaluated on it" in note for note in plan.notes)


class _ClassSubset:
    """A shift whose logits score a class subset (ImageNet-R), otherwise ``spec``."""

    restricted = True

    def __init__(self, spec: Any) -> None:
        self._spec = spec

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spec, name)


def test_class_drops_run_per_label_view_over_its_shifts_of_every_class_and_say_why_not() -> None:
    """A view with clean and another shift scoring every class is tested; a class-subset shift
    (ImageNet-R) is left out as the class-wise analysis leaves it out; a view of label sets
    (ReaL) or without clean gets a note; a view of clean alone has nothing to test."""
    plan, _ = _robustness(ROBUST_SHIFTS, [])
    shifts = expand_shifts(ROBUST_SHIFTS)
    specs = {**shifts, "imagenet_r": _ClassSubset(shifts["clean"])}
    view_shifts = {
        ("digits", "original"): ["clean", "gaussian_noise_s3", "imagenet_r"],
        ("digits", "cleaned"): ["clean", "gaussian_noise_s3"],
        ("digits", "real"): ["clean", "gaussian_noise_s3"],
        ("digits", "no_clean"): ["gaussian_noise_s3"],
        ("digits", "clean_only"): ["clean"],
    }
    plan = replace(plan, view_shifts=view_shifts, label_set_views={("digits", "real")}, notes=[])
    runs = resolve_robustness(
        plan, {"targeted_models": [], "class_drops": {"enabled": True}}, shifts=specs, models=["lin", "mlp"]
    )
    assert runs["digits"].class_drops == {"original": ["gaussian_noise_s3"], "cleaned": ["gaussian_noise_s3"]}
    assert [note for note in plan.notes if note.startswith("class-drop")] == [
        "class-drop tests on digits (real labels): skipped, they need one true class per image",
        "class-drop tests on digits (no_clean labels): skipped, they compare each shift with clean, which is not evaluated on it",
    ]
    plan = replace(plan, notes=[])
    off = resolve_robustness(plan, {"targeted_models": [], "class_drops": {"enabled": False}}, shifts=specs, models=["lin"])
    assert off["digits"].class_drops == {}
    assert "class-drop tests: off (robustness.class_drops.enabled is false)" in plan.notes


def test_targeted_attacks_without_a_targeted_model_are_skipped_and_an_unknown_one_is_an_error() -> None:
    plan, runs = _robustness({"clean": True, "pgd_targeted": ROBUST_SHIFTS["pgd_targeted"]}, [])
    assert not runs.targeted_attacks and not runs.corruption_grid and runs.attacked == []
    assert plan.notes == ["targeted attacks on digits: skipped, no model of robustness.targeted_models is evaluated on it"]
    with pytest.raises(InputError, match=r"names models \['cnn'\]") as error:
        _robustness(ROBUST_SHIFTS, ["cnn"])
    assert error.value.field == "robustness.targeted_models"
