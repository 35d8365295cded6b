"""The prototype ("marginal") classifier (classwise.models.prototypes, source: prototype):
against a hand computation, its marginality, its file, and the rule's step on a tiny CIFAR-100."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from cifar_fixtures import N_CLASSES, trust_cifar100_fixture, write_cifar100
from paths import REPO
from snakemake.iocontainers import Namedlist
from torch import nn

from classwise.errors import InputError
from classwise.models.prototypes import (
    FeatureExtractor,
    PrototypeClassifier,
    add_class_sums,
    class_prototypes,
    load_prototype_model,
    read_prototypes,
    strip_head,
)
from classwise.models.sources import parse_model_spec

D_IN, D_FEAT = 12, 5


def _tiny_backbone(seed: int = 0) -> nn.Sequential:
    """Flatten, a fixed linear layer and ReLU (the features), then a linear head."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(D_IN, D_FEAT), nn.ReLU(), nn.Linear(D_FEAT, 3))


def _hand_features(backbone: nn.Sequential, x: np.ndarray) -> np.ndarray:
    weight, bias = backbone[1].weight.detach().double().numpy(), backbone[1].bias.detach().double().numpy()
    return np.maximum(x.reshape(len(x), -1) @ weight.T + bias, 0.0)


def _fit(backbone: nn.Module, images: np.ndarray, labels: np.ndarray, n_classes: int) -> PrototypeClassifier:
    extractor = FeatureExtractor(strip_head(backbone))
    with torch.no_grad():
        features = extractor(torch.from_numpy(images)).double().numpy()
    sums, counts = np.zeros((n_classes, features.shape[1])), np.zeros(n_classes, dtype=np.int64)
    add_class_sums(sums, counts, features[:7], labels[:7])  # two batches, as the step adds them
    add_class_sums(sums, counts, features[7:], labels[7:])
    return PrototypeClassifier(extractor, torch.from_numpy(class_prototypes(sums, counts, [str(c) for c in range(n_classes)])))


def _data(seed: int, n: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3, 2, 2)).astype(np.float32), np.arange(n) % n_classes


def test_scores_are_cosine_similarities_to_the_class_means() -> None:
    train, labels = _data(0, 20, 4)
    test, _ = _data(1, 6, 4)
    backbone = _tiny_backbone()
    reference = _tiny_backbone()  # the same weights, kept with its head for the hand computation
    model = _fit(backbone, train, labels, 4)
    with torch.no_grad():
        scores = model(torch.from_numpy(test)).double().numpy()

    features = _hand_features(reference, train)
    expected = np.empty((6, 4))
    for j in range(4):
        mean = features[labels == j].mean(axis=0)
        for i, f in enumerate(_hand_features(reference, test)):
            expected[i, j] = f @ mean / (np.linalg.norm(f) * np.linalg.norm(mean))
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


def test_a_class_s_score_does_not_depend_on_the_other_classes() -> None:
    train, labels = _data(2, 40, 8)
    test, _ = _data(3, 10, 8)
    kept = np.array([6, 1, 3])  # a subset, in another order, relabelled 0..2
    mask = np.isin(labels, kept)
    relabel = {int(c): i for i, c in enumerate(kept)}
    full = _fit(_tiny_backbone(), train, labels, 8)
    part = _fit(_tiny_backbone(), train[mask], np.array([relabel[int(y)] for y in labels[mask]]), 3)
    with torch.no_grad():
        np.testing.assert_allclose(part(torch.from_numpy(test)), full(torch.from_numpy(test))[:, kept], rtol=1e-6, atol=1e-6)


def test_strip_head_keeps_the_features_of_timm_torchvision_and_plain_models() -> None:
    from classwise.models.prototypes import build_architecture

    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        assert build_architecture("torchvision", "resnet18")(x).shape == (2, 512)
        timm_model = build_architecture("timm", "test_resnet")
        assert timm_model(x).shape == (2, timm_model.num_features)
        assert strip_head(_tiny_backbone())(torch.rand(2, D_IN)).shape == (2, D_FEAT)
    with pytest.raises(InputError, match="no linear classifier head"):
        strip_head(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten()))


def test_a_class_without_train_images_is_named() -> None:
    with pytest.raises(InputError, match=r"1 class\(es\) have no train images, e.g. \['c'\]"):
        class_prototypes(np.ones((3, 2)), np.array([2, 1, 0]), ["a", "b", "c"])


