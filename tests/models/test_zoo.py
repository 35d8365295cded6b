"""Real-model loading (timm, torchvision, RobustBench, checkpoints) through the real download path.

Weights are random models made here and served from a local HTTP server on 127.0.0.1, so the
download code (redirects, published checksums, retries, atomic writes) runs as it would against
the Hugging Face Hub or download.pytorch.org; RobustBench is replaced by a stand-in module.
"""

from __future__ import annotations

import enum
import hashlib
import http.server
import io
import json
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
import torchvision
from PIL import Image
from safetensors.torch import save as safetensors_save
from torch import nn

from classwise.errors import InputError
from classwise.models.architectures import build_model
from classwise.models.checkpoint import save_checkpoint
from classwise.models.data_config import DataConfig, preprocess_batch, preprocess_image
from classwise.models.fetch import hash_prefix_from_url
from classwise.models.wrapper import PixelSpaceModel
from classwise.models.zoo import (
    ModelSpec,
    NetworkOptions,
    download_weights,
    load_model,
    needs_download,
    parse_model_spec,
    read_manifest,
    resolve_data_config,
)

TINY_TIMM = "test_resnet.r160_in1k"
"""timm's own test model (0.5 M parameters) with a registered pretrained_cfg on the Hub."""
FAST = NetworkOptions(retries=2, backoff=0.01)


