"""Paper-style tables, and the one writer of every table the workflow produces.

The layout follows Table 1 of Bitterwolf et al., 2022: a cell is the metric in percent with
two decimals ("8.00"; the paper zero-pads to "08.00", which reads as a code, not a number),
followed by the worst class (or superclass, or pair) in parentheses where the metric has one.
No number is zero-padded; a difference keeps its sign ("+4.45").

Every table is written by :func:`write_tables` as three files with the same rows: Markdown
and LaTeX of a *display* frame (string cells, rounded for reading), CSV of a *data* frame
(full precision, sometimes more columns; the display frame itself by default). CSV files
(:func:`write_csv`) use ``\n`` line ends and hold the index as leading column(s) exactly
when it is named (a ``metric``, ``shift``, ``model`` ... column), not a bare row number; so do
the Markdown and LaTeX tables, one named column per level of a multi-level index.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from classwise.atomic import write_text
from classwise.errors import InputError

if TYPE_CHECKING:
    from classwise.metrics.robust_fairness import RobustFairness


def skipped_rows_note(rows: Sequence[str], skipped: Mapping[str, str]) -> str:
    """One sentence per reason naming the table ``rows`` left out (``skipped`` maps a metric to
    why, as :func:`classwise.metrics.suite.skipped_worst_class_metrics` gives it); "" if none."""
    by_reason: dict[str, list[str]] = {}
    for row in rows:
        if row in skipped:
            by_reason.setdefault(skipped[row], []).append(row)
    return " ".join(f"Not shown: {', '.join(names)} ({reason})." for reason, names in by_reason.items())


def unavailable_rows_note(rows: Sequence[str], skipped: Mapping[str, Mapping[str, str]]) -> str:
    """One sentence per model and reason naming the table ``rows`` shown as ``n/a`` for that
    model (``skipped`` maps a model to its metrics left out, with why); "" if none."""
    sentences = []
    for model, reasons in skipped.items():
        by_reason: dict[str, list[str]] = {}
        for row in rows:
            if row in reasons:
                by_reason.setdefault(reasons[row], []).append(row)
        sentences += [f"n/a for {model}: {', '.join(names)} ({reason})." for reason, names in by_reason.items()]
    return " ".join(sentences)


def format_cell(entry: Mapping[str, Any], class_names: Sequence[str]) -> str:
    """``{"value": 0.08, "classes": [837]}`` -> ``"8.00 (sunglass)"``; a worst element that
    ties with others says so (``details.n_tied``): ``"0.00 (0; 10 tied)"``, the first by the tie
    rule and how many share the value, so that no table names a class as worst when it ties."""
    text = percent(entry["value"])
    classes = entry.get("classes") or []
    if classes and len(classes) <= 2:
        tied = (entry.get("details") or {}).get("n_tied")
        text += f" ({class_label(classes, class_names)}; {tied} tied)" if tied else f" ({class_label(classes, class_names)})"
    return text


def metric_table(
    documents: Mapping[str, Mapping[str, Any]],
    rows: Sequence[str],
    *,
    source: str = "metrics",
    skipped: Mapping[str, Mapping[str, str]] | None = None,
) -> pd.DataFrame:
    """Rows = metric names, columns = models (in the given order), string cells.

    Each document is a ``classwise metrics`` JSON (``metrics`` and ``class_names``). A row a
    model lacks is an error naming the model and the metric (tables never silently blank),
    unless ``skipped`` (model -> metric -> why) says why it was left out: then ``n/a``
    (:func:`unavailable_rows_note` says why).
    """
    return _model_columns(documents, rows, lambda model, row, entry, names: format_cell(entry, names), source, skipped)


def _model_columns(
    documents: Mapping[str, Mapping[str, Any]],
    rows: Sequence[str],
    cell: Callable[[str, str, Mapping[str, Any], Sequence[str]], str],
    source: str,
    skipped: Mapping[str, Mapping[str, str]] | None,
) -> pd.DataFrame:
    """Rows = metric names, columns = models, each cell ``cell(model, row, entry, class_names)``;
    ``n/a`` for a row ``skipped`` names, an error for any other row a model lacks."""
    columns: dict[str, list[str]] = {}
    for model, document in documents.items():
        metrics = document["metrics"]
        class_names = document.get("class_names") or [str(i) for i in range(int(document["n_classes"]))]
        cells = []
        for row in rows:
            if row not in metrics and row in (skipped or {}).get(model, {}):
                cells.append("n/a")
                continue
            if row not in metrics:
                raise InputError(f"model '{model}' has no metric '{row}'", path=source, field=row)
            cells.append(cell(model, row, metrics[row], class_names))
        columns[model] = cells
    frame = pd.DataFrame(columns, index=list(rows))
    frame.index.name = "metric"
    return frame


def percent(value: float | None, *, signed: bool = False) -> str:
    """A fraction as the papers' percent cell, two decimals and no zero padding: ``0.08`` ->
    ``"8.00"`` (``signed``: ``"+8.00"``, for differences); ``n/a`` when undefined (``None`` or
    NaN)."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    return f"{100.0 * float(value):{'+.2f' if signed else '.2f'}}"


