"""The outputs of class-wise robustness (Medi et al., 2024) and the transformation tests of the
model-testing catalogue (workflow/rules/robustness.smk): one set per dataset, over its shifts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from classwise.outputs.metrics import table_files
from classwise.outputs.record import Output
from classwise.outputs.text import with_source

TABLES = "tables/{dataset}/robustness"
FIGURES = "figures/{dataset}/robustness"
#: The robustness outputs of one dataset and label view (the class-drop tests).
VIEW_TABLES = "tables/{dataset}/{labels}/robustness"
VIEW_FIGURES = "figures/{dataset}/{labels}/robustness"


def _labels(result: str, shift: str = "all", model: str = "all", view: str = "original") -> dict[str, str]:
    return {"result": result, "label view": view, "shift": shift, "model": model}


def _dataset_title(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return w["dataset"]


def _robust_fairness_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Robust fairness on {w['dataset']} under {w['shift']}: per model, accuracy A and robust A (accuracy on "
        "the attacked images), worst-class clean and robust accuracy and the largest class-wise boundary error "
        "(share of a class's samples right on clean images and wrong under attack), in percent with their class; "
        "NSD (SD / mean) and Gini coefficient of the class-wise robust error over the classes with samples.",
        "medi2024",
        "Figure 3 (class-wise robust accuracy), extended to the robust-fairness metrics",
    )


def _transfer_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Transfer attacks on {w['dataset']}: rows the source model each attack was crafted on, columns the model "
        "evaluated; each cell the robust accuracy of the column's model on the transferred images and, in "
        "parentheses, its worst class with that class's accuracy (the diagonal is the white-box attack).",
        "medi2024",
        "Figure 3 (class-wise robust accuracy under PGD), extended to transferred attacks",
    )


def _transformation_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Transformation tests of {w['model']} on {w['dataset']}: accuracy, macro F1 "
        "and prediction flip rate against clean, per corruption.",
        "test_catalogue",
        "Transformations",
        *p.get("shifts", ()),
    )


def _class_drop_tests(p: Mapping[str, Any]) -> str:
    """What the class-drop tests of a job were (its ``settings`` parameter): the tests, the
    adjustment and its level."""
    from classwise.metrics.multiple_testing import ADJUSTMENTS

    settings = p["settings"]
    unpaired = {"fisher": "Fisher's", "boschloo": "Boschloo's"}[settings["unpaired_test"]]
    name, controls = ADJUSTMENTS[settings["adjustment"]].split(": ", 1)
    return (
        f"two-sided exact tests, McNemar's on the samples clean and the shift share (matched by sample id) and "
        f"{unpaired} for a set of other images; {name} ({controls}) at q = {settings['q']:g} over every tested "
        "(shift, class) of the model"
    )


def _class_drops_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Classes whose accuracy changed significantly under a shift on {w['dataset']} ({w['labels']} labels), the "
        "drops first (the largest first), then the rises: per (model, shift, class), the class's accuracy on clean images and under the shift on "
        "the samples compared (n), the change in percentage points with its "
        f"{100 * p['settings']['confidence']:g} % interval (per class, not adjusted) and the adjusted p-value; "
        f"{_class_drop_tests(p)}. class_drops.csv holds every (model, shift, class).",
        "medi2024",
        "Figure 3 (class-wise accuracy under corruption), each class's change tested",
        *p.get("shifts", ()),
    )


def _class_drop_counts_caption(w: Mapping[str, str], p: Mapping[str, Any]) -> str:
    return with_source(
        f"Per model and class on {w['dataset']} ({w['labels']} labels): the shifts tested, under how many of them "
        "the class's accuracy drops significantly and under how many it rises, and its largest significant drop "
        f"(percentage points; a fraction in the CSV); {_class_drop_tests(p)}. Classes that drop under most shifts "
        "first.",
        "medi2024",
        "Figure 3 (class-wise accuracy under corruption), counted over the shifts",
        *p.get("shifts", ()),
    )


#: The report text of the two class x shift matrices (one text: they are read together).
_CLASS_SHIFT_REPORT = """\
The numbers of **Figures 2-3** of :classwise-cite:`medi2024` on
**{{ snakemake.wildcards.dataset }}** laid out as a class x shift matrix: one row per (model,
class), one column per shift ({{ snakemake.params.confusions | length }} shifts, original
labels): the class-wise accuracy (recall) in ``class_shift_accuracy.csv``, the class false
positive score in ``class_shift_cfps.csv``. A shift over a subset of the clean images is followed
by the column ``clean on <shift>``: clean's values on the same images, matched by sample id.

