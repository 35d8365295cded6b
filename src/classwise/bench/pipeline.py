"""Pipeline benchmarks (``python -m classwise.bench.pipeline``, part of ``make bench``).

Two measurements (issue 7), each with its goal and whether it was met:

**Dry run.** Every paper config (``config/*.yaml`` but the demo's ``config.yaml``) gets
stand-ins for its user-provided inputs (:func:`classwise.bench.fixtures.dry_run_fixtures`) in a
temporary working directory, and ``snakemake -n`` runs on it once as a subprocess to count its
jobs. That first run goes under ``python -X importtime``: its wall time is reported with how much
of it went to imports (the total of the top-level imports, and the largest of them) and which of
the heavy libraries it imported (``heavy_imports``: torch, torchvision, timm, albumentations; the
DAG build must import none of them). The config with the most jobs is then timed ``repeats``
more times, end to end (process start, imports, DAG, printout): median and minimum wall time,
and the process's CPU time (user + system; close to what the wall time would be with a core to
itself, so it shows how much of the wall time is load from other processes). Goal (issue 20):
median wall time under 3 s. Beside it, ``snakemake_floor`` times the same number of jobs in a
generated workflow whose rules run nothing and read no config (:func:`floor_snakefile`): what
Snakemake itself needs for that many jobs, whatever the workflow's own code does.

**Inference throughput.** A randomly initialised timm model (ResNet-18, 10 classes, saved as a
``checkpoint`` model entry) on a generated ImageFolder of random 80x96 JPEGs, evaluated at
``image_size`` (default 64: resize to 73, centre crop 64, bicubic; timm's evaluation transform
with crop_pct 0.875), clean shift, the same batch size on both sides:

* ``decoded``: identical images, already decoded and preprocessed, in memory, batch by batch.
  Pipeline: :func:`classwise.inference.stream.predict_logits` called on each batch as an ``ImageSet``
  (as ``infer`` does for image-file datasets) with the model as ``infer`` loads it
  (:func:`classwise.steps.models.load_inference_model`: a pixel-space wrapper that normalises
  inside). Bare: the timm module's forward on the same batches, normalised beforehand (outside
  the timing, as a timm data loader would hand them over). Both move each batch to the device and
  the logits back to the CPU. This row decides the goal.
* ``from_files``: decoding included. Pipeline: the whole ``infer`` step
  (:func:`classwise.steps.models.infer_step`: model load, dataset scan, decoding in
  ``threads`` threads, preprocessing, forward, the logits file and its sidecar written). Bare:
  timm's own path: model built and the checkpoint loaded, ``timm.data.ImageDataset`` with
  ``timm.data.create_transform`` (same data config), a ``DataLoader`` without worker processes.

The two sides take turns (batch by batch for ``decoded``, run by run for ``from_files``, the
order flipping each time) over ``repeats`` rounds after one warm-up each, so load from other
processes hits both alike. Throughput counts each batch (run) at its fastest round, the estimate
least affected by other processes; ratio = pipeline images/s over bare images/s from those.
Ratios from each batch's median round and from the total time are reported too. Goal: at least
0.9. Each row also gives the largest absolute difference between the two sides'
logits (same model, same inputs: should be ~1e-5 or 0).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from classwise.atomic import write_json

REPO = Path(__file__).resolve().parents[3]
DEMO_CONFIG = "config.yaml"
DRY_RUN_GOAL_S = 3.0
"""Median wall time of ``snakemake -n`` on the largest paper config must stay under this."""
HEAVY_LIBRARIES = ("torch", "torchvision", "timm", "albumentations")
"""Libraries the DAG build must not import (each takes seconds; only jobs need them)."""
THROUGHPUT_GOAL = 0.9
"""Pipeline images/s must be at least this share of the bare timm forward pass."""
ARCHITECTURE = "resnet18"
N_CLASSES = 10
STORED_SIZE = (80, 96)
"""(height, width) of the generated JPEGs: not square, so resize and crop both do work."""


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the platform has none): other processes on the
    cores inflate every timing, so each benchmark records it."""
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return None


# --------------------------------------------------------------------------- dry run


def paper_configs(repo: Path) -> list[Path]:
    """Every config under ``repo/config/`` but the demo's (one file per paper), sorted by name."""
    return sorted(path for path in (repo / "config").glob("*.yaml") if path.name != DEMO_CONFIG)


