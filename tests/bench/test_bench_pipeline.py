"""``python -m classwise.bench.pipeline`` with tiny settings: the JSON's structure, positive
numbers and equal logits on both sides of the throughput comparison (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from paths import REPO

from classwise.bench.pipeline import count_jobs, floor_snakefile, heavy_imports, import_times


def test_count_jobs_reads_the_total_row_of_the_job_stats() -> None:
    printout = "Job stats:\njob      count\n-------  -------\ninfer          4\ntotal         17\n\nReasons:\n"
    assert count_jobs(printout) == 17
    assert count_jobs("Nothing to be done (all requested files are present and up to date).") == 0


def test_import_times_sum_the_top_level_imports() -> None:
    printout = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |     numpy.core\n"
        "import time:       200 |     300000 |   numpy\n"
        "import time:       300 |    1500000 | pandas\n"
        "import time:        50 |     250000 | snakemake\n"
        "some other line\n"
        "import time:        10 |     250000 | snakemake\n"  # imported again later, e.g. inside a function
    )
    result = import_times(printout, top=1)
    assert result["seconds_total"] == 1.5 + 0.25 + 0.25  # nested imports are inside their parent's time
    assert result["largest_seconds"] == {"pandas": 1.5}


def test_heavy_imports_name_the_libraries_a_dry_run_must_not_import() -> None:
    printout = (
        "import time:       100 |        100 |     torch._C\n"
        "import time:       200 |     300000 |   timm.layers\n"
        "import time:       300 |    1500000 | pandas\n"
        "import time:        10 |        100 | torchmetrics\n"  # a prefix of torch's name, not torch
    )
    assert heavy_imports(printout) == ["timm", "torch"]
    assert heavy_imports("import time:       300 |    1500000 | pandas\n") == []


def test_the_floor_workflow_has_about_the_asked_number_of_jobs(tmp_path: Path) -> None:
    (tmp_path / "Snakefile").write_text(floor_snakefile(200))
    command = [sys.executable, "-m", "snakemake", "--directory", str(tmp_path), "--cores", "1", "--dry-run"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = count_jobs(result.stdout + result.stderr)
    assert abs(jobs - 200) <= 16  # whole shifts of 16 jobs, plus the target rule


def test_the_benchmark_writes_both_results_with_goals(tmp_path: Path) -> None:
    # a paper config whose dataset lies at an absolute path: the benchmark must build it a fixture
    config = yaml.safe_load((REPO / "config" / "decisiveness_imagenet.yaml").read_text())
    config["datasets"]["imagenet"]["root"] = str(tmp_path / "absent" / "imagenet")
    configfile = tmp_path / "paper.yaml"
    configfile.write_text(yaml.safe_dump(config))
    out = tmp_path / "bench" / "pipeline.json"
    command = [
        sys.executable, "-m", "classwise.bench.pipeline", "--out", str(out), "--configs", str(configfile),
        "--dry-run-repeats", "1", "--images-per-class", "1", "--batch-size", "4", "--image-size", "32",
        "--repeats", "1", "--device", "cpu", "--threads", "1",
    ]  # fmt: skip
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "absent").exists()
    results = json.loads(out.read_text())
    assert set(results) == {"machine", "dry_run", "throughput"}

    dry = results["dry_run"]
    (row,) = dry["configs"]
    assert "error" not in row, row.get("error")
    assert row["fixtures"] == ["datasets.imagenet.root"]
    assert row["jobs"] > 0 and row["first_run_seconds"] > 0
    largest = dry["largest"]
    assert largest["config"] == str(configfile) and largest["jobs"] == row["jobs"]
    assert len(largest["seconds_all"]) == 1 and largest["seconds_median"] == largest["seconds_min"] > 0
    assert len(largest["cpu_seconds_all"]) == 1 and largest["cpu_seconds_median"] > 0 and row["first_run_cpu_seconds"] > 0
    imports = row["imports"]
    assert 0 < imports["seconds_total"] < row["first_run_seconds"] and "snakemake.cli" in imports["largest_seconds"]
    assert largest["imports_in_first_run"] == imports
    assert isinstance(row["heavy_imports"], list)  # a cold name cache may import a model library once
    assert dry["goal_median_seconds_below"] == 3.0
    assert dry["met"] == (largest["seconds_median"] < 3.0)
    floor = dry["snakemake_floor"]
    assert abs(floor["jobs"] - row["jobs"]) <= 16 and floor["seconds_median"] > 0 and floor["cpu_seconds_median"] > 0

    throughput = results["throughput"]
    assert throughput["goal_ratio_at_least"] == 0.9 and throughput["torch_threads"] == 1
    assert [r["row"] for r in throughput["rows"]] == ["decoded", "from_files"]
    for r in throughput["rows"]:
        assert r["n_images"] == 10 and r["batch_size"] == 4 and r["input_shape"] == [3, 32, 32]
        for side in ("pipeline", "bare_timm"):
            assert r["images_per_second"][side] > 0 and len(r["seconds_per_round"][side]) == 1
            assert r["seconds_best"][side] == r["seconds_median"][side] == r["seconds_per_round"][side][0]  # 1 round
        assert r["ratio_pipeline_over_bare"] > 0 and r["ratio_median"] > 0 and r["ratio_total"] > 0
        assert r["met"] == (r["ratio_pipeline_over_bare"] >= 0.9)
        # same model, same inputs: the pipeline's logits are bare timm's
        assert r["max_abs_logit_difference"] < 1e-3
    assert throughput["met"] == throughput["rows"][0]["met"]
    assert "written to" in result.stdout