.. classwise-corruption-note:: {{ snakemake.params.confusions | join(" ") }}
"""


RECORDS = (
    Output(
        name="classwise_table",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{TABLES}/classwise",
        files=table_files("table_"),
        mirrors=("medi2024", "Figures 1-3 (their numbers: class-wise accuracy and CFPS per shift and model)"),
        shown="table_csv",
        report="""\
The numbers behind the class-wise robustness figure of **{{ snakemake.wildcards.dataset }}**:
one row per (shift, model, class) with the class-wise accuracy (recall, a fraction) and the class
false positive score, at full precision ({{ snakemake.params.confusions | length }} shifts,
original labels), and ``n``, the samples of the shift and model (``pairing``: the same as clean's,
a subset of them, or other images).

The data of **Figures 1-3** of :classwise-cite:`medi2024`.

.. classwise-corruption-note:: {{ snakemake.params.confusions | join(" ") }}

.. classwise-table:: {{ snakemake.output.table_csv }}
""",
        category="medi2024",
        labels=_labels("class-wise robustness table (Figures 1-3)"),
    ),
    Output(
        name="classwise_robustness_figure",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{FIGURES}/classwise_robustness",
        files={"figure": ".png"},
        mirrors=("medi2024", "Figures 1-3 (class-wise accuracy and CFPS, clean and under each shift)"),
        shown="figure",
        report="""\
Class-wise accuracy (top row of each block) and class false positive score (bottom row) of
every model on **{{ snakemake.wildcards.dataset }}**, one panel per shift
({{ snakemake.params.confusions | length }} shifts, original labels). A panel over a subset of
the clean images says its n in its title (``n = 20 of 899``), one over other images says so.
{% if snakemake.params.confusions | length > 12 %}
Past 12 shifts the panels are those of ``clean`` and the 11 shifts of lowest worst-class
accuracy (mean over models), worst first (the 12 lowest when there is no ``clean``), named in
the figure's title: every shift is in
``worst_classes_by_shift.png``, ``accuracy_spread.png`` and ``shift_summary.csv`` of this
category.
{% endif %}
Mirrors **Figures 1-3** of :classwise-cite:`medi2024`: Figure 1 (accuracy) and Figure 2
(CFPS) on clean data, Figure 3 (robust accuracy and robust CFPS) under the corruptions; the
PGD panels extend it to the attacks. The numbers are in the table ``classwise.csv`` of this
category.

.. classwise-corruption-note:: {{ snakemake.params.confusions | join(" ") }}
""",
        category="medi2024",
        labels=_labels("class-wise robustness figure (Figures 1-3)"),
        title=_dataset_title,
    ),
    Output(
        name="prediction_similarity",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{FIGURES}/prediction_similarity",
        files={"similarity": ".png"},
        mirrors=("medi2024", "Figure 7 (similarity of the models' class-wise errors)"),
        shown="similarity",
        report="""\
Cosine similarity between the class-wise errors of every pair of models on
**{{ snakemake.wildcards.dataset }}** (clean data, original labels): 1 means the models confuse
the same classes in the same proportions. The colour scale covers 0 to 1 (the diagonal, each
model with itself, is 1); a dataset of one model gets a sentence instead, as there is nothing to
compare.

