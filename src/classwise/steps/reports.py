"""Workflow steps that aggregate per-model metrics into paper-style tables and figures."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.atomic import write_text
from classwise.errors import InputError
from classwise.outputs import record_of
from classwise.references import REFERENCES, cite
from classwise.shifts.corruptions import own_definitions_note

# The tables (pandas), the metrics and the figures are imported by the steps that use them: the
# README step uses none, and a job imports this module before its step starts.
if TYPE_CHECKING:
    from classwise.steps.metrics import WorstClassSettings


def _read_json(path: str | Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None


def worst_class_rows(
    *, k: int, ns: Sequence[int], superclasses: bool, label_view: str, skipped: Mapping[str, Mapping[str, str]]
) -> tuple[list[str], str]:
    """The rows of Table 1 of Bitterwolf et al., 2022 (Table 2's shape, with
    ``W2CA_balanced``, on a label view other than the original) and the caption's sentences
    on what is missing ("" if nothing). ``skipped`` maps each model to the metrics it left out,
    with why (:func:`skipped_worst_class_metrics`, or scores that hard predictions lack): a
    row every model skips is left out, a row some skip is ``n/a`` for them."""
    from classwise import tables
    from classwise.metrics.catalogue import paper_rows

    all_rows = paper_rows(ns, k, superclasses=superclasses, balanced_pairs=label_view != "original")
    first = next(iter(skipped.values()))
    everywhere = {row: why for row, why in first.items() if all(row in s for s in skipped.values())}
    rows = [row for row in all_rows if row not in everywhere]
    note = " ".join(filter(None, [tables.skipped_rows_note(all_rows, everywhere), tables.unavailable_rows_note(rows, skipped)]))
    return rows, note


def _rows_of(documents: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], str, dict[str, Mapping[str, str]]]:
    """:func:`worst_class_rows` for the parameters the worst-class JSONs (model -> document)
    were computed with, and each model's skipped metrics: the metrics job says which rows were
    trivial for its data or need scores (older documents: from C alone)."""
    from classwise.metrics.catalogue import skipped_for_class_count

    first = next(iter(documents.values()))
    parameters = first["parameters"]
    k, ns, n_classes = int(parameters["k"]), parameters["n"], int(first["n_classes"])
    skipped = {
        model: document.get("skipped") or skipped_for_class_count(n_classes, k=k, ns=ns) for model, document in documents.items()
    }
    rows, note = worst_class_rows(
        k=k,
        ns=ns,
        superclasses=bool(parameters["superclasses"]),
        label_view=first.get("label_view", "original"),
        skipped=skipped,
    )
    return rows, note, skipped


def _with_note(caption: str, note: str) -> str:
    return f"{caption} {note}" if note else caption


def worst_class_table_step(
    *,
    metrics_paths: Mapping[str, str | Path],
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
    interval_paths: Mapping[str, str | Path] | None = None,
    interval_caption: str = "",
) -> None:
    """Table 1 of Bitterwolf et al., 2022 for one (dataset, label view, shift) and, with
    ``interval_paths`` (``markdown``, ``csv``, ``latex``), the same table with each number's
    interval (the metrics were computed with the bootstrap on)."""
    from classwise import tables

    documents = {model: _read_json(path) for model, path in metrics_paths.items()}
    rows, note, skipped = _rows_of(documents)
    source = str(next(iter(metrics_paths.values())))
    frame = tables.metric_table(documents, rows, source=source, skipped=skipped)
    paths = {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}
    tables.write_tables(frame, _with_note(caption, note), paths)
    if interval_paths is not None:
        intervals = tables.interval_table(documents, rows, source=source, skipped=skipped)
        tables.write_tables(intervals, _with_note(interval_caption, note), interval_paths)


def compare_models_step(
    *,
    logits_paths: Mapping[str, str | Path],
    label_view: str,
    view_labels_path: str | Path | None,
    settings: WorstClassSettings,
    caption: str,
    table_paths: Mapping[str, str | Path],
    workers: int | None = None,
    ranking_paths: Mapping[str, str | Path] | None = None,
    ranking_caption: str = "",
) -> None:
    """Every pair of models on one (dataset, label view, shift), compared on the rows of the
    worst-class table (:func:`classwise.metrics.compare.compare_models`: paired by sample id,
    the same bootstrap draws for every model); written as :func:`tables.comparison_tables`.
    The settings are the worst-class metrics' (the rule passes the same keys); the intervals
    take the bootstrap's confidence, and with the bootstrap off there is nothing to compare
    (``InputError``). With ``ranking_paths``, the models ranked on A, WCA and the worst-class
    table's W{n}CR (:func:`classwise.metrics.ranking.model_ranking`, the same samples and seed,
    so the same draws) from the same files: one job start for both."""
    import numpy as np

    from classwise import tables
    from classwise.logits_io import ScoresFile
    from classwise.metrics.catalogue import MetricParameters, skipped_for_class_count, unavailable_for_hard_predictions
    from classwise.metrics.compare import compare_models
    from classwise.steps.metrics import load_view, view_superclasses

    bootstrap = settings.bootstrap_settings
    if bootstrap is None:
        # the workflow plans none then (resolve_comparisons), but a direct caller would get an
        # AttributeError deep in the step instead
        raise InputError("a model comparison needs the bootstrap on (replicates > 0)", field="metrics.bootstrap.replicates")
    k, ns = settings.k, settings.n
    files, hard = {}, {}
    for model, path in logits_paths.items():
        view = load_view(path, label_view, view_labels_path, hard_predictions=True)
        files[model] = ScoresFile(
            view.scores, view.labels, view.kind, view.sample_ids, view.class_names, path=str(path),
            hard_predictions=view.hard_predictions, top_k=view.top_k, abstained=view.abstained,
        )  # fmt: skip
        hard[model] = view.hard_predictions
    n_classes = next(iter(files.values())).n_classes
    groups = view_superclasses(view, settings.superclasses)  # the same columns for every model of the shift
    comparisons = compare_models(
        files, superclasses=groups, parameters=MetricParameters(k=k, ns=ns), bootstrap=bootstrap, workers=workers
    )
    # the same labels for every model: the same metrics trivial; hard predictions lack the score metrics
    trivial = skipped_for_class_count(n_classes, k=k, ns=ns, with_samples=int(np.unique(next(iter(files.values())).labels).size))
    skipped = {
        model: {**unavailable_for_hard_predictions(files[model].top_k, k=k, ns=ns), **trivial} if hard[model] else trivial
        for model in files
    }
    rows, note = worst_class_rows(k=k, ns=ns, superclasses=bool(groups), label_view=label_view, skipped=skipped)
    display, data = tables.comparison_tables(
        {pair: c.to_json()["metrics"] for pair, c in comparisons.items()},
        rows,
        unavailable={(a, b): set(skipped[a]) | set(skipped[b]) for a, b in comparisons},
    )
    n = next(iter(comparisons.values())).n_samples  # every model matched to the first: the same samples
    ranking = None
    if ranking_paths is not None:
        from classwise.metrics.outcomes import SampleOutcomes
        from classwise.metrics.ranking import model_ranking

        ranking = model_ranking(
            {model: SampleOutcomes.from_scores_file(scores) for model, scores in files.items()},
            ns=ns, n_classes=n_classes, replicates=bootstrap.replicates, confidence=bootstrap.confidence,
            seed=bootstrap.seed, workers=workers,
        )  # fmt: skip
    tables.write_tables(display, _with_note(f"{caption} n = {n} samples.", note), table_paths, data=data)
    if ranking is not None and ranking_paths is not None:
        first = ranking.iloc[0]
        tables.write_tables(
            tables.model_ranking_display(ranking),
            f"{ranking_caption} n = {int(first['n_samples'])} samples, {int(first['n_classes'])} classes with samples.",
            ranking_paths,
            data=ranking,
        )


def decisiveness_tables_step(
    *,
    metrics_paths: Mapping[str, str | Path],
    caption: str,
    sweep_caption: str,
    table_paths: Mapping[str, str | Path],
    sweep_paths: Mapping[str, str | Path],
    interval_paths: Mapping[str, str | Path] | None = None,
    interval_caption: str = "",
) -> None:
    """Tables 1 (reported / measured; ``caption``, to which the gamma the metrics were computed
    with is added) and 2 (gamma sweep, ``sweep_caption``) of George et al., 2020 and, with
    ``interval_paths``, Table 1 with each number's bootstrap interval.

    ``table_paths``, ``sweep_paths`` and ``interval_paths`` map ``markdown``, ``csv`` and
    ``latex`` to files.
    """
    from classwise import tables

    documents = {model: _read_json(path) for model, path in metrics_paths.items()}
    gamma = next(iter(documents.values()))["parameters"]["gamma"]
    tables.write_tables(tables.decisiveness_table(documents), f"{caption} Computed at gamma = {gamma:g}.", table_paths)
    if interval_paths is not None:
        tables.write_tables(tables.decisiveness_table(documents, intervals=True), interval_caption, interval_paths)
    tables.write_tables(tables.gamma_sweep_table(documents), sweep_caption, sweep_paths)


def per_class_figures_step(
    *,
    per_class_paths: Mapping[str, str | Path],
    metrics_paths: Mapping[str, str | Path],
    title: str,
    recall_path: str | Path,
    cfps_path: str | Path,
    worst_probability_path: str | Path | None = None,
    confidence: float = 0.95,
) -> None:
    """Per-class recall with its interval as error bars (the ``confidence`` Clopper-Pearson
    interval of ``per_class.csv``; each model's accuracy as a dashed line) and per-class CFPS
    bars across models; with ``worst_probability_path``, how often each class is the worst in
    the bootstrap replicates of the metrics that name one. (Each model's confusion heatmap
    comes with its worst-class metrics.)"""
    import numpy as np
    import pandas as pd

    from classwise import tables
    from classwise.plots import FigureLabels
    from classwise.plots.classwise import plot_class_bars, plot_worst_probabilities

    frames = {model: pd.read_csv(path) for model, path in per_class_paths.items()}
    first = next(iter(frames.values()))
    names = first["name"].astype(str).tolist()
    documents = {model: _read_json(path) for model, path in metrics_paths.items()}
    accuracies = {model: float(document["metrics"]["A"]["value"]) for model, document in documents.items()}
    plot_class_bars(
        {model: frame["recall"].to_numpy(dtype=np.float64) for model, frame in frames.items()},
        names,
        labels=FigureLabels(
            title=f"{title}: class-wise accuracy",
            ylabel="class-wise accuracy (recall)",
            reference_label="dashed: the model's accuracy A, in its colour",
            interval_label=f"error bars: {100 * confidence:g} % Clopper-Pearson interval",
        ),
        path=recall_path,
        reference_lines=accuracies,
        intervals={
            model: (frame["recall_ci_low"].to_numpy(dtype=np.float64), frame["recall_ci_high"].to_numpy(dtype=np.float64))
            for model, frame in frames.items()
            if "recall_ci_low" in frame
        },
    )
    if worst_probability_path is not None:
        rows, _, _ = _rows_of(documents)
        plot_worst_probabilities(
            tables.worst_probability_labels(documents, rows),
            title=f"{title}: which class is the worst",
            path=worst_probability_path,
        )
    plot_class_bars(
        {model: frame["cfps"].to_numpy(dtype=np.float64) for model, frame in frames.items()},
        names,
        labels=FigureLabels(title=f"{title}: class false positive score", ylabel="class false positive score"),
        path=cfps_path,
        lowest_is_worst=False,  # a class that draws many false positives is the worst
    )


def _mirrored(mirrors: tuple[str | None, str]) -> str:
    """The README's "mirrors" cell of an output: a Markdown citation with its locator, or what it is."""
    key, what = mirrors
    return cite(key, what, style="markdown") if key else what


def _is_explorer(output: str, root: Path) -> bool:
    relative = Path(output).relative_to(root) if Path(output).is_relative_to(root) else Path(output)
    found = record_of(relative.as_posix())
    return found is not None and found[0].name == "explorer"


def results_readme_step(
    *,
    description: str,
    output_dir: str | Path,
    outputs: list[str],
    readme_path: str | Path,
    notes: Sequence[str] = (),
) -> None:
    """``<output_dir>/README.md``: what the run reproduces; a link to the explorer when
    ``outputs`` holds it (``explorer.html``, :func:`explorer_step`); every output of ``outputs`` (one file
    of each planned output: the workflow lists them all) with what it mirrors (a linked short
    citation, from its record in :mod:`classwise.outputs`) and the files written beside it (a
    table's CSV and LaTeX); the note on corruptions made on the fly when an output is of one; one
    line per analysis the config's defaults could not apply (skipped or adapted); and the full
    references of the sources cited (in the table or, by their short citation, in ``description``)."""
    root = Path(output_dir)
    lines = ["# Results", ""]
    if description.strip():
        lines += [description.strip(), ""]
    explorer = next((output for output in outputs if _is_explorer(output, root)), None)
    if explorer is not None:
        link = Path(explorer).relative_to(root).as_posix() if Path(explorer).is_relative_to(root) else explorer
        lines += [
            f"**Every class, model and shift: [`{link}`]({link})**, one page that opens in any browser, offline "
            "(double-click it, or `xdg-open` / `open` it): a search box for any class, the models x shifts table, "
            "a class x shift heatmap per model and the worst classes of each shift.",
            "",
        ]
    lines += ["| file | mirrors | also written as |", "|:--|:--|:--|"]
    cited: set[str] = set()
    shifts: set[str] = set()
    for output in sorted(outputs):
        relative = Path(output).relative_to(root) if Path(output).is_relative_to(root) else Path(output)
        found = record_of(relative.as_posix())
        if found is None:
            lines.append(f"| `{relative}` |  |  |")
            continue
        record, wildcards = found
        if record.mirrors[0]:
            cited.add(record.mirrors[0])
        shifts |= {wildcards["shift"]} if "shift" in wildcards else set()
        beside = ", ".join(f"`{suffix}`" for suffix in record.suffixes if suffix != relative.suffix)
        lines.append(f"| `{relative}` | {_mirrored(record.mirrors)} | {beside} |")
    cited |= {key for key, reference in REFERENCES.items() if reference.authors and reference.short in description}
    corruptions = own_definitions_note(shifts)
    if corruptions:
        lines += ["", corruptions]
    if notes:
        lines += ["", "## Skipped or adapted", ""]
        lines += [f"- {note}" for note in notes]
    if cited:
        lines += ["", "## References", ""]
        lines += [f"- {reference.full()}" for key, reference in REFERENCES.items() if key in cited]
    write_text(readme_path, "\n".join(lines) + "\n")


def explorer_step(
    *,
    views: Sequence[Mapping[str, Any]],
    description: str,
    confidence: float,
    explorer_path: str | Path,
    title: str = "classwise explorer",
) -> None:
    """``results/explorer.html``: every class, model and shift of the run in one page
    (:mod:`classwise.explorer`), from the metric outputs that ``views`` name
    (:func:`classwise.pipeline.explorer.explorer_views`); ``confidence``: the level of the
    per-class recall intervals. Everything is read before the page is written."""
    from classwise.explorer import ViewFiles, explorer_payload, read_view, view_payload, write_explorer

    payloads = [view_payload(read_view(ViewFiles.from_json(view))) for view in views]
    write_explorer(explorer_path, explorer_payload(payloads, title=title, description=description, confidence=confidence))


def numbers_step(
    *,
    files: Sequence[str | Path],
    shift_families: Mapping[str, Sequence[Any]],
    table_path: str | Path,
    whole_set_path: str | Path,
) -> None:
    """Every number of the run in one table (:mod:`classwise.outputs.numbers`), read from the
    output files, each number with one value: Parquet, and a CSV of the whole-set rows. The
    output directory the files' records are below is the one the table's record is below."""
    from classwise import tables
    from classwise.atomic import atomic_path
    from classwise.outputs import output
    from classwise.outputs.numbers import read_number_table, whole_set_rows

    out = Path(table_path).parents[len(Path(output("numbers").path).parts) - 1]

    table = read_number_table(files, out, shift_families=shift_families)
    with atomic_path(table_path) as partial:
        table.to_parquet(partial, index=False)
    tables.write_csv(whole_set_path, whole_set_rows(table), index=False)
