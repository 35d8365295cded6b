"""The outputs of the analyses over cached logits (workflow/rules/analyses.smk): the test suites
of the model-testing catalogue and the accuracy extrapolation of Slavutsky and Benjamini, 2021."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from classwise.outputs.metrics import table_files
from classwise.outputs.record import Output, Setting
from classwise.outputs.text import with_source

VIEW_MODEL = "analyses/{dataset}/{labels}/{model}"
VIEW = "analyses/{dataset}/{labels}"


def _labels(result: str, shift: str | Setting, model: str) -> dict[str, str | Setting]:
    return {"result": result, "label view": "{labels}", "shift": shift, "model": model}


def _k1(p: Mapping[str, Any]) -> str:
    """``k1`` as a phrase: ``5``, or ``10 and 20`` for several."""
    k1 = p["k1"]
    return " and ".join(str(k) for k in k1) if isinstance(k1, (list, tuple)) else str(k1)


def _k2(p: Mapping[str, Any]) -> tuple[str, str]:
    """Where the curves end: (``all classes``, ``C``) or (``k2 classes``, ``k2``)."""
    k2 = p.get("k2")
    return ("all classes", "C") if k2 is None else (f"{k2} classes", str(k2))


def _lower_is_better(*others: str) -> str:
    """The sentence of an analysis caption naming the metrics whose lower value is the better."""
    names = [
        'average_uncertainty (the mean of 1 - max p, the document\'s "average confidence")',
        "positive_prediction_rate (the share of the most-predicted class)",
        *others,
    ]
    return f"Lower is better for {', '.join(names[:-1])} and {names[-1]}."


def _cleanex_fits(p: Mapping[str, Any]) -> str:
    """What the CleaneX columns say, with the job's stopping rule."""
    return (
        " 'fits converged': the CleaneX fits whose loss fell by less than "
        f"{p['cleanex_tolerance']:g} of itself over {p['cleanex_patience']} steps before "
        f"{p['cleanex_max_steps']} steps († where some did not); their steps (median and max) and largest final loss."
    )


def _subset_tests_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    options = p["options"]
    return with_source(
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


def _reference_tests_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Reference-vs-evaluation tests of {w['model']} on {w['dataset']} "
        f"({w['labels']} labels): the {p['reference']} "
        "shift against every other; fail = worse than the absolute limit, warn = degraded "
        "by more than the degradation limit. For atc the evaluation value is the "
        f"ATC-predicted accuracy, beside the actual accuracy. {_lower_is_better('calibration_mse')}",
        "test_catalogue",
        "Model Performance",
        *p.get("shifts", ()),
    )


def _reference_summary_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Reference-vs-evaluation tests on {w['dataset']} ({w['labels']} "
        f"labels, reference {p['reference']}): tests per status, "
        "the worst status, and the failing and warning tests (shift:metric) per model.",
        "test_catalogue",
        "Model Performance",
    )


def _extrapolation_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    target, end = _k2(p)
    comparison = (
        " With CleaneX: each other method's RMSE ratio to CleaneX's (median; above 1, CleaneX is better) and the "
        f"share of repetitions in which CleaneX has the lower RMSE.{_cleanex_fits(p)}"
        if "cleanex" in p.get("methods", ())
        else ""
    )
    return with_source(
        f"Accuracy extrapolation for {w['model']} on {w['dataset']} "
        f"({w['labels']} labels, shift {p['shift']}): "
        f"{p['repetitions']} seeded samples of {_k1(p)} classes, each "
        f"extrapolated to {target}; "
        f"RMSE against the exact expected accuracy on all classes over k = 2..{end}.{comparison}",
        "slavutsky2021",
        "Figure 3",
        p["shift"],
    )


def _extrapolation_summary_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Accuracy extrapolation on {w['dataset']} ({w['labels']} labels) from "
        f"{_k1(p)} sampled classes to {p.get('k2') or 'all'}: "
        f"RMSE mean +- sd over {p['repetitions']} repetitions, per k1, method and model.",
        "slavutsky2021",
        "Figure 3 (D)",
    )