Mirrors **Figure 7** of :classwise-cite:`medi2024`.
""",
        category="medi2024",
        labels=_labels("prediction similarity (Figure 7)", shift="clean"),
        title=_dataset_title,
    ),
    Output(
        name="mean_confusion",
        rule="analyse_classwise_robustness",
        when=("classwise", "attacked"),
        path=f"{FIGURES}/mean_confusion/{{shift}}",
        files={"mean_confusion": ".png"},
        mirrors=("medi2024", "Figure 4 (confusion under attack, mean over models)"),
        shown="mean_confusion",
        report="""\
Confusion matrix under the attack ``{{ snakemake.wildcards.shift }}`` on
**{{ snakemake.wildcards.dataset }}**, averaged over the models, each row as fractions of its
true class: true classes down, predicted classes across. Off-diagonal columns that light up
are the classes the attack pushes samples into (high CFPS). Every untargeted attack gets one:
PGD and AutoAttack (each model attacked itself) and transfer attacks (images crafted on the
source model, evaluated on every model).

Mirrors **Figure 4** of :classwise-cite:`medi2024`.
""",
        category="medi2024",
        labels=_labels("mean confusion under attack (Figure 4)", shift="{shift}"),
        title=_dataset_title,
        directory=True,
    ),
    Output(
        name="shift_summary_table",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{TABLES}/shift_summary",
        files=table_files("shift_summary_"),
        mirrors=("medi2024", "Figures 1-3 extended to every shift at once: A and WCA per shift and model"),
        shown="shift_summary_csv",
        report="""\
Every shift of **{{ snakemake.wildcards.dataset }}** on one page
({{ snakemake.params.confusions | length }} shifts, original labels): per shift and model the
accuracy A, the worst-class accuracy WCA and its class, and both changes from ``clean`` on the
same samples, matched by sample id. A shift over a subset of the clean images (an attack with
``per_class``) or over other images (a natural shift set, unpaired) says so in the columns
``n`` and ``vs clean`` and in the caption.

Extends **Figures 1-3** of :classwise-cite:`medi2024` (class-wise accuracy, clean and under
corruption) to every shift at once, in the worst-class terms of :classwise-cite:`bitterwolf2022`. The
class x shift matrices (``class_shift_accuracy.csv``, ``class_shift_cfps.csv``) and the
corruption errors per class (``corruption_errors.csv``) are in the same category.

.. classwise-corruption-note:: {{ snakemake.params.confusions | join(" ") }}

.. classwise-table:: {{ snakemake.output.shift_summary_csv }}
""",
        category="medi2024",
        labels=_labels("shift summary (A and WCA per shift)"),
    ),
    Output(
        name="corruption_errors_table",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{TABLES}/corruption_errors",
        files=table_files("corruption_errors_"),
        mirrors=("medi2024", "Figure 3 in one number per class: clean and mean corrupted error"),
        shown="corruption_errors_csv",
        report="""\
Class-wise error under corruption on **{{ snakemake.wildcards.dataset }}**, per model and class:
the clean error, the mean error over every corrupted copy evaluated
({{ snakemake.params.corrupted_shifts | length }} shifts: each corruption and severity weighs
the same) and the relative accuracy drop, (clean - mean corrupted) / clean, the clean accuracy
taken on each copy's samples (matched by sample id).

Summarises **Figure 3** of :classwise-cite:`medi2024` (class-wise accuracy under the
corruptions) in one number per class.

.. classwise-corruption-note:: {{ snakemake.params.corrupted_shifts | join(" ") }}