class LocalServer:
    """Files served from memory on 127.0.0.1, with Hub-like behaviour on demand: a ``resolve``
    path may redirect (302) to a CDN path and publish ``X-Linked-Etag``; a path may fail with
    503 a given number of times first."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.etags: dict[str, str] = {}
        self.redirects: dict[str, str] = {}
        self.failures: dict[str, int] = {}
        self.requests: list[tuple[str, str]] = []
        self.url = ""

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, body: bool) -> None:
                server.requests.append((self.command, self.path))
                if body and server.failures.get(self.path, 0) > 0:
                    server.failures[self.path] -= 1
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path in server.redirects:
                    self.send_response(302)
                    self.send_header("Location", server.redirects[self.path])
                    if self.path in server.etags:
                        self.send_header("X-Linked-Etag", f'"{server.etags[self.path]}"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = server.files.get(self.path)
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                if self.path in server.etags:
                    self.send_header("ETag", f'"{server.etags[self.path]}"')
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._answer(body=True)

            def do_HEAD(self) -> None:  # noqa: N802
                self._answer(body=False)

        return Handler


@pytest.fixture()
def server() -> Iterator[LocalServer]:
    state = LocalServer()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), state.handler())
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _torch_bytes(state: dict[str, torch.Tensor]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def _tiny_timm(seed: int, **kwargs: object) -> nn.Module:
    torch.manual_seed(seed)
    return timm.create_model("test_resnet", pretrained=False, **kwargs).eval()


def _serve_on_hub(server: LocalServer, name: str, filename: str, data: bytes, *, etag: bool) -> str:
    """Serve ``data`` the way the Hub does: ``resolve`` redirects to a CDN path."""
    resolve = f"/timm/{name}/resolve/main/{filename}"
    cdn = f"/cdn/{_sha256(data)}"
    server.redirects[resolve] = cdn
    server.files[cdn] = data
    if etag:
        server.etags[resolve] = _sha256(data)
    return cdn


# --- timm ---------------------------------------------------------------------------------


def test_timm_download_then_load_offline(server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _tiny_timm(0)
    data = safetensors_save({k: v.contiguous() for k, v in reference.state_dict().items()})
    cdn = _serve_on_hub(server, TINY_TIMM, "model.safetensors", data, etag=True)
    server.failures[cdn] = 1  # one transient 503: the retry must recover
    monkeypatch.setenv("HF_ENDPOINT", server.url)

    spec = parse_model_spec({"source": "timm", "name": TINY_TIMM}, key="tiny")
    assert needs_download(spec)
    dest = tmp_path / "resources" / "models" / "tiny"
    manifest_path = download_weights(spec, dest, network=FAST)

    manifest = read_manifest(manifest_path)
    (record,) = manifest["files"]
    assert record["path"] == "model.safetensors"
    assert record["sha256"] == _sha256(data) and record["check"] == "hub-etag"
    assert (dest / "model.safetensors").read_bytes() == data
    assert [p.name for p in dest.iterdir() if p.name.startswith(".")] == []  # no temporaries left
    assert server.requests.count(("GET", cdn)) == 2  # failed once, then succeeded

    # the data config comes from timm's pretrained_cfg, and is recorded in the manifest
    expected = timm.data.resolve_data_config(pretrained_cfg=timm.models.get_pretrained_cfg(TINY_TIMM).to_dict())
    assert manifest["data_config"]["input_size"] == list(expected["input_size"]) == [3, 160, 160]
    assert manifest["data_config"]["crop_pct"] == expected["crop_pct"] == 0.95
    assert manifest["data_config"]["interpolation"] == expected["interpolation"]
    assert manifest["data_config"]["mean"] == list(expected["mean"])
    assert manifest["data_config"]["resize_size"] == [168, 168]  # floor(160 / 0.95)
    assert manifest["resolved"] == TINY_TIMM

    server.files.clear()  # loading must not touch the network
    server.redirects.clear()
    model, config = load_model(spec, dest)
    assert isinstance(model, PixelSpaceModel) and not model.training
    assert config.to_dict() == manifest["data_config"]
    x = torch.rand(2, 3, 64, 64)
    mean = torch.tensor(expected["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(expected["std"]).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference((x - mean) / std))

    # a changed file is caught by the manifest's digest
    (dest / "model.safetensors").write_bytes(data[:-8] + b"\0" * 8)
    with pytest.raises(InputError, match="checksum mismatch") as info:
        load_model(spec, manifest_path)
    assert "model.safetensors" in str(info.value)


def test_timm_hub_falls_back_to_pytorch_model_bin(server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _tiny_timm(1)
    data = _torch_bytes(reference.state_dict())
    _serve_on_hub(server, TINY_TIMM, "pytorch_model.bin", data, etag=False)  # no model.safetensors
    monkeypatch.setenv("HF_ENDPOINT", server.url + "/")
    spec = parse_model_spec({"source": "timm", "name": TINY_TIMM})
    manifest = read_manifest(download_weights(spec, tmp_path / "m", network=FAST))
    (record,) = manifest["files"]
    assert record["path"] == "pytorch_model.bin" and record["check"] == "recorded"
    assert record["sha256"] == _sha256(data)
    assert ("HEAD", f"/timm/{TINY_TIMM}/resolve/main/model.safetensors") in server.requests
    model, _ = load_model(spec, tmp_path / "m" / "manifest.json")
    x = torch.rand(1, 3, 48, 48)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference((x - 0.5) / 0.5))


def test_timm_url_override_and_checksum_mismatch(server: LocalServer, tmp_path: Path) -> None:
    data = safetensors_save({k: v.contiguous() for k, v in _tiny_timm(2).state_dict().items()})
    server.files["/mirror/weights.safetensors"] = data
    entry = {"source": "timm", "name": TINY_TIMM, "url": f"{server.url}/mirror/weights.safetensors"}

    wrong = parse_model_spec({**entry, "sha256": "0" * 64})
    with pytest.raises(InputError) as info:
        download_weights(wrong, tmp_path / "bad", network=FAST)
    message = str(info.value)
    assert "checksum mismatch" in message and "0" * 64 in message and _sha256(data) in message
    assert "weights.safetensors" in message
    assert not (tmp_path / "bad" / "weights.safetensors").exists()
    assert not (tmp_path / "bad" / "manifest.json").exists()

    right = parse_model_spec({**entry, "sha256": _sha256(data).upper()})
    manifest = read_manifest(download_weights(right, tmp_path / "good", network=FAST))
    assert manifest["files"][0]["check"] == "config"
    # the manifest belongs to its config entry
    with pytest.raises(InputError, match="download again"):
        load_model(parse_model_spec({"source": "timm", "name": TINY_TIMM}), tmp_path / "good")


def test_timm_weights_of_the_wrong_shape_fail_at_download(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = safetensors_save({k: v.contiguous() for k, v in _tiny_timm(3, num_classes=10).state_dict().items()})
    _serve_on_hub(server, TINY_TIMM, "model.safetensors", data, etag=True)
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    spec = parse_model_spec({"source": "timm", "name": TINY_TIMM})
    with pytest.raises(InputError) as info:
        download_weights(spec, tmp_path / "m", network=FAST)
    assert info.value.field == "state_dict.fc.weight"
    assert "model.safetensors" in str(info.value) and "(10, " in str(info.value) and "(1000, " in str(info.value)
    assert not (tmp_path / "m" / "model.safetensors").exists()
    assert not (tmp_path / "m" / "manifest.json").exists()


# --- torchvision ----------------------------------------------------------------------------


def test_torchvision_random_weights_need_no_download() -> None:
    spec = parse_model_spec({"source": "torchvision", "name": "squeezenet1_1", "weights": None})
    assert not needs_download(spec)
    model, config = load_model(spec)
    assert config.input_size == (3, 224, 224) and config.resize_size == (256, 256)
    assert config.crop_pct == pytest.approx(0.875) and config.interpolation == "bilinear"
    assert config.mean == pytest.approx((0.485, 0.456, 0.406))
    assert "SqueezeNet1_1_Weights.IMAGENET1K_V1" in config.origin
    with torch.no_grad():
        assert model(torch.rand(1, 3, 64, 64)).shape == (1, 1000)


def test_torchvision_download_checks_the_hash_in_the_file_name(server: LocalServer, tmp_path: Path) -> None:
    weights = torchvision.models.SqueezeNet1_1_Weights.IMAGENET1K_V1
    filename = Path(weights.url).name
    assert hash_prefix_from_url(weights.url) == "b8a52dc0"
    torch.manual_seed(0)
    reference = torchvision.models.squeezenet1_1().eval()
    data = _torch_bytes(reference.state_dict())
    server.files[f"/mirror/{filename}"] = data
    entry = {
        "source": "torchvision",
        "name": "squeezenet1_1",
        "weights": "IMAGENET1K_V1",
        "url": f"{server.url}/mirror/{filename}",
    }

    # a file that is not the official one fails the prefix check: both digests named, nothing kept
    with pytest.raises(InputError) as info:
        download_weights(parse_model_spec(entry), tmp_path / "tv", network=FAST)
    assert "b8a52dc0" in str(info.value) and _sha256(data) in str(info.value) and filename in str(info.value)
    assert not (tmp_path / "tv" / "checkpoints" / filename).exists()

    # re-hosted weights with their own full digest: downloaded, then loaded by torchvision's builder
    spec = parse_model_spec({**entry, "sha256": _sha256(data)})
    manifest = read_manifest(download_weights(spec, tmp_path / "tv", network=FAST))
    assert manifest["files"][0]["path"] == f"checkpoints/{filename}"
    assert manifest["resolved"] == "squeezenet1_1:SqueezeNet1_1_Weights.IMAGENET1K_V1"
    hub_before = torch.hub.get_dir()
    model, config = load_model(spec, tmp_path / "tv")
    assert torch.hub.get_dir() == hub_before
    assert config == DataConfig.from_dict(manifest["data_config"])
    x = torch.rand(1, 3, 64, 64)
    mean = torch.tensor(weights.transforms().mean).view(1, 3, 1, 1)
    std = torch.tensor(weights.transforms().std).view(1, 3, 1, 1)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference((x - mean) / std))


# --- names, checkpoints, parsing ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "field", "text"),
    [
        ({"source": "timm", "name": "resnet5"}, "models.m.name", "close matches"),
        ({"source": "timm", "name": "test_resnet.no_such_tag"}, "models.m.name", "test_resnet.r160_in1k"),
        ({"source": "torchvision", "name": "resnet5", "weights": None}, "models.m.name", "resnet50"),
        ({"source": "torchvision", "name": "resnet18", "weights": "IMAGENET9K"}, "models.m.weights", "IMAGENET1K_V1"),
        ({"source": "torchvision", "name": "resnet18"}, "models.m.weights", "needs this key"),
        ({"source": "timm", "name": TINY_TIMM, "weights": "x"}, "models.m.weights", "unknown key"),
        ({"source": "timm", "name": TINY_TIMM, "sha256": "abc"}, "models.m.sha256", "64 hexadecimal"),
        ({"source": "hub", "name": "x"}, "models.m.source", "timm"),
        ({"source": "robustbench", "name": "X", "threat_model": "Linf2"}, "models.m.threat_model", "Linf"),
        ({"source": "checkpoint", "path": "x.pth", "architecture": "resnet18"}, "models.m.library", "torchvision"),
        (
            {"source": "checkpoint", "path": "x.pth", "architecture": "resnt18", "library": "timm"},
            "models.m.architecture",
            "resnet18",
        ),
    ],
)
def test_bad_entries_name_the_field(entry: dict, field: str, text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_model_spec(entry, key="m", config_path="config/x.yaml")
    assert info.value.field == field
    assert text in str(info.value) and "config/x.yaml" in str(info.value)


def test_checkpoint_with_architecture(tmp_path: Path) -> None:
    reference = _tiny_timm(4, num_classes=7)
    path = tmp_path / "finetuned.pth"
    torch.save({"epoch": 3, "state_dict": {f"module.{k}": v for k, v in reference.state_dict().items()}}, path)
    entry = {"source": "checkpoint", "path": str(path), "architecture": "test_resnet", "library": "timm"}

    with pytest.raises(InputError) as info:  # default num_classes (1000) does not fit
        load_model(parse_model_spec(entry))
    assert info.value.field == "state_dict.fc.weight" and str(path) in str(info.value)
    assert "(7, " in str(info.value) and "(1000, " in str(info.value)

    spec = parse_model_spec({**entry, "num_classes": 7, "data_config": {"input_size": [3, 64, 64]}})
    manifest = read_manifest(download_weights(spec, tmp_path / "res"))
    model, config = load_model(spec, tmp_path / "res")
    assert config.input_size == (3, 64, 64) and config.resize_size == (67, 67)  # floor(64 / 0.95)
    assert manifest["data_config"] == config.to_dict()
    assert config == resolve_data_config(spec)
    x = torch.rand(2, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference((x - 0.5) / 0.5))


def test_demo_checkpoint_loads_with_identity_normalisation(tmp_path: Path) -> None:
    net = build_model("cnn", n_classes=3, input_shape=(1, 8, 8), seed=0)
    path = tmp_path / "cnn.pt"
    save_checkpoint(path, net, architecture="cnn", n_classes=3, input_shape=(1, 8, 8), options={}, class_names="abc", extra={})
    spec = parse_model_spec({"source": "train", "architecture": "cnn", "train_on": "digits", "epochs": 2})
    assert not needs_download(spec) and spec.options["epochs"] == 2
    model, config = load_model(spec, path)
    assert config.mean == (0.0,) and config.std == (1.0,) and config.input_size == (1, 8, 8)
    x = torch.rand(4, 1, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(model(x), net(x))
    with pytest.raises(InputError, match="trained by the pipeline"):
        download_weights(spec, tmp_path / "x")


# --- RobustBench (stand-in module) ---------------------------------------------------------


class _Dataset(enum.Enum):
    cifar_10 = "cifar10"


class _Threat(enum.Enum):
    Linf = "Linf"


def _stand_in_robustbench(calls: list[str]) -> dict[str, types.ModuleType]:
    """A minimal ``robustbench`` with its loader's contract: ``load_model(model_name, model_dir,
    dataset, threat_model)`` stores ``<dir>/<dataset>/<threat>/<name>.pt`` on first use."""

    def make() -> nn.Module:
        torch.manual_seed(5)
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 10))

    def load_model(model_name: str, model_dir: str, dataset: str, threat_model: str) -> nn.Module:
        path = Path(model_dir) / dataset / threat_model / f"{model_name}.pt"
        model = make()
        if not path.is_file():
            calls.append("download")
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"state_dict": {f"module.{k}": v for k, v in model.state_dict().items()}}, path)
        calls.append("load")
        state = torch.load(path, weights_only=True)["state_dict"]
        model.load_state_dict({k.removeprefix("module."): v for k, v in state.items()})
        return model.eval()

    package = types.ModuleType("robustbench")
    utils = types.ModuleType("robustbench.utils")
    zoo = types.ModuleType("robustbench.model_zoo")
    utils.load_model = load_model  # type: ignore[attr-defined]
    table = {_Dataset.cifar_10: {_Threat.Linf: {"Carmon2019Unlabeled": {"model": make}}}}
    zoo.model_dicts = table  # type: ignore[attr-defined]
    package.utils = utils  # type: ignore[attr-defined]
    package.model_zoo = zoo  # type: ignore[attr-defined]
    package._make = make  # type: ignore[attr-defined]
    return {"robustbench": package, "robustbench.utils": utils, "robustbench.model_zoo": zoo}


def test_robustbench_download_then_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    modules = _stand_in_robustbench(calls)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    entry = {"source": "robustbench", "name": "Carmon2019Unlabeled", "dataset": "cifar10", "threat_model": "Linf"}
    spec = parse_model_spec(entry)
    assert needs_download(spec)
    manifest = read_manifest(download_weights(spec, tmp_path / "rb"))
    assert [f["path"] for f in manifest["files"]] == ["cifar10/Linf/Carmon2019Unlabeled.pt"]
    model, config = load_model(spec, tmp_path / "rb")
    assert calls == ["download", "load", "load", "load"]  # downloaded once: verify + load read the file
    assert config.input_size == (3, 32, 32) and config.mean == (0.0, 0.0, 0.0) and config.std == (1.0, 1.0, 1.0)
    assert config.resize_size is None and config.crop_mode == "none"
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(model(x), modules["robustbench"]._make()(x))

    with pytest.raises(InputError) as info:
        parse_model_spec({**entry, "name": "Carmon2019Unlabelled"}, key="rb")
    assert info.value.field == "models.rb.name" and "Carmon2019Unlabeled" in str(info.value)


def test_robustbench_missing_package_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "robustbench", None)  # import fails
    spec = parse_model_spec({"source": "robustbench", "name": "Carmon2019Unlabeled"})
    assert (spec.dataset, spec.threat_model) == ("cifar10", "Linf")
    with pytest.raises(InputError, match=r"not installed.*pip install --no-deps robustbench") as info:
        download_weights(spec, tmp_path / "rb")
    assert info.value.field == "source"


# --- wrapper and preprocessing -------------------------------------------------------------


def test_wrapper_is_the_raw_model_on_normalised_input() -> None:
    torch.manual_seed(0)
    raw = nn.Sequential(nn.Conv2d(3, 5, 3), nn.Flatten(), nn.LazyLinear(4))
    raw(torch.zeros(1, 3, 10, 10))
    config = DataConfig(
        input_size=(3, 10, 10),
        interpolation="bicubic",
        crop_pct=0.9,
        crop_mode="center",
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        resize_size=(11, 11),
    )
    wrapped = PixelSpaceModel(raw, config)
    x = torch.rand(3, 3, 10, 10, requires_grad=True)
    normalised = (x - torch.tensor(config.mean).view(1, 3, 1, 1)) / torch.tensor(config.std).view(1, 3, 1, 1)
    torch.testing.assert_close(wrapped(x), raw(normalised))
    wrapped(x).sum().backward()  # gradients reach the [0, 1] input (attacks work in pixel space)
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert DataConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize(
    ("crop_mode", "input_size", "crop_pct", "interpolation"),
    [
        ("center", (3, 24, 24), 0.875, "bilinear"),
        ("center", (3, 20, 28), 0.9, "bicubic"),
        ("squash", (3, 24, 24), 0.95, "bicubic"),
        ("border", (3, 24, 24), 1.0, "bilinear"),
    ],
)
def test_preprocessing_matches_timm_eval_transform(
    crop_mode: str, input_size: tuple[int, int, int], crop_pct: float, interpolation: str
) -> None:
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, size=(37, 53, 3), dtype=np.uint8))
    timm_config = dict(
        input_size=input_size,
        interpolation=interpolation,
        mean=(0.485, 0.456, 0.406),
        std=(0.229, 0.224, 0.225),
        crop_pct=crop_pct,
        crop_mode=crop_mode,
    )
    reference = timm.data.create_transform(**timm_config, is_training=False)(image)
    unnormalised = reference * torch.tensor(timm_config["std"]).view(3, 1, 1) + torch.tensor(timm_config["mean"]).view(3, 1, 1)
    ours = preprocess_image(image, DataConfig.from_timm(timm_config))
    assert ours.shape == input_size and ours.dtype == torch.float32
    torch.testing.assert_close(ours, unnormalised, atol=1e-5, rtol=0)
    # a uint8 HWC array takes the same (PIL) path
    torch.testing.assert_close(preprocess_image(np.asarray(image), DataConfig.from_timm(timm_config)), ours)


def test_preprocessing_matches_torchvision_weights_transforms() -> None:
    transform = torchvision.models.SqueezeNet1_1_Weights.IMAGENET1K_V1.transforms()
    config = DataConfig.from_torchvision(transform)
    rng = np.random.default_rng(1)
    image = torch.from_numpy(rng.integers(0, 256, size=(3, 300, 260), dtype=np.uint8))
    reference = transform(image) * torch.tensor(transform.std).view(3, 1, 1) + torch.tensor(transform.mean).view(3, 1, 1)
    torch.testing.assert_close(preprocess_image(image, config), reference, atol=1e-5, rtol=0)
    batch = preprocess_batch([image, image], config)
    assert batch.shape == (2, 3, 224, 224) and 0.0 <= batch.min() and batch.max() <= 1.0


def test_paper_models_resolve_their_own_preprocessing() -> None:
    vit = resolve_data_config(parse_model_spec({"source": "timm", "name": "vit_base_patch16_224"}))
    assert (vit.input_size, vit.crop_pct, vit.interpolation, vit.mean) == ((3, 224, 224), 0.9, "bicubic", (0.5,) * 3)
    assert "vit_base_patch16_224.augreg2_in21k_ft_in1k" in vit.origin
    # like timm's validate.py, the test-time size and crop are used where the config has them
    rsb = resolve_data_config(parse_model_spec({"source": "timm", "name": "resnet50.a1_in1k"}))
    assert (rsb.input_size, rsb.crop_pct, rsb.resize_size) == ((3, 288, 288), 1.0, (288, 288))
    tv = resolve_data_config(parse_model_spec({"source": "torchvision", "name": "vgg16", "weights": "IMAGENET1K_V1"}))
    assert (tv.input_size, tv.resize_size, tv.interpolation) == ((3, 224, 224), (256, 256), "bilinear")


def test_model_spec_round_trips_through_its_dict() -> None:
    entries = [
        {"source": "timm", "name": TINY_TIMM},
        {"source": "torchvision", "name": "resnet18", "weights": None},
        {"source": "robustbench", "name": "Carmon2019Unlabeled", "dataset": "cifar10", "threat_model": "Linf"},
    ]
    for entry in entries:
        spec = parse_model_spec(entry, check_names=False)
        assert isinstance(spec, ModelSpec) and spec.to_dict() == entry
        assert parse_model_spec(spec.to_dict(), check_names=False) == spec