def _simulation_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        "Simulated accuracy extrapolation: prototypes in d = 5 dimensions, "
        f"10 points per class, sigma2 = {p['sigma2']:g}; extrapolation "
        f"from k1 sampled classes to k2 = {p['k2']}; RMSE over "
        f"{p['repetitions']} repetitions.{_cleanex_fits(p) if 'cleanex' in p.get('methods', ()) else ''}",
        "slavutsky2021",
        "Figure 2 (its simulation)",
    )


def _extrapolation_title(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return f"{w['model']} on {w['dataset']} ({w['labels']} labels): extrapolation from {_k1(p)} sampled classes"


#: The shift each analysis reads, as its report label.
_SUBSET_SHIFT = Setting("analyses", "subset_tests", "shift")
_EXTRAPOLATION_SHIFT = Setting("analyses", "extrapolation", "shift")


RECORDS = (
    Output(
        name="image_features",
        rule="compute_image_features",
        when=("subset_tests",),
        path="features/{dataset}",
        files={"features": ".csv"},
        mirrors=(None, "each image's statistics (and the user's metadata) that the subset tests split the samples by"),
    ),
    Output(
        name="subset_tests",
        rule="run_subset_tests",
        when=("subset_tests",),
        path=f"{VIEW_MODEL}/subset_tests",
        files=table_files(),
        mirrors=("test_catalogue", "Subset Performance"),
        shown="csv",
        report="""\
Subset performance tests of **{{ snakemake.wildcards.model }}** on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.params.options["shift"] }}``): per
feature and metric, the subset with the largest shortfall against the whole set; one-sided
permutation test ({{ snakemake.params.options["n_resamples"] }} random subsets of the same size),
{{ snakemake.params.options["correction"] }}-adjusted p; fail = adjusted p <= {{ snakemake.params.options["alpha"] }}
and shortfall > {{ snakemake.params.options["min_effect"] }}.

Mirrors the **Subset Performance** tests of the :classwise-cite:`test_catalogue` (the catalogue gives
no table). Every (feature, subset, metric) test is in ``subset_tests_all.csv`` beside this file.

.. classwise-corruption-note:: {{ snakemake.params.options["shift"] }}

.. classwise-table:: {{ snakemake.output.csv }}
   :columns: feature, metric, subset, n, value, overall, p_adjusted, status
""",
        category="test_catalogue",
        labels=_labels("subset tests", _SUBSET_SHIFT, "{model}"),
        caption=_subset_tests_caption,
    ),
    Output(
        name="subset_tests_all",
        rule="run_subset_tests",
        when=("subset_tests",),
        path=f"{VIEW_MODEL}/subset_tests_all",
        files={"rows": ".csv"},
        mirrors=("test_catalogue", "Subset Performance, every (feature, subset, metric) test"),
        shown="rows",
        report="""\
Every subset performance test of **{{ snakemake.wildcards.model }}** on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels, shift
``{{ snakemake.params.options["shift"] }}``): one row per (feature, subset, metric), with the
subset's value, the whole set's, the shortfall, the permutation p-value and its
{{ snakemake.params.options["correction"] }}-adjusted value. The subset tests table of this
category keeps the worst subset of each feature and metric.

The **Subset Performance** tests of the :classwise-cite:`test_catalogue`, in full.

.. classwise-corruption-note:: {{ snakemake.params.options["shift"] }}

.. classwise-table:: {{ snakemake.output.rows }}
   :columns: feature, metric, subset, n, value, overall, shortfall, p_adjusted, status
""",
        category="test_catalogue",
        labels=_labels("subset tests, every subset", _SUBSET_SHIFT, "{model}"),
    ),
    Output(
        name="reference_tests",
        rule="run_reference_tests",
        when=("reference_tests",),
        path=f"{VIEW_MODEL}/reference_tests",
        files=table_files(),
        mirrors=("test_catalogue", "Model Performance (reference versus evaluation set)"),
        shown="csv",
        report="""\
Reference-vs-evaluation tests of **{{ snakemake.wildcards.model }}** on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels): the
``{{ snakemake.params.reference }}`` shift against every other; fail = worse than the absolute
limit, warn = degraded by more than the degradation limit. For atc the evaluation value is the
ATC-predicted accuracy, beside the actual accuracy.

Mirrors the **Model Performance** (reference versus evaluation set) tests of the
:classwise-cite:`test_catalogue` (the catalogue gives no table).

.. classwise-corruption-note:: {{ snakemake.params.shifts | join(" ") }}

.. classwise-table:: {{ snakemake.output.csv }}
   :columns: evaluation, metric, reference_value, evaluation_value, degradation, status
""",
        category="test_catalogue",
        labels=_labels("reference tests", "all", "{model}"),
        caption=_reference_tests_caption,
    ),
    Output(
        name="reference_tests_summary",
        rule="summarise_reference_tests",
        when=("reference_tests",),
        path=f"{VIEW}/reference_tests_summary",
        files=table_files(),
        mirrors=("test_catalogue", "Model Performance, summarised across models"),
        shown="csv",
        report="""\
Reference-vs-evaluation tests on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, reference ``{{ snakemake.params.reference }}``): tests
per status, the worst status, and the failing and warning tests (shift:metric) per model.

A summary across models of the **Model Performance** tests of the :classwise-cite:`test_catalogue`.

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="test_catalogue",
        labels=_labels("reference tests summary", "all", "all"),
        caption=_reference_summary_caption,
    ),
    Output(
        name="extrapolation_table",
        rule="evaluate_extrapolation",
        when=("extrapolation",),
        path=f"{VIEW_MODEL}/extrapolation",
        files=table_files(),
        mirrors=("slavutsky2021", "Figure 3 (D, E: the RMSE of each method and its ratio to CleaneX's)"),
        shown="csv",
        report="""\
Accuracy extrapolation for **{{ snakemake.wildcards.model }}** on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.params.shift }}``):
{{ snakemake.params.repetitions }} seeded samples of {{ snakemake.params.k1 if snakemake.params.k1 is number else snakemake.params.k1 | join(" and ") }} classes, each extrapolated to
{{ snakemake.params.k2 or "all" }} classes by {{ snakemake.params.methods | join(", ") }}; the RMSE
of each against the exact expected accuracy on all classes.