.. classwise-table:: {{ snakemake.output.corruption_errors_csv }}
""",
        category="medi2024",
        labels=_labels("corruption errors per class"),
    ),
    Output(
        name="class_shift_accuracy",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{TABLES}/class_shift_accuracy",
        files={"class_shift_accuracy": ".csv"},
        mirrors=("medi2024", "Figures 2-3 as a class x shift matrix: class-wise accuracy"),
        shown="class_shift_accuracy",
        report=_CLASS_SHIFT_REPORT,
        category="medi2024",
        labels=_labels("class x shift accuracy matrix"),
    ),
    Output(
        name="class_shift_cfps",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{TABLES}/class_shift_cfps",
        files={"class_shift_cfps": ".csv"},
        mirrors=("medi2024", "Figures 2-3 as a class x shift matrix: class false positive score"),
        shown="class_shift_cfps",
        report=_CLASS_SHIFT_REPORT,
        category="medi2024",
        labels=_labels("class x shift CFPS matrix"),
    ),
    Output(
        name="worst_classes_by_shift",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{FIGURES}/worst_classes_by_shift",
        files={"worst_classes_figure": ".png"},
        mirrors=("medi2024", "Figure 3, restricted to the classes of lowest accuracy"),
        shown="worst_classes_figure",
        report="""\
The classes of lowest mean accuracy over every model and shift of
**{{ snakemake.wildcards.dataset }}** (up to 20), shift by shift, one panel per model: where a
class breaks, and whether it breaks for every model.

**Figure 3** of :classwise-cite:`medi2024` (class-wise accuracy across corruptions in one
figure), restricted to the classes that matter so that it reads the same at 1,000 classes.

.. classwise-corruption-note:: {{ snakemake.params.confusions | join(" ") }}
""",
        category="medi2024",
        labels=_labels("the worst classes across shifts"),
        title=_dataset_title,
    ),
    Output(
        name="accuracy_spread",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{FIGURES}/accuracy_spread",
        files={"spread_figure": ".png"},
        mirrors=("medi2024", "Figures 2-3: the spread of class-wise accuracy behind their bars"),
        shown="spread_figure",
        report="""\
The spread of class-wise accuracy under each shift of **{{ snakemake.wildcards.dataset }}**.
{% if snakemake.params.confusions | length > 20 %}
Past 20 shifts: the shifts run left to right from the easiest to the hardest (mean class-wise
accuracy over the models); the top panel holds every model's worst class (solid) and median
class (dotted), then one panel per model its median class, worst class, and the bands of the
10th-90th percentile and the minimum-maximum of its classes: how far the worst class falls
below the bulk as the shift gets harder.
{% else %}
One box per model (box: quartiles; black line: the median; whiskers: 5th and 95th
percentiles; points: the classes beyond): how far the worst classes fall below the bulk as the shift gets harder.
{% endif %}
The distribution behind the bars of **Figures 2-3** of :classwise-cite:`medi2024`.

.. classwise-corruption-note:: {{ snakemake.params.confusions | join(" ") }}
""",
        category="medi2024",
        labels=_labels("spread of class-wise accuracy per shift"),
        title=_dataset_title,
    ),
    Output(
        name="severity_curves_table",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{TABLES}/severity_curves",
        files=table_files("severity_curves_"),
        mirrors=("medi2024", "Figure 3 by severity: A and WCA per corruption family and severity"),
        shown="severity_curves_csv",
        report="""\
Accuracy A and worst-class accuracy WCA of every model on **{{ snakemake.wildcards.dataset }}**
per corruption family and severity ({{ snakemake.params.severity_steps | length }} shifts with a
severity; ``clean`` as severity 0), each with its change from ``clean`` on the same samples
(``n``, matched by sample id). A family is a corruption made on the fly, a published corrupted
copy (``imagenet_c_fog``), or a ``labels`` shift set whose shifts have severities.

**Figure 3** of :classwise-cite:`medi2024` (accuracy under the corruptions), read along the
severities.

.. classwise-corruption-note:: {{ snakemake.params.severity_steps | join(" ") }}

.. classwise-table:: {{ snakemake.output.severity_curves_csv }}
""",
        category="medi2024",
        labels=_labels("severity curves (A and WCA by severity)"),
    ),
    Output(
        name="severity_curves_figure",
        rule="analyse_classwise_robustness",
        when=("classwise",),
        path=f"{FIGURES}/severity_curves",
        files={"severity_figure": ".png"},
        mirrors=("medi2024", "Figure 3 by severity: A and WCA against severity"),
        shown="severity_figure",
        report="""\
