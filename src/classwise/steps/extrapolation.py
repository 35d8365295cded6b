"""Workflow steps of accuracy extrapolation (Slavutsky and Benjamini, 2021; workflow/rules/analyses.smk):

* :func:`extrapolation_step` / :func:`extrapolation_summary_step` - honest evaluation of
  accuracy extrapolation on real logits (sample ``k1`` of the ``C`` classes, extrapolate to
  ``C``, compare with the exact curve), and the RMSE table across models;
* :func:`simulation_step` - the rROC paper's simulation.

Tables follow :func:`classwise.tables.write_tables` (Markdown and LaTeX rounded for reading,
the CSV at full precision). They hold no timings, so the same config gives the same tables;
timings go to the job's log (and the simulation's JSON). Every file is written atomically.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, ClassVar

from classwise.atomic import write_json
from classwise.errors import InputError
from classwise.settings import Settings
from classwise.steps.metrics import load_view
from classwise.steps.threads import limit_threads

# numpy, pandas and the tables are imported where used: a job imports this module before its
# step starts (the CPU before the step, python -m classwise.bench.demo).
if TYPE_CHECKING:
    import pandas as pd

    from classwise.extrapolation.methods import CleanexTraining
    from classwise.extrapolation.simulation import Evaluation, MethodComparison

log = logging.getLogger(__name__)


def _k1_values(k1: int | Sequence[int]) -> list[int]:
    """``analyses.extrapolation.k1`` as a list: one value or several."""
    import numpy as np

    return [int(k1)] if isinstance(k1, (int, np.integer)) else [int(k) for k in k1]


#: Marks a summary cell whose CleaneX fits did not all converge.
NOT_CONVERGED_MARK = "†"


@dataclass(frozen=True, kw_only=True)
class MethodsSettings(Settings):
    """What both extrapolation stages share: ``repetitions`` seeded draws, the ``methods``
    compared, how long CleaneX trains (:attr:`cleanex`), the ``device`` it trains on and the
    run's ``seed``."""

    repetitions: int
    methods: tuple[str, ...]
    cleanex_max_steps: int
    cleanex_tolerance: float
    cleanex_patience: int
    device: str
    seed: int

    @property
    def cleanex(self) -> CleanexTraining:
        """CleaneX's training (validated there: the library's import is the step's, not the job's)."""
        from classwise.extrapolation.methods import CleanexTraining

        return CleanexTraining(
            max_steps=int(self.cleanex_max_steps), tolerance=float(self.cleanex_tolerance), patience=int(self.cleanex_patience)
        )

    def comparison(self, *, ties: str = "random", progress: IO[str] | None = None) -> MethodComparison:
        """The library's record of the comparison (:class:`~classwise.extrapolation.simulation.MethodComparison`):
        these settings, the methods fitting with ``ties`` broken as
        :func:`classwise.extrapolation.rroc.check_ties` says and CleaneX's bar sent to ``progress``."""
        from classwise.extrapolation.methods import FitOptions
        from classwise.extrapolation.rroc import check_ties
        from classwise.extrapolation.simulation import MethodComparison

        fit = FitOptions(ties=check_ties(ties), cleanex=self.cleanex, device=self.device, progress=progress)
        return MethodComparison(repetitions=int(self.repetitions), seed=int(self.seed), methods=tuple(self.methods), fit=fit)


@dataclass(frozen=True, kw_only=True)
class ExtrapolationSettings(MethodsSettings):
    """``analyses.extrapolation``: extrapolate from ``k1`` observed classes (one value or several)
    to ``k2`` (``None``: every class that holds samples), ``ties`` broken as
    :func:`classwise.extrapolation.rroc.check_ties` says."""

    block: ClassVar[str] = "analyses.extrapolation"
    k1: int | Sequence[int]
    ties: str
    k2: int | None = None


