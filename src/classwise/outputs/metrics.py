"""The outputs of every (dataset, label view, shift): the paper tables and figures of
workflow/rules/tables.smk and metrics.smk, each model's per-class numbers, the label views'
labels, the explorer of every class (workflow/rules/explorer.smk) and the gates' report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from classwise.outputs.record import Output
from classwise.outputs.text import with_source

#: The named outputs of a table written by ``write_tables``, with ``prefix`` before each name.
TABLE = {"markdown": ".md", "csv": ".csv", "latex": ".tex"}


def table_files(prefix: str = "") -> dict[str, str]:
    """A table's three files as a rule names them: ``{prefix}markdown``, ``{prefix}csv``, ``{prefix}latex``."""
    return {f"{prefix}{key}": suffix for key, suffix in TABLE.items()}


def _all_models(result: str) -> dict[str, str]:
    return {"result": result, "label view": "{labels}", "shift": "{shift}", "model": "all"}


def _per_model(result: str) -> dict[str, str]:
    return {"result": result, "label view": "{labels}", "shift": "{shift}", "model": "{model}"}


def _worst_class_table(labels: str) -> str:
    """Table 1 of the worst-class paper on the original labels, Table 2 on cleaned ones."""
    return "Table 1" if labels == "original" else "Table 2 (cleaned labels)"


def _worst_class_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Worst-class metrics on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), in percent; worst class in "
        "parentheses.",
        "bitterwolf2022",
        _worst_class_table(w["labels"]),
        w["shift"],
    )


def _worst_class_intervals_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    level = f"{100 * b['confidence']:g} %"
    return with_source(
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


def _model_comparison_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    return with_source(
        f"Model comparison on {w['dataset']} ({w['labels']} labels, shift {w['shift']}): each worst-class "
        "metric of the second model minus the first, in percentage points, with the "
        f"{100 * b['confidence']:g} % percentile interval of {b['replicates']} paired stratified "
        f"bootstrap replicates (the same samples, matched by sample id, and the same draws for both "
        f"models; seed {b['seed']}); * marks a difference whose interval excludes 0.",
        "bitterwolf2022",
        "Table 1 metrics (the comparison is not in the paper)",
        w["shift"],
    )


def _model_ranking_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    level = f"{100 * b['confidence']:g} %"
    return with_source(
        f"Ranks of the models on {w['dataset']} ({w['labels']} labels, shift {w['shift']}) on A, WCA and WnCR, on the "
        "samples every model holds (matched by sample id): the value in percent; rank 1 the highest value, models "
        f"of equal value sharing their average rank (tied); the {level} percentile interval of the ranks over "
        f"{b['replicates']} paired stratified bootstrap replicates (seed {b['seed']}); group: models that share a "
        f"letter cannot be told apart (no {level} interval of their paired difference excludes 0; per pair, not "
        "adjusted); pairwise ranks: the ranks those decisions leave open, which hold for every model at once far more "
        "often than the percentile intervals (docs/uncertainty.md): read them for a statement about several models.",
        "bitterwolf2022",
        "Table 1 metrics (the ranking is not in the paper)",
        w["shift"],
    )


def _decisiveness_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Decisiveness, geometric accuracy and robustness on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), "
        "reported / measured.",
        "george2020",
        "Table 1",
        w["shift"],
    )


def _decisiveness_intervals_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    b = p["bootstrap"]
    return with_source(
        f"Decisiveness, geometric accuracy and robustness on {w['dataset']} ({w['labels']} labels, shift {w['shift']}), "
        f"each number followed by its {100 * b['confidence']:g} % percentile interval of {b['replicates']} "
        f"stratified bootstrap replicates (seed {b['seed']}; the bin edges of the measured metrics held fixed). "
        "The table beside this one is the paper's, without intervals.",
        "george2020",
        "Table 1, with intervals the paper does not give",
        w["shift"],
    )


def _gamma_sweep_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Effect of gamma on the reported robustness, geometric accuracy and decisiveness on {w['dataset']} "
        f"({w['labels']} labels, shift {w['shift']}).",
        "george2020",
        "Table 2",
        w["shift"],
    )


