"""Captions of the workflow's tables and titles of its figures, from a job's wildcards and
parameters.

They are written here, not in the rules' ``params:``: Snakemake reruns a job whose parameters
change, and rewording a caption must not retrain CleaneX or rerun a permutation test. Each
function reads only the job's wildcards and its real parameters, so a caption still follows
the settings that made the table. Each caption ends with the source it mirrors
(:func:`classwise.references.cite`) and, for a shift of corruptions made on the fly, the note that
they are classwise's own (:func:`classwise.shifts.corruptions.own_definitions_note`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from classwise.references import cite
from classwise.shifts.corruptions import own_definitions_note

Text = Callable[[Mapping[str, str], Mapping[str, Any]], str]


def _with_source(caption: str, key: str, locator: str, *shifts: str) -> str:
    """``caption``, the source it mirrors (``Source: Bitterwolf et al., 2022, Table 1 (link).``)
    and, when one of ``shifts`` is a corruption made on the fly, the note that it is classwise's own."""
    return " ".join(filter(None, [caption, f"Source: {cite(key, locator)}.", own_definitions_note(shifts)]))


def _worst_class_table(labels: str) -> str:
    """Table 1 of the worst-class paper on the original labels, Table 2 on cleaned ones."""
    return "Table 1" if labels == "original" else "Table 2 (cleaned labels)"


def _lower_is_better(*others: str) -> str:
    """The sentence of an analysis caption naming the metrics whose lower value is the better."""
    names = [
        'average_uncertainty (the mean of 1 - max p, the document\'s "average confidence")',
        "positive_prediction_rate (the share of the most-predicted class)",
        *others,
    ]
    return f"Lower is better for {', '.join(names[:-1])} and {names[-1]}."