def interval_of(entry: Mapping[str, Any]) -> tuple[float | None, float | None] | None:
    """The interval a table shows for a metric entry of the JSON: ``ci_bound`` (the exact
    bound of a recall-type minimum, with guaranteed coverage) where the metric has one, else
    the percentile bootstrap ``ci``; None without either (the bootstrap was off)."""
    interval = entry.get("ci_bound") or entry.get("ci")
    return None if interval is None else (interval[0], interval[1])


def interval_cell(entry: Mapping[str, Any], class_names: Sequence[str]) -> str:
    """The paper cell followed by the metric's interval (:func:`interval_of`) in percent:
    ``{"value": 0.08, "classes": [837], "ci_bound": [0.04, 0.14]}`` -> ``"8.00 (sunglass)
    [4.00, 14.00]"``."""
    interval = interval_of(entry)
    if interval is None:
        raise InputError("has no interval (ci); was the bootstrap off?", field="ci")
    return f"{format_cell(entry, class_names)} [{percent(interval[0])}, {percent(interval[1])}]"


def interval_table(
    documents: Mapping[str, Mapping[str, Any]],
    rows: Sequence[str],
    *,
    source: str = "metrics",
    skipped: Mapping[str, Mapping[str, str]] | None = None,
) -> pd.DataFrame:
    """:func:`metric_table` with :func:`interval_cell` cells: the paper table beside it,
    each number followed by its interval (``n/a`` where :func:`metric_table` has it)."""

    def cell(model: str, row: str, entry: Mapping[str, Any], class_names: Sequence[str]) -> str:
        if interval_of(entry) is None:
            raise InputError(
                f"model '{model}' has no interval for metric '{row}' (was metrics.bootstrap.replicates 0?)",
                path=source,
                field=f"{row}.ci",
            )
        return interval_cell(entry, class_names)

    return _model_columns(documents, rows, cell, source, skipped)


def class_label(classes: Sequence[Any], class_names: Sequence[str]) -> str:
    """What a metric names, in words: class indices as their names (a pair joined by ", "),
    superclass names as they are."""
    return ", ".join(class_names[c] if isinstance(c, int) else str(c) for c in classes)


def worst_probability_labels(
    documents: Mapping[str, Mapping[str, Any]],
    rows: Sequence[str] | None = None,
) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """metric -> model -> ``(what it names, share of replicates)`` from the
    ``worst_probability`` entries of ``classwise metrics`` JSON documents (model ->
    document), for the metrics that have one (among ``rows`` when given, in their order)."""
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for model, document in documents.items():
        class_names = document.get("class_names") or [str(i) for i in range(int(document["n_classes"]))]
        names = [name for name in (rows if rows is not None else document["metrics"]) if name in document["metrics"]]
        for name in names:
            ranked = document["metrics"][name].get("worst_probability")
            if ranked is not None:
                out.setdefault(name, {})[model] = [
                    (class_label(item["classes"], class_names), float(item["probability"])) for item in ranked
                ]
    return out