def count_jobs(output: str) -> int:
    """The job count of a ``snakemake -n`` printout (the ``total`` row of its job stats; 0 when
    there is nothing to do)."""
    match = re.search(r"^total\s+(\d+)\s*$", output, re.MULTILINE)
    return int(match.group(1)) if match else 0


def dry_run_command(repo: Path, workdir: Path, configfile: Path, *, python_flags: Sequence[str] = ()) -> list[str]:
    """``snakemake -n`` of ``repo``'s workflow in ``workdir`` with ``configfile``."""
    return [
        sys.executable, *python_flags, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"),
        "--directory", str(workdir), "--configfile", str(configfile), "--cores", "1", "--dry-run",
    ]  # fmt: skip


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)\s*$")


def import_times(stderr: str, *, top: int = 8) -> dict[str, Any]:
    """Where a process's imports went, from its ``python -X importtime`` printout: the total of
    the top-level imports' cumulative times (seconds; imports made inside functions count as
    top level) and the ``top`` largest of them."""
    cumulative: dict[str, float] = {}
    for line in stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and match.group(3) == "":
            cumulative[match.group(4)] = cumulative.get(match.group(4), 0.0) + int(match.group(2)) / 1e6
    largest = sorted(cumulative.items(), key=lambda item: item[1], reverse=True)[:top]
    return {"seconds_total": sum(cumulative.values()), "largest_seconds": dict(largest)}


def heavy_imports(stderr: str) -> list[str]:
    """The :data:`HEAVY_LIBRARIES` a process imported, from its ``python -X importtime`` printout."""
    seen = set()
    for line in stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and match.group(4).partition(".")[0] in HEAVY_LIBRARIES:
            seen.add(match.group(4).partition(".")[0])
    return sorted(seen)


_FLOOR_JOBS_PER_SHIFT = 16
"""4 models' inference, 2 metric families each, 4 tables: the paper configs' shape per shift."""


