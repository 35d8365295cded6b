"""Workflow steps of the analyses over cached logits (workflow/rules/analyses.smk).

* :func:`image_features_step` - per-sample image statistics of a dataset's evaluation images
  (rule ``compute_image_features``), joined with an optional user metadata CSV;
* :func:`subset_tests_step` - subset performance tests of one model (``run_subset_tests``);
* :func:`reference_tests_step` / :func:`reference_summary_step` - reference-vs-evaluation
  test report of one model, and the summary across models;
* :func:`extrapolation_step` / :func:`extrapolation_summary_step` - honest evaluation of
  accuracy extrapolation on real logits (sample ``k1`` of the ``C`` classes, extrapolate to
  ``C``, compare with the exact curve), and the RMSE table across models;
* :func:`simulation_step` - the rROC paper's simulation.

Table conventions (:func:`classwise.tables.write_tables`, shared with every other table of
the workflow): every table is written as Markdown, CSV and LaTeX with the same rows.
The Markdown and LaTeX cells are rounded for reading (four decimals, p-values to three
significant digits); the CSV holds the same rows at full precision, sometimes with more
columns (the per-model reference report keeps every column of
:func:`classwise.testsuites.reference.reference_report`). Tables hold no timings, so the same
config gives the same tables; timings go to the job's log (and the simulation's JSON).
Every file is written atomically.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from classwise import tables
from classwise.atomic import write_json
from classwise.errors import InputError
from classwise.sample_ids import sample_id_positions
from classwise.steps.metrics import load_view
from classwise.steps.threads import limit_threads

log = logging.getLogger(__name__)

#: Image-feature columns of :func:`classwise.testsuites.features.image_features`.
IMAGE_FEATURES: tuple[str, ...] = ("brightness", "contrast", "saturation", "sharpness", "height", "width", "aspect_ratio")
#: Colours of the extrapolation methods in the figures (the paper's: CleaneX orange,
#: regression blue, KDE purple).
METHOD_COLOURS: dict[str, str] = {"cleanex": "tab:orange", "regression": "tab:blue", "kde": "tab:purple", "naive": "tab:green"}


# ---------------------------------------------------------------------------- helpers
def _write_table(
    display: pd.DataFrame,
    caption: str,
    markdown: str | Path,
    csv: str | Path,
    latex: str | Path,
    *,
    data: pd.DataFrame | None = None,
) -> None:
    """``display`` as Markdown and LaTeX; ``data`` (default ``display``) as CSV."""
    tables.write_tables(display, caption, {"markdown": markdown, "csv": csv, "latex": latex}, data=data)


def _write_csv(path: str | Path, frame: pd.DataFrame) -> None:
    tables.write_csv(path, frame, index=False)


def _number(value: Any, digits: int = 4) -> str:
    """``0.1234`` style; ``n/a`` for a missing or undefined value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{float(value):.{digits}f}"


