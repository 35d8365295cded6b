"""Transfer attacks (issue #16): the shift's parsing, its images crafted on the source model, the
plan's check of the source, and the class-wise transfer matrix against a naive loop."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from classwise import tables
from classwise.data import ImageSet, load_digits_split
from classwise.errors import InputError
from classwise.inference.execution import Execution
from classwise.inference.stream import predict_logits, shifted_images, transferred_images
from classwise.logits_io import ScoresFile
from classwise.models import Hyperparameters, build_model, train_model
from classwise.pipeline.plan import check_runs
from classwise.robustness.transfer import transfer_matrix
from classwise.shifts.spec import ADVERSARIAL_KINDS, expand_shifts

PGD = {"norm": "linf", "eps": 0.1, "steps": 3, "step_size": 0.05, "random_start": True}
SHIFTS = expand_shifts(
    {
        "clean": True,
        "pgd": [PGD],
        "autoattack": [{"norm": "linf", "eps": 0.3}],
        "transfer": [
            {"source": "linear", "attack": "pgd_linf_eps0.1"},
            {"source": "linear", "attack": "autoattack_linf_eps0.3"},
            {"source": "mlp", "attack": {"norm": "l2", "eps": 0.5, "steps": 2, "per_class": 3}},
        ],
    }
)


def test_transfer_entries_expand_to_one_shift_per_source_and_attack() -> None:
    transfer = {name: spec for name, spec in SHIFTS.items() if spec.kind == "transfer"}
    assert list(transfer) == [
        "transfer_linear_pgd_linf_eps0.1",
        "transfer_linear_autoattack_linf_eps0.3",
        "transfer_mlp_pgd_l2_eps0.5",
    ]
    assert transfer["transfer_linear_pgd_linf_eps0.1"].attack == SHIFTS["pgd_linf_eps0.1"]
    assert transfer["transfer_mlp_pgd_l2_eps0.5"].per_class == 3  # the inline attack's subset
    assert "transfer" not in ADVERSARIAL_KINDS and not any(spec.adversarial for spec in transfer.values())


def test_pgd_autoattack_and_transfer_shifts_get_a_mean_confusion_figure() -> None:
    """Figure 4 (the confusion under an attack, mean over models) is drawn for the shifts whose
    images are untargeted adversarial examples, on the model itself or transferred."""
    shifts = expand_shifts(
        {
            "clean": True,
            "corruptions": ["gaussian_noise"],
            "severities": [3],
            "pgd": [PGD],
            "pgd_targeted": {**PGD, "targets": [1]},
            "autoattack": [{"norm": "linf", "eps": 0.3}],
            "transfer": [{"source": "linear", "attack": "autoattack_linf_eps0.3"}],
        }
    )
    assert [name for name, spec in shifts.items() if spec.adversarial_images] == [
        "pgd_linf_eps0.1",
        "autoattack_linf_eps0.3",
        "transfer_linear_autoattack_linf_eps0.3",
    ]
    assert {"clean", "gaussian_noise_s3", "pgd_targeted_1"} <= set(shifts)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"source": "linear", "attack": "pgd_linf_eps9"}, "shifts.transfer[0].attack"),
        ({"source": "linear"}, "shifts.transfer[0].attack"),
        ({"source": "linear", "attack": {"norm": "l1", "eps": 0.1}}, "shifts.transfer[0].attack.norm"),
        ({"source": "linear", "attack": "pgd_linf_eps0.1", "x": 1}, "shifts.transfer[0].x"),
    ],
)
def test_a_bad_transfer_entry_names_its_field(entry, field) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as info:
        expand_shifts({"pgd": [PGD], "transfer": [entry]})
    assert info.value.field == field


def _config(source: str, *, models_of_digits: list[str] | None = None) -> dict:  # type: ignore[type-arg]
    models = {name: {"source": "train", "train_on": "digits", "architecture": name} for name in ("linear", "mlp")}
    digits: dict = {"source": "sklearn_digits"}  # type: ignore[type-arg]
    if models_of_digits is not None:
        digits["models"] = models_of_digits
    return {
        "datasets": {"digits": digits},
        "models": models,
        "shifts": {"clean": True, "pgd": [PGD], "transfer": [{"source": source, "attack": "pgd_linf_eps0.1"}]},
    }


def test_a_transfer_from_an_unknown_model_stops_before_any_job() -> None:
    config = _config("resnet")
    with pytest.raises(InputError, match="not a model of the config") as info:
        check_runs(config, shifts=expand_shifts(config["shifts"]), source="my.yaml")
    assert (info.value.path, info.value.field) == ("my.yaml", "shifts.transfer[0].source")


def test_a_transfer_from_a_model_not_evaluated_on_the_dataset_stops_before_any_job() -> None:
    config = _config("mlp", models_of_digits=["linear"])
    with pytest.raises(InputError, match="not evaluated on dataset 'digits'") as info:
        check_runs(config, shifts=expand_shifts(config["shifts"]), source="my.yaml")
    assert info.value.field == "datasets.digits.shifts"


def test_a_transfer_between_known_models_plans() -> None:
    config = _config("linear")
    plan = check_runs(config, shifts=expand_shifts(config["shifts"]), source="my.yaml")
    assert "transfer_linear_pgd_linf_eps0.1" in plan.shifts["digits"]


@pytest.fixture(scope="module")
def models() -> tuple[torch.nn.Module, torch.nn.Module, ImageSet]:
    train, test = load_digits_split(test_fraction=0.3, seed=0)
    source = build_model("linear", n_classes=10, input_shape=(1, 8, 8), seed=0)
    target = build_model("mlp", n_classes=10, input_shape=(1, 8, 8), seed=0)
    train_model(source, train, hyperparameters=Hyperparameters(epochs=3, lr=0.01, batch_size=64, seed=0))
    train_model(target, train, hyperparameters=Hyperparameters(epochs=3, lr=0.01, batch_size=64, seed=0))
    return source, target, test.subset(np.arange(60))


@pytest.mark.parametrize("name", ["transfer_linear_pgd_linf_eps0.1", "transfer_linear_autoattack_linf_eps0.3"])
def test_the_transferred_images_are_the_source_s_own_attack_images(models, name) -> None:  # type: ignore[no-untyped-def]
    source, target, test = models
    spec = SHIFTS[name]
    test = test.subset(np.arange(20))  # AutoAttack's Square runs 5000 queries on any robust image
    crafted = transferred_images(source, test, spec, base_seed=3, batch_size=32, execution=Execution("cpu"))
    own = shifted_images(source, test, spec.attack, base_seed=3, batch_size=32, execution=Execution("cpu"))
    assert np.array_equal(crafted, own)
    # the source evaluated under its own transfer shift is its white-box attack, logit for logit
    np.testing.assert_array_equal(
        predict_logits(source, test, spec, base_seed=3, batch_size=32, execution=Execution("cpu"), source_model=source),
        predict_logits(source, test, spec.attack, base_seed=3, batch_size=32, execution=Execution("cpu")),
    )
    # the target sees exactly those images
    with torch.no_grad():
        expected = target(torch.from_numpy(own)).numpy()
    transferred = predict_logits(target, test, spec, base_seed=3, batch_size=32, execution=Execution("cpu"), source_model=source)
    np.testing.assert_allclose(transferred, expected, rtol=1e-5, atol=1e-5)
    again = predict_logits(target, test, spec, base_seed=3, batch_size=32, execution=Execution("cpu"), source_model=source)
    assert np.array_equal(transferred, again)  # deterministic


def test_a_transfer_without_its_source_model_is_an_error(models) -> None:  # type: ignore[no-untyped-def]
    _, target, test = models
    with pytest.raises(InputError, match="from model 'linear'"):
        predict_logits(target, test, SHIFTS["transfer_linear_pgd_linf_eps0.1"], base_seed=0, execution=Execution("cpu"))


def _scores(rng: np.random.Generator, n: int, classes: int, ids: np.ndarray, labels: np.ndarray) -> ScoresFile:
    return ScoresFile(
        scores=rng.normal(size=(n, classes)).astype(np.float32),
        labels=labels,
        kind="logits",
        sample_ids=ids,
        class_names=np.array([f"c{i}" for i in range(classes)]),
    )


def test_the_transfer_matrix_matches_a_naive_loop() -> None:
    rng = np.random.default_rng(0)
    n, classes = 200, 4
    ids = np.array([f"s{i}" for i in range(n)])
    labels = rng.integers(0, classes, size=n)
    clean = {m: _scores(rng, n, classes, ids, labels) for m in ("a", "b")}
    subset = rng.permutation(n)[:120]  # a per_class attack holds a subset, in another order
    transferred = {
        (s, "pgd", t): _scores(rng, len(subset), classes, ids[subset], labels[subset]) for s in ("a", "b") for t in ("a", "b")
    }
    cells = transfer_matrix(clean, transferred)
    for row in cells.itertuples(index=False):
        attacked = transferred[(row.source, row.attack, row.target)]
        hits, totals = [0] * classes, [0] * classes
        for scores, label in zip(attacked.scores, attacked.labels):
            totals[label] += 1
            hits[label] += int(max(range(classes), key=lambda c: scores[c]) == label)
        accuracies = [hits[c] / totals[c] for c in range(classes)]
        worst = min(range(classes), key=lambda c: (accuracies[c], c))
        clean_hits = sum(
            int(np.argmax(clean[row.target].scores[list(ids).index(sid)]) == label)
            for sid, label in zip(attacked.sample_ids, attacked.labels)
        )
        assert row.samples == len(subset)
        assert row.robust_accuracy == pytest.approx(sum(hits) / len(subset))
        assert row.clean_accuracy == pytest.approx(clean_hits / len(subset))
        assert (row.worst_class, row.worst_class_accuracy) == (f"c{worst}", pytest.approx(accuracies[worst]))
    display = tables.transfer_matrix_table(cells)
    assert list(display.index) == ["a / pgd", "b / pgd"] and list(display.columns) == ["a", "b"]
    first = cells.iloc[1]
    assert display.loc["a / pgd", "b"] == f"{first.robust_accuracy:.4f} ({first.worst_class}: {first.worst_class_accuracy:.4f})"
    pd.testing.assert_frame_equal(cells, transfer_matrix(clean, transferred))  # deterministic


def test_the_transfer_matrix_refuses_samples_missing_from_the_clean_outputs() -> None:
    rng = np.random.default_rng(1)
    ids, labels = np.array(["x", "y"]), np.array([0, 1])
    clean = {"a": _scores(rng, 2, 2, ids, labels)}
    with pytest.raises(InputError, match="not in the clean ones"):
        transfer_matrix(clean, {("a", "pgd", "a"): _scores(rng, 1, 2, np.array(["z"]), np.array([0]))})
