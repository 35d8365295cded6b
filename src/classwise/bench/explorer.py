"""Size and speed of the explorer page at ImageNet's scale (``python -m classwise.bench.explorer``,
part of ``make bench``).

Goal (issue 30): for 1,000 classes x 100 shifts x 4 models the page stays under 25 MB and
becomes interactive in under 3 s in headless Chromium on 2 cores.

The data are generated (:func:`synthetic_view`): per model and shift, 50 images per class whose
accuracy falls with the shift's severity and the class's difficulty, the errors going mostly to
four confusable classes, counted into a confusion matrix and reduced as the workflow reduces
them (:func:`classwise.explorer.top_confusions`, the recall's Clopper-Pearson interval). The
page is written by :mod:`classwise.explorer` and opened in Debian's ``chromium`` through
Playwright (never a browser of Playwright's own), pinned to 2 cores: time to interactive is the
page's own ``performance.now()`` when it sets ``data-ready`` (from the start of navigation:
reading the file, parsing the data, drawing the table and the heatmap), the median and the
largest of ``--loads`` fresh loads. Then the time to show a class typed into the search box,
and to redraw the heatmap for another model.

The job that writes the page reads 400 ``per_class.csv`` and ``confusion.csv`` files at this
size; their reading is timed on one pair and multiplied (``read_seconds_estimate``).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.atomic import write_json
from classwise.bench.pipeline import load_average
from classwise.explorer import ViewData, ViewFiles, explorer_payload, read_view, top_confusions, view_payload, write_explorer
from classwise.explorer.data import DEFAULT_CONFUSIONS, SUMMARY_COLUMNS

GOAL_BYTES = 25_000_000
GOAL_SECONDS = 3.0
SAMPLES_PER_CLASS = 50

#: The flags every headless Chromium of the project gets (tests/workflow/test_report.py passes them too):
#: no sandbox (root in a container), no GPU, and nothing that reaches the network on its own.
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
BROWSERS = ("chromium", "chromium-browser")

#: The page once its script has drawn it (or failed: ``data-ready="error"`` and ``data-error``), as a
#: selector: waiting on a selector evaluates no script in the page, which its CSP would refuse.
READY = "html:not([data-ready='false'])"


def find_chromium() -> str:
    """``$CHROMIUM``, or Debian's ``chromium`` on PATH; a ``RuntimeError`` saying how to get it."""
    named = os.environ.get("CHROMIUM")
    if named:
        return named
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("no chromium on PATH: install Debian's package (apt-get install chromium) or set $CHROMIUM")


@contextmanager
def chromium(executable: str | None = None) -> Iterator[Any]:
    """A headless Chromium (``executable``, default :func:`find_chromium`) driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable or find_chromium(), args=list(CHROMIUM_FLAGS))
        try:
            yield browser
        finally:
            browser.close()


def wait_until_ready(page: Any) -> None:
    """Wait, without a time limit, for the page's ``data-ready``; a ``RuntimeError`` with the
    page's message when it could not start."""
    page.wait_for_selector(READY, state="attached", timeout=0)
    if page.evaluate("document.documentElement.dataset.ready") != "true":
        raise RuntimeError(f"the explorer could not start: {page.evaluate('document.documentElement.dataset.error')}")