The real-data experiment of :classwise-cite:`slavutsky2021`, whose **Figure 3** (D) shows the
distribution of these RMSE values and (E) their ratios to CleaneX's (summarised here, when
CleaneX runs, by the median ratio and the share of repetitions CleaneX wins).

.. classwise-corruption-note:: {{ snakemake.params.shift }}

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="slavutsky2021",
        labels=_labels("extrapolation RMSE table (Figure 3D)", _EXTRAPOLATION_SHIFT, "{model}"),
        caption=_extrapolation_caption,
    ),
    Output(
        name="extrapolation_curves",
        rule="evaluate_extrapolation",
        when=("extrapolation",),
        path=f"{VIEW_MODEL}/extrapolation_curves",
        files={"curves": ".csv"},
        mirrors=("slavutsky2021", "Figure 3 (A-C: the observed, predicted and exact accuracy curves)"),
    ),
    Output(
        name="extrapolation_figure",
        rule="evaluate_extrapolation",
        when=("extrapolation",),
        path=f"{VIEW_MODEL}/extrapolation",
        files={"figure": ".png"},
        mirrors=("slavutsky2021", "Figure 3"),
        shown="figure",
        report="""\
Accuracy of **{{ snakemake.wildcards.model }}** on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels) among k classes, extrapolated from
{{ snakemake.params.k1 if snakemake.params.k1 is number else snakemake.params.k1 | join(" and ") }}
sampled classes ({{ snakemake.params.repetitions }} seeded repetitions; one block of panels per k1):
one panel per method ({{ snakemake.params.methods | join(", ") }}) with its predicted curves, the
curves observed on the sampled classes (grey), the exact expected accuracy on all classes
(black) and k1 (dotted); then the RMSE of each method over the repetitions and, when CleaneX
runs, each other method's RMSE divided by CleaneX's, repetition by repetition (capped at 4;
above the line at 1, CleaneX is better).

Mirrors **Figure 3** of :classwise-cite:`slavutsky2021`: the curve panels are its A-C, the RMSE
boxes its D and the ratios its E.

.. classwise-corruption-note:: {{ snakemake.params.shift }}
""",
        category="slavutsky2021",
        labels=_labels("extrapolation curves (Figure 3)", _EXTRAPOLATION_SHIFT, "{model}"),
        title=_extrapolation_title,
    ),
    Output(
        name="extrapolation_summary",
        rule="summarise_extrapolation",
        when=("extrapolation",),
        path=f"{VIEW}/extrapolation_summary",
        files=table_files(),
        mirrors=("slavutsky2021", "Figure 3 (D), as a table per model"),
        shown="csv",
        report="""\
Accuracy extrapolation on **{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}``
labels) from {{ snakemake.params.k1 if snakemake.params.k1 is number else snakemake.params.k1 | join(" and ") }} sampled classes to {{ snakemake.params.k2 or "all" }}: RMSE mean +- sd over
{{ snakemake.params.repetitions }} repetitions, per k1, method and model.

Mirrors the comparison of methods in **Figure 3** (D) of :classwise-cite:`slavutsky2021`, here
as a table per model.

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="slavutsky2021",
        labels=_labels("extrapolation summary (Figure 3D)", _EXTRAPOLATION_SHIFT, "all"),
        caption=_extrapolation_summary_caption,
    ),
    Output(
        name="simulation_table",
        rule="simulate_extrapolation",
        when=("simulation",),
        path="analyses/extrapolation_simulation",
        files={**table_files(), "json": ".json"},
        mirrors=("slavutsky2021", "Figure 2 (its simulation, rerun: the numbers)"),
        shown="csv",
        report="""\
Simulated accuracy extrapolation: prototypes in d = 5 dimensions, 10 points per class,
sigma2 = {{ snakemake.params.sigma2 }}; extrapolation by {{ snakemake.params.methods | join(", ") }}
from k1 = {{ snakemake.params.k1 | join(", ") if snakemake.params.k1 is not number else snakemake.params.k1 }}
sampled classes to k2 = {{ snakemake.params.k2 }}; RMSE over {{ snakemake.params.repetitions }} repetitions.

The numbers of **Figure 2** of :classwise-cite:`slavutsky2021` (its simulation, rerun here).

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="slavutsky2021",
        subcategory="simulation",
        labels={"result": "simulation RMSE table (Figure 2)", "label view": "-", "shift": "-", "model": "-"},
        caption=_simulation_caption,
    ),
    Output(
        name="simulation_figure",
        rule="simulate_extrapolation",
        when=("simulation",),
        path="analyses/extrapolation_simulation",
        files={"figure": ".png"},
        mirrors=("slavutsky2021", "Figure 2"),
        shown="figure",
        report="""\
Simulated accuracy extrapolation: prototypes in d = 5 dimensions, 10 points per class,
sigma2 = {{ snakemake.params.sigma2 }}; extrapolation by {{ snakemake.params.methods | join(", ") }}
from k1 = {{ snakemake.params.k1 | join(", ") if snakemake.params.k1 is not number else snakemake.params.k1 }}
sampled classes to k2 = {{ snakemake.params.k2 }}; RMSE over {{ snakemake.params.repetitions }} repetitions.

Mirrors **Figure 2** of :classwise-cite:`slavutsky2021`: for each k1, the RMSE of each method
over the repetitions as boxes, the median a black line (outliers not shown).
""",
        category="slavutsky2021",
        subcategory="simulation",
        labels={"result": "simulation figure (Figure 2)", "label view": "-", "shift": "-", "model": "-"},
    ),
)