@dataclass(frozen=True, kw_only=True)
class SimulationSettings(MethodsSettings):
    """``analyses.simulation``: the rROC paper's simulation, from each of ``k1`` observed classes
    to ``k2``, the scores' noise ``sigma2``."""

    block: ClassVar[str] = "analyses.simulation"
    k1: Sequence[int]
    k2: int
    sigma2: float


def _fits_cells(fits: pd.Series, converged: pd.Series) -> pd.Series:
    """``3/3`` (converged / fits) for a method that trains, with the mark when some did not;
    empty for the others (NaN fits)."""
    import numpy as np
    import pandas as pd

    def cell(n_fits: float, n_converged: float) -> str:
        if np.isnan(n_fits):
            return ""
        text = f"{int(n_converged)}/{int(n_fits)}"
        return text if n_converged == n_fits else f"{text} {NOT_CONVERGED_MARK}"

    return pd.Series([cell(f, c) for f, c in zip(fits, converged, strict=True)], index=fits.index, dtype=object)


def _steps_cells(median: pd.Series, maximum: pd.Series) -> pd.Series:
    """``median (max)`` steps of a method's fits; empty for the methods that do not train."""
    import numpy as np
    import pandas as pd

    cells = ["" if np.isnan(m) else f"{m:g} ({int(x)})" for m, x in zip(median, maximum, strict=True)]
    return pd.Series(cells, index=median.index, dtype=object)


def _log_unconverged(evaluation: Evaluation, where: str) -> None:
    """A warning per evaluation whose fits did not all converge, naming the repetitions."""
    fits = evaluation.fits
    failed = fits[~fits["converged"].astype(bool)]
    if len(failed):
        log.warning(
            "%s, k1 = %d: %d of %d CleaneX fits did not converge (stopped at max_steps): repetitions %s; "
            "raise cleanex_max_steps or read their curves as partial fits",
            where,
            evaluation.k1,
            len(failed),
            len(fits),
            failed["repetition"].tolist(),
        )


def _rmse_display(frame: pd.DataFrame) -> pd.DataFrame:
    import pandas as pd

    from classwise import tables

    k_max = int(frame["k_max"].iloc[0])
    columns = {
        "RMSE mean": frame["rmse_mean"].map(tables.decimals),
        "RMSE median": frame["rmse_median"].map(tables.decimals),
        "RMSE sd": frame["rmse_sd"].map(tables.decimals),
        f"predicted A_{k_max}": frame["predicted_at_k_max"].map(tables.decimals),
        f"true A_{k_max}": frame["true_at_k_max"].map(tables.decimals),
    }
    if "cleanex_wins" in frame.columns:
        columns["RMSE / CleaneX (median)"] = frame["ratio_to_cleanex_median"].map(
            lambda v: "" if pd.isna(v) else tables.decimals(v, 2)
        )
        columns["CleaneX wins"] = frame["cleanex_wins"].map(lambda v: "" if pd.isna(v) else f"{100 * v:.0f}%")
        columns["fits converged"] = _fits_cells(frame["fits"], frame["converged"])
        columns["steps: median (max)"] = _steps_cells(frame["steps_median"], frame["steps_max"])
        columns["final loss (max)"] = frame["final_loss_max"].map(lambda v: "" if pd.isna(v) else f"{v:.1e}")
    display = pd.DataFrame(columns, index=frame.index)
    if frame["k1"].nunique() > 1:
        display.insert(0, "k1", frame["k1"].astype(str))
    return display