def synthetic_view(classes: int, shifts: int, models: int, *, seed: int = 0, samples: int = SAMPLES_PER_CLASS) -> ViewData:
    """A dataset view of ``classes`` x ``shifts`` x ``models`` as the workflow would read it
    (see the module docstring). The first shift is ``clean``; the summary compares each shift
    with it on the same samples."""
    from classwise.metrics.cfps import class_false_positive_score
    from classwise.metrics.intervals import clopper_pearson

    rng = np.random.default_rng(seed)
    names = [f"class {c:04d}" for c in range(classes)]
    shift_names = ["clean", *(f"shift_{j:03d}_s{1 + j % 5}" for j in range(1, shifts))]
    model_names = [f"model_{i}" for i in range(models)]
    difficulty = rng.normal(0.0, 1.0, classes)
    severity = np.concatenate([[0.0], rng.uniform(0.0, 2.5, shifts - 1)])
    strength = np.linspace(1.6, 0.8, models)
    neighbours = rng.integers(0, classes, size=(classes, 4))
    labels = np.repeat(np.arange(classes), samples)
    shape = (models, shifts, classes)
    support = np.full(shape, samples, dtype=np.int64)
    hits = np.zeros(shape, dtype=np.int64)
    cfps = np.zeros(shape)
    confused_with = np.zeros((*shape, DEFAULT_CONFUSIONS), dtype=np.int64)
    confused_count = np.zeros((*shape, DEFAULT_CONFUSIONS), dtype=np.int64)
    for i in range(models):
        for j in range(shifts):
            logit = strength[i] - severity[j] - difficulty
            p = 1.0 / (1.0 + np.exp(-logit))
            right = rng.random(labels.size) < p[labels]
            to_neighbour = rng.random(labels.size) < 0.6
            predicted = np.where(
                to_neighbour, neighbours[labels, rng.integers(0, 4, labels.size)], rng.integers(0, classes, labels.size)
            )
            predicted = np.where(right, labels, predicted)
            confusion = np.bincount(labels * classes + predicted, minlength=classes * classes).reshape(classes, classes)
            hits[i, j] = np.diag(confusion)
            cfps[i, j] = class_false_positive_score(confusion)
            confused_with[i, j], confused_count[i, j] = top_confusions(confusion)
    recall = hits / support
    low, high = clopper_pearson(hits, support)
    rows = []
    for j, shift in enumerate(shift_names):
        for i, model in enumerate(model_names):
            accuracy = hits[i, j].sum() / support[i, j].sum()
            clean = hits[i, 0].sum() / support[i, 0].sum()
            worst = int(np.argmin(recall[i, j]))
            wca = recall[i, j, worst]
            a_low, a_high = clopper_pearson(hits[i, j].sum(), support[i, j].sum())
            rows.append(
                {
                    "shift": shift,
                    "model": model,
                    "accuracy": accuracy,
                    "accuracy_low": float(a_low),
                    "accuracy_high": float(a_high),
                    "worst_class_accuracy": wca,
                    "worst_class_low": float(low[i, j, worst]),
                    "worst_class_high": float(high[i, j, worst]),
                    "worst_class": worst,
                    "worst_class_tied": int(np.count_nonzero(recall[i, j] == wca)),
                    "n": int(support[i, j].sum()),
                    "reference_n": int(support[i, 0].sum()),
                    "pairing": "reference" if j == 0 else "same samples",
                    "accuracy_change": accuracy - clean,
                    "worst_class_accuracy_change": wca - recall[i, 0].min(),
                }
            )
    return ViewData(
        dataset="synthetic",
        labels="original",
        models=model_names,
        shifts=shift_names,
        class_names=names,
        support=support,
        hits=hits,
        recall=recall,
        recall_low=low,
        recall_high=high,
        cfps=cfps,
        confused_with=confused_with,
        confused_count=confused_count,
        summary=pd.DataFrame(rows).set_index(["shift", "model"])[list(SUMMARY_COLUMNS)],
    )


def write_synthetic_explorer(path: str | Path, classes: int, shifts: int, models: int, *, seed: int = 0) -> int:
    """Write the explorer of :func:`synthetic_view` to ``path``; its size in bytes."""
    view = synthetic_view(classes, shifts, models, seed=seed)
    payload = explorer_payload(
        [view_payload(view)], title="classwise explorer (synthetic data)", description="Generated data.", confidence=0.95
    )
    return write_explorer(path, payload)


def _read_seconds(view: ViewData) -> float:
    """Seconds to read one (model, shift)'s per_class.csv and confusion.csv at the view's size,
    written as the workflow writes them."""
    c = len(view.class_names)
    rng = np.random.default_rng(1)
    confusion = rng.multinomial(SAMPLES_PER_CLASS, np.full(c, 1.0 / c), size=c)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        per_class = pd.DataFrame(
            {
                "class": np.arange(c),
                "name": view.class_names,
                "support": view.support[0, 0],
                "recall": view.recall[0, 0],
                "cfps": view.cfps[0, 0],
                "recall_ci_low": view.recall_low[0, 0],
                "recall_ci_high": view.recall_high[0, 0],
            }
        )
        per_class.to_csv(folder / "per_class.csv", index=False)
        pd.DataFrame(confusion, index=pd.Index(view.class_names, name="true"), columns=view.class_names).to_csv(
            folder / "confusion.csv"
        )
        write_json(folder / "worst_class.json", {"n_samples": 0, "metrics": {"A": {"value": 0.5}, "WCA": {"value": 0.0}}})
        files = {kind: str(folder / f"{kind}.{ext}") for kind, ext in (("per_class", "csv"), ("confusion", "csv"))}
        files["worst_class"] = str(folder / "worst_class.json")
        one = ViewFiles("bench", "original", ("m",), ("s",), {"m": {"s": files}})
        start = time.perf_counter()
        read_view(one)
        return time.perf_counter() - start


@contextmanager
def two_cores() -> Iterator[list[int]]:
    """This process (and the browser it starts) on 2 of its cores, the first two it may use,
    for the time of the block; yields the cores (none where the platform cannot pin)."""
    if not hasattr(os, "sched_setaffinity"):  # pragma: no cover - not on every platform
        yield []
        return
    before = os.sched_getaffinity(0)
    cores = sorted(before)[:2]
    os.sched_setaffinity(0, cores)
    try:
        yield cores
    finally:
        os.sched_setaffinity(0, before)


