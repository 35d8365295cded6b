"""``classwise check``: gates on metrics JSON files for CI (exit 0 / 1 with a table / 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import recall_score

from classwise.cli import main


def _metrics_file(tmp_path: Path, name: str, seed: int, signal: float) -> tuple[Path, float]:
    """A ``classwise metrics`` output of random logits and its WCA by scikit-learn."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(4), 50)
    logits = rng.normal(size=(labels.size, 4))
    logits[np.arange(labels.size), labels] += signal * rng.random(labels.size)
    scores = tmp_path / f"{name}.npz"
    np.savez(scores, logits=logits, labels=labels)
    out = tmp_path / f"{name}.json"
    assert main(["metrics", str(scores), "--out", str(out), "--n", "2", "10"]) == 0
    wca = float(recall_score(labels, logits.argmax(axis=1), average=None).min())
    return out, wca


def test_gates_pass_at_the_bound_and_fail_beyond_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, wca = _metrics_file(tmp_path, "m", seed=0, signal=2.0)
    assert json.loads(path.read_text())["metrics"]["WCA"]["value"] == pytest.approx(wca)
    assert main(["check", str(path), "--min", f"WCA={wca!r}", "--max", f"WCA={wca!r}"]) == 0  # inclusive
    assert "all 2 gates passed" in capsys.readouterr().out
    assert main(["check", str(path), "--min", f"WCA={wca + 1e-9!r}", "--max", "CFPS_max=1"]) == 1
    captured = capsys.readouterr()
    assert "1 of 2 gates failed" in captured.err
    lines = captured.out.splitlines()
    assert lines[0] == "| file | gate | value | status |"
    assert len(lines) == 3  # the header, its rule and the one failure: passing gates are not listed
    assert f"WCA >= {wca + 1e-9:g}" in lines[2] and f"{wca:.4f}" in lines[2] and "FAIL" in lines[2]


def test_the_table_names_the_file_that_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, good_wca = _metrics_file(tmp_path, "good", seed=1, signal=6.0)
    bad, bad_wca = _metrics_file(tmp_path, "bad", seed=2, signal=0.5)
    threshold = (good_wca + bad_wca) / 2
    assert main(["check", str(good), str(bad), "--min", f"WCA={threshold}"]) == 1
    table = capsys.readouterr().out
    assert str(bad) in table and str(good) not in table


def test_a_metric_the_file_skipped_fails_saying_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _metrics_file(tmp_path, "m", seed=0, signal=2.0)
    assert main(["check", str(path), "--min", "W10CR=0"]) == 1  # 10 >= 4 classes: trivial, not computed
    assert "FAIL (not computed: n = 10 >= 4 classes" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--min", "WAC=0.5"], "unknown metric 'WAC'; this file has ['A', 'CFPS_max', 'W2CA'"),
        (["--min", "WCA"], "field '--min': expected METRIC=VALUE (e.g. WCA=0.5), got 'WCA'"),
        (["--max", "=0.3"], "field '--max': expected METRIC=VALUE"),
        (["--min", "WCA=half"], "expected a number after '=' in 'WCA=half'"),
        (["--min", "WCA=nan"], "expected a finite number"),
        (["--min", "WCA=0.1", "--min", "WCA=0.2"], "WCA is bounded twice"),
        ([], "give at least one gate"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], expected: str
) -> None:
    path, _ = _metrics_file(tmp_path, "m", seed=0, signal=2.0)
    assert main(["check", str(path), *arguments]) == 2
    captured = capsys.readouterr()
    assert expected in captured.err and captured.out == ""


def test_a_missing_or_malformed_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nope.json"), "--min", "WCA=0.5"]) == 2
    assert "nope.json: file does not exist" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{not json")
    assert main(["check", str(tmp_path / "junk.json"), "--min", "WCA=0.5"]) == 2
    assert "not a readable JSON file" in capsys.readouterr().err
    (tmp_path / "other.json").write_text('{"values": 1}')
    assert main(["check", str(tmp_path / "other.json"), "--min", "WCA=0.5"]) == 2
    assert "expected a metrics JSON with a 'metrics' mapping" in capsys.readouterr().err
