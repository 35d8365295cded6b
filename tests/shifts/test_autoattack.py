"""AutoAttack: the worst case over its attacks, agreement with torchattacks, invariants, bad input."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from torch import nn

from classwise.errors import InputError
from classwise.shifts.attack_settings import AutoAttackSettings, PgdSettings
from classwise.shifts.autoattack import autoattack, autoattack_components, target_classes
from classwise.shifts.pgd import pgd_attack

torchattacks = pytest.importorskip("torchattacks")

N_CLASSES = 4  # fewer than 10: APGD-T and FAB-T attack the 3 other classes (cheap, and the documented case)
EPS = 0.08
SEED = 3
LARGE = {"linf": 0.3, "l2": 3.0}  # APGD-CE fools every sample: the cheap case


@pytest.fixture(scope="module", autouse=True)
def one_thread():  # type: ignore[no-untyped-def]
    """A model this small runs fastest on one thread (torchattacks' loops are step by step)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def data() -> tuple[torch.Tensor, torch.Tensor]:
    """Four noisy class prototypes, four samples each."""
    generator = torch.Generator().manual_seed(0)
    centres = 0.3 + 0.4 * torch.rand(N_CLASSES, 1, 8, 8, generator=generator)
    y = torch.arange(16) % N_CLASSES
    x = (centres[y] + 0.15 * torch.randn(16, 1, 8, 8, generator=generator)).clamp(0, 1)
    return x, y


@pytest.fixture(scope="module")
def model(data) -> nn.Module:  # type: ignore[no-untyped-def]
    x, y = data
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, N_CLASSES))
    optimizer = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(200):
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
    return net.eval()


@pytest.fixture(scope="module")
def attacked(model, data) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """The whole ensemble at an eps where APGD-CE fools a few samples and the rest run every attack."""
    x, y = data
    return autoattack(model, x, y, attack=AutoAttackSettings("linf", EPS), seed=SEED)