def _pvalue(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{float(value):.3g}"


def read_features(path: str | Path) -> pd.DataFrame:
    """A features CSV (``sample_id`` first, ids read as strings)."""
    try:
        frame = pd.read_csv(path, dtype={"sample_id": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot parse CSV: {exc}", path=path) from None
    if "sample_id" not in frame.columns:
        raise InputError("missing the sample_id column", path=path, field="sample_id")
    return frame


def align_features(features: pd.DataFrame, sample_ids: np.ndarray, *, source: str | Path = "features") -> pd.DataFrame:
    """The rows of ``features`` for ``sample_ids``, in that order (matched by id)."""
    positions = sample_id_positions(
        sample_ids,
        features["sample_id"].to_numpy(),
        path=source,
        available_name="the features",
        missing="{count} of {total} evaluated samples have no features",
    )
    out = features.drop(columns="sample_id").iloc[positions].reset_index(drop=True)
    out.insert(0, "sample_id", np.asarray(sample_ids).astype(str))
    return out


# ---------------------------------------------------------------------------- features
def _lazy_features(dataset: Any, batch_size: int, workers: int) -> pd.DataFrame:
    """Features of an image-file dataset, each image at its own decoded size (one at a time:
    sizes differ), so ``height``/``width`` are the original size; unreadable images are skipped
    or raise according to the dataset's ``on_bad_image``."""
    from concurrent.futures import ThreadPoolExecutor

    from classwise.data.imagefolder import to_array
    from classwise.testsuites.features import image_features

    def one(index: int) -> pd.DataFrame | None:
        image = dataset.load_image(index)
        if image is None:
            return None
        array = to_array(image)[None]
        sizes = np.array([[array.shape[2], array.shape[3]]])
        return image_features(array, original_sizes=sizes, sample_ids=[dataset.sample_ids[index]])

    frames: list[pd.DataFrame] = []
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        for start in range(0, len(dataset), batch_size):
            indices = range(start, min(start + batch_size, len(dataset)))
            results = pool.map(one, indices) if pool is not None else map(one, indices)
            frames.extend(frame for frame in results if frame is not None)
            log.info("features of %d / %d images", min(start + batch_size, len(dataset)), len(dataset))
    finally:
        if pool is not None:
            pool.shutdown()
    if not frames:
        raise InputError("no readable images", path=getattr(dataset, "root", None), field="images")
    return pd.concat(frames, ignore_index=True)


def image_features_step(
    *,
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    metadata_path: str | Path | None,
    batch_size: int,
    features_path: str | Path,
    threads: int = 1,
) -> None:
    """``<out>/features/<dataset>.csv``: one row per evaluation sample, keyed by ``sample_id``.

    Image statistics (:mod:`classwise.testsuites.features`) of the dataset's evaluation split,
    the images as the dataset stores them (in-memory sets such as the digits or CIFAR at their
    own resolution; image files decoded at their original size), before any model
    preprocessing or shift. The columns of ``metadata_path`` (a CSV keyed by ``sample_id``)
    are appended.
    """
    from classwise.data.imageset import ImageSet
    from classwise.data.sources import open_split
    from classwise.testsuites.features import image_features, load_metadata

    evaluation = open_split(dict(dataset_cfg), "test", name=dataset_name)
    if isinstance(evaluation, ImageSet):
        features = image_features(evaluation.images, sample_ids=evaluation.sample_ids, chunk_size=batch_size)
    else:
        features = _lazy_features(evaluation, batch_size, max(1, int(threads)))
    log.info("%d samples, features %s", len(features), list(features.columns[1:]))
    if metadata_path:
        metadata = load_metadata(metadata_path, features["sample_id"].to_numpy())
        clash = sorted(set(metadata.columns[1:]) & set(features.columns))
        if clash:
            raise InputError(f"columns {clash} repeat image features; rename them", path=metadata_path, field="columns")
        features = pd.concat([features, metadata.drop(columns="sample_id")], axis=1)
        log.info("joined metadata columns %s from %s", list(metadata.columns[1:]), metadata_path)
    _write_csv(features_path, features)


# ---------------------------------------------------------------------------- subset tests
def testable_features(features: pd.DataFrame, requested: Sequence[str] | None, *, source: str | Path = "features") -> list[str]:
    """The feature columns to test: ``requested`` (each must exist), or every column but
    ``sample_id`` with at least two distinct values (missing counts as a value)."""
    columns = [c for c in features.columns if c != "sample_id"]
    if requested is not None:
        unknown = [c for c in requested if c not in columns]
        if unknown:
            raise InputError(
                f"unknown feature columns {unknown}; the features are {columns}",
                path=source,
                field="analyses.subset_tests.features",
            )
        return list(requested)
    return [c for c in columns if features[c].nunique(dropna=False) >= 2]


def subset_tests_step(
    *,
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    features_path: str | Path,
    options: Mapping[str, Any],
    seed: int,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
    rows_path: str | Path,
) -> None:
    """Subset performance tests of one logits file under one label view.

    ``options`` is the config's ``analyses.subset_tests`` (``features``, ``categorical``,
    ``metrics``, ``auc_ovo_max_classes``, ``n_quantiles``, ``n_resamples``, ``alpha``,
    ``min_effect``, ``correction``, ``min_subset_size``, ``label_set``; other keys are
    ignored). Writes every row of
    :func:`~classwise.testsuites.subsets.subset_performance_tests` to ``rows_path`` and the
    worst subset of each (feature, metric) (:func:`~classwise.testsuites.subsets.worst_subsets`)
    as the table.
    """
    from classwise.testsuites.subsets import subset_performance_tests, worst_subsets

    view = load_view(logits_path, label_view, view_labels_path)
    features = align_features(read_features(features_path), view.sample_ids, source=features_path)
    columns = testable_features(features, options.get("features"), source=features_path)
    dropped = [c for c in features.columns if c not in columns and c != "sample_id"]
    if dropped:
        log.info("not tested (constant or not requested): %s", dropped)
    categorical = list(options.get("categorical", []))
    unknown = [c for c in categorical if c not in features.columns]
    if unknown:
        raise InputError(f"unknown feature columns {unknown}", path=features_path, field="analyses.subset_tests.categorical")
    if not columns:
        raise InputError(
            "no feature column with two or more distinct values to split by",
            path=features_path,
            field="analyses.subset_tests.features",
        )
    metrics = list(options["metrics"])
    limit = options.get("auc_ovo_max_classes")
    if "auc_ovo" in metrics and limit is not None and view.scores.shape[1] > int(limit):
        metrics.remove("auc_ovo")
        log.warning(
            "auc_ovo left out: %d classes > analyses.subset_tests.auc_ovo_max_classes = %d",
            view.scores.shape[1],
            int(limit),
        )
        if not metrics:
            raise InputError("no metric left to test once auc_ovo is left out", field="analyses.subset_tests.metrics")
    rows = subset_performance_tests(
        view.scores,
        view.labels,
        features[["sample_id", *columns]],
        kind=view.kind,
        metrics=tuple(metrics),
        n_quantiles=int(options["n_quantiles"]),
        categorical=[c for c in categorical if c in columns],
        n_resamples=int(options["n_resamples"]),
        alpha=float(options["alpha"]),
        correction=options["correction"],
        min_subset_size=int(options["min_subset_size"]),
        min_effect=float(options["min_effect"]),
        label_set=options["label_set"],
        seed=int(seed),
    )
    log.info("%d rows, %d failed", len(rows), int((rows["status"] == "fail").sum()))
    worst = worst_subsets(rows)
    data = worst[
        [
            "feature",
            "metric",
            "subset",
            "n",
            "value",
            "overall",
            "shortfall",
            "null_mean",
            "p_value",
            "p_adjusted",
            "status",
            "n_failed",
            "n_subsets",
        ]
    ].set_index("feature")
    display = pd.DataFrame(
        {
            "metric": data["metric"],
            "worst subset": data["subset"],
            "n": data["n"].astype(int).astype(str),
            "subset value": data["value"].map(_number),
            "whole set": data["overall"].map(_number),
            "random subsets": data["null_mean"].map(_number),
            "shortfall": data["shortfall"].map(_number),
            "p (adjusted)": data["p_adjusted"].map(_pvalue),
            "status": data["status"],
            "failed subsets": data["n_failed"].astype(int).astype(str) + " / " + data["n_subsets"].astype(int).astype(str),
        },
        index=data.index,
    )
    _write_csv(rows_path, rows)
    _write_table(display, caption, markdown_path, csv_path, latex_path, data=data)


# ---------------------------------------------------------------------------- reference tests
def reference_tests_step(
    *,
    logits_paths: Mapping[str, str | Path],
    label_view: str,
    view_labels_path: str | Path | None,
    reference: str,
    dataset: str,
    model: str,
    thresholds: Mapping[str, Any] | None,
    n_bins: int,
    min_bin_count: int,
    label_set: str,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """Test report of one (dataset, label view, model): ``reference`` against every other
    shift of ``logits_paths`` (shift -> cached logits), all under the same label view.

    The CSV holds every column of :func:`~classwise.testsuites.reference.reference_report`
    (it is what :func:`reference_summary_step` reads back); the Markdown/LaTeX table the
    readable ones.
    """
    from classwise.testsuites.classification import check_label_set
    from classwise.testsuites.reference import reference_report

    sets = {}
    kinds = set()
    for shift, path in logits_paths.items():
        view = load_view(path, label_view, view_labels_path)
        sets[shift] = (view.scores, view.labels)
        kinds.add(view.kind)
    if len(kinds) != 1:
        raise InputError(f"mixed score kinds {sorted(kinds)} across shifts", field="logits")
    report = reference_report(
        sets,
        reference=reference,
        dataset=dataset,
        model=model,
        kind=kinds.pop(),
        thresholds=thresholds,
        n_bins=int(n_bins),
        min_bin_count=int(min_bin_count),
        label_set=check_label_set(label_set),
    )
    counts = report["status"].value_counts().to_dict()
    log.info("%d tests: %s", len(report), counts)
    display = pd.DataFrame(
        {
            "metric": report["metric"],
            "reference": report["reference_value"].map(_number),
            "evaluation": report["evaluation_value"].map(_number),
            "actual accuracy": report["evaluation_actual"].map(_number),
            "degradation": report["degradation"].map(_number),
            "absolute limit": report["absolute_threshold"].map(_number),
            "degradation limit": report["degradation_threshold"].map(_number),
            "status": report["status"],
        }
    )
    display.index = pd.Index(report["evaluation"], name="shift")
    _write_table(display, caption, markdown_path, csv_path, latex_path, data=report)


def read_report(path: str | Path) -> pd.DataFrame:
    """A per-model reference report CSV written by :func:`reference_tests_step`."""
    try:
        report = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"status": str, "reason": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise InputError(f"cannot parse CSV: {exc}", path=path) from None
    missing = [c for c in ("dataset", "model", "evaluation", "metric", "status") if c not in report.columns]
    if missing:
        raise InputError(f"not a reference report: missing columns {missing}", path=path)
    return report


def reference_summary_step(
    *,
    report_paths: Mapping[str, str | Path],
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """Summary across models (:func:`~classwise.testsuites.reference.summarise_reports`): per
    model, how many tests pass, warn, fail, the worst status and the failing/warning tests."""
    from classwise.testsuites.reference import summarise_reports

    reports = []
    for model, path in report_paths.items():
        report = read_report(path)
        report["model"] = model  # the file's own name, whatever the CSV parser made of it
        reports.append(report)
    summary = summarise_reports(reports, by=("model",)).set_index("model")
    _write_table(summary.astype(str), caption, markdown_path, csv_path, latex_path, data=summary)


# ---------------------------------------------------------------------------- extrapolation
def _k1_values(k1: int | Sequence[int]) -> list[int]:
    """``analyses.extrapolation.k1`` as a list: one value or several."""
    return [int(k1)] if isinstance(k1, (int, np.integer)) else [int(k) for k in k1]


def _curves_frame(evaluations: Sequence[Any]) -> pd.DataFrame:
    """Long table ``k1, curve, method, repetition, k, accuracy`` of every curve of the
    evaluations: ``true`` (exact, all classes), ``observed`` (exact, the sampled classes,
    k <= k1) and ``predicted`` (each method and repetition)."""

    def curves(evaluation: Any) -> pd.DataFrame:
        parts = [
            pd.DataFrame({"curve": "true", "method": "", "repetition": -1, "k": evaluation.ks, "accuracy": evaluation.true_curve})
        ]
        observed_ks = np.arange(2, evaluation.k1 + 1)
        for rep, curve in enumerate(evaluation.observed):
            parts.append(
                pd.DataFrame({"curve": "observed", "method": "", "repetition": rep, "k": observed_ks, "accuracy": curve})
            )
        for method, predicted in evaluation.predicted.items():
            for rep, curve in enumerate(predicted):
                parts.append(
                    pd.DataFrame(
                        {"curve": "predicted", "method": method, "repetition": rep, "k": evaluation.ks, "accuracy": curve}
                    )
                )
        frame = pd.concat(parts, ignore_index=True)
        frame.insert(0, "k1", evaluation.k1)
        return frame

    return pd.concat([curves(evaluation) for evaluation in evaluations], ignore_index=True)


def _rmse_table(evaluation: Any) -> pd.DataFrame:
    """Per method: RMSE mean / median / sd over the repetitions, the mean predicted accuracy at
    the largest k beside the true one, and, when CleaneX ran, the median of each other method's
    RMSE ratio to CleaneX's and the share of repetitions CleaneX wins (Figure 3 E)."""
    from classwise.extrapolation.simulation import reference_comparison

    summary = evaluation.summary().set_index("method")
    k_max = int(evaluation.ks[-1])
    frame = pd.DataFrame(
        {
            "k1": summary["k1"].astype(int),
            "k_max": k_max,
            "repetitions": summary["repetitions"].astype(int),
            "rmse_mean": summary["rmse_mean"],
            "rmse_median": summary["rmse_median"],
            "rmse_sd": summary["rmse_sd"],
            "predicted_at_k_max": [float(evaluation.predicted[m][:, -1].mean()) for m in summary.index],
            "true_at_k_max": float(evaluation.true_curve[-1]),
        },
        index=summary.index,
    )
    if "cleanex" in frame.index:
        comparison = reference_comparison(evaluation.rmse, "cleanex")
        frame["ratio_to_cleanex_median"] = comparison["ratio_median"].reindex(frame.index)
        frame["cleanex_wins"] = comparison["reference_wins"].reindex(frame.index)
    frame.index.name = "method"
    return frame


def _rmse_display(frame: pd.DataFrame) -> pd.DataFrame:
    k_max = int(frame["k_max"].iloc[0])
    columns = {
        "RMSE mean": frame["rmse_mean"].map(_number),
        "RMSE median": frame["rmse_median"].map(_number),
        "RMSE sd": frame["rmse_sd"].map(_number),
        f"predicted A_{k_max}": frame["predicted_at_k_max"].map(_number),
        f"true A_{k_max}": frame["true_at_k_max"].map(_number),
    }
    if "cleanex_wins" in frame.columns:
        columns["RMSE / CleaneX (median)"] = frame["ratio_to_cleanex_median"].map(lambda v: "" if pd.isna(v) else _number(v, 2))
        columns["CleaneX wins"] = frame["cleanex_wins"].map(lambda v: "" if pd.isna(v) else f"{100 * v:.0f}%")
    display = pd.DataFrame(columns, index=frame.index)
    if frame["k1"].nunique() > 1:
        display.insert(0, "k1", frame["k1"].astype(str))
    return display


def _plot_block(axes: Sequence[Any], evaluation: Any, prefix: str) -> None:
    """The panels of one evaluation: one per method (A, B, ...), the RMSE boxes (D of the paper)
    and, with CleaneX, the RMSE ratios to CleaneX capped at 4 (E of the paper)."""
    from classwise.extrapolation.simulation import RATIO_CAP, rmse_ratios

    methods = list(evaluation.predicted)
    rmse = evaluation.rmse
    per_method = {m: rmse.loc[rmse["method"] == m, "rmse"].to_numpy() for m in methods}
    observed_ks = np.arange(2, evaluation.k1 + 1)
    letters = "ABCDEFGH"
    for i, method in enumerate(methods):
        ax = axes[i]
        for curve in evaluation.observed:
            ax.plot(observed_ks, curve, color="0.6", linewidth=1.0)
        for curve in evaluation.predicted[method]:
            ax.plot(evaluation.ks, curve, color=METHOD_COLOURS.get(method, "tab:red"), linewidth=1.0, alpha=0.8)
        ax.plot(evaluation.ks, evaluation.true_curve, color="black", linewidth=1.6)
        ax.axvline(evaluation.k1, color="0.3", linestyle=":", linewidth=1.0)
        ax.set_title(f"{prefix}{letters[i]}: {method} (mean RMSE {per_method[method].mean():.4f})", fontsize=9)
        ax.set_xlabel("number of classes k")
        ax.set_ylabel("expected accuracy")
        ax.grid(alpha=0.25)
    ax = axes[len(methods)]
    ax.boxplot([per_method[m] for m in methods], showfliers=False)
    ax.set_xticks(range(1, len(methods) + 1), methods, fontsize=8)
    ax.set_title(f"{prefix}{letters[len(methods)]}: RMSE over {len(rmse['repetition'].unique())} repetitions", fontsize=9)
    ax.set_ylabel("RMSE")
    ax.grid(alpha=0.25)
    if "cleanex" in methods and len(methods) > 1:
        ax = axes[len(methods) + 1]
        ratios = rmse_ratios(rmse, "cleanex", cap=RATIO_CAP)
        ax.boxplot(list(ratios.values()), showfliers=False)
        ax.axhline(1.0, color="tab:orange", linestyle=":", linewidth=1.2)
        ax.set_xticks(range(1, len(ratios) + 1), [f"{m} / cleanex" for m in ratios], fontsize=8)
        ax.set_title(f"{prefix}{letters[len(methods) + 1]}: RMSE ratio to CleaneX (capped at {RATIO_CAP:g})", fontsize=9)
        ax.grid(alpha=0.25)


def _panels(evaluation: Any) -> int:
    methods = list(evaluation.predicted)
    return len(methods) + 1 + (1 if "cleanex" in methods and len(methods) > 1 else 0)


def extrapolation_figure(evaluations: Any, *, title: str) -> Any:
    """Figure 3 of accuracy-extrapolation-rroc.txt for one evaluation per ``k1`` (one block of
    rows each): one panel per method with its predicted curves (one per repetition, coloured),
    the observed curves on the sampled classes (grey), the true curve (black) and ``k1``
    (dotted); then the RMSE distribution per method (D) and, with CleaneX, the RMSE ratio of each
    other method to CleaneX's (E; above 1 means CleaneX is better; capped at 4)."""
    from matplotlib.figure import Figure

    evaluations = [evaluations] if not isinstance(evaluations, Sequence) else list(evaluations)
    n_cols = min(3, max(_panels(e) for e in evaluations))
    rows = [math.ceil(_panels(e) / n_cols) for e in evaluations]
    fig = Figure(figsize=(4.2 * n_cols, 3.5 * sum(rows)), layout="constrained")
    first_row = 0
    for evaluation, n_rows in zip(evaluations, rows):
        start = first_row * n_cols
        axes = [fig.add_subplot(sum(rows), n_cols, start + i + 1) for i in range(_panels(evaluation))]
        _plot_block(axes, evaluation, f"k1 = {evaluation.k1}, " if len(evaluations) > 1 else "")
        first_row += n_rows
    fig.suptitle(title, fontsize=10)
    return fig


def plot_extrapolation(evaluations: Any, *, title: str, path: str | Path) -> Path:
    """:func:`extrapolation_figure` written as a PNG."""
    from classwise.plots import save_png

    return save_png(extrapolation_figure(evaluations, title=title), path)


def extrapolation_step(
    *,
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    k1: int | Sequence[int],
    repetitions: int,
    methods: Sequence[str],
    cleanex_steps: int,
    ties: str,
    device: str,
    seed: int,
    title: str,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
    curves_path: str | Path,
    figure_path: str | Path,
    k2: int | None = None,
    threads: int | None = None,
    progress: IO[str] | None = None,
) -> None:
    """Honest extrapolation on real logits: for each ``k1`` (one value or several),
    ``repetitions`` seeded samples of ``k1`` of the ``C`` classes
    (:func:`classwise.extrapolation.simulation.evaluate_methods`), each method extrapolating from
    them to ``k2`` (default ``C``), against the exact expected accuracy among ``k`` of all ``C``
    classes, ``k = 2..k2``. Every ``k1`` draws its class samples from the same ``seed``, so the
    results of one ``k1`` do not depend on which others are listed.

    Only the classes that hold samples take part (a folder with part of a label space, e.g.
    ImageNet-R's 200 of 1,000 classes): a class without samples has no accuracy to extrapolate,
    and dropping its column is what a marginal classifier allows. The scores are the raw logits
    (a linear head scores each class independently of the others, as the method assumes; a
    softmax would not). Writes the RMSE table (one block of rows per ``k1``), every curve
    (``curves_path``) and the Figure-3-shaped figure.
    """
    from classwise.extrapolation.rroc import check_ties, with_images_only
    from classwise.extrapolation.simulation import evaluate_methods

    if "cleanex" in methods:  # the other methods do not use torch
        limit_threads(threads)
    view = load_view(logits_path, label_view, view_labels_path)
    scores, labels = with_images_only(view.scores, view.labels)
    n_classes = int(scores.shape[1])
    if n_classes < view.scores.shape[1]:
        log.info("%d of the %d classes hold samples: extrapolating among those", n_classes, view.scores.shape[1])
    k_max = n_classes if k2 is None else int(k2)
    if k2 is not None and not 3 <= k_max <= n_classes:
        raise InputError(
            f"expected 3 <= k2 <= {n_classes} (the classes of {logits_path} that hold samples), got {k2}",
            field="analyses.extrapolation.k2",
        )
    k1s = _k1_values(k1)
    outside = [k for k in k1s if not 2 <= k < k_max]
    if outside or not k1s:
        bound = "the classes that hold samples in" if k2 is None else "k2, at most the classes that hold samples in"
        raise InputError(
            f"expected 2 <= k1 < {k_max} ({bound} {logits_path}), got {k1}",
            field="analyses.extrapolation.k1",
        )
    if view.kind != "logits":
        log.warning("extrapolating from probabilities: the method assumes marginal scores such as logits")
    checked_ties = check_ties(ties)
    evaluations = [
        evaluate_methods(
            scores,
            labels,
            k,
            k_max,
            int(repetitions),
            int(seed),
            methods=tuple(methods),
            cleanex_steps=int(cleanex_steps),
            ties=checked_ties,
            device=device,
            progress=progress,
        )
        for k in k1s
    ]
    for evaluation in evaluations:
        seconds = evaluation.rmse.groupby("method", sort=False)["seconds"].sum()
        log.info("k1 = %d, seconds per method: %s", evaluation.k1, {m: round(float(s), 2) for m, s in seconds.items()})
    frame = pd.concat([_rmse_table(evaluation) for evaluation in evaluations])
    log.info("RMSE:\n%s", frame.to_string())
    _write_csv(curves_path, _curves_frame(evaluations))
    plot_extrapolation(evaluations, title=title, path=figure_path)
    _write_table(_rmse_display(frame), caption, markdown_path, csv_path, latex_path, data=frame)


def extrapolation_summary_step(
    *,
    table_paths: Mapping[str, str | Path],
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """RMSE per ``k1`` and method (rows) and model (columns) from the per-model tables:
    ``mean ± sd``; the CSV holds the means."""
    means: dict[str, pd.Series] = {}
    cells: dict[str, pd.Series] = {}
    for model, path in table_paths.items():
        frame = pd.read_csv(path)
        missing = [c for c in ("method", "k1", "rmse_mean", "rmse_sd") if c not in frame.columns]
        if missing:
            raise InputError(f"not an extrapolation table: missing columns {missing}", path=path)
        frame = frame.set_index(["k1", "method"])
        means[model] = frame["rmse_mean"]
        cells[model] = frame["rmse_mean"].map(_number) + " ± " + frame["rmse_sd"].map(_number)
    data = pd.DataFrame(means)
    display = pd.DataFrame(cells).reindex(data.index).fillna("n/a")
    data, display = (table.reset_index(level="k1").rename_axis("method") for table in (data, display))
    display["k1"] = display["k1"].astype(str)
    _write_table(display, caption, markdown_path, csv_path, latex_path, data=data)


# ---------------------------------------------------------------------------- simulation
def plot_simulation(benchmark: Any, *, title: str, path: str | Path) -> Path:
    """Figure 2 of accuracy-extrapolation-rroc.txt: per ``k1``, the RMSE over the repetitions
    of each method as boxes (outliers not shown)."""
    from matplotlib.figure import Figure

    from classwise.plots import save_png

    evaluations = benchmark.evaluations
    fig = Figure(figsize=(4.2 * len(evaluations), 3.6), layout="constrained")
    for i, (k1, evaluation) in enumerate(evaluations.items()):
        ax = fig.add_subplot(1, len(evaluations), i + 1)
        methods = list(evaluation.predicted)
        rmse = evaluation.rmse
        boxes = ax.boxplot(
            [rmse.loc[rmse["method"] == m, "rmse"].to_numpy() for m in methods], showfliers=False, patch_artist=True
        )
        for patch, method in zip(boxes["boxes"], methods):
            patch.set_facecolor(METHOD_COLOURS.get(method, "tab:red"))
            patch.set_alpha(0.6)
        ax.set_xticks(range(1, len(methods) + 1), methods, fontsize=8)
        ax.set_title(f"k1 = {k1}, k2 = {int(evaluation.ks[-1])}", fontsize=9)
        ax.set_ylabel("RMSE")
        ax.grid(alpha=0.25)
    fig.suptitle(title, fontsize=10)
    return save_png(fig, path)


def simulation_step(
    *,
    k1s: Sequence[int],
    k2: int,
    sigma2: float,
    repetitions: int,
    methods: Sequence[str],
    cleanex_steps: int,
    device: str,
    seed: int,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
    json_path: str | Path,
    figure_path: str | Path,
    threads: int | None = None,
    progress: IO[str] | None = None,
) -> None:
    """The rROC paper's simulation (:func:`~classwise.extrapolation.simulation.run_simulation_benchmark`):
    RMSE per (k1, method) as a table, the settings, per-repetition RMSEs and run time as JSON,
    and the RMSE boxes (Figure 2 shape)."""
    from classwise.extrapolation.simulation import run_simulation_benchmark

    if "cleanex" in methods:
        limit_threads(threads)
    too_large = [int(k) for k in k1s if not 2 <= int(k) < int(k2)]
    if too_large:
        raise InputError(f"every k1 must lie in [2, k2 = {k2}), got {too_large}", field="analyses.simulation.k1")
    benchmark = run_simulation_benchmark(
        int(seed),
        k1s=[int(k) for k in k1s],
        k2=int(k2),
        sigma2=float(sigma2),
        repetitions=int(repetitions),
        cleanex_steps=int(cleanex_steps),
        methods=tuple(methods),
        device=device,
        progress=progress,
    )
    log.info("simulation took %.1f s on %s thread(s)", benchmark.seconds, threads)
    summary = benchmark.summary()
    data = summary[["k1", "method", "repetitions", "rmse_mean", "rmse_median", "rmse_sd"]].set_index("k1")
    display = pd.DataFrame(
        {
            "method": data["method"],
            "repetitions": data["repetitions"].astype(int).astype(str),
            "RMSE mean": data["rmse_mean"].map(_number),
            "RMSE median": data["rmse_median"].map(_number),
            "RMSE sd": data["rmse_sd"].map(_number),
        },
        index=data.index,
    )
    document = benchmark.to_json()
    # CleaneX's sums are reduced in a thread-count-dependent order: the last digits of its
    # RMSEs depend on the threads as well as on the seed.
    document["settings"] = {**benchmark.settings, "threads": None if threads is None else int(threads)}
    document["rmse_per_repetition"] = {
        str(k1): evaluation.rmse[["repetition", "method", "rmse"]].to_dict(orient="records")
        for k1, evaluation in benchmark.evaluations.items()
    }
    write_json(json_path, document)
    plot_simulation(
        benchmark,
        title=f"Simulation: d = 5, 10 points per class, sigma2 = {sigma2:g}, {repetitions} repetitions",
        path=figure_path,
    )
    _write_table(display, caption, markdown_path, csv_path, latex_path, data=data)