@pytest.mark.parametrize(
    ("change", "field", "expected"),
    [
        ({"backbone": None}, "models.p.backbone", "expected a mapping"),
        ({"backbone": {"source": "robustbench", "name": "Standard"}}, "models.p.backbone.source", "checkpoint"),
        ({"backbone": {"source": "torchvision", "name": "resnet18"}}, "models.p.backbone.weights", "needs this key"),
        (
            {"backbone": {"source": "checkpoint", "path": "m.pt", "architecture": "cnn"}},
            "models.p.backbone.library",
            "timm or torchvision",
        ),
        ({"resize": 0}, "models.p.resize", "integer >= 1"),
        ({"epochs": 3}, "models.p.epochs", "unknown key"),
    ],
)
def test_bad_prototype_entries_name_the_field(change: dict[str, object], field: str, expected: str) -> None:
    entry = {"source": "prototype", "backbone": {"source": "timm", "name": "test_resnet"}, "train_on": "c", **change}
    with pytest.raises(InputError) as info:
        parse_model_spec(entry, key="p", config_path="config/x.yaml", check_names=False)
    assert f"field '{field}'" in str(info.value) and expected in str(info.value) and "config/x.yaml" in str(info.value)


def test_an_unknown_backbone_name_is_named_before_any_job() -> None:
    entry = {"source": "prototype", "backbone": {"source": "torchvision", "name": "resnet50", "weights": "IMAGENET9K"}}
    with pytest.raises(InputError, match=r"field 'models.p.backbone.weights'"):
        parse_model_spec(entry, key="p", check_names=True)


# ------------------------------------------------------------------- the rule's step and script
@pytest.fixture
def cifar100(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    trust_cifar100_fixture(monkeypatch)
    root = write_cifar100(tmp_path / "data", train_per_class=2, test_per_class=1)
    return {"source": "torchvision", "name": "cifar100", "root": str(root)}


@pytest.fixture
def backbone_file(tmp_path: Path) -> Path:
    """A checkpoint of timm's tiny test_resnet with a 7-class head (removed by the classifier)."""
    import timm

    torch.manual_seed(0)
    path = tmp_path / "backbone.pth"
    torch.save(timm.create_model("test_resnet", num_classes=7, pretrained=False).state_dict(), path)
    return path


def _entry(backbone_file: Path) -> dict[str, object]:
    backbone = {
        "source": "checkpoint",
        "path": str(backbone_file),
        "architecture": "test_resnet",
        "library": "timm",
        "num_classes": 7,
    }
    return {"source": "prototype", "backbone": backbone, "train_on": "cifar100", "resize": 40}


def _run_script(tmp_path: Path, entry: dict[str, object], dataset: dict[str, str], output: Path) -> None:
    """scripts/compute_prototypes.py with the `snakemake` object the rule gives it."""
    job = SimpleNamespace(
        rule="compute_prototypes",
        wildcards=SimpleNamespace(model="proto"),
        input=SimpleNamespace(
            data=[], get=lambda name, default=None: entry["backbone"]["path"] if name == "backbone" else default
        ),  # type: ignore[index]
        output=SimpleNamespace(prototypes=str(output)),
        params=Namedlist(
            fromdict={"model": entry, "dataset_name": "cifar100", "dataset": dataset, "batch_size": 64, "device": "cpu"}
        ),
        threads=1,
        log=[str(tmp_path / "logs" / f"{output.stem}.log")],
    )
    runpy.run_path(str(REPO / "scripts" / "compute_prototypes.py"), init_globals={"snakemake": job})


def test_the_rule_s_script_computes_the_prototypes_and_inference_scores_with_them(
    tmp_path: Path, cifar100: dict[str, str], backbone_file: Path
) -> None:
    import timm

    from classwise.data.sources import load_split
    from classwise.logits_io import load_scores
    from classwise.steps.models import InferenceSettings, InferTarget, infer_step

    entry = _entry(backbone_file)
    first, again = tmp_path / "a" / "proto.pt", tmp_path / "b" / "proto.pt"
    _run_script(tmp_path, entry, cifar100, first)
    _run_script(tmp_path, entry, cifar100, again)
    assert first.read_bytes() == again.read_bytes()  # same config, same bytes
    meta = read_prototypes(first)
    assert meta["library"] == "timm" and meta["architecture"] == "test_resnet" and meta["resize"] == 40
    assert meta["counts"] == [2] * N_CLASSES and meta["class_names"][3] == "class_03"

    logits = tmp_path / "logits.npz"
    clean = {"name": "clean", "kind": "clean", "params": {}}
    infer_step(
        model=InferTarget("proto", entry, first, logits),
        settings=InferenceSettings(dataset_name="cifar100", dataset=cifar100, shift=clean, seed=0, batch_size=32, device="cpu"),
    )
    scores = load_scores(logits)
    assert scores.scores.shape == (N_CLASSES, N_CLASSES)

    # independent reference: timm's own pre-logits features of the checkpoint, normalised and
    # resized by hand, class means by a loop, cosine by numpy
    reference = timm.create_model("test_resnet", num_classes=7, pretrained=False)
    reference.load_state_dict(torch.load(backbone_file, weights_only=True))
    reference.eval()
    data_config = parse_model_spec(entry["backbone"], check_names=False)  # type: ignore[arg-type]
    from classwise.models.zoo import resolve_data_config

    config = resolve_data_config(data_config)
    mean, std = torch.tensor(config.mean).view(1, 3, 1, 1), torch.tensor(config.std).view(1, 3, 1, 1)

    def features(images: np.ndarray) -> np.ndarray:
        x = torch.nn.functional.interpolate(torch.from_numpy(images), size=(40, 40), mode="bilinear", antialias=True)
        with torch.no_grad():
            return reference.forward_head(reference.forward_features((x - mean) / std), pre_logits=True).double().numpy()

    train, test = load_split(cifar100, "train", name="cifar100"), load_split(cifar100, "test", name="cifar100")
    train_features, test_features = features(train.images), features(test.images)
    means = np.stack([train_features[train.labels == j].mean(axis=0) for j in range(N_CLASSES)])
    expected = (test_features / np.linalg.norm(test_features, axis=1, keepdims=True)) @ (
        means / np.linalg.norm(means, axis=1, keepdims=True)
    ).T
    np.testing.assert_allclose(scores.scores, expected, rtol=1e-4, atol=1e-4)

    loaded, _, _ = load_prototype_model(first)
    assert not loaded.training


def test_a_foreign_file_is_named(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {"w": torch.zeros(1)}}, foreign)
    with pytest.raises(InputError, match="not a prototype file") as info:
        read_prototypes(foreign)
    assert str(foreign) in str(info.value)
    with pytest.raises(InputError, match="compute_prototypes"):
        read_prototypes(tmp_path / "missing.pt")