def excludes_zero(interval: Sequence[float | None]) -> bool:
    """Whether an interval of a difference lies wholly on one side of 0 (undefined: no)."""
    low, high = interval
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return False
    return low > 0.0 or high < 0.0


#: The mark of a difference whose interval excludes 0 in :func:`comparison_tables`.
DIFFERENCE_MARK = "*"


def comparison_tables(
    comparisons: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]],
    rows: Sequence[str],
    *,
    unavailable: Mapping[tuple[str, str], Collection[str]] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Model comparison: ``comparisons`` maps a pair ``(a, b)`` to the ``metrics`` of
    :meth:`classwise.metrics.compare.Comparison.to_json` (``b`` minus ``a``).

    Returns the display frame (rows = metrics, one column ``"b - a"`` per pair, cells
    ``"+4.50 [+1.20, +7.80] *"``: the difference and its interval in percentage points,
    :data:`DIFFERENCE_MARK` where the interval excludes 0) and the data frame (one row per
    metric and pair: the two values, the difference, the interval, the p-value and
    ``excludes_zero``; fractions, full precision). The metrics ``unavailable`` for a pair
    (one of its models skipped them) are ``n/a`` and have no data row.
    """
    display: dict[str, list[str]] = {}
    records = []
    for (a, b), metrics in comparisons.items():
        cells = []
        for row in rows:
            if row in (unavailable or {}).get((a, b), ()):
                cells.append("n/a")
                continue
            if row not in metrics:
                raise InputError(f"the comparison of '{b}' with '{a}' has no metric '{row}'", field=row)
            entry = metrics[row]
            low, high = entry["ci"]
            flagged = excludes_zero((low, high))
            cell = f"{percent(entry['difference'], signed=True)} [{percent(low, signed=True)}, {percent(high, signed=True)}]"
            cells.append(f"{cell} {DIFFERENCE_MARK}" if flagged else cell)
            records.append(
                {
                    "metric": row,
                    "model_a": a,
                    "model_b": b,
                    "a": entry["a"],
                    "b": entry["b"],
                    "difference": entry["difference"],
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": entry["p_value"],
                    "excludes_zero": flagged,
                }
            )
        display[f"{b} - {a}"] = cells
    frame = pd.DataFrame(display, index=list(rows))
    frame.index.name = "metric"
    return frame, pd.DataFrame.from_records(records)


def _header_and_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]], int]:
    """The text of a table: the header, the rows and how many leading columns hold the index.

    Each level of the index is a column of its own, headed by the level's name (a
    ``(shift, model, class)`` index gives three columns, never one of tuples)."""
    levels = frame.index.nlevels
    header = [str(name or "") for name in frame.index.names] + [str(c) for c in frame.columns]
    rows = []
    for index, row in zip(frame.index, frame.itertuples(index=False)):
        labels = index if levels > 1 else (index,)
        rows.append([str(label) for label in labels] + [str(v) for v in row])
    return header, rows, levels


def to_markdown(frame: pd.DataFrame, *, caption: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (no external dependency): the index levels as
    left-aligned leading columns, the other columns right-aligned."""
    header, rows, levels = _header_and_rows(frame)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join([":--"] * levels + ["--:"] * len(frame.columns)) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    text = "\n".join(lines) + "\n"
    return f"{caption}\n\n{text}" if caption else text


def _latex_escape(text: str) -> str:
    for char, replacement in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("{", r"\{"),
        ("}", r"\}"),
    ):
        text = text.replace(char, replacement)
    return text