def _correct(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(x).argmax(1) == y


def _reference(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, norm: str, eps: float, seed: int) -> torch.Tensor:
    """torchattacks' own AutoAttack, set to the reference's hyper-parameters as fra31/auto-attack's
    set_version does (100 iterations, min(9, C - 1) targets, Square without schedule rescaling)."""
    attack = torchattacks.AutoAttack(
        model, norm={"linf": "Linf", "l2": "L2"}[norm], eps=eps, version="standard", n_classes=N_CLASSES, seed=seed
    )
    for component in attack._autoattack.attacks:
        if hasattr(component, "steps"):
            component.steps = 100
        if hasattr(component, "n_target_classes"):
            component.n_target_classes = min(9, N_CLASSES - 1)
        if hasattr(component, "rescale_schedule"):
            component.rescale_schedule = False
    return attack(x, y)


def test_agrees_with_torchattacks_autoattack(model, data, attacked) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    theirs = _reference(model, x, y, norm="linf", eps=EPS, seed=SEED)
    robust = _correct(model, attacked, y)
    assert 0 < int(robust.sum()) < int(_correct(model, x, y).sum())  # the attack works, and not on every sample
    assert torch.equal(robust, _correct(model, theirs, y))
    # torchattacks' attacks return the clean image where they fail: same images, robust or not
    assert torch.equal(attacked, theirs)


def test_agrees_with_torchattacks_autoattack_l2(model, data) -> None:  # type: ignore[no-untyped-def]
    """At an eps where APGD-CE fools every image: APGD-T and Square, corrected at L2
    (test_autoattack_l2.py), never run."""
    x, y = data
    ours = autoattack(model, x, y, attack=AutoAttackSettings("l2", LARGE["l2"]), seed=SEED)
    assert torch.equal(ours, _reference(model, x, y, norm="l2", eps=LARGE["l2"], seed=SEED))


def test_never_more_robust_than_pgd(model, data, attacked) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    for steps in (10, 40):
        pgd = pgd_attack(
            model, x, y, attack=PgdSettings("linf", EPS, steps=steps, step_size=2.5 * EPS / steps, random_start=False)
        )
        assert int(_correct(model, attacked, y).sum()) <= int(_correct(model, pgd, y).sum())


def test_worst_case_over_the_attacks(model, data, attacked) -> None:  # type: ignore[no-untyped-def]
    """Every sample APGD-CE alone fools (it runs first, on every sample, with the same seed) and
    every sample misclassified clean stays fooled by the ensemble."""
    x, y = data
    components = autoattack_components(model, attack=AutoAttackSettings("linf", EPS, "standard"), n_classes=N_CLASSES, seed=SEED)
    first = dict(components)["apgd-ce"](x, y)
    fooled, fooled_first = ~_correct(model, attacked, y), ~_correct(model, first, y)
    assert int(fooled_first.sum()) > 0
    assert bool((fooled >= fooled_first).all()) and bool((fooled >= ~_correct(model, x, y)).all())


def test_stays_in_the_ball_and_in_range(model, data, attacked) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    assert float((attacked - x).abs().max()) <= EPS + 1e-6
    assert float(attacked.min()) >= 0.0 and float(attacked.max()) <= 1.0
    for norm, eps in LARGE.items():
        adv = autoattack(model, x, y, attack=AutoAttackSettings(norm, eps))
        assert not bool(_correct(model, adv, y).any())
        assert float(adv.min()) >= 0.0 and float(adv.max()) <= 1.0
        size = (adv - x).abs().flatten(1).amax(1) if norm == "linf" else (adv - x).flatten(1).norm(dim=1)
        assert float(size.max()) <= eps * (1 + 1e-6)


def test_eps_zero_changes_no_image(model, data) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    assert torch.equal(autoattack(model, x, y, attack=AutoAttackSettings("linf", 0.0)), x)
    assert torch.equal(autoattack(model, x, y, attack=AutoAttackSettings("l2", 0)), x)


def test_deterministic_and_leaves_the_global_generator_alone(model, data, attacked) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    again = autoattack(model, x, y, attack=AutoAttackSettings("linf", EPS), seed=SEED)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert again.numpy().tobytes() == attacked.numpy().tobytes()


class Constant(nn.Module):
    """Logits that do not depend on the image: a zero gradient everywhere."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.tensor([0.0, 2.0, 1.0, -1.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bias.expand(len(x), -1) + 0.0 * x.flatten(1).sum(1, keepdim=True)


def test_a_constant_model_keeps_every_prediction(data) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    x, y = x[1:3], y[1:3]  # classes 1 (the constant prediction: correct) and 2 (wrong)
    model = Constant()
    assert _correct(model, x, y).tolist() == [True, False]
    adv = autoattack(model, x, y, attack=AutoAttackSettings("linf", EPS))
    assert torch.equal(_correct(model, adv, y), _correct(model, x, y))
    assert torch.isfinite(adv).all() and float((adv - x).abs().max()) <= EPS + 1e-6


def test_progress_names_every_attack_and_modes_are_restored(model, data) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    model.train()
    log = io.StringIO()
    try:
        autoattack(model, x, y, attack=AutoAttackSettings("linf", LARGE["linf"]), progress=log)
        assert all(module.training for module in model.modules())
    finally:
        model.eval()
    lines = log.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].split(": ")[1] == "apgd-ce"  # every sample fooled: the ensemble stops
    assert all("attacked" in line and "robust" in line for line in lines)


def test_reference_hyper_parameters() -> None:
    """fra31/auto-attack's set_version('standard'): 100 iterations, 9 targets, 5000 queries."""
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 100))
    names = autoattack_components(net, attack=AutoAttackSettings("linf", 0.1, "standard"), n_classes=100, seed=0)
    attacks = dict(names)
    assert list(attacks) == ["apgd-ce", "apgd-t", "fab-t", "square"]
    assert attacks["apgd-ce"].steps == attacks["apgd-t"].steps == attacks["fab-t"].steps == 100
    assert attacks["apgd-t"].n_target_classes == attacks["fab-t"].n_target_classes == 9
    assert attacks["square"].n_queries == 5000 and attacks["square"].rescale_schedule is False
    rand = dict(autoattack_components(net, attack=AutoAttackSettings("l2", 0.1, "rand"), n_classes=100, seed=0))
    assert list(rand) == ["apgd-ce", "apgd-dlr"] and all(a.eot_iter == 20 for a in rand.values())
    assert [target_classes(c) for c in (2, 4, 10, 100)] == [1, 3, 9, 9]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"version": "plus2"}, "version"),
        ({"eps": -0.1}, "eps"),
        ({"eps": float("nan")}, "eps"),
        ({"norm": "l1"}, "norm"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
    ],
)
def test_bad_arguments_fail_before_any_work(data, kwargs, field) -> None:  # type: ignore[no-untyped-def]
    x, y = data

    class Exploding(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise AssertionError("the model ran")

    arguments = {"norm": "linf", "eps": 0.1, "seed": 0, **kwargs}
    seed = arguments.pop("seed")
    with pytest.raises(InputError) as error:
        autoattack(Exploding(), x, y, attack=AutoAttackSettings(**arguments), seed=seed)
    assert error.value.field == field


def test_bad_images_and_too_few_classes(model, data) -> None:  # type: ignore[no-untyped-def]
    x, y = data
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        autoattack(model, x + 1.0, y, attack=AutoAttackSettings("linf", 0.1))
    with pytest.raises(InputError, match="do not match"):
        autoattack(model, x, y[:-1], attack=AutoAttackSettings("linf", 0.1))
    three = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))
    with pytest.raises(InputError, match="at least 4 classes"):
        autoattack(three, x, y % 3, attack=AutoAttackSettings("linf", 0.1))
    with pytest.raises(InputError, match="labels must lie"):
        autoattack(model, x, y + N_CLASSES, attack=AutoAttackSettings("linf", 0.1))