def measure(path: Path, *, loads: int, executable: str | None = None) -> dict[str, Any]:
    """Open the page ``loads`` times in fresh browser contexts: the page's time to interactive
    and the wall time around it (seconds), then the time to show a class typed into the search
    box and to redraw the heatmap of another model."""
    page_seconds, wall_seconds = [], []
    with chromium(executable) as browser:
        for _ in range(loads):
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            start = time.perf_counter()
            page.goto(path.as_uri(), wait_until="commit", timeout=0)
            wait_until_ready(page)
            wall_seconds.append(time.perf_counter() - start)
            page_seconds.append(float(page.evaluate("document.documentElement.dataset.readyMs")) / 1000.0)
            context.close()
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(path.as_uri(), timeout=0)
        wait_until_ready(page)
        search_ms = page.evaluate(
            """() => {
                const input = document.getElementById("class-search");
                const start = performance.now();
                input.value = "class 0500";
                input.dispatchEvent(new Event("input"));
                document.getElementById("class-panel").getBoundingClientRect();
                return performance.now() - start;
            }"""
        )
        model_ms = page.evaluate(
            """() => {
                const select = document.getElementById("heatmap-model");
                const start = performance.now();
                select.value = String(select.options.length - 1);
                select.dispatchEvent(new Event("change"));
                return performance.now() - start;
            }"""
        )
        version = browser.version
        context.close()
    return {
        "seconds_to_interactive": statistics.median(page_seconds),
        "seconds_to_interactive_max": max(page_seconds),
        "seconds_to_interactive_each": page_seconds,
        "wall_seconds_to_interactive_each": wall_seconds,
        "search_seconds": search_ms / 1000.0,
        "heatmap_model_switch_seconds": model_ms / 1000.0,
        "chromium": version,
    }


def run(classes: int, shifts: int, models: int, *, loads: int, executable: str | None = None) -> dict[str, Any]:
    with two_cores() as cores:
        return _run(classes, shifts, models, loads=loads, executable=executable, cores=cores)


def _run(classes: int, shifts: int, models: int, *, loads: int, executable: str | None, cores: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {
        "shape": {"classes": classes, "shifts": shifts, "models": models, "samples_per_class": SAMPLES_PER_CLASS},
        "machine": {
            "cpus": os.cpu_count(),
            "cores_used": cores,
            "python": platform.python_version(),
            "load_average_1min_at_start": load_average(),
        },
    }
    start = time.perf_counter()
    view = synthetic_view(classes, shifts, models)
    results["generate_seconds"] = time.perf_counter() - start
    results["read_seconds_estimate"] = _read_seconds(view) * models * shifts
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "explorer.html"
        start = time.perf_counter()
        payload = explorer_payload([view_payload(view)], title="classwise explorer (synthetic data)", confidence=0.95)
        results["bytes"] = write_explorer(path, payload)
        results["build_seconds"] = time.perf_counter() - start
        results.update(measure(path, loads=loads, executable=executable))
    results["machine"]["load_average_1min_at_end"] = load_average()
    results["goals"] = {"bytes": GOAL_BYTES, "seconds_to_interactive": GOAL_SECONDS}
    results["meets_goals"] = {
        "bytes": results["bytes"] < GOAL_BYTES,
        "seconds_to_interactive": results["seconds_to_interactive_max"] < GOAL_SECONDS,
    }
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/bench/explorer.json")
    parser.add_argument("--classes", type=int, default=1_000)
    parser.add_argument("--shifts", type=int, default=100)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--loads", type=int, default=3, help="fresh page loads timed (default 3)")
    parser.add_argument("--chromium", default=None, help="the browser to drive (default: $CHROMIUM or chromium on PATH)")
    args = parser.parse_args(argv)
    results = run(args.classes, args.shifts, args.models, loads=args.loads, executable=args.chromium)
    write_json(args.out, results)
    print(f"{'bytes':>28s}: {results['bytes']:,} (goal < {GOAL_BYTES:,})")
    print(
        f"{'seconds to interactive':>28s}: {results['seconds_to_interactive']:.2f} median, "
        f"{results['seconds_to_interactive_max']:.2f} max (goal < {GOAL_SECONDS})"
    )
    print(f"{'search / model switch':>28s}: {results['search_seconds']:.3f} s / {results['heatmap_model_switch_seconds']:.3f} s")
    print(f"{'read 400 file pairs (est.)':>28s}: {results['read_seconds_estimate']:.1f} s")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