def _class_wise_title(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return f"{w['dataset']}, {w['labels']} labels, {w['shift']}"


TABLES = "tables/{dataset}/{labels}/{shift}"
FIGURES = "figures/{dataset}/{labels}/{shift}"
METRICS = "metrics/{dataset}/{labels}/{model}/{shift}"

RECORDS = (
    Output(
        name="cached_outputs",
        rule="infer",
        path="logits/{dataset}/{model}/{shift}",
        files={"logits": ".npz", "metadata": ".json"},
        also_written_by=("merge_logit_shards", "import_predictions"),
        mirrors=(
            None,
            "a model's cached outputs on a shift (logits, probabilities or hard predictions) and their sidecar (docs/pipeline.md#the-logits-file-format)",
        ),
    ),
    Output(
        name="worst_class_table",
        rule="aggregate_worst_class_tables",
        path=f"{TABLES}/worst_class",
        files=table_files(),
        mirrors=("bitterwolf2022", "Table 1 (original labels) / Table 2 (cleaned labels)"),
        shown="csv",
        report="""\
Worst-class metrics of every model on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.wildcards.shift }}``), in percent,
with the worst class, superclass or pair in parentheses: accuracy A, worst-class accuracy WCA
and precision WCP, worst superclass accuracy and recall (WSupCA, WSupCR), pooled recall of the
n worst classes (WnCR), worst pair accuracy (W2CA) and their top-k versions.

Mirrors **Table 1** of :classwise-cite:`bitterwolf2022`{% if snakemake.wildcards.labels != "original" %} (on cleaned labels, with the class-balanced ``W2CA_balanced`` row: **Table 2**){% endif %}.
Models are columns, metrics rows; the same table is written as Markdown and LaTeX beside this CSV.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="bitterwolf2022",
        # Table 2 of the paper is the same table on cleaned labels
        labels=lambda wildcards: {
            "result": "worst-class metrics (Table %d)" % (1 if wildcards.labels == "original" else 2),
            "label view": wildcards.labels,
            "shift": wildcards.shift,
            "model": "all",
        },
        caption=_worst_class_caption,
    ),
    Output(
        name="per_class_recall",
        rule="plot_class_wise_figures",
        path=f"{FIGURES}/per_class_recall",
        files={"recall": ".png"},
        mirrors=("medi2024", "Figure 1 (class-wise accuracy; Figure 3 under a shift)"),
        shown="recall",
        report="""\
Class-wise accuracy (recall of each class) of every model on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.wildcards.shift }}``): one group
of bars per class, one bar per model, the overall accuracy of each model as a dashed line in its
colour;
the error bars are each class's exact (Clopper-Pearson)
{{ "%g" | format(snakemake.config["metrics"]["bootstrap"]["confidence"] * 100) }} % interval of
its recall (a band past 50 classes).

Mirrors {% if snakemake.wildcards.shift == "clean" %}**Figure 1**{% else %}the top row of **Figure 3** (robust accuracy under a shift){% endif %} of :classwise-cite:`medi2024`.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}
""",
        category="medi2024",
        labels=_all_models("class-wise accuracy (Figures 1, 3)"),
        title=_class_wise_title,
    ),
    Output(
        name="per_class_cfps",
        rule="plot_class_wise_figures",
        path=f"{FIGURES}/per_class_cfps",
        files={"cfps": ".png"},
        mirrors=("medi2024", "Figure 2 (class false positive score; Figure 3 under a shift)"),
        shown="cfps",
        report="""\
Class false positive score (CFPS: how often other classes' samples are predicted as the class,
relative to those samples) of every class and model on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.wildcards.shift }}``). A class with
a high CFPS attracts false positives even when its own accuracy is high.

Mirrors {% if snakemake.wildcards.shift == "clean" %}**Figure 2**{% else %}the bottom row of **Figure 3** (robust CFPS under a shift){% endif %} of :classwise-cite:`medi2024`.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}
""",
        category="medi2024",
        labels=_all_models("class-wise CFPS (Figures 2, 3)"),
        title=_class_wise_title,
    ),
    Output(
        name="decisiveness_table",
        rule="aggregate_decisiveness_tables",
        when=("scored", "one_label"),
        path=f"{TABLES}/decisiveness",
        files=table_files("table_"),
        mirrors=("george2020", "Table 1 (reported / measured)"),
        shown="table_csv",
        report="""\