def test_per_sample_budget_guard() -> None:
    from classwise.shifts.autoattack import _within_budget

    clean = torch.full((3, 1, 2, 2), 0.5)
    adv = clean.clone()
    adv[0] += 0.05  # inside
    adv[1] += 0.3  # outside: projected
    adv[2, 0, 0, 0] = float("nan")  # not finite: the clean pixel
    fixed = _within_budget(adv, clean, norm="linf", eps=0.1)
    assert torch.equal(fixed[0], adv[0])
    assert np.allclose(fixed[1].numpy(), 0.6)
    assert torch.equal(fixed[2], clean[2])


# ----------------------------------------------------------------------------- the shift and its subset


def test_per_class_subset_is_stratified_and_deterministic() -> None:
    from classwise.shifts.spec import stratified_subset

    labels = np.random.default_rng(0).integers(0, 5, size=200)
    labels[labels == 4] = 3  # class 4 absent, class 3 doubled
    labels[:2] = 4  # class 4: two samples, fewer than asked
    picked = stratified_subset(labels, 7, seed=11)
    counts = np.bincount(labels[picked], minlength=5)
    assert counts.tolist() == [7, 7, 7, 7, 2]
    assert np.all(np.diff(picked) > 0)  # in dataset order, no repeats
    assert np.array_equal(stratified_subset(labels, 7, seed=11), picked)
    assert not np.array_equal(stratified_subset(labels, 7, seed=12), picked)
    # a uniform draw within each class: over seeds, every sample of class 0 gets picked
    seen = np.zeros(len(labels), dtype=bool)
    for seed in range(60):
        seen[stratified_subset(labels, 7, seed=seed)] = True
    assert seen[labels == 0].all()


def test_autoattack_shifts_from_the_config() -> None:
    from classwise.shifts.spec import ADVERSARIAL_KINDS, expand_shifts

    shifts = expand_shifts(
        {
            "clean": True,
            "pgd": [{"norm": "linf", "eps": 0.1, "per_class": 3}],
            "autoattack": [{"norm": "linf", "eps": 0.1, "per_class": 2}, {"norm": "l2", "eps": 0.5, "version": "rand"}],
        }
    )
    assert list(shifts) == ["clean", "pgd_linf_eps0.1", "autoattack_linf_eps0.1", "autoattack_rand_l2_eps0.5"]
    assert shifts["autoattack_linf_eps0.1"].params == {"norm": "linf", "eps": 0.1, "version": "standard", "per_class": 2}
    assert shifts["pgd_linf_eps0.1"].per_class == 3 and shifts["autoattack_rand_l2_eps0.5"].per_class is None
    assert {name for name, spec in shifts.items() if spec.kind in ADVERSARIAL_KINDS} == set(list(shifts)[1:])
    # without per_class, a PGD shift's params are what they were before the option existed
    assert "per_class" not in expand_shifts({"pgd": [{"norm": "linf", "eps": 0.1}]})["pgd_linf_eps0.1"].params


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"norm": "linf", "eps": 0.1, "version": "plus2"}, "shifts.autoattack[0].version"),
        ({"norm": "l1", "eps": 0.1}, "shifts.autoattack[0].norm"),
        ({"norm": "linf", "eps": -1}, "shifts.autoattack[0].eps"),
        ({"norm": "linf", "eps": 0.1, "per_class": 0}, "shifts.autoattack[0].per_class"),
        ({"norm": "linf", "eps": 0.1, "steps": 5}, "shifts.autoattack[0].steps"),
        ({"eps": 0.1}, "shifts.autoattack[0].norm"),
    ],
)
def test_bad_autoattack_config_entries(entry, field) -> None:  # type: ignore[no-untyped-def]
    from classwise.shifts.spec import expand_shifts

    with pytest.raises(InputError) as error:
        expand_shifts({"autoattack": [entry]})
    assert error.value.field == field