def to_latex(frame: pd.DataFrame, *, caption: str | None = None, label: str | None = None) -> str:
    """A booktabs ``table`` environment, the index as in :func:`to_markdown`."""
    out = io.StringIO()
    out.write("\\begin{table}[t]\n\\centering\n")
    if caption:
        out.write(f"\\caption{{{_latex_escape(caption)}}}\n")
    if label:
        out.write(f"\\label{{{label}}}\n")
    header, rows, levels = _header_and_rows(frame)
    out.write("\\begin{tabular}{" + "l" * levels + "r" * len(frame.columns) + "}\n\\toprule\n")
    out.write(" & ".join(_latex_escape(text) for text in header) + " \\\\\n\\midrule\n")
    for cells in rows:
        out.write(" & ".join(_latex_escape(text) for text in cells) + " \\\\\n")
    out.write("\\bottomrule\n\\end{tabular}\n\\end{table}\n")
    return out.getvalue()


def has_named_index(frame: pd.DataFrame) -> bool:
    """Whether the index carries information (some level is named) rather than row numbers."""
    return any(name is not None for name in frame.index.names)


def to_csv(frame: pd.DataFrame, **kwargs: Any) -> str:
    """CSV text with ``\n`` line ends; the index is written when it is named (see module)."""
    kwargs.setdefault("index", has_named_index(frame))
    return frame.to_csv(lineterminator="\n", **kwargs)


def write_csv(path: str | Path, frame: pd.DataFrame, **kwargs: Any) -> None:
    """:func:`to_csv` written atomically (``kwargs`` go to :meth:`pandas.DataFrame.to_csv`)."""
    write_text(path, to_csv(frame, **kwargs))


#: The three files of a table: the keys of ``paths`` in :func:`write_tables`.
TABLE_FORMATS: tuple[str, ...] = ("markdown", "csv", "latex")


def transfer_matrix_table(cells: pd.DataFrame, *, samples: bool = False) -> pd.DataFrame:
    """The transfer matrix for display: rows the source models (``source / attack``), columns the
    target models, each cell ``robust accuracy (worst class: its accuracy)``
    (:func:`classwise.robustness.transfer.transfer_matrix`, whose rows are the CSV); ``-`` where
    a pair was not run. With ``samples``, a last column ``n``: the images of the row (per target
    when they differ)."""
    labels = [f"{source} / {attack}" for source, attack in zip(cells["source"], cells["attack"])]
    targets = list(dict.fromkeys(cells["target"]))
    display = pd.DataFrame("-", index=pd.Index(list(dict.fromkeys(labels)), name="source / attack"), columns=targets)
    for label, row in zip(labels, cells.itertuples(index=False)):
        tied = int(getattr(row, "worst_class_tied", 1) or 1)
        worst = f"{row.worst_class}; {tied} tied" if tied > 1 else f"{row.worst_class}"
        display.loc[label, row.target] = f"{decimals(row.robust_accuracy)} ({worst}: {decimals(row.worst_class_accuracy)})"
    if samples:
        rows = cells.set_index(pd.Index(labels)).groupby(level=0, sort=False)
        display["n"] = [
            str(int(row["samples"].iloc[0]))
            if row["samples"].nunique() == 1
            else ", ".join(f"{target}: {int(n)}" for target, n in zip(row["target"], row["samples"]))
            for _, row in rows
        ]
    return display


def write_tables(
    display: pd.DataFrame,
    caption: str,
    paths: Mapping[str, str | Path],
    *,
    data: pd.DataFrame | None = None,
) -> None:
    """``display`` as Markdown and LaTeX (with ``caption``), ``data`` (default ``display``) as
    CSV, each written atomically to ``paths["markdown"]``, ``paths["latex"]``, ``paths["csv"]``."""
    missing = [name for name in TABLE_FORMATS if name not in paths]
    if missing:
        raise ValueError(f"table paths lack {missing}")
    write_text(paths["markdown"], to_markdown(display, caption=caption))
    write_text(paths["csv"], to_csv(display if data is None else data))
    write_text(paths["latex"], to_latex(display, caption=caption))