def floor_snakefile(jobs: int) -> str:
    """A workflow of about ``jobs`` jobs shaped like the paper configs (per shift: inference per
    model, two metric jobs per inference, per-shift tables reading every model's metrics) whose
    rules run nothing and use no input functions, parameters or logs."""
    shifts = max(1, round((jobs - 1) / _FLOOR_JOBS_PER_SHIFT))
    return f"""SHIFTS = [f"s{{i}}" for i in range({shifts})]
MODELS = ["m0", "m1", "m2", "m3"]

rule all:
    input: expand("tables/{{t}}/{{s}}.txt", t=["t0", "t1", "t2", "t3"], s=SHIFTS)

rule infer:
    output: "logits/{{m}}/{{s}}.npz"
    shell: "touch {{output}}"

rule metric:
    input: "logits/{{m}}/{{s}}.npz"
    output: "metrics/{{family}}/{{m}}/{{s}}.json"
    shell: "touch {{output}}"

rule table:
    input: expand("metrics/{{family}}/{{m}}/{{{{s}}}}.json", family=["a", "b"], m=MODELS)
    output: "tables/{{t}}/{{s}}.txt"
    shell: "touch {{output}}"
"""


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(
    command: Sequence[str], cwd: Path, *, timeout: float | None = 600
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (user + system, of the process and its children) seconds of ``command``
    run in ``cwd`` with its output captured, and its result."""
    cpu = _children_cpu_seconds()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return time.perf_counter() - start, _children_cpu_seconds() - cpu, result


def _timed_dry_run(
    repo: Path, workdir: Path, configfile: Path, *, python_flags: Sequence[str] = ()
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (user + system) seconds of one dry run, and its result."""
    return timed_run(dry_run_command(repo, workdir, configfile, python_flags=python_flags), repo)


def bench_dry_run(repo: Path, configs: Sequence[Path], repeats: int, tmp: Path) -> dict[str, Any]:
    """Job counts of every config and the timing of the largest (see the module docstring)."""
    from classwise.bench.fixtures import dry_run_fixtures

    rows: list[dict[str, Any]] = []
    prepared: dict[str, tuple[Path, Path]] = {}
    for index, path in enumerate(configs):
        workdir = tmp / f"dry_run_{index}_{path.stem}"
        workdir.mkdir(parents=True)
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        derived, fixtures = dry_run_fixtures(config, workdir)
        configfile = workdir / "config.yaml"
        configfile.write_text(yaml.safe_dump(derived, sort_keys=False), encoding="utf-8")
        seconds, cpu, result = _timed_dry_run(repo, workdir, configfile, python_flags=("-X", "importtime"))
        row: dict[str, Any] = {
            "config": str(path),
            "fixtures": fixtures,
            "first_run_seconds": seconds,
            "first_run_cpu_seconds": cpu,
        }
        if result.returncode != 0:
            printout = result.stdout + "".join(
                line for line in result.stderr.splitlines(keepends=True) if not line.startswith("import time:")
            )
            row["error"] = printout[-2000:]
        else:
            row["jobs"] = count_jobs(result.stdout + result.stderr)
            row["imports"] = import_times(result.stderr)
            row["heavy_imports"] = heavy_imports(result.stderr)
            prepared[str(path)] = (workdir, configfile)
        rows.append(row)
    ok = [row for row in rows if "error" not in row]
    out: dict[str, Any] = {"goal_median_seconds_below": DRY_RUN_GOAL_S, "configs": rows, "largest": None, "met": False}
    if not ok:
        return out
    largest = max(ok, key=lambda row: row["jobs"])
    workdir, configfile = prepared[largest["config"]]
    times, cpu_times = [], []
    for _ in range(repeats):
        seconds, cpu, result = _timed_dry_run(repo, workdir, configfile)
        if result.returncode != 0:  # pragma: no cover - it passed a moment ago
            raise RuntimeError(f"dry run of {largest['config']} failed:\n{result.stderr[-2000:]}")
        times.append(seconds)
        cpu_times.append(cpu)
    out["largest"] = {
        "config": largest["config"],
        "jobs": largest["jobs"],
        "repeats": repeats,
        "seconds_all": times,
        "seconds_median": statistics.median(times),
        "seconds_min": min(times),
        # CPU time of the (single-threaded) process: what the wall time would be with a core to itself
        "cpu_seconds_all": cpu_times,
        "cpu_seconds_median": statistics.median(cpu_times),
        "imports_in_first_run": largest["imports"],
    }
    out["snakemake_floor"] = _bench_floor(largest["jobs"], repeats, tmp)
    out["met"] = out["largest"]["seconds_median"] < DRY_RUN_GOAL_S
    return out


def _bench_floor(jobs: int, repeats: int, tmp: Path) -> dict[str, Any]:
    """Dry runs of :func:`floor_snakefile` with ``jobs`` jobs, timed like the largest config."""
    workdir = tmp / "snakemake_floor"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(floor_snakefile(jobs), encoding="utf-8")
    command = [sys.executable, "-m", "snakemake", "--directory", str(workdir), "--cores", "1", "--dry-run"]
    times, cpu_times, counted = [], [], 0
    for _ in range(repeats):
        seconds, cpu, result = timed_run(command, workdir)
        times.append(seconds)
        cpu_times.append(cpu)
        if result.returncode != 0:  # pragma: no cover - a fixed workflow
            raise RuntimeError(f"dry run of the floor workflow failed:\n{result.stderr[-2000:]}")
        counted = count_jobs(result.stdout + result.stderr)
    return {
        "jobs": counted,
        "seconds_median": statistics.median(times),
        "cpu_seconds_median": statistics.median(cpu_times),
    }


# --------------------------------------------------------------------------- throughput


def _interleaved(
    fns: dict[str, Callable[[int], Any]], units: int, repeats: int, device: Any
) -> tuple[dict[str, list[list[float]]], dict[str, list[Any]]]:
    """Wall times ``times[name][round][unit]`` of each function on ``units`` work units (``fn(k)``,
    k = 0 .. units - 1) over ``repeats`` rounds, the functions taking turns unit by unit (the order
    flips every unit and round, so load that comes and goes hits both alike), after one warm-up
    call each on unit 0. Also returns the outputs of the last round, unit by unit."""
    import torch

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for fn in fns.values():
        fn(0)
    times: dict[str, list[list[float]]] = {name: [] for name in fns}
    outputs: dict[str, list[Any]] = {name: [None] * units for name in fns}
    order = list(fns.items())
    for r in range(repeats):
        for name in fns:
            times[name].append([0.0] * units)
        for k in range(units):
            for name, fn in order if (r + k) % 2 == 0 else order[::-1]:
                sync()
                start = time.perf_counter()
                outputs[name][k] = fn(k)
                sync()
                times[name][r][k] = time.perf_counter() - start
    return times, outputs


def _row(name: str, n_images: int, times: dict[str, list[list[float]]], max_diff: float, **extra: Any) -> dict[str, Any]:
    """Throughput of both sides from per-unit times (see :func:`_interleaved`): ``best`` sums each
    unit's fastest round (the estimate least affected by other processes; it decides the goal),
    ``median`` each unit's median round, ``total`` is every round of every unit."""

    def per_unit(side: str, statistic: Callable[[list[float]], float]) -> float:
        return sum(statistic(list(column)) for column in zip(*times[side], strict=True))

    best = {side: per_unit(side, min) for side in times}
    median = {side: per_unit(side, statistics.median) for side in times}
    total = {side: sum(map(sum, rounds)) for side, rounds in times.items()}
    ratio = best["bare_timm"] / best["pipeline"]
    return {
        "row": name,
        **extra,
        "n_images": n_images,
        "seconds_best": best,
        "seconds_median": median,
        "seconds_per_round": {side: [sum(r) for r in rounds] for side, rounds in times.items()},
        "seconds_all": times,
        "images_per_second": {side: n_images / v for side, v in best.items()},
        "images_per_second_median": {side: n_images / v for side, v in median.items()},
        "ratio_pipeline_over_bare": ratio,
        "ratio_median": median["bare_timm"] / median["pipeline"],
        "ratio_total": total["bare_timm"] / total["pipeline"],
        "max_abs_logit_difference": max_diff,
        "goal_ratio_at_least": THROUGHPUT_GOAL,
        "met": ratio >= THROUGHPUT_GOAL,
    }


def bench_throughput(
    *, images_per_class: int, batch_size: int, image_size: int, repeats: int, device: str, threads: int, tmp: Path
) -> dict[str, Any]:
    """The ``decoded`` and ``from_files`` rows (see the module docstring)."""
    import timm
    import torch
    from torch.utils.data import DataLoader

    from classwise.data.sources import open_split
    from classwise.data.stand_ins import image_folder_fixture
    from classwise.inference.execution import Execution
    from classwise.inference.stream import predict_logits, resolve_device
    from classwise.logits_io import load_scores
    from classwise.models.data_config import preprocess_image
    from classwise.shifts.spec import ShiftSpec
    from classwise.steps.models import InferenceSettings, InferTarget, infer_step, load_inference_model, model_spec

    torch.set_num_threads(threads)
    target = resolve_device(device)
    classes = [f"class_{c:02d}" for c in range(N_CLASSES)]
    root = image_folder_fixture(tmp / "images", classes, per_class=images_per_class, size=STORED_SIZE, suffix=".JPEG")
    n_images = images_per_class * N_CLASSES
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = timm.create_model(ARCHITECTURE, pretrained=False, num_classes=N_CLASSES)
    checkpoint = tmp / f"{ARCHITECTURE}.pth"
    torch.save(net.state_dict(), checkpoint)
    model_cfg = {
        "source": "checkpoint", "path": str(checkpoint), "architecture": ARCHITECTURE, "library": "timm",
        "num_classes": N_CLASSES, "data_config": {"input_size": [3, image_size, image_size], "crop_pct": 0.875},
    }  # fmt: skip
    dataset_cfg = {"source": "image_folder", "root": str(root)}
    shift = {"name": "clean", "kind": "clean", "params": {}}
    model, _, data_config = load_inference_model(ARCHITECTURE, model_spec(ARCHITECTURE, model_cfg), str(checkpoint), str(target))
    common = {
        "model": f"timm {ARCHITECTURE}, random init, {N_CLASSES} classes",
        "input_shape": list(data_config.input_size),
        "stored_image_size_hw": list(STORED_SIZE),
        "batch_size": batch_size,
    }

    # decoded: identical preprocessed images in memory on both sides
    images = open_split(dataset_cfg, "test").to_imageset(lambda im: preprocess_image(im, data_config).numpy())
    mean = torch.tensor(data_config.mean).view(1, -1, 1, 1)
    std = torch.tensor(data_config.std).view(1, -1, 1, 1)
    normalised = (torch.from_numpy(images.images) - mean) / std
    bare_net = net.to(target).eval()
    spec = ShiftSpec(name="clean", kind="clean", params={})

    starts = range(0, n_images, batch_size)
    batches = [images.subset(np.arange(i, min(i + batch_size, n_images))) for i in starts]

    def pipeline_decoded(k: int) -> np.ndarray:
        return predict_logits(model, batches[k], spec, base_seed=0, batch_size=batch_size, execution=Execution(str(target)))

    def bare_decoded(k: int) -> np.ndarray:
        with torch.inference_mode():
            return bare_net(normalised[starts[k] : starts[k] + batch_size].to(target)).float().cpu().numpy()

    times, outputs = _interleaved({"pipeline": pipeline_decoded, "bare_timm": bare_decoded}, len(batches), repeats, target)
    diff = float(np.abs(np.concatenate(outputs["pipeline"]) - np.concatenate(outputs["bare_timm"])).max())
    rows = [_row("decoded", n_images, times, diff, **common, inputs="decoded and preprocessed in memory", decides_goal=True)]

    # from_files: decoding, preprocessing and the model load included on both sides
    logits_path = tmp / "pipeline_logits.npz"

    def pipeline_files(_: int) -> Path:
        infer_step(
            model=InferTarget(ARCHITECTURE, model_cfg, str(checkpoint), logits_path),
            settings=InferenceSettings(
                dataset_name="bench", dataset=dataset_cfg, shift=shift, seed=0, batch_size=batch_size, device=str(target)
            ),
            threads=threads,
        )
        return logits_path

    transform = timm.data.create_transform(
        input_size=data_config.input_size, interpolation=data_config.interpolation, crop_pct=data_config.crop_pct,
        crop_mode=data_config.crop_mode, mean=data_config.mean, std=data_config.std,
    )  # fmt: skip

    def bare_files(_: int) -> tuple[list[str], np.ndarray]:
        fresh = timm.create_model(ARCHITECTURE, pretrained=False, num_classes=N_CLASSES)
        fresh.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
        fresh = fresh.to(target).eval()
        dataset = timm.data.ImageDataset(str(root), transform=transform)
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=0)
        with torch.inference_mode():
            chunks = [fresh(x.to(target)).float().cpu() for x, _ in loader]
        return list(dataset.filenames()), torch.cat(chunks).numpy()

    times, outputs = _interleaved({"pipeline": pipeline_files, "bare_timm": bare_files}, 1, repeats, target)
    ours = load_scores(outputs["pipeline"][0])
    names, theirs = outputs["bare_timm"][0]
    position = {Path(name).as_posix(): i for i, name in enumerate(names)}
    order = [position[str(sid)] for sid in ours.sample_ids]
    diff = float(np.abs(np.asarray(ours.scores) - theirs[order]).max())
    rows.append(
        _row(
            "from_files",
            n_images,
            times,
            diff,
            **common,
            inputs=f"JPEG files decoded in each run (pipeline: {threads} decode threads; bare: DataLoader, "
            "num_workers=0); model load and, for the pipeline, the logits file included",
            decides_goal=False,
        )  # fmt: skip
    )
    return {
        "goal_ratio_at_least": THROUGHPUT_GOAL,
        "device": str(target),
        "torch_threads": threads,
        "repeats": repeats,
        "rows": rows,
        "met": rows[0]["met"],
    }