def test_predict_logits_under_autoattack(model, data) -> None:  # type: ignore[no-untyped-def]
    """The inference loop attacks batch by batch with the shift's seed, and logs every attack."""
    from classwise.data.imageset import ImageSet
    from classwise.inference.execution import Execution
    from classwise.inference.stream import predict_logits
    from classwise.shifts.seeding import sample_seed
    from classwise.shifts.spec import autoattack_spec

    x, y = data
    images = ImageSet(images=x.numpy(), labels=y.numpy(), sample_ids=[f"s{i}" for i in range(len(y))], class_names=list("abcd"))
    spec = autoattack_spec(AutoAttackSettings("linf", LARGE["linf"]))
    log = io.StringIO()
    logits = predict_logits(model, images, spec, base_seed=5, batch_size=8, execution=Execution("cpu"), attack_log=log)
    seed = sample_seed(5, spec.name)
    expected = torch.cat(
        [
            autoattack(model, x[i : i + 8], y[i : i + 8], attack=AutoAttackSettings("linf", LARGE["linf"]), seed=seed)
            for i in (0, 8)
        ]
    )
    with torch.no_grad():
        assert np.array_equal(logits, model(expected).numpy())
    assert log.getvalue().count("apgd-ce") == 2  # one line per attack and batch


def test_robust_fairness_compares_a_per_class_attack_on_its_subset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The clean logits hold every sample, the attacked ones (per_class) a subset: the metrics are
    those of the clean rows of the attacked samples; without the sidecar's record, an error."""
    import json

    from classwise.logits_io import save_logits
    from classwise.metrics.robust_fairness import robust_fairness, robust_fairness_of_files

    rng = np.random.default_rng(0)
    labels = np.arange(12) % 3
    ids = np.array([f"s{i:02d}" for i in range(12)])
    clean, attacked = rng.normal(size=(12, 3)).astype(np.float32), rng.normal(size=(12, 3)).astype(np.float32)
    subset = np.array([0, 4, 5, 9])
    save_logits(
        tmp_path / "clean.npz", logits=clean, labels=labels, sample_ids=ids, class_names=np.array(list("abc")), metadata={}
    )
    metadata = {"attacked_subset": {"per_class": 1, "samples": 4, "of": 12}}
    save_logits(
        tmp_path / "aa.npz",
        logits=attacked[subset],
        labels=labels[subset],
        sample_ids=ids[subset],
        class_names=np.array(list("abc")),
        metadata=metadata,
    )
    result, _ = robust_fairness_of_files(tmp_path / "clean.npz", tmp_path / "aa.npz")
    expected = robust_fairness(clean[subset], attacked[subset], labels[subset])
    assert result.to_json() == expected.to_json() and result.robust_accuracy == expected.robust_accuracy
    (tmp_path / "aa.json").write_text(json.dumps({}))  # no record of a subset: the samples must match
    with pytest.raises(InputError, match="missing"):
        robust_fairness_of_files(tmp_path / "clean.npz", tmp_path / "aa.npz")


def test_the_benchmark_runs_end_to_end_at_toy_cost(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """make bench's row (the timings are make bench's): at an eps where APGD-CE fools every image,
    so that it costs a second; both sides give the same images."""
    import json

    from classwise.bench import autoattack as bench

    monkeypatch.setattr(bench, "EPS", 0.5)
    threads = torch.get_num_threads()
    try:
        bench.main(["--repeats", "1", "--batch-size", "demo_cnn_8x8=8", "--out", str(tmp_path / "aa.json")])
    finally:
        torch.set_num_threads(threads)
    (row,) = json.loads((tmp_path / "aa.json").read_text())["rows"]
    assert row["model"] == "demo_cnn_8x8" and row["batch_size"] == 8
    assert row["robust_accuracy"] == {"classwise": 0.0, "torchattacks": 0.0} and row["max_abs_pixel_difference"] == 0.0
    assert row["cpu_seconds_best"]["classwise"] > 0 and "wrapper_overhead_cpu_best" in row
