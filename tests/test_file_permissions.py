"""Every writer gives its files the permissions a plain ``open()`` would (0o666 less the umask).

``tempfile.mkstemp`` creates owner-only (0o600) files; the atomic writers rename those into
place, so without a chmod every output was unreadable by the group and others whatever the
umask. Each writer kind is checked under two umasks.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from classwise import atomic  # noqa: E402
from classwise.cli import main  # noqa: E402
from classwise.labels.imagenet_cleaned import write_label_file  # noqa: E402
from classwise.labels.views import write_view  # noqa: E402
from classwise.logits_io import save_logits, write_npz_deterministic  # noqa: E402
from classwise.models.checkpoint import save_checkpoint  # noqa: E402
from classwise.plots import save_png  # noqa: E402
from classwise.tables import write_tables  # noqa: E402

UMASKS = {0o022: 0o644, 0o077: 0o600, 0o002: 0o664}


@pytest.fixture(params=sorted(UMASKS), ids=lambda mask: f"umask{mask:03o}")
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _scores_file(path: Path) -> Path:
    rng = np.random.default_rng(0)
    write_npz_deterministic(path, {"logits": rng.normal(size=(30, 4)).astype(np.float32), "labels": np.arange(30) % 4})
    return path


def _text(out: Path) -> list[Path]:
    atomic.write_text(out / "a.txt", "x\n")
    atomic.write_json(out / "a.json", {"x": 1})
    with atomic.atomic_open(out / "b.bin", "wb") as handle:
        handle.write(b"x")
    return [out / "a.txt", out / "a.json", out / "b.bin"]


def _logits(out: Path) -> list[Path]:
    save_logits(
        out / "l.npz",
        logits=np.zeros((2, 3), np.float32),
        labels=np.array([0, 1]),
        sample_ids=np.array(["a", "b"]),
        class_names=np.array(["x", "y", "z"]),
        metadata={"model": "m"},
    )
    write_npz_deterministic(out / "d.npz", {"a": np.arange(3)})
    return [out / "l.npz", out / "l.json", out / "d.npz"]


def _checkpoint(out: Path) -> list[Path]:
    save_checkpoint(
        out / "m.pt",
        torch.nn.Linear(2, 2),
        architecture="linear",
        n_classes=2,
        input_shape=(2,),
        options={},
        class_names=["a", "b"],
        extra={},
    )
    return [out / "m.pt"]


def _tables(out: Path) -> list[Path]:
    paths = [out / "t.md", out / "t.csv", out / "t.tex"]
    write_tables(pd.DataFrame({"A": [0.5]}, index=["m"]), "caption", dict(zip(("markdown", "csv", "latex"), paths)))
    return paths


def _labels(out: Path) -> list[Path]:
    write_view(out / "view.csv", np.array(["a", "b"]), np.array([0, -1]))
    write_label_file(out / "labels.csv", np.array([0, -1]))
    return [out / "view.csv", out / "labels.csv"]


def _figure(out: Path) -> list[Path]:
    fig = plt.figure(figsize=(1, 1))
    try:
        save_png(fig, out / "f.png")
    finally:
        plt.close(fig)
    return [out / "f.png"]


def _cli(out: Path) -> list[Path]:
    scores = _scores_file(out.parent / "scores.npz")
    argv = ["metrics", str(scores), "--n", "2", "--k", "2", "--out", str(out / "m.json"), "--per-class", str(out / "pc.csv")]
    assert main(argv) == 0
    assert main(["extrapolate", str(scores), "--k-max", "5", "--method", "naive", "--out", str(out / "curve.csv")]) == 0
    return [out / "m.json", out / "pc.csv", out / "curve.csv"]


WRITERS: dict[str, Callable[[Path], list[Path]]] = {
    "atomic_text_json_binary": _text,
    "logits_npz_and_sidecar": _logits,
    "checkpoint": _checkpoint,
    "tables": _tables,
    "label_files": _labels,
    "png_figure": _figure,
    "cli_out": _cli,
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_writers_respect_the_umask(writer: str, umask: int, tmp_path: Path) -> None:
    out = tmp_path / "out"
    written = WRITERS[writer](out)
    assert written
    for path in written:
        assert _mode(path) == UMASKS[umask], f"{path.name}: {_mode(path):o} under umask {umask:03o}"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_atomic_path_matches_a_plain_open(umask: int, tmp_path: Path) -> None:
    # the reference: what open() itself creates under the same umask
    plain = tmp_path / "plain"
    plain.write_text("x")
    with atomic.atomic_path(tmp_path / "atomic") as tmp:
        tmp.write_text("x")
    assert _mode(tmp_path / "atomic") == _mode(plain) == UMASKS[umask]
    assert atomic.current_umask() == umask


def test_current_umask_without_proc(umask: int, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = open

    def no_proc(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == "/proc/self/status":
            raise FileNotFoundError(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_proc)
    assert atomic.current_umask() == umask
    assert os.umask(umask) == umask  # reading it left it unchanged