Prediction accuracy, geometric accuracy, robustness and decisiveness of every model on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels, shift
``{{ snakemake.wildcards.shift }}``), each cell "reported / measured": the generalized means of
the probabilities the model assigns to the true class (reported) and of the accuracy measured
in confidence bins (measured), gamma = {{ snakemake.config["metrics"]["decisiveness"]["gamma"] }};
the last row is the calibration slope.

Mirrors **Table 1** of :classwise-cite:`george2020` ("0.913 / 0.913").

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.table_csv }}
""",
        category="george2020",
        labels=_all_models("decisiveness table (Table 1)"),
        caption=_decisiveness_caption,
    ),
    Output(
        name="gamma_sweep_table",
        rule="aggregate_decisiveness_tables",
        when=("scored", "one_label"),
        path=f"{TABLES}/gamma_sweep",
        files=table_files("sweep_"),
        mirrors=("george2020", "Table 2 (effect of gamma)"),
        shown="sweep_csv",
        report="""\
Effect of gamma on robustness, geometric accuracy and decisiveness (reported) of every model on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels, shift
``{{ snakemake.wildcards.shift }}``): one row per gamma of the sweep, one column per model and metric.

Mirrors **Table 2** of :classwise-cite:`george2020` (the paper sweeps gamma for DenseNet on GTSRB).

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.sweep_csv }}
""",
        category="george2020",
        labels=_all_models("gamma sweep table (Table 2)"),
        caption=_gamma_sweep_caption,
        part="gamma_sweep",
    ),
    Output(
        name="worst_class_intervals_table",
        rule="aggregate_worst_class_tables",
        when=("bootstrap",),
        path=f"{TABLES}/worst_class_intervals",
        files=table_files("intervals_"),
        mirrors=(None, "the worst_class table with each number's interval (not in the paper)"),
        shown="intervals_csv",
        report="""\
The worst-class metrics of every model on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.wildcards.shift }}``), in percent,
each followed by its {{ "%g" | format(snakemake.config["metrics"]["bootstrap"]["confidence"] * 100) }} % interval in
brackets: ``08.00 (sunglass) [04.00, 14.00]``. For the recall-type minima (WCA, WnCR, W2CA and
their top-k versions) the interval is the exact bound, which covers the true minimum at least
that often whatever the number of classes; for A, A@k, WCP and the superclass minima it is the
percentile interval of {{ snakemake.config["metrics"]["bootstrap"]["replicates"] }} stratified
bootstrap replicates, which under-covers a minimum (see the coverage study in docs/uncertainty.md).

**Table 1** of :classwise-cite:`bitterwolf2022` with intervals{% if snakemake.wildcards.labels != "original" %} (on cleaned labels: **Table 2**){% endif %};
the paper's own layout, without intervals, is the table beside this one (``worst_class.csv``),
unchanged by the bootstrap.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.intervals_csv }}
""",
        category="bitterwolf2022",
        labels=_all_models("worst-class metrics with intervals (Table 1)"),
        caption=_worst_class_intervals_caption,
        part="intervals",
    ),
    Output(
        name="worst_probability_figure",
        rule="plot_class_wise_figures",
        when=("bootstrap",),
        path=f"{FIGURES}/worst_probability",
        files={"worst_probability": ".png"},
        mirrors=(None, "how often each class is the worst across bootstrap replicates (not in the paper)"),
        shown="worst_probability",
        report="""\
Which class is the worst, and how sure that is, for every model on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels, shift
``{{ snakemake.wildcards.shift }}``): for each metric of the worst-class table that names a class,
superclass or pair (WCA, WCP, WSupCA, WSupCR, W2CA, WCA@k), the (up to) five most frequent worst
ones and the share of the {{ snakemake.config["metrics"]["bootstrap"]["replicates"] }} stratified
bootstrap replicates in which each is the worst. A bar near 1 is a worst class the test set
pins down; several short bars mean the worst class of **Table 1** of :classwise-cite:`bitterwolf2022` is
a matter of chance.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}
""",
        category="bitterwolf2022",
        labels=_all_models("worst-class probabilities (Table 1 metrics)"),
        title=_class_wise_title,
    ),
    Output(
        name="decisiveness_intervals_table",
        rule="aggregate_decisiveness_tables",
        when=("bootstrap", "scored", "one_label"),
        path=f"{TABLES}/decisiveness_intervals",
        files=table_files("intervals_"),
        mirrors=(None, "the decisiveness table with each number's interval (not in the paper)"),
        shown="intervals_csv",
        report="""\