def test_a_downloaded_torchvision_backbone_is_read_through_its_manifest(tmp_path: Path, cifar100: dict[str, str]) -> None:
    """The shipped config's path: torchvision weights the download rule left (here a stand-in
    with its manifest), read sha256-checked; the prototypes are the class means of torchvision's
    own pooled features."""
    import torchvision

    from classwise.atomic import write_json
    from classwise.data.downloads import sha256_file
    from classwise.data.sources import load_split
    from classwise.models import manifest as manifests
    from classwise.models.prototypes import load_prototype_classifier
    from classwise.models.zoo import resolve_data_config
    from classwise.steps.models import FitSettings, prototypes_step

    weights = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
    dest = tmp_path / "resources" / "models" / "proto" / "backbone"
    path = dest / "checkpoints" / Path(weights.url).name
    path.parent.mkdir(parents=True)
    torch.manual_seed(5)
    state = torchvision.models.resnet18().state_dict()
    torch.save(state, path)
    backbone = {"source": "torchvision", "name": "resnet18", "weights": "IMAGENET1K_V1"}
    spec = parse_model_spec(backbone, check_names=False)
    resolved = f"resnet18:{type(weights).__name__}.{weights.name}"
    files = [{"path": f"checkpoints/{path.name}", "url": weights.url, "sha256": sha256_file(path), "size": 0, "check": "test"}]
    manifest = dest / manifests.MANIFEST_NAME
    write_json(
        manifest,
        {
            "format": manifests.MANIFEST_FORMAT,
            "version": manifests.MANIFEST_VERSION,
            "spec": spec.to_dict(),
            "resolved": resolved,
            "files": files,
            "data_config": resolve_data_config(spec).to_dict(),
        },
    )
    output = tmp_path / "proto.pt"
    entry = {"source": "prototype", "backbone": backbone, "train_on": "cifar100"}
    settings = FitSettings(
        model_name="proto", model=entry, dataset_name="cifar100", dataset=cifar100, batch_size=64, device="cpu"
    )
    prototypes_step(settings=settings, backbone_weights=manifest, prototypes_path=output, threads=1)
    assert read_prototypes(output)["backbone"]["resolved"] == resolved

    reference = torchvision.models.resnet18()
    reference.load_state_dict(state)
    reference.eval()
    pooled: list[torch.Tensor] = []
    reference.avgpool.register_forward_hook(lambda module, args, out: pooled.append(out.flatten(1)))
    config = resolve_data_config(spec)
    train = load_split(cifar100, "train", name="cifar100")
    mean, std = torch.tensor(config.mean).view(1, 3, 1, 1), torch.tensor(config.std).view(1, 3, 1, 1)
    with torch.no_grad():
        reference((torch.from_numpy(train.images) - mean) / std)
    features = pooled[0].double().numpy()
    means = np.stack([features[train.labels == j].mean(axis=0) for j in range(N_CLASSES)])
    classifier, _, _ = load_prototype_classifier(output)
    expected = means / np.linalg.norm(means, axis=1, keepdims=True)
    np.testing.assert_allclose(classifier.prototypes.numpy(), expected, rtol=1e-4, atol=1e-5)

    path.write_bytes(path.read_bytes() + b"\x00")  # weights changed after the download
    with pytest.raises(InputError, match="checksum mismatch"):
        prototypes_step(settings=settings, backbone_weights=manifest, prototypes_path=tmp_path / "again.pt")
    assert not (tmp_path / "again.pt").exists()