def rounded_display(frame: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """``frame`` as strings, the display cells of a table whose CSV holds the full-precision
    frame: every float column with ``digits`` decimals (:func:`decimals`: ``0.0430``, never
    ``0.043`` beside ``0.0501``; ``n/a`` where undefined), integers and text as they are."""
    return pd.DataFrame(
        {
            column: [decimals(value, digits) for value in values] if pd.api.types.is_float_dtype(values) else values.astype(str)
            for column, values in frame.items()
        },
        index=frame.index,
    )


def _undefined(value: Any) -> bool:
    """``None`` or a number that is not finite (NaN of any float type, numpy's float32 too)."""
    return value is None or not math.isfinite(float(value))


def decimals(value: Any, digits: int = 4) -> str:
    """A display cell of the analyses' tables: ``0.1234`` style; ``n/a`` for a missing or
    undefined value."""
    return "n/a" if _undefined(value) else f"{float(value):.{digits}f}"


def p_value(value: Any) -> str:
    """A p-value's display cell: three significant digits; ``n/a`` when missing or undefined."""
    return "n/a" if _undefined(value) else f"{float(value):.3g}"


# ---------------------------------------------------------------------------------------- robust fairness
#: The robust-fairness table's columns (display header -> data column of the CSV).
ROBUST_FAIRNESS_COLUMNS: dict[str, str] = {
    "A": "accuracy",
    "robust A": "robust_accuracy",
    "worst-class A": "worst_class_clean_accuracy",
    "worst-class robust A": "worst_class_robust_accuracy",
    "worst boundary error": "worst_boundary_error",
    "NSD": "robust_error_nsd",
    "Gini": "robust_error_gini",
    "n": "n",
}


def robust_fairness_table(results: Mapping[str, RobustFairness], class_names: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The robust-fairness table of the models under one attack (:mod:`classwise.metrics.robust_fairness`):
    rows = models. The display frame has percent cells (:func:`percent`) for A, robust A and
    the worst-class clean and robust accuracy and the worst (largest) class-wise boundary
    error, the last three with their class in parentheses, and the NSD and Gini of the
    class-wise robust error with three decimals, and ``n``, the attacked samples (every clean
    number is on the same samples). The data frame (the CSV) holds the same as fractions at full
    precision, each class in a ``..._class`` column, and the SD beside the NSD."""
    display: dict[str, list[str]] = {header: [] for header in ROBUST_FAIRNESS_COLUMNS}
    records = []
    for model, result in results.items():
        worst = {
            "worst_class_clean_accuracy": result.worst_class_clean_accuracy,
            "worst_class_robust_accuracy": result.worst_class_robust_accuracy,
            "worst_boundary_error": result.worst_boundary_error(),
        }
        display["A"].append(percent(result.accuracy))
        display["robust A"].append(percent(result.robust_accuracy))
        record: dict[str, Any] = {"model": model, "accuracy": result.accuracy, "robust_accuracy": result.robust_accuracy}
        for header, name in ROBUST_FAIRNESS_COLUMNS.items():
            if name in worst:
                label = class_names[worst[name].class_index]
                tied = worst[name].tied
                display[header].append(f"{percent(worst[name].value)} ({label}{f'; {tied} tied' if tied > 1 else ''})")
                record |= {name: worst[name].value, f"{name}_class": label, f"{name}_tied": tied}
        display["NSD"].append(three_decimals(result.robust_error_nsd))
        display["Gini"].append(three_decimals(result.robust_error_gini))
        display["n"].append(str(result.n_samples))
        record |= {
            "robust_error_sd": result.robust_error_sd,
            "robust_error_nsd": result.robust_error_nsd,
            "robust_error_gini": result.robust_error_gini,
            "n": result.n_samples,
        }
        records.append(record)
    frame = pd.DataFrame(display, index=pd.Index(list(results), name="model"))
    return frame, pd.DataFrame.from_records(records).set_index("model")


# ---------------------------------------------------------------------------- George et al., 2020
#: Table 1 of George et al., 2020: its rows, and the JSON metric each row reads.
DECISIVENESS_ROWS: dict[str, str] = {
    "Geometric Accuracy": "geometric_accuracy",
    "Robustness": "robustness",
    "Decisiveness": "decisiveness",
}


def three_decimals(value: float | None) -> str:
    """The decisiveness paper's number format, ``0.913``, in every table (its Table 2 drops the
    leading zero, ``.913``; one style here); ``n/a`` if undefined."""
    if value is None or not math.isfinite(float(value)):
        return "n/a"
    return f"{float(value):.3f}"


def decisiveness_table(documents: Mapping[str, Mapping[str, Any]], *, intervals: bool = False) -> pd.DataFrame:
    """Table 1 of George et al., 2020: rows = metrics, columns = models.

    "Prediction Accuracy" is one number; the three generalized means are "reported / measured"
    (``0.913 / 0.913``). A last row gives the calibration slope (Eq. 3; below 1: overconfident).
    ``intervals`` follows every number with its bootstrap interval (``ci``, ``accuracy_ci``
    of the documents): ``0.913 [0.905, 0.921] / 0.913 [0.902, 0.923]``.
    """
    columns: dict[str, list[str]] = {}
    for model, document in documents.items():
        metrics = document["metrics"]

        def number(value: float | None, interval: Sequence[float | None] | None, what: str, model: str = model) -> str:
            if not intervals:
                return three_decimals(value)
            if interval is None:
                raise InputError(f"model '{model}' has no interval for '{what}' (was the bootstrap off?)", field=f"{what}.ci")
            return f"{three_decimals(value)} [{three_decimals(interval[0])}, {three_decimals(interval[1])}]"

        def cell(name: str, metrics: dict[str, Any] = metrics) -> str:
            return number(metrics[name]["value"], metrics[name].get("ci"), name)

        cells = [number(document["accuracy"], document.get("accuracy_ci"), "accuracy")]
        for name in DECISIVENESS_ROWS.values():
            cells.append(f"{cell(name)} / {cell(name + '_measured')}")
        cells.append(cell("calibration_slope"))
        columns[model] = cells
    frame = pd.DataFrame(columns, index=["Prediction Accuracy", *DECISIVENESS_ROWS, "Calibration slope"])
    frame.index.name = "metric"
    return frame


def gamma_sweep_table(documents: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Table 2 of George et al., 2020 for every model side by side: rows = gamma,
    columns = (model, robustness / geometric accuracy / decisiveness), cells like ``0.708``
    (the paper's ``.708`` with the leading zero of the other tables)."""
    blocks = {}
    for model, document in documents.items():
        sweep = document["gamma_sweep"]
        blocks[model] = pd.DataFrame(
            {
                "robustness": [three_decimals(r["robustness"]) for r in sweep],
                "geometric accuracy": [three_decimals(r["geometric_accuracy"]) for r in sweep],
                "decisiveness": [three_decimals(r["decisiveness"]) for r in sweep],
            },
            index=[f"{r['gamma']:g}" for r in sweep],
        )
    frame = pd.concat(blocks, axis=1)
    # concat's (model, metric) column pairs, flattened; built from the blocks since pandas-stubs
    # types every DataFrame's columns as Index[str]
    frame.columns = [f"{model}: {metric}" for model, block in blocks.items() for metric in block.columns]
    frame.index.name = "gamma"
    return frame


# ---------------------------------------------------------------------------------------- class drops and ranks
#: How many significant changes the Markdown and LaTeX of the class-drop table list (the CSV
#: holds every test): at ImageNet's scale there can be tens of thousands.
LISTED_CHANGES = 200
#: How many classes of each model the Markdown and LaTeX of the drop counts list.
LISTED_CLASSES = 20


def _change_cell(change: Any, low: Any, high: Any) -> str:
    """``"-12.00 [-20.31, -4.02]"``: a change and its interval in percentage points."""
    return f"{percent(change, signed=True)} [{percent(low, signed=True)}, {percent(high, signed=True)}]"


def class_drops_display(significant: pd.DataFrame, *, listed: int = LISTED_CHANGES) -> pd.DataFrame:
    """The display rows of the significant class changes (rows of
    :func:`classwise.metrics.class_drops.class_drops`, in the order given: the largest first),
    the first ``listed`` of them: model, shift, class, pairing, n clean / shift, the accuracies in
    percent, the change in percentage points with its interval, the p-values. A note row when
    there is none."""
    if significant.empty:
        return pd.DataFrame({"note": ["no class changed significantly"]})
    rows = significant.head(listed)
    return pd.DataFrame(
        {
            "model": rows["model"].astype(str).to_numpy(),
            "shift": rows["shift"].astype(str).to_numpy(),
            "class": rows["class_name"].astype(str).to_numpy(),
            "pairing": rows["pairing"].astype(str).to_numpy(),
            "n clean / shift": [f"{int(a)} / {int(b)}" for a, b in zip(rows["n_clean"], rows["n_shift"])],
            "clean %": [percent(x) for x in rows["accuracy_clean"]],
            "shift %": [percent(x) for x in rows["accuracy_shift"]],
            "change (pp) [interval]": [
                _change_cell(c, lo, hi) for c, lo, hi in zip(rows["change"], rows["change_low"], rows["change_high"])
            ],
            "p": [p_value(x) for x in rows["p_value"]],
            "p adjusted": [p_value(x) for x in rows["p_adjusted"]],
        }
    ).set_index(["model", "shift", "class"])


def drop_counts_display(counts: pd.DataFrame, *, listed: int = LISTED_CLASSES) -> pd.DataFrame:
    """The display rows of :func:`classwise.metrics.class_drops.drop_counts`: per model, its
    ``listed`` first classes (those dropping under most shifts) among those with a significant
    change; a note row when no class has one."""
    changed = counts[(counts["n_shifts_dropped"] > 0) | (counts["n_shifts_rose"] > 0)]
    if changed.empty:
        return pd.DataFrame({"note": ["no class changed significantly under any shift"]})
    rows = changed.groupby("model", sort=False).head(listed)
    return pd.DataFrame(
        {
            "model": rows["model"].astype(str).to_numpy(),
            "class": rows["class_name"].astype(str).to_numpy(),
            "shifts tested": rows["n_shifts_tested"].astype(int).to_numpy(),
            "dropped": rows["n_shifts_dropped"].astype(int).to_numpy(),
            "rose": rows["n_shifts_rose"].astype(int).to_numpy(),
            "largest drop (pp)": [percent(x, signed=True) for x in rows["largest_drop"]],
        }
    ).set_index(["model", "class"])


def _rank_range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def model_ranking_display(ranking: pd.DataFrame) -> pd.DataFrame:
    """The display rows of :func:`classwise.metrics.ranking.model_ranking` (per metric, best
    first): the value in percent, the rank (``2.5 (2 tied)`` where models share a value) with its
    percentile interval, the group letters and the pairwise ranks."""

    def rank(row: Mapping[Any, Any]) -> str:
        tied = f" ({int(row['n_tied'])} tied)" if int(row["n_tied"]) > 1 else ""
        return f"{float(row['rank']):g}{tied} [{float(row['rank_low']):g}, {float(row['rank_high']):g}]"

    rows = ranking.to_dict("records")
    return pd.DataFrame(
        {
            "metric": [str(row["metric"]) for row in rows],
            "model": [str(row["model"]) for row in rows],
            "value %": [percent(float(row["value"])) for row in rows],
            "rank [interval]": [rank(row) for row in rows],
            "group": [str(row["group"]) for row in rows],
            "pairwise ranks": [_rank_range(int(row["rank_low_pairwise"]), int(row["rank_high_pairwise"])) for row in rows],
        }
    ).set_index(["metric", "model"])