# --------------------------------------------------------------------------- entry point


def run(
    *,
    repo: Path = REPO,
    configs: Sequence[Path] | None = None,
    dry_run_repeats: int = 3,
    images_per_class: int = 16,
    batch_size: int = 32,
    image_size: int = 64,
    repeats: int = 5,
    device: str = "auto",
    threads: int | None = None,
) -> dict[str, Any]:
    """Both benchmarks and the machine they ran on."""
    import snakemake
    import timm
    import torch

    if not (repo / "Snakefile").is_file():
        raise FileNotFoundError(f"{repo}: no Snakefile here; pass --repo (the classwise checkout)")
    configs = list(configs) if configs is not None else paper_configs(repo)
    threads = threads or torch.get_num_threads()
    results: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "timm": timm.__version__,
            "snakemake": snakemake.__version__,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            # other processes competing for the cores inflate every timing; read them with these
            "load_average_1min_at_start": load_average(),
        }
    }
    with tempfile.TemporaryDirectory(prefix="classwise-bench-") as name:
        tmp = Path(name)
        results["dry_run"] = bench_dry_run(repo, configs, dry_run_repeats, tmp)
        results["throughput"] = bench_throughput(
            images_per_class=images_per_class, batch_size=batch_size, image_size=image_size, repeats=repeats,
            device=device, threads=threads, tmp=tmp,
        )  # fmt: skip
    results["machine"]["load_average_1min_at_end"] = load_average()
    return results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: run both benchmarks, write JSON atomically to ``--out``, print a summary."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench/pipeline.json"))
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout whose Snakefile is dry-run")
    parser.add_argument("--configs", type=Path, nargs="+", help="configs to dry-run (default: config/*.yaml but the demo's)")
    parser.add_argument("--dry-run-repeats", type=int, default=3)
    parser.add_argument("--images-per-class", type=int, default=16, help=f"{N_CLASSES} classes")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=64, help="model input edge in pixels")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds of the throughput rows")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    for name in ("dry_run_repeats", "images_per_class", "batch_size", "image_size", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} expects an integer >= 1, got {getattr(args, name)}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads expects an integer >= 1, got {args.threads}")
    results = run(
        repo=args.repo, configs=args.configs, dry_run_repeats=args.dry_run_repeats,
        images_per_class=args.images_per_class, batch_size=args.batch_size, image_size=args.image_size,
        repeats=args.repeats, device=args.device, threads=args.threads,
    )  # fmt: skip
    write_json(args.out, results)
    _print_summary(results)
    print(f"written to {args.out}")
    return results


