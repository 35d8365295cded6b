"""``classwise extrapolate`` (classwise.extrapolation.cli), through its own parser."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from classwise.errors import InputError
from classwise.extrapolation.cli import add_parser
from classwise.extrapolation.methods import extrapolate
from classwise.logits_io import write_npz_deterministic

ISSUE_SCORES = np.array([[0.9, 0.5, 0.1, 0.3], [0.2, 0.6, 0.7, 0.1], [0.4, 0.3, 0.8, 0.2], [0.1, 0.2, 0.3, 0.9]])


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="classwise")
    add_parser(root.add_subparsers(dest="command", required=True))
    return root


def run(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return int(args.handler(args))


def write_scores(path: Path, **arrays: np.ndarray) -> Path:
    write_npz_deterministic(path, arrays)
    return path


def test_writes_the_curve(tmp_path: Path) -> None:
    scores = write_scores(tmp_path / "s.npz", logits=ISSUE_SCORES.astype(np.float32), labels=np.arange(4))
    out = tmp_path / "sub" / "curve.csv"
    assert run(["extrapolate", str(scores), "--k-max", "10", "--method", "naive", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["k", "accuracy"]
    assert table["k"].tolist() == list(range(2, 11))
    np.testing.assert_allclose(table["accuracy"], extrapolate(ISSUE_SCORES, np.arange(4), 10, "naive"), atol=1e-8)
    assert table["accuracy"].iloc[0] == pytest.approx(11 / 12, abs=1e-8)
    assert not [p for p in out.parent.iterdir() if p.name != "curve.csv"]  # no temporary left behind


@pytest.mark.parametrize("method", ["kde", "regression", "cleanex"])
def test_other_methods_and_seed(tmp_path: Path, method: str) -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(60, 12)).astype(np.float32)
    labels = rng.integers(0, 12, 60)
    logits[np.arange(60), labels] += 2.0
    scores = write_scores(tmp_path / "s.npz", logits=logits, labels=labels)
    out = tmp_path / f"{method}.csv"
    argv = ["extrapolate", str(scores), "--k-max", "30", "--method", method, "--seed", "3", "--out", str(out)]
    argv += ["--max-steps", "25"]  # keeps the CleaneX wiring check short; the other methods ignore it
    args = parser().parse_args(argv)
    assert args.seed == 3
    assert args.handler(args) == 0
    table = pd.read_csv(out)
    assert len(table) == 29 and table["accuracy"].between(0, 1).all()


@pytest.mark.parametrize(
    ("arrays", "field"),
    [
        ({"labels": np.arange(4)}, "logits"),
        ({"logits": ISSUE_SCORES}, "labels"),
        ({"logits": np.where(np.eye(4, dtype=bool), np.nan, ISSUE_SCORES), "labels": np.arange(4)}, "logits"),
        ({"logits": ISSUE_SCORES, "labels": np.array([0, 1, 2, 7])}, "labels"),
        ({"logits": ISSUE_SCORES, "labels": np.arange(3)}, "labels"),
    ],
)
def test_bad_input_names_file_and_field_and_writes_nothing(tmp_path: Path, arrays: dict[str, np.ndarray], field: str) -> None:
    scores = write_scores(tmp_path / "bad.npz", **arrays)
    out = tmp_path / "curve.csv"
    with pytest.raises(InputError) as info:
        run(["extrapolate", str(scores), "--k-max", "5", "--method", "naive", "--out", str(out)])
    assert info.value.path == str(scores)
    assert info.value.field == field
    assert str(scores) in str(info.value)
    assert list(tmp_path.iterdir()) == [scores]


def test_missing_file_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "curve.csv"
    with pytest.raises(InputError, match="does not exist"):
        run(["extrapolate", str(tmp_path / "none.npz"), "--k-max", "5", "--method", "kde", "--out", str(out)])
    assert not out.exists()


@pytest.mark.parametrize(
    "extra",
    [
        ["--k-max", "1", "--method", "naive"],
        ["--k-max", "ten", "--method", "naive"],
        ["--k-max", "5", "--method", "magic"],
        ["--method", "naive"],
    ],
)
def test_bad_arguments_are_usage_errors(tmp_path: Path, extra: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parser().parse_args(["extrapolate", "s.npz", *extra, "--out", str(tmp_path / "c.csv")])
    assert info.value.code == 2


def test_cleanex_shows_its_progress_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from classwise.cli import main

    rng = np.random.default_rng(1)
    scores = write_scores(tmp_path / "s.npz", logits=rng.normal(size=(40, 6)).astype(np.float32), labels=np.arange(40) % 6)
    argv = [
        "extrapolate",
        str(scores),
        "--k-max",
        "9",
        "--method",
        "cleanex",
        "--out",
        str(tmp_path / "c.csv"),
        "--max-steps",
        "30",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "CleaneX fit: 100%" in captured.err and "30/30" in captured.err and "loss=" in captured.err
    assert captured.out == ""
    assert main([*argv[:5], "naive", "--out", str(tmp_path / "n.csv")]) == 0
    assert "CleaneX" not in capsys.readouterr().err  # the fast methods show nothing