Accuracy (solid) and worst-class accuracy (dashed) against severity on
**{{ snakemake.wildcards.dataset }}**, one panel per corruption family, one colour per model,
``clean`` as severity 0: how fast the worst class falls as the corruption gets stronger. The
numbers are in ``severity_curves.csv`` of this category.

**Figure 3** of :classwise-cite:`medi2024` (accuracy under the corruptions), read along the
severities.

.. classwise-corruption-note:: {{ snakemake.params.severity_steps | join(" ") }}
""",
        category="medi2024",
        labels=_labels("severity curves figure"),
    ),
    Output(
        name="class_drops_table",
        rule="test_class_drops",
        when=("class_drops",),
        path=f"{VIEW_TABLES}/class_drops",
        # the Markdown and LaTeX hold the significant rows, the CSV every (model, shift, class):
        # a million rows at ImageNet's scale, so the report shows the counts and the figure
        files=table_files("drops_"),
        mirrors=("medi2024", "Figure 3, each class's change from clean tested (exact tests, adjusted per model)"),
        caption=_class_drops_caption,
    ),
    Output(
        name="class_drop_counts",
        rule="test_class_drops",
        when=("class_drops",),
        path=f"{VIEW_TABLES}/class_drop_counts",
        files=table_files("counts_"),
        mirrors=("medi2024", "Figure 3, counted per class: under how many shifts it drops significantly"),
        shown="counts_csv",
        report="""\
Per model and class of **{{ snakemake.wildcards.dataset }}** (``{{ snakemake.wildcards.labels }}``
labels): under how many of the {{ snakemake.params.shifts | length }} shifts the class's accuracy
drops significantly from clean, under how many it rises, and its largest significant drop (a
fraction). Each (model, shift, class) is an exact two-sided test of the class's change on the
samples compared: McNemar's on the samples clean and the shift share (matched by sample id),
{{ "Fisher's" if snakemake.params.settings.unpaired_test == "fisher" else "Boschloo's" }} for a set
of other images; the p-values of a model are adjusted together
({{ "Benjamini-Hochberg" if snakemake.params.settings.adjustment == "bh" else "Holm" }}, q =
{{ snakemake.params.settings.q }}). An abstention is an error. Every test, with its change,
interval and p-values, is in ``class_drops.csv`` beside this table (docs/uncertainty.md says
how much a class must drop to be found).

Extends **Figure 3** of :classwise-cite:`medi2024` (class-wise accuracy under the corruptions)
with a test of each class's change.

.. classwise-corruption-note:: {{ snakemake.params.shifts | join(" ") }}

.. classwise-table:: {{ snakemake.output.counts_csv }}
""",
        category="medi2024",
        labels=_labels("class drops counted per class", view="{labels}"),
        caption=_class_drop_counts_caption,
        part="counts",
    ),
    Output(
        name="class_drops_figure",
        rule="test_class_drops",
        when=("class_drops",),
        path=f"{VIEW_FIGURES}/class_drops",
        files={"figure": ".png"},
        mirrors=("medi2024", "Figure 3 as a volcano plot: each class's change against its adjusted p-value"),
        shown="figure",
        report="""\
Each class's change of accuracy under each shift of **{{ snakemake.wildcards.dataset }}**
(``{{ snakemake.wildcards.labels }}`` labels) against -log10 of its adjusted p-value, one panel
per shift family, every model in the panel (its colour); filled points are significant at q =
{{ snakemake.params.settings.q }} (the dashed line), grey ones are not. Past a few thousand
points a panel draws the non-significant ones as a density (hexagons) and the significant ones
on top. The numbers are in ``class_drops.csv`` and ``class_drop_counts.csv`` of this category.

Extends **Figure 3** of :classwise-cite:`medi2024` (class-wise accuracy under the corruptions)
with a test of each class's change.

