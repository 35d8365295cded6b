"""The benchmark harness runs end to end at toy sizes (the timings themselves are make bench's)."""

from __future__ import annotations

import json
from pathlib import Path

from classwise.bench import metrics


def test_the_metrics_benchmark_writes_timings_memory_and_goals(tmp_path: Path) -> None:
    out = tmp_path / "metrics.json"
    metrics.main(["--samples", "600", "--classes", "30", "--repeats", "1", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["shape"] == [600, 30]
    assert all(seconds > 0 for seconds in result["seconds"].values())
    assert result["memory"]["logits_bytes"] == 600 * 30 * 4
    assert result["memory"]["cli_peak_traced_bytes"] > 0
    assert "load_average_1min_at_start" in result["machine"]


def test_the_predictions_benchmark_times_one_call_over_many_files(tmp_path: Path) -> None:
    from classwise.bench import predictions

    out = tmp_path / "predictions.json"
    predictions.main(["--files", "3", "--samples", "20", "--classes", "4", "--single-calls", "1", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["json_files_written"] == 3
    assert result["seconds"]["one_call_all_files"] > 0
    assert len(result["machine"]["load_average_1_5_15min_at_start"]) == 3


def test_the_labels_shifts_benchmark_plans_a_study_of_its_shape(tmp_path: Path) -> None:
    """A dry run of 2 models x 3 shifts: shift batches, so one import and one metrics job per
    model (not per file) and one job per table and figure rule (not per shift)."""
    from classwise.bench import labels_shifts

    out = tmp_path / "labels_shifts.json"
    labels_shifts.main(
        ["--skip", "run", "--dry-models", "2", "--dry-shifts", "3", "--samples", "20", "--classes", "4", "--out", str(out)]
    )
    dry = json.loads(out.read_text())["dry_run"]
    assert dry["predictions_files"] == 2 * 4 and dry["wall_s"] > 0 and len(dry["load_average_before"]) == 3
    per_model = 2 * 2  # import and metrics
    per_view = 4  # the worst-class table, the model comparison, the figures, the class-drop tests
    # transformation tests per model, robustness, explorer, the table of every number, README, all
    per_dataset = 2 + 1 + 1 + 1 + 1 + 1
    assert dry["jobs"] == per_model + per_view + per_dataset
