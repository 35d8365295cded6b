"""Workflow steps that aggregate per-model metrics into paper-style tables and figures."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise import tables
from classwise.atomic import write_text
from classwise.errors import InputError
from classwise.metrics.suite import skipped_worst_class_metrics
from classwise.plots.classwise import plot_class_bars


def _read_json(path: str | Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None


def worst_class_table_step(
    *,
    metrics_paths: Mapping[str, str | Path],
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """Table 1 of worst-class-metrics.txt for one (dataset, label view, shift)."""
    documents = {model: _read_json(path) for model, path in metrics_paths.items()}
    first = next(iter(documents.values()))
    parameters = first["parameters"]
    n_classes, k = int(first["n_classes"]), int(parameters["k"])
    layout = dict(
        superclasses=bool(parameters["superclasses"]),
        balanced_pairs=first.get("label_view", "original") != "original",
    )
    # the metrics job says which rows were trivial for its data (older documents: from C alone)
    skipped = first.get("skipped") or skipped_worst_class_metrics(n_classes, k=k, ns=parameters["n"])
    all_rows = tables.paper_rows(parameters["n"], k, **layout)
    rows = [row for row in all_rows if row not in skipped]
    frame = tables.metric_table(documents, rows, source=str(next(iter(metrics_paths.values()))))
    note = tables.skipped_rows_note(all_rows, skipped)
    paths = {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}
    tables.write_tables(frame, f"{caption} {note}" if note else caption, paths)


def decisiveness_tables_step(
    *,
    metrics_paths: Mapping[str, str | Path],
    caption: str,
    table_paths: Mapping[str, str | Path],
    sweep_paths: Mapping[str, str | Path],
) -> None:
    """Tables 1 (reported / measured) and 2 (gamma sweep) of decisiveness-robustness.txt.

    ``table_paths`` and ``sweep_paths`` map ``markdown``, ``csv`` and ``latex`` to files.
    """
    documents = {model: _read_json(path) for model, path in metrics_paths.items()}
    gamma = next(iter(documents.values()))["parameters"]["gamma"]
    tables.write_tables(
        tables.decisiveness_table(documents), f"{caption} Reported / measured metrics (gamma = {gamma:g}).", table_paths
    )
    tables.write_tables(tables.gamma_sweep_table(documents), f"{caption} Effect of gamma on the reported metrics.", sweep_paths)


def per_class_figures_step(
    *,
    per_class_paths: Mapping[str, str | Path],
    metrics_paths: Mapping[str, str | Path],
    title: str,
    recall_path: str | Path,
    cfps_path: str | Path,
) -> None:
    """Per-class recall (each model's accuracy as a dashed line) and per-class CFPS bars across
    models. (Each model's confusion heatmap comes with its worst-class metrics.)"""
    frames = {model: pd.read_csv(path) for model, path in per_class_paths.items()}
    first = next(iter(frames.values()))
    names = first["name"].astype(str).tolist()
    accuracies = {model: float(_read_json(path)["metrics"]["A"]["value"]) for model, path in metrics_paths.items()}
    plot_class_bars(
        {model: frame["recall"].to_numpy(dtype=np.float64) for model, frame in frames.items()},
        names,
        ylabel="class-wise accuracy (recall)",
        title=f"{title}: class-wise accuracy",
        path=recall_path,
        reference_lines=accuracies,
    )
    plot_class_bars(
        {model: frame["cfps"].to_numpy(dtype=np.float64) for model, frame in frames.items()},
        names,
        ylabel="class false positive score",
        title=f"{title}: class false positive score",
        path=cfps_path,
    )


#: Output file name -> the paper table or figure it mirrors (for the run's README).
MIRRORS: dict[str, str] = {
    "worst_class": "worst-class-metrics.txt, Table 1 (original labels) / Table 2 (cleaned labels)",
    "decisiveness": "decisiveness-robustness.txt, Table 1 (reported / measured)",
    "gamma_sweep": "decisiveness-robustness.txt, Table 2 (effect of gamma)",
    "reliability": "decisiveness-robustness.txt, Figure 1",
    "per_class_recall": "classwise-robustness-cfps.txt, Figure 1 (class-wise accuracy)",
    "per_class_cfps": "classwise-robustness-cfps.txt, Figure 2 (class false positive score)",
    "confusion": "classwise-robustness-cfps.txt, Figure 4 (confusion matrix)",
}


def results_readme_step(
    *,
    description: str,
    output_dir: str | Path,
    outputs: list[str],
    readme_path: str | Path,
    notes: Sequence[str] = (),
) -> None:
    """``<output_dir>/README.md``: what the run reproduces, which file mirrors which paper table,
    and one line per analysis the config's defaults could not apply (skipped or adapted)."""
    root = Path(output_dir)
    lines = ["# Results", ""]
    if description.strip():
        lines += [description.strip(), ""]
    lines += ["| file | mirrors |", "|:--|:--|"]
    for output in sorted(outputs):
        relative = Path(output).relative_to(root) if Path(output).is_relative_to(root) else Path(output)
        stem = relative.stem.split("_")[0] if relative.stem.startswith(("reliability_", "confusion_")) else relative.stem
        lines.append(f"| `{relative}` | {MIRRORS.get(stem, '')} |")
    if notes:
        lines += ["", "## Skipped or adapted", ""]
        lines += [f"- {note}" for note in notes]
    write_text(readme_path, "\n".join(lines) + "\n")