Prediction accuracy, geometric accuracy, robustness and decisiveness of every model on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels, shift
``{{ snakemake.wildcards.shift }}``), "reported / measured" as in the paper's table, each number
followed by its {{ "%g" | format(snakemake.config["metrics"]["bootstrap"]["confidence"] * 100) }} %
percentile interval of {{ snakemake.config["metrics"]["bootstrap"]["replicates"] }} stratified
bootstrap replicates (each class's samples resampled within the class; the measured metrics keep
the full sample's bin edges).

**Table 1** of :classwise-cite:`george2020` with intervals; the paper's own layout, without
intervals, is the table beside this one (``decisiveness.csv``), unchanged by the bootstrap.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.intervals_csv }}
""",
        category="george2020",
        labels=_all_models("decisiveness table with intervals (Table 1)"),
        caption=_decisiveness_intervals_caption,
        part="intervals",
    ),
    Output(
        name="model_comparison_table",
        rule="compare_models",
        when=("compared", "one_label"),
        path=f"{TABLES}/model_comparison",
        files=table_files(),
        mirrors=(None, "every pair of models on the worst_class metrics, paired bootstrap (not in the paper)"),
        shown="csv",
        report="""\
Every pair of models on **{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}``
labels, shift ``{{ snakemake.wildcards.shift }}``), compared on the worst-class metrics: per metric
and pair, the second model minus the first (``difference``, a fraction) and the
{{ "%g" | format(snakemake.config["metrics"]["bootstrap"]["confidence"] * 100) }} % percentile interval of
{{ snakemake.config["metrics"]["bootstrap"]["replicates"] }} paired stratified bootstrap replicates
(the same samples, matched by sample id, resampled the same way for both models), the two-sided
bootstrap p-value, and ``excludes_zero``: whether the interval excludes 0. The Markdown and
LaTeX tables beside this CSV show the same as ``+04.50 [+01.20, +07.80] *`` in percentage points,
``*`` where the interval excludes 0.