def extrapolation_step(
    *,
    logits_path: str | Path,
    label_view: str,
    view_labels_path: str | Path | None,
    settings: ExtrapolationSettings,
    title: str,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
    curves_path: str | Path,
    figure_path: str | Path,
    threads: int | None = None,
    progress: IO[str] | None = None,
) -> None:
    """Honest extrapolation on real logits (``settings``: :class:`ExtrapolationSettings`): for
    each ``k1`` (one value or several), ``repetitions`` seeded samples of ``k1`` of the ``C`` classes
    (:func:`classwise.extrapolation.simulation.evaluate_methods`), each method extrapolating from
    them to ``k2`` (default ``C``), against the exact expected accuracy among ``k`` of all ``C``
    classes, ``k = 2..k2``. Every ``k1`` draws its class samples from the same ``seed``, so the
    results of one ``k1`` do not depend on which others are listed.

    Only the classes that hold samples take part (a folder with part of a label space, e.g.
    ImageNet-R's 200 of 1,000 classes): a class without samples has no accuracy to extrapolate,
    and dropping its column is what a marginal classifier allows. The scores are the raw logits
    (a linear head scores each class independently of the others, as the method assumes; a
    softmax would not). CleaneX trains until its loss plateaus (``cleanex_tolerance`` over
    ``cleanex_patience`` steps) or for ``cleanex_max_steps`` steps
    (:class:`~classwise.extrapolation.methods.CleanexTraining`); the table counts the fits that
    converged, and the log warns of those that did not. Writes the RMSE table (one block of
    rows per ``k1``), every curve (``curves_path``) and the Figure-3-shaped figure.
    """
    import pandas as pd

    from classwise import tables
    from classwise.extrapolation.results import curves_frame, rmse_table
    from classwise.extrapolation.rroc import with_images_only
    from classwise.extrapolation.simulation import evaluate_methods
    from classwise.plots.extrapolation import plot_extrapolation

    k1, k2, methods = settings.k1, settings.k2, settings.methods
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
    comparison = settings.comparison(ties=settings.ties, progress=progress)
    evaluations = [evaluate_methods(scores, labels, k, k_max, comparison) for k in k1s]
    for evaluation in evaluations:
        seconds = evaluation.rmse.groupby("method", sort=False)["seconds"].sum()
        log.info("k1 = %d, seconds per method: %s", evaluation.k1, {m: round(float(s), 2) for m, s in seconds.items()})
        _log_unconverged(evaluation, str(logits_path))
    frame = pd.concat([rmse_table(evaluation) for evaluation in evaluations])
    log.info("RMSE:\n%s", frame.to_string())
    tables.write_csv(curves_path, curves_frame(evaluations), index=False)
    plot_extrapolation(evaluations, title=title, path=figure_path)
    tables.write_tables(
        _rmse_display(frame), caption, {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}, data=frame
    )


def extrapolation_summary_step(
    *,
    table_paths: Mapping[str, str | Path],
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
) -> None:
    """RMSE per ``k1`` and method (rows) and model (columns) from the per-model tables:
    ``mean ± sd``; the CSV holds the means. A cell whose CleaneX fits did not all converge is
    marked ``†`` (with the count) and the caption says what the mark means."""
    import pandas as pd

    from classwise import tables

    means: dict[str, pd.Series] = {}
    cells: dict[str, pd.Series] = {}
    marked = False
    for model, path in table_paths.items():
        frame = pd.read_csv(path)
        missing = [c for c in ("method", "k1", "rmse_mean", "rmse_sd") if c not in frame.columns]
        if missing:
            raise InputError(f"not an extrapolation table: missing columns {missing}", path=path)
        frame = frame.set_index(["k1", "method"])
        means[model] = frame["rmse_mean"]
        cells[model] = frame["rmse_mean"].map(tables.decimals) + " ± " + frame["rmse_sd"].map(tables.decimals)
        if "fits" in frame.columns:
            unconverged = (frame["fits"] - frame["converged"]).fillna(0.0)
            for key in unconverged.index[unconverged > 0]:
                cells[model][key] += f" {NOT_CONVERGED_MARK} ({int(unconverged[key])}/{int(frame['fits'][key])})"
                marked = True
    data = pd.DataFrame(means)
    display = pd.DataFrame(cells).reindex(data.index).fillna("n/a")
    data, display = (table.reset_index(level="k1").rename_axis("method") for table in (data, display))
    display["k1"] = display["k1"].astype(str)
    if marked:  # before the closing "Source: ..." sentence, which stays last
        text, source_sep, source = caption.partition(" Source: ")
        note = (
            f"{NOT_CONVERGED_MARK} (n/m): n of the m CleaneX fits did not converge (stopped at cleanex_max_steps "
            "before the loss plateaued)."
        )
        caption = f"{text} {note}{source_sep}{source}"
    tables.write_tables(display, caption, {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}, data=data)