.. classwise-corruption-note:: {{ snakemake.params.shifts | join(" ") }}
""",
        category="medi2024",
        labels=_labels("class drops (change against adjusted p-value)", view="{labels}"),
        title=lambda w, p: f"{w['dataset']} ({w['labels']} labels): class drops",
    ),
    Output(
        name="transformation_tests",
        rule="run_transformation_tests",
        when=("transformation_tests",),
        path=f"{TABLES}/transformation_tests_{{model}}",
        files=table_files(),
        mirrors=("test_catalogue", "Transformations"),
        shown="csv",
        report="""\
Transformation tests of **{{ snakemake.wildcards.model }}** on **{{ snakemake.wildcards.dataset }}**:
for each corruption, accuracy, macro F1 and the share of predictions that flip against the clean
images, with pass / warn / fail against the configured thresholds.

Mirrors the **Transformations** tests of the :classwise-cite:`test_catalogue` (the catalogue gives
no table).

.. classwise-corruption-note:: {{ snakemake.params.shifts | join(" ") }}

.. classwise-table:: {{ snakemake.output.csv }}
   :columns: shift, accuracy, accuracy_drop, macro_f1_drop, flip_rate, status
""",
        category="test_catalogue",
        labels=_labels("transformation tests", model="{model}"),
        caption=_transformation_caption,
    ),
    Output(
        name="targeted_success_table",
        rule="analyse_targeted_attacks",
        when=("targeted_attacks",),
        path=f"{TABLES}/targeted_success",
        files=table_files(),
        mirrors=("medi2024", "Figure 5 (its numbers)"),
        shown="csv",
        report="""\
The numbers behind the targeted-attack figure of **{{ snakemake.wildcards.dataset }}**: per
target class, the samples attacked (those not of the target class), how many the attack turned
into the target, the success rate, and the share the clean model already predicted as the
target.

