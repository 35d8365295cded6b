"""Workflow steps of the tests of the model-testing catalogue over cached logits
(workflow/rules/analyses.smk):

* :func:`image_features_step` - per-sample image statistics of a dataset's evaluation images
  (rule ``compute_image_features``), joined with an optional user metadata CSV;
* :func:`subset_tests_step` - subset performance tests of one model (``run_subset_tests``);
* :func:`reference_tests_step` / :func:`reference_summary_step` - reference-vs-evaluation
  test report of one model, and the summary across models.

Tables follow :func:`classwise.tables.write_tables` (Markdown, CSV and LaTeX with the same rows;
the display cells rounded, :func:`classwise.tables.decimals` and
:func:`classwise.tables.p_value`; the CSV at full precision, the per-model reference report with
every column of :func:`classwise.testsuites.reference.reference_report`). Every file is written
atomically.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from classwise.errors import InputError
from classwise.settings import Settings
from classwise.steps.metrics import load_view

# pandas, the tables and the tests are imported by the steps that use them: a job imports this
# module before its step starts (the CPU before the step, python -m classwise.bench.demo).
if TYPE_CHECKING:
    import pandas as pd

    from classwise.testsuites.reference import ReferenceTestOptions

log = logging.getLogger(__name__)


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
    import pandas as pd

    from classwise import tables
    from classwise.data.imageset import ImageSet
    from classwise.data.sources import open_split
    from classwise.testsuites.features import dataset_image_features, image_features, load_metadata

    evaluation = open_split(dict(dataset_cfg), "test", name=dataset_name)
    if isinstance(evaluation, ImageSet):
        features = image_features(evaluation.images, sample_ids=evaluation.sample_ids, chunk_size=batch_size)
    else:
        features = dataset_image_features(evaluation, batch_size, max(1, int(threads)))
    log.info("%d samples, features %s", len(features), list(features.columns[1:]))
    if metadata_path:
        metadata = load_metadata(metadata_path, features["sample_id"].to_numpy())
        clash = sorted(set(metadata.columns[1:]) & set(features.columns))
        if clash:
            raise InputError(f"columns {clash} repeat image features; rename them", path=metadata_path, field="columns")
        features = pd.concat([features, metadata.drop(columns="sample_id")], axis=1)
        log.info("joined metadata columns %s from %s", list(metadata.columns[1:]), metadata_path)
    tables.write_csv(features_path, features, index=False)


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
    import pandas as pd

    from classwise import tables
    from classwise.testsuites.features import align_features, read_features
    from classwise.testsuites.subsets import SubsetSplit, SubsetTestOptions, subset_performance_tests, worst_subsets

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
        split=SubsetSplit(
            n_quantiles=int(options["n_quantiles"]),
            categorical=[c for c in categorical if c in columns],
            min_subset_size=int(options["min_subset_size"]),
        ),
        options=SubsetTestOptions(
            metrics=tuple(metrics),
            label_set=options["label_set"],
            n_resamples=int(options["n_resamples"]),
            alpha=float(options["alpha"]),
            correction=options["correction"],
            min_effect=float(options["min_effect"]),
            seed=int(seed),
        ),
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
            "subset value": data["value"].map(tables.decimals),
            "whole set": data["overall"].map(tables.decimals),
            "random subsets": data["null_mean"].map(tables.decimals),
            "shortfall": data["shortfall"].map(tables.decimals),
            "p (adjusted)": data["p_adjusted"].map(tables.p_value),
            "status": data["status"],
            "failed subsets": data["n_failed"].astype(int).astype(str) + " / " + data["n_subsets"].astype(int).astype(str),
        },
        index=data.index,
    )
    tables.write_csv(rows_path, rows, index=False)
    tables.write_tables(display, caption, {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}, data=data)


@dataclass(frozen=True, kw_only=True)
class ReferenceTestSettings(Settings):
    """``analyses.reference_tests``: the ``reference`` shift every other is tested against, the
    ``thresholds`` per metric (``None``: the catalogue's), the calibration bins (``n_bins``, each
    of at least ``min_bin_count`` samples) and which classes a label-set metric covers
    (``label_set``)."""

    block: ClassVar[str] = "analyses.reference_tests"
    reference: str
    thresholds: Mapping[str, Any] | None
    n_bins: int
    min_bin_count: int
    label_set: str

    @property
    def options(self) -> ReferenceTestOptions:
        """The library's record of these settings (validated there: the library's import is the
        step's, not the job's)."""
        from classwise.testsuites.classification import check_label_set
        from classwise.testsuites.reference import ReferenceTestOptions

        return ReferenceTestOptions(
            reference=self.reference,
            thresholds=self.thresholds,
            n_bins=int(self.n_bins),
            min_bin_count=int(self.min_bin_count),
            label_set=check_label_set(self.label_set),
        )


def reference_tests_step(
    *,
    logits_paths: Mapping[str, str | Path],
    label_view: str,
    view_labels_path: str | Path | None,
    settings: ReferenceTestSettings,
    dataset: str,
    model: str,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """Test report of one (dataset, label view, model): the settings' ``reference`` against
    every other shift of ``logits_paths`` (shift -> cached logits), all under the same label view.

    The CSV holds every column of :func:`~classwise.testsuites.reference.reference_report`
    (it is what :func:`reference_summary_step` reads back); the Markdown/LaTeX table the
    readable ones.
    """
    import pandas as pd

    from classwise import tables
    from classwise.testsuites.reference import reference_report

    sets = {}
    kinds = set()
    for shift, path in logits_paths.items():
        view = load_view(path, label_view, view_labels_path)
        sets[shift] = (view.scores, view.labels)
        kinds.add(view.kind)
    if len(kinds) != 1:
        raise InputError(f"mixed score kinds {sorted(kinds)} across shifts", field="logits")
    report = reference_report(sets, kind=kinds.pop(), options=settings.options, dataset=dataset, model=model)
    counts = report["status"].value_counts().to_dict()
    log.info("%d tests: %s", len(report), counts)
    display = pd.DataFrame(
        {
            "metric": report["metric"],
            "reference": report["reference_value"].map(tables.decimals),
            "evaluation": report["evaluation_value"].map(tables.decimals),
            "actual accuracy": report["evaluation_actual"].map(tables.decimals),
            "degradation": report["degradation"].map(tables.decimals),
            "absolute limit": report["absolute_threshold"].map(tables.decimals),
            "degradation limit": report["degradation_threshold"].map(tables.decimals),
            "status": report["status"],
        }
    )
    display.index = pd.Index(report["evaluation"], name="shift")
    tables.write_tables(display, caption, {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}, data=report)


def read_report(path: str | Path) -> pd.DataFrame:
    """A per-model reference report CSV written by :func:`reference_tests_step`."""
    import pandas as pd

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
    from classwise import tables
    from classwise.testsuites.reference import summarise_reports

    reports = []
    for model, path in report_paths.items():
        report = read_report(path)
        report["model"] = model  # the file's own name, whatever the CSV parser made of it
        reports.append(report)
    summary = summarise_reports(reports, by=("model",)).set_index("model")
    tables.write_tables(
        summary.astype(str), caption, {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}, data=summary
    )