def _subset_tests(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    options = p["options"]
    return _with_source(
        f"Subset performance tests of {w['model']} on {w['dataset']} "
        f"({w['labels']} labels, shift {options['shift']}): per "
        "feature and metric, the subset with the largest shortfall against the whole set; "
        f"one-sided permutation test ({options['n_resamples']} random "
        f"subsets of the same size), {options['correction']}-adjusted p; "
        f"fail = adjusted p <= {options['alpha']:g} and shortfall > "
        f"{options['min_effect']:g}. {_lower_is_better()}",
        "test_catalogue",
        "Subset Performance",
        options["shift"],
    )


def _k1(p: Mapping[str, Any]) -> str:
    """``k1`` as a phrase: ``5``, or ``10 and 20`` for several."""
    k1 = p["k1"]
    return " and ".join(str(k) for k in k1) if isinstance(k1, (list, tuple)) else str(k1)


def _k2(p: Mapping[str, Any]) -> tuple[str, str]:
    """Where the curves end: (``all classes``, ``C``) or (``k2 classes``, ``k2``)."""
    k2 = p.get("k2")
    return ("all classes", "C") if k2 is None else (f"{k2} classes", str(k2))


def _cleanex_fits(p: Mapping[str, Any]) -> str:
    """What the CleaneX columns say, with the job's stopping rule."""
    return (
        " 'fits converged': the CleaneX fits whose loss fell by less than "
        f"{p['cleanex_tolerance']:g} of itself over {p['cleanex_patience']} steps before "
        f"{p['cleanex_max_steps']} steps († where some did not); their steps (median and max) and largest final loss."
    )


def _extrapolation(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    target, end = _k2(p)
    comparison = (
        " With CleaneX: each other method's RMSE ratio to CleaneX's (median; above 1, CleaneX is better) and the "
        f"share of repetitions in which CleaneX has the lower RMSE.{_cleanex_fits(p)}"
        if "cleanex" in p.get("methods", ())
        else ""
    )
    return _with_source(
        f"Accuracy extrapolation for {w['model']} on {w['dataset']} "
        f"({w['labels']} labels, shift {p['shift']}): "
        f"{p['repetitions']} seeded samples of {_k1(p)} classes, each "
        f"extrapolated to {target}; "
        f"RMSE against the exact expected accuracy on all classes over k = 2..{end}.{comparison}",
        "slavutsky2021",
        "Figure 3",
        p["shift"],
    )


def _worst_class_tables(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return _with_source(
        f"Worst-class metrics on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), in percent; worst class in "
        "parentheses.",
        "bitterwolf2022",
        _worst_class_table(w["labels"]),
        w["shift"],
    )


def _worst_class_intervals(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    level = f"{100 * b['confidence']:g} %"
    return _with_source(
        f"Worst-class metrics on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), in percent, "
        f"with their {level} intervals in brackets. For the recall-type minima (WCA, WnCR, W2CA and "
        f"their top-k versions) the exact bound, which covers the true minimum at least {level} of the "
        f"time; for the other rows the percentile interval of {b['replicates']} stratified bootstrap "
        f"replicates (seed {b['seed']}), which under-covers a minimum (WCP, WSupCA, WSupCR). "
        "The table beside this one is the paper's, without intervals.",
        "bitterwolf2022",
        f"{_worst_class_table(w['labels'])}, with intervals the paper does not give",
        w["shift"],
    )


def _decisiveness_table(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return _with_source(
        f"Decisiveness, geometric accuracy and robustness on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), "
        "reported / measured.",
        "george2020",
        "Table 1",
        w["shift"],
    )


def _gamma_sweep(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return _with_source(
        f"Effect of gamma on the reported robustness, geometric accuracy and decisiveness on {w['dataset']} "
        f"({w['labels']} labels, shift {w['shift']}).",
        "george2020",
        "Table 2",
        w["shift"],
    )


def _decisiveness_intervals(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    return _with_source(
        f"Decisiveness, geometric accuracy and robustness on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), "
        f"each number followed by its {100 * b['confidence']:g} % percentile interval of {b['replicates']} "
        f"stratified bootstrap replicates (seed {b['seed']}; the bin edges of the measured metrics held fixed). "
        "The table beside this one is the paper's, without intervals.",
        "george2020",
        "Table 1, with intervals the paper does not give",
        w["shift"],
    )


def _model_comparison(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    return _with_source(
        f"Model comparison on {w['dataset']} ({w['labels']} labels, shift {w['shift']}): each worst-class "
        "metric of the second model minus the first, in percentage points, with the "
        f"{100 * b['confidence']:g} % percentile interval of {b['replicates']} paired stratified "
        f"bootstrap replicates (the same samples, matched by sample id, and the same draws for both "
        f"models; seed {b['seed']}); * marks a difference whose interval excludes 0.",
        "bitterwolf2022",
        "Table 1 metrics (the comparison is not in the paper)",
        w["shift"],
    )


def _reference_tests(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return _with_source(
        f"Reference-vs-evaluation tests of {w['model']} on {w['dataset']} "
        f"({w['labels']} labels): the {p['reference']} "
        "shift against every other; fail = worse than the absolute limit, warn = degraded "
        "by more than the degradation limit. For atc the evaluation value is the "
        f"ATC-predicted accuracy, beside the actual accuracy. {_lower_is_better('calibration_mse')}",
        "test_catalogue",
        "Model Performance",
        *p.get("shifts", ()),
    )


def _transformation_tests(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return _with_source(
        f"Transformation tests of {w['model']} on {w['dataset']}: accuracy, macro F1 "
        "and prediction flip rate against clean, per corruption.",
        "test_catalogue",
        "Transformations",
        *p.get("shifts", ()),
    )


CAPTIONS: dict[str, Text] = {
    "run_subset_tests": _subset_tests,
    "run_reference_tests": _reference_tests,
    "summarise_reference_tests": lambda w, p: _with_source(
        f"Reference-vs-evaluation tests on {w['dataset']} ({w['labels']} "
        f"labels, reference {p['reference']}): tests per status, "
        "the worst status, and the failing and warning tests (shift:metric) per model.",
        "test_catalogue",
        "Model Performance",
    ),
    "evaluate_extrapolation": _extrapolation,
    "summarise_extrapolation": lambda w, p: _with_source(
        f"Accuracy extrapolation on {w['dataset']} ({w['labels']} labels) from "
        f"{_k1(p)} sampled classes to {p.get('k2') or 'all'}: "
        f"RMSE mean +- sd over {p['repetitions']} repetitions, per k1, method and model.",
        "slavutsky2021",
        "Figure 3 (D)",
    ),
    "simulate_extrapolation": lambda w, p: _with_source(
        "Simulated accuracy extrapolation: prototypes in d = 5 dimensions, "
        f"10 points per class, sigma2 = {p['sigma2']:g}; extrapolation "
        f"from k1 sampled classes to k2 = {p['k2']}; RMSE over "
        f"{p['repetitions']} repetitions.{_cleanex_fits(p) if 'cleanex' in p.get('methods', ()) else ''}",
        "slavutsky2021",
        "Figure 2 (its simulation)",
    ),
    "run_transformation_tests": _transformation_tests,
    "aggregate_worst_class_tables": _worst_class_tables,
    "aggregate_worst_class_tables/intervals": _worst_class_intervals,
    "compare_models": _model_comparison,
    "aggregate_decisiveness_tables/intervals": _decisiveness_intervals,
    "analyse_robust_fairness": lambda w, p: _with_source(
        f"Robust fairness on {w['dataset']} under {w['shift']}: per model, accuracy A and robust A (accuracy on "
        "the attacked images), worst-class clean and robust accuracy and the largest class-wise boundary error "
        "(share of a class's samples right on clean images and wrong under attack), in percent with their class; "
        "NSD (SD / mean) and Gini coefficient of the class-wise robust error over the classes with samples.",
        "medi2024",
        "Figure 3 (class-wise robust accuracy), extended to the robust-fairness metrics",
    ),
    "analyse_transfer_attacks": lambda w, p: _with_source(
        f"Transfer attacks on {w['dataset']}: rows the source model each attack was crafted on, columns the model "
        "evaluated; each cell the robust accuracy of the column's model on the transferred images and, in "
        "parentheses, its worst class with that class's accuracy (the diagonal is the white-box attack).",
        "medi2024",
        "Figure 3 (class-wise robust accuracy under PGD), extended to transferred attacks",
    ),
    "aggregate_decisiveness_tables": _decisiveness_table,
    "aggregate_decisiveness_tables/gamma_sweep": _gamma_sweep,
}

TITLES: dict[str, Text] = {
    "evaluate_extrapolation": lambda w, p: (
        f"{w['model']} on {w['dataset']} ({w['labels']} labels): extrapolation from {_k1(p)} sampled classes"
    ),
    "compute_worst_class_metrics": lambda w, p: f"{w['model']}, {w['dataset']}, {w['labels']} labels, {w['shift']}",
    "compute_decisiveness_metrics": lambda w, p: f"{w['model']} on {w['dataset']} ({w['shift']})",
    "analyse_classwise_robustness": lambda w, p: w["dataset"],
    "analyse_targeted_attacks": lambda w, p: f"{w['dataset']}: targeted PGD",
    "analyse_robust_fairness": lambda w, p: f"{w['dataset']}: class-wise clean vs robust accuracy under {w['shift']}",
    "plot_class_wise_figures": lambda w, p: f"{w['dataset']}, {w['labels']} labels, {w['shift']}",
}


def _job(snakemake: Any) -> tuple[str, dict[str, str], dict[str, Any]]:
    return str(snakemake.rule), dict(snakemake.wildcards.items()), dict(snakemake.params.items())


def caption_of(snakemake: Any, table: str = "") -> str:
    """The caption of the table a Snakemake job writes (``table``: which one, for a job
    that writes several; its key in :data:`CAPTIONS` is ``rule/table``)."""
    rule, wildcards, params = _job(snakemake)
    return CAPTIONS[f"{rule}/{table}" if table else rule](wildcards, params)


def title_of(snakemake: Any) -> str:
    """The title of the figure a Snakemake job draws."""
    rule, wildcards, params = _job(snakemake)
    return TITLES[rule](wildcards, params)
