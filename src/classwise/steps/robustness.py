"""Workflow steps of the class-wise robustness analyses (Medi et al., 2024) and the
transformation tests (the model-testing catalogue), over cached logits and confusions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise import tables
from classwise.atomic import write_json, write_text
from classwise.references import cite
from classwise.shifts.corruptions import own_definitions_note


def _write_tables(frame: pd.DataFrame, caption: str, paths: Mapping[str, str | Path]) -> None:
    """Markdown/LaTeX rounded to four decimals, the CSV at full precision."""
    tables.write_tables(tables.rounded_display(frame), caption, paths, data=frame)


def _note(shifts: Iterable[str]) -> str:
    """The on-the-fly corruption note as a sentence to append (" The corruptions ..."), or ""."""
    note = own_definitions_note(shifts)
    return f" {note}" if note else ""


def _confusion(path: str | Path) -> tuple[np.ndarray, list[str]]:
    frame = pd.read_csv(path, index_col=0)
    return frame.to_numpy(dtype=np.float64), [str(c) for c in frame.columns]


#: What the mean-confusion directory holds when no shift attacks the models.
NO_ATTACK_NOTE = "No attack (PGD, AutoAttack or transfer) is evaluated on this dataset: no mean confusion under attack.\n"


def classwise_robustness_step(
    *,
    confusion_paths: Mapping[str, Mapping[str, str | Path]],
    attack_shifts: Sequence[str],
    corrupted_shifts: Sequence[str] = (),
    title: str,
    figure_path: str | Path,
    similarity_path: str | Path,
    mean_confusion_dir: str | Path,
    table_paths: Mapping[str, str | Path],
    across_shifts: AcrossShiftsPaths | None = None,
) -> None:
    """Figures 2-3 (class-wise accuracy and CFPS per shift and model), Figure 4 (confusion under
    each of ``attack_shifts`` averaged over models, ``<mean_confusion_dir>/<shift>.png``; the
    workflow passes every untargeted PGD, AutoAttack and transfer shift), Figure 7 (prediction
    similarity on clean data) and the long table of the same numbers. ``confusion_paths`` is
    ``{shift: {model: confusion.csv}}``. Without attacks the directory holds a note saying so
    (it is a declared output, so it always exists). With ``across_shifts``, the class-wise view
    across every shift too (:func:`across_shifts_outputs`)."""
    from classwise.plots.robustness import (
        plot_classwise_robustness,
        plot_mean_confusion,
        plot_prediction_similarity,
    )
    from classwise.robustness.classwise import classwise_table

    confusions: dict[str, dict[str, np.ndarray]] = {}
    class_names: list[str] = []
    for shift, per_model in confusion_paths.items():
        confusions[shift] = {}
        for model, path in per_model.items():
            confusions[shift][model], class_names = _confusion(path)
    plot_classwise_robustness(confusions, class_names, path=figure_path, title=title)
    reference = "clean" if "clean" in confusions else next(iter(confusions))
    plot_prediction_similarity(
        confusions[reference], path=similarity_path, title=f"{title}: similarity of class-wise predictions ({reference})"
    )
    mean_confusion_dir = Path(mean_confusion_dir)
    mean_confusion_dir.mkdir(parents=True, exist_ok=True)
    if not attack_shifts:
        write_text(mean_confusion_dir / "README.txt", NO_ATTACK_NOTE)
    for shift in attack_shifts:
        plot_mean_confusion(
            confusions[shift],
            class_names,
            path=mean_confusion_dir / f"{shift}.png",
            title=f"{title}: confusion under {shift}, mean over models",
        )
    _write_tables(
        classwise_table(confusions, class_names).set_index(["shift", "model", "class"]),
        f"{title}: class-wise accuracy and class false positive score per shift and model. "
        f"Source: {cite('medi2024', 'Figures 1-3')}.{_note(confusions)}",
        table_paths,
    )
    if across_shifts is not None:
        across_shifts_outputs(confusions, class_names, corrupted_shifts, title=title, paths=across_shifts)


@dataclass(frozen=True)
class AcrossShiftsPaths:
    """Where :func:`across_shifts_outputs` writes: two tables (each ``{"markdown", "csv",
    "latex"}``), two class x shift CSVs and two figures."""

    shift_summary: Mapping[str, str | Path]
    corruption_errors: Mapping[str, str | Path]
    class_shift_accuracy: str | Path
    class_shift_cfps: str | Path
    worst_classes_figure: str | Path
    spread_figure: str | Path


def across_shifts_outputs(
    confusions: Mapping[str, Mapping[str, np.ndarray]],
    class_names: Sequence[str],
    corrupted_shifts: Sequence[str],
    *,
    title: str,
    paths: AcrossShiftsPaths,
    listed: int = 20,
) -> None:
    """The class-wise view across the shifts of one dataset: the shift summary table (A and WCA
    per shift and model, with the change from clean), the class x shift accuracy and CFPS
    matrices (CSV), the corruption errors per class (mean over every corrupted copy, and the
    relative drop; the Markdown lists each model's ``listed`` classes of highest mean corruption
    error, the CSV all), the worst classes x shifts heatmap and the spread of class-wise
    accuracy per shift."""
    from classwise.plots import save_png
    from classwise.plots.many_classes import accuracy_spread_figure, worst_classes_by_shift_figure
    from classwise.robustness.across_shifts import (
        REFERENCE_SHIFT,
        class_shift_matrix,
        corruption_summary,
        shift_summary,
        shift_summary_display,
    )
    from classwise.robustness.classwise import classwise_values

    summary = shift_summary(confusions, class_names)
    tables.write_tables(
        shift_summary_display(summary),
        f"{title}: accuracy A and worst-class accuracy WCA (its class in brackets) per shift and model, each "
        f"followed by its change from {REFERENCE_SHIFT}. Source: {cite('medi2024', 'Figures 1-3')}, in the terms of "
        f"{cite('bitterwolf2022', 'Table 1')}.{_note(confusions)}",
        paths.shift_summary,
        data=summary,
    )
    write_text(paths.class_shift_accuracy, tables.to_csv(class_shift_matrix(confusions, class_names)))
    write_text(paths.class_shift_cfps, tables.to_csv(class_shift_matrix(confusions, class_names, value="cfps")))
    errors = corruption_summary(confusions, class_names, corrupted_shifts)
    if errors.empty:
        display = pd.DataFrame({"note": [f"no corrupted copy of the dataset is evaluated beside {REFERENCE_SHIFT}"]})
    else:
        display = (
            errors.sort_values(["model", "mean_corruption_error"], ascending=[True, False], kind="stable")
            .groupby(level="model", sort=False)
            .head(listed)
        )
        display = tables.rounded_display(display.reset_index(["class", "class_name"]))
    tables.write_tables(
        display,
        f"{title}: class-wise error, clean and averaged over the {len(corrupted_shifts)} corrupted copies "
        f"(every corruption and severity); relative drop = (clean accuracy - mean corrupted accuracy) / clean "
        f"accuracy. Each model's {listed} classes of highest mean corruption error; the CSV holds every class. "
        f"Source: {cite('medi2024', 'Figure 3')}, one number per class.{_note(corrupted_shifts)}",
        paths.corruption_errors,
        data=errors,
    )
    accuracy, _ = classwise_values(confusions, len(class_names))
    save_png(
        worst_classes_by_shift_figure(accuracy, class_names, title=f"{title}: the worst classes across shifts"),
        paths.worst_classes_figure,
    )
    save_png(accuracy_spread_figure(accuracy, title=f"{title}: class-wise accuracy per shift"), paths.spread_figure)


def transformation_tests_step(
    *,
    clean_path: str | Path,
    shifted_paths: Mapping[str, str | Path],
    thresholds: Mapping[str, Any],
    caption: str,
    table_paths: Mapping[str, str | Path],
) -> None:
    """The transformation tests of one model: accuracy, macro F1 and flip rate against clean per
    corruption, each marked pass / warn / fail."""
    from classwise.robustness.transformation_tests import Thresholds, transformation_test_table

    table = transformation_test_table(
        clean_path,
        dict(shifted_paths),
        thresholds=Thresholds.from_config(thresholds, field="robustness.transformation_tests.thresholds"),
    )
    _write_tables(table, caption, table_paths)


def targeted_success_step(
    *,
    runs: Mapping[str, Mapping[int, str | Path]],
    clean_paths: Mapping[str, str | Path],
    title: str,
    figure_path: str | Path,
    table_paths: Mapping[str, str | Path],
) -> None:
    """Figure 5: the targeted attack's success rate per target class, per model; and its table.
    ``runs`` is ``{model: {target: logits.npz}}``."""
    from classwise.plots.robustness import plot_targeted_success
    from classwise.robustness.targeted import targeted_success_table

    frames, rates, class_names = {}, {}, []
    for model, by_target in runs.items():
        frame = targeted_success_table(dict(by_target), clean=clean_paths[model])
        frames[model] = frame
        from classwise.logits_io import load_outputs

        class_names = load_outputs(clean_paths[model]).class_names.tolist()
        full = np.full(len(class_names), np.nan)
        full[frame.index.to_numpy(dtype=int)] = frame["success_rate"].to_numpy(dtype=np.float64)
        rates[model] = full
    plot_targeted_success(rates, class_names, path=figure_path, title=title)
    _write_tables(
        pd.concat(frames, names=["model"]),
        f"{title}: success rate = share of samples not of the target class predicted as the target. "
        f"Source: {cite('medi2024', 'Figure 5')}.",
        table_paths,
    )


def corruption_grid_step(
    *,
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    seed: int,
    corruptions: Sequence[str] | None,
    severities: Sequence[int],
    sample_index: int,
    figure_path: str | Path,
) -> None:
    """One evaluation image under every corruption and severity, with the exact pixels (same
    per-sample seed) that inference feeds the models."""
    from classwise.data.imageset import ImageSet
    from classwise.data.sources import open_split
    from classwise.plots.corruption_grid import plot_corruption_grid

    # One image is decoded, not the whole split: image files of a folder differ in size, and a
    # split of ImageNet does not fit in memory.
    opened = open_split(dict(dataset_cfg), "test", name=dataset_name)
    index = min(int(sample_index), len(opened) - 1)
    if not isinstance(opened, ImageSet):
        opened, index = opened.subset([index]).to_imageset(), 0
    images = opened
    plot_corruption_grid(
        images.images[index],
        sample_id=str(images.sample_ids[index]),
        base_seed=seed,
        path=figure_path,
        corruptions=list(corruptions) if corruptions else None,
        severities=list(severities),
        title=f"{dataset_name}: sample {images.sample_ids[index]} under every corruption",
    )


def robust_fairness_step(
    *,
    clean_paths: Mapping[str, str | Path],
    attacked_paths: Mapping[str, str | Path],
    shift: str,
    caption: str,
    title: str,
    table_paths: Mapping[str, str | Path],
    figure_path: str | Path,
    json_path: str | Path,
) -> None:
    """The robust-fairness table and figure of every model under one attack
    (:mod:`classwise.metrics.robust_fairness`); ``clean_paths`` and ``attacked_paths`` map each
    model to its clean and attacked outputs, matched by sample id. The JSON holds, per model,
    the library's JSON with the overall ``accuracy`` and ``robust_accuracy`` beside it."""
    from classwise.metrics.robust_fairness import robust_fairness_of_files
    from classwise.plots.robustness import plot_clean_vs_robust

    results = {}
    class_names: list[str] = []
    for model, clean in clean_paths.items():
        results[model], clean_file = robust_fairness_of_files(clean, attacked_paths[model])
        class_names = clean_file.class_names.tolist()
    # everything computed before anything is written
    display, data = tables.robust_fairness_table(results, class_names)
    tables.write_tables(display, caption, table_paths, data=data)
    plot_clean_vs_robust(results, class_names, path=figure_path, title=title)
    write_json(
        json_path,
        {
            "shift": shift,
            "class_names": class_names,
            "models": {
                model: {"accuracy": result.accuracy, "robust_accuracy": result.robust_accuracy, **result.to_json()}
                for model, result in results.items()
            },
        },
    )


def transfer_matrix_step(
    *,
    clean_paths: Mapping[str, str | Path],
    transfer_paths: Mapping[tuple[str, str, str], str | Path],
    caption: str,
    table_paths: Mapping[str, str | Path],
) -> None:
    """The transfer matrix of one dataset (:func:`classwise.robustness.transfer.transfer_matrix`):
    ``clean_paths`` maps each target model to its clean outputs, ``transfer_paths`` each (source,
    attack, target) to the target's outputs under the source's transfer attack. Markdown and LaTeX show
    the matrix, the CSV one row per pair at full precision."""
    from classwise.robustness.transfer import transfer_matrix

    cells = transfer_matrix(clean_paths, transfer_paths)
    tables.write_tables(tables.transfer_matrix_table(cells), caption, table_paths, data=cells)