def _with_fits(evaluation: Evaluation) -> pd.DataFrame:
    """Per repetition and method: the RMSE and, for a fit (CleaneX), its steps, final loss and
    convergence (``None`` for the methods that do not train: plain JSON)."""
    fits = evaluation.fits.astype({"steps": int, "final_loss": float, "converged": bool})
    merged = evaluation.rmse[["repetition", "method", "rmse"]].merge(fits, on=["repetition", "method"], how="left")
    return merged.astype(object).where(merged.notna(), None)


def simulation_step(
    *,
    settings: SimulationSettings,
    caption: str,
    markdown_path: str | Path,
    csv_path: str | Path,
    latex_path: str | Path,
    json_path: str | Path,
    figure_path: str | Path,
    threads: int | None = None,
    progress: IO[str] | None = None,
) -> None:
    """The rROC paper's simulation (:func:`~classwise.extrapolation.simulation.run_simulation_benchmark`,
    ``settings``: :class:`SimulationSettings`):
    RMSE per (k1, method) as a table (with the CleaneX fits that converged), the settings,
    per-repetition RMSEs (and each CleaneX fit's steps, final loss and convergence) and run time
    as JSON, and the RMSE boxes (Figure 2 shape)."""
    import pandas as pd

    from classwise import tables
    from classwise.extrapolation.results import FIT_SUMMARY_COLUMNS
    from classwise.extrapolation.simulation import run_simulation_benchmark
    from classwise.plots.extrapolation import plot_simulation

    k1s, k2, methods = settings.k1, settings.k2, settings.methods
    if "cleanex" in methods:
        limit_threads(threads)
    too_large = [int(k) for k in k1s if not 2 <= int(k) < int(k2)]
    if too_large:
        raise InputError(f"every k1 must lie in [2, k2 = {k2}), got {too_large}", field="analyses.simulation.k1")
    benchmark = run_simulation_benchmark(
        settings.comparison(progress=progress), k1s=[int(k) for k in k1s], k2=int(k2), sigma2=float(settings.sigma2)
    )
    log.info("simulation took %.1f s on %s thread(s)", benchmark.seconds, threads)
    for evaluation in benchmark.evaluations.values():
        _log_unconverged(evaluation, "simulation")
    summary = benchmark.summary()
    data = summary[["k1", "method", "repetitions", "rmse_mean", "rmse_median", "rmse_sd", *FIT_SUMMARY_COLUMNS]]
    data = data.set_index("k1")
    display = pd.DataFrame(
        {
            "method": data["method"],
            "repetitions": data["repetitions"].astype(int).astype(str),
            "RMSE mean": data["rmse_mean"].map(tables.decimals),
            "RMSE median": data["rmse_median"].map(tables.decimals),
            "RMSE sd": data["rmse_sd"].map(tables.decimals),
            "fits converged": _fits_cells(data["fits"], data["converged"]),
            "steps: median (max)": _steps_cells(data["steps_median"], data["steps_max"]),
        },
        index=data.index,
    )
    document = benchmark.to_json()
    # CleaneX's sums are reduced in a thread-count-dependent order: the last digits of its
    # RMSEs depend on the threads as well as on the seed.
    document["settings"] = {**benchmark.settings, "threads": None if threads is None else int(threads)}
    document["rmse_per_repetition"] = {
        str(k1): _with_fits(evaluation).to_dict(orient="records") for k1, evaluation in benchmark.evaluations.items()
    }
    write_json(json_path, document)
    plot_simulation(
        benchmark,
        title=f"Simulation: d = 5, 10 points per class, sigma2 = {settings.sigma2:g}, {settings.repetitions} repetitions",
        path=figure_path,
    )
    tables.write_tables(display, caption, {"markdown": markdown_path, "csv": csv_path, "latex": latex_path}, data=data)