Compares the models on the metrics of **Table 1** of :classwise-cite:`bitterwolf2022` (not in the paper).

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="bitterwolf2022",
        labels=_all_models("model comparison (Table 1 metrics)"),
        caption=_model_comparison_caption,
    ),
    Output(
        name="model_ranking_table",
        rule="compare_models",
        when=("compared", "one_label"),
        path=f"{TABLES}/model_ranking",
        files=table_files("ranking_"),
        mirrors=(None, "the models ranked on A, WCA and WnCR with bootstrap rank intervals and groups (not in the paper)"),
        shown="ranking_csv",
        report="""\
The models of **{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels,
shift ``{{ snakemake.wildcards.shift }}``) ranked on A, WCA and WnCR, on the samples every model
holds (``n_samples``, matched by sample id; ``n_classes`` of them with samples): per metric and
model its ``value`` (a fraction), ``rank`` (1 the highest; equal values share their average rank,
``n_tied`` says how many), the
{{ "%g" | format(snakemake.config["metrics"]["bootstrap"]["confidence"] * 100) }} % percentile
interval of its rank over {{ snakemake.config["metrics"]["bootstrap"]["replicates"] }} paired
stratified bootstrap replicates (``rank_low``, ``rank_high``; the same draws for every model),
its ``group`` (a compact letter display: models that share a letter cannot be told apart, no
interval of their paired difference excluding 0, per pair, not adjusted) and the ranks those
pairwise decisions leave open (``rank_low_pairwise``, ``rank_high_pairwise``), which hold for
every model at once far more often than the percentile intervals: read them for a statement
about several models at once (docs/uncertainty.md).

Ranks the models on the metrics of **Table 1** of :classwise-cite:`bitterwolf2022` (not in the paper).

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

.. classwise-table:: {{ snakemake.output.ranking_csv }}
""",
        category="bitterwolf2022",
        labels=_all_models("model ranking (Table 1 metrics)"),
        caption=_model_ranking_caption,
        part="ranking",
    ),
    Output(
        name="confusion_figure",
        rule="compute_worst_class_metrics",
        path=f"{FIGURES}/confusion_{{model}}",
        files={"confusion_figure": ".png"},
        mirrors=("medi2024", "Figure 4 (confusion matrix)"),
        shown="confusion_figure",
        report="""\
Confusion matrix of one model on **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels, shift ``{{ snakemake.wildcards.shift }}``): true classes
down, predicted classes across; the file name says which model.

The per-model form of **Figure 4** of :classwise-cite:`medi2024` (the paper averages the
matrices of its models under PGD; see the mean confusion matrices in this category).

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}
""",
        category="medi2024",
        labels=_per_model("confusion matrix (Figure 4, per model)"),
        title=lambda w, p: f"{w['model']}, {w['dataset']}, {w['labels']} labels, {w['shift']}",
    ),
    Output(
        name="worst_class_metrics",
        rule="compute_worst_class_metrics",
        path=f"{METRICS}/worst_class",
        files={"metrics": ".json"},
        mirrors=("bitterwolf2022", "the numbers of Table 1, with intervals, ties and the worst-class probabilities"),
    ),
    Output(
        name="per_class_numbers",
        rule="compute_worst_class_metrics",
        path=f"{METRICS}/per_class",
        files={"per_class": ".csv"},
        mirrors=(None, "one model's recall, precision, top-k recall and CFPS per class, with their intervals"),
    ),
    Output(
        name="confusion_counts",
        rule="compute_worst_class_metrics",
        path=f"{METRICS}/confusion",
        files={"confusion": ".csv"},
        mirrors=(None, "one model's confusion matrix as counts (true x predicted)"),
    ),
    Output(
        name="reliability_figure",
        rule="compute_decisiveness_metrics",
        when=("scored", "one_label"),
        path=f"{FIGURES}/reliability_{{model}}",
        files={"figure": ".png"},
        mirrors=("george2020", "Figure 1"),
        shown="figure",
        report="""\
Reported versus measured accuracy of **{{ snakemake.wildcards.model }}** on
**{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}`` labels, shift
``{{ snakemake.wildcards.shift }}``), in {{ snakemake.config["metrics"]["decisiveness"]["bins"] }}
variable-width confidence bins. The diagonal is perfect calibration; the marked points are the
(reported, measured) robustness, geometric accuracy and decisiveness.

Mirrors **Figure 1** of :classwise-cite:`george2020`.

.. classwise-corruption-note:: {{ snakemake.wildcards.shift }}
""",
        category="george2020",
        labels=_per_model("reliability figure (Figure 1)"),
        title=lambda w, p: f"{w['model']} on {w['dataset']} ({w['shift']})",
    ),
    Output(
        name="decisiveness_metrics",
        rule="compute_decisiveness_metrics",
        when=("scored", "one_label"),
        path=f"{METRICS}/decisiveness",
        files={"metrics": ".json"},
        mirrors=("george2020", "the numbers of Tables 1 and 2, with intervals, and the calibration behind Figure 1"),
    ),
    Output(
        name="label_view",
        rule="build_label_view",
        when=("view",),
        path="labels/{dataset}/{labels}",
        files={"view": ".csv"},
        mirrors=(None, "a label view's labels, one per sample of the dataset (-1: removed)"),
    ),
    Output(
        name="numbers",
        rule="collect_numbers",
        path="metrics",
        files={"table": ".parquet", "whole_set": ".csv"},
        mirrors=(None, "every number of the run, one row each, the same wherever it appears (docs/pipeline.md)"),
    ),
    Output(
        name="explorer",
        rule="build_explorer",
        path="explorer",
        files={"explorer": ".html"},
        mirrors=(
            None,
            "every class, model and shift in one page to open in a browser: a search box for any class (its accuracy, "
            "CFPS and confusions under every shift), the models x shifts table, a class x shift heatmap per model, "
            "the worst classes of each shift",
        ),
    ),
    Output(
        name="gates",
        rule="check_gates",
        path="gates",
        files={"markdown": ".md", "json": ".json"},
        mirrors=(None, "the config's gates: every check, pass or FAIL, with its value"),
    ),
)