def _print_summary(results: dict[str, Any]) -> None:
    dry = results["dry_run"]
    for row in dry["configs"]:
        state = f"{row['jobs']:4d} jobs" if "jobs" in row else "FAILED"
        print(f"dry run {Path(row['config']).name:>36s}: {state}, first run {row['first_run_seconds']:6.2f} s", end="")
        if "imports" in row:
            imports = row["imports"]
            largest = ", ".join(f"{name} {sec:.1f}" for name, sec in list(imports["largest_seconds"].items())[:4])
            print(f" (imports {imports['seconds_total']:.1f} s: {largest})", end="")
            if row["heavy_imports"]:
                print(f" IMPORTS {', '.join(row['heavy_imports'])}", end="")
        print()
        if "error" in row:
            print(row["error"])
    if dry["largest"]:
        big = dry["largest"]
        print(
            f"dry run of the largest ({Path(big['config']).name}, {big['jobs']} jobs): median "
            f"{big['seconds_median']:.2f} s, min {big['seconds_min']:.2f} s, CPU {big['cpu_seconds_median']:.2f} s "
            f"(goal < {DRY_RUN_GOAL_S:g} s: {'met' if dry['met'] else 'NOT met'})"
        )
        floor = dry["snakemake_floor"]
        print(
            f"Snakemake alone, {floor['jobs']} jobs that run nothing: median {floor['seconds_median']:.2f} s, "
            f"CPU {floor['cpu_seconds_median']:.2f} s"
        )
    for row in results["throughput"]["rows"]:
        speed = row["images_per_second"]
        print(
            f"throughput {row['row']:>10s}: pipeline {speed['pipeline']:8.1f} img/s, bare timm "
            f"{speed['bare_timm']:8.1f} img/s, ratio {row['ratio_pipeline_over_bare']:.2f} "
            f"(median {row['ratio_median']:.2f}, total {row['ratio_total']:.2f}) "
            f"(goal >= {THROUGHPUT_GOAL:g}: {'met' if row['met'] else 'NOT met'})"
        )
    machine = results["machine"]
    start, end = machine["load_average_1min_at_start"], machine["load_average_1min_at_end"]
    print(f"load average (1 min): {start} at start, {end} at end (other processes inflate every timing)")


if __name__ == "__main__":
    main()