def test_the_cifar100_config_s_protocol_runs_on_the_prototype_classifier_s_logits(
    tmp_path: Path, cifar100: dict[str, str], backbone_file: Path
) -> None:
    """The steps of config/extrapolation_cifar100.yaml in order on the tiny CIFAR-100 (Snakemake
    itself only dry-runs it, tests/workflow/test_real_data_path.py: its jobs would need torchvision to
    accept the fixture's md5s): prototypes, inference, then the config's extrapolation settings
    with 2 repetitions and short CleaneX fits instead of 50 and 3,000."""
    import pandas as pd
    import yaml

    from classwise.steps.extrapolation import ExtrapolationSettings, extrapolation_step
    from classwise.steps.models import InferenceSettings, InferTarget, infer_step

    settings = yaml.safe_load((REPO / "config" / "extrapolation_cifar100.yaml").read_text())["analyses"]["extrapolation"]
    entry = _entry(backbone_file)
    _run_script(tmp_path, entry, cifar100, tmp_path / "proto.pt")
    logits = tmp_path / "clean.npz"
    clean = {"name": "clean", "kind": "clean", "params": {}}
    infer_step(
        model=InferTarget("proto", entry, tmp_path / "proto.pt", logits),
        settings=InferenceSettings(dataset_name="cifar100", dataset=cifar100, shift=clean, seed=0, batch_size=64, device="cpu"),
    )
    outputs = {
        name: tmp_path / f"extrapolation.{ext}"
        for name, ext in (("markdown_path", "md"), ("csv_path", "csv"), ("latex_path", "tex"))
    }
    extrapolation_step(
        logits_path=logits,
        label_view="original",
        view_labels_path=None,
        # the paper config's k1, k2 and methods; 2 repetitions and short fits
        settings=ExtrapolationSettings.from_config(
            settings,
            repetitions=2,
            cleanex_max_steps=20,
            cleanex_tolerance=0.01,
            cleanex_patience=100,
            ties="random",
            device="cpu",
            seed=0,
        ),
        title="t",
        caption="c",
        curves_path=tmp_path / "curves.csv",
        figure_path=tmp_path / "figure.png",
        **outputs,
    )
    table = pd.read_csv(outputs["csv_path"])
    assert table["k1"].tolist() == [10] * 4 + [20] * 4 and (table["k_max"] == 100).all()
    others = table[table["method"] != "cleanex"]
    assert others["ratio_to_cleanex_median"].gt(0).all() and others["cleanex_wins"].between(0, 1).all()
    assert (tmp_path / "figure.png").stat().st_size > 0