The data of **Figure 5** of :classwise-cite:`medi2024`.

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="medi2024",
        labels=_labels("targeted attack success table (Figure 5)", shift="targeted PGD"),
    ),
    Output(
        name="targeted_success_figure",
        rule="analyse_targeted_attacks",
        when=("targeted_attacks",),
        path=f"{FIGURES}/targeted_success",
        files={"figure": ".png"},
        mirrors=("medi2024", "Figure 5"),
        shown="figure",
        report="""\
Success rate of the targeted PGD attack towards each target class on
**{{ snakemake.wildcards.dataset }}**, one bar per model ({{ snakemake.params.models | join(", ") }}):
the share of the samples of other classes that the attack turns into the target class.

Mirrors **Figure 5** of :classwise-cite:`medi2024`.
""",
        category="medi2024",
        labels=_labels("targeted attack success (Figure 5)", shift="targeted PGD"),
        title=lambda w, p: f"{w['dataset']}: targeted PGD",
    ),
    Output(
        name="robust_fairness_table",
        rule="analyse_robust_fairness",
        when=("robust_fairness",),
        path=f"{TABLES}/robust_fairness_{{shift}}",
        files={**table_files(), "json": ".json"},
        mirrors=("medi2024", "Figure 3 under attack, with the robust-fairness metrics (NSD, Gini, boundary error)"),
        shown="csv",
        report="""\
Robust fairness of every model on **{{ snakemake.wildcards.dataset }}** under the attack
``{{ snakemake.wildcards.shift }}`` (original labels): accuracy A and robust A, the worst-class
clean and robust accuracy and the largest class-wise boundary error (the share of a class's
samples right on clean images and wrong under attack), in percent with their class; the
normalised standard deviation (NSD = SD / mean) and the Gini coefficient of the class-wise
robust error (Xu et al. 2021; CFA, CVPR 2023; DAFA, ICLR 2024), and ``n``, the attacked images:
every clean number is on the same images, matched by sample id. Formulas: docs/robust-fairness.md.

Extends **Figure 3** of :classwise-cite:`medi2024` (class-wise robust accuracy) to the
robust-fairness metrics of adversarial robustness. The CSV holds the same numbers as fractions
at full precision, with the standard deviation; the per-class rows are in
``robust_fairness_{{ snakemake.wildcards.shift }}.json``.

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="medi2024",
        labels=_labels("robust fairness table (Figure 3 under attack)", shift="{shift}"),
        caption=_robust_fairness_caption,
    ),
    Output(
        name="robust_fairness_figure",
        rule="analyse_robust_fairness",
        when=("robust_fairness",),
        path=f"{FIGURES}/robust_fairness_{{shift}}",
        files={"figure": ".png"},
        mirrors=("medi2024", "Figure 3 under attack: class-wise clean against robust accuracy"),
        shown="figure",
        report="""\
Class-wise clean against robust accuracy on **{{ snakemake.wildcards.dataset }}** under the
attack ``{{ snakemake.wildcards.shift }}``, one panel per model
({{ snakemake.params.models | join(", ") }}): a point per class, the diagonal where the attack
would change nothing, dotted lines at the model's A and robust A, and the classes of lowest
robust accuracy in red with their names. The further below the diagonal, the more a class
loses to the attack; a wide vertical spread is robust unfairness.

Extends **Figure 3** of :classwise-cite:`medi2024` (class-wise robust accuracy) to
adversarial robustness; the numbers are in the robust-fairness table of this category.
""",
        category="medi2024",
        labels=_labels("class-wise clean vs robust accuracy (Figure 3 under attack)", shift="{shift}"),
        title=lambda w, p: f"{w['dataset']}: class-wise clean vs robust accuracy under {w['shift']}",
    ),
    Output(
        name="transfer_matrix",
        rule="analyse_transfer_attacks",
        when=("transfer_matrix",),
        path=f"{TABLES}/transfer_matrix",
        files=table_files(),
        mirrors=("medi2024", "Figure 3 under attacks transferred from another model"),
        shown="csv",
        report="""\
Transfer matrix of **{{ snakemake.wildcards.dataset }}** (original labels): each attack of
``shifts.transfer`` crafted on its source model (rows) and evaluated on every model of the
dataset (columns). Each cell is the robust accuracy of the column's model on the transferred
images, with its worst class and that class's accuracy; the diagonal is the white-box attack
(the source's own images); the column ``n`` gives the transferred images of each row. The CSV has one row per (source, target) at full precision, with the
target's clean accuracy on the same samples. How the images are made: docs/attacks.md.

Extends **Figure 3** of :classwise-cite:`medi2024` (class-wise robust accuracy under PGD on
each model) to attacks crafted on another model: which classes stay weak when the attacker does
not know the model.

.. classwise-table:: {{ snakemake.output.csv }}
""",
        category="medi2024",
        labels=_labels("transfer matrix (Figure 3 under transfer attacks)", shift="transfer"),
        caption=_transfer_caption,
    ),
    Output(
        name="corruption_grid",
        rule="plot_corruption_grid",
        when=("corruption_grid",),
        path=f"{FIGURES}/corruption_grid",
        files={"figure": ".png"},
        mirrors=(None, "one image under every corruption of the run (no paper figure)"),
        shown="figure",
        report="""\
One evaluation image of **{{ snakemake.wildcards.dataset }}** under each corruption
{% if snakemake.params.corruptions %}({{ snakemake.params.corruptions | join(", ") }}){% else %}of the registry{% endif %}, clean and at severities
{{ snakemake.params.severities | join(", ") }}, with the seeds the inference jobs use: what the
corrupted shifts of this run look like.

No paper figure: an illustration of the common corruptions of :classwise-cite:`medi2024`
(Figure 3) and of the transformations of the :classwise-cite:`test_catalogue`.

.. classwise-corruption-note::
   :always:
""",
        category="medi2024",
        labels=_labels("corruption grid (no paper figure)", shift="corruptions", model="-", view="-"),
    ),
)
