"""Every number a run reports, one row each: the table ``results/metrics.parquet`` (and
``results/metrics.csv``, its whole-set rows), built by one rule from the files of the output
records, never by computing anything again.

Each data file of a record that holds numbers has a reader here (:data:`READERS`, keyed by the
record's name) that turns it into rows of :data:`COLUMNS`. A number that two files hold (A in
``worst_class.json`` and in the shift summary; a class's recall in ``per_class.csv`` and in the
class x shift matrix) is the same number: it has one key (:data:`KEY`) and must have one value
(:func:`conflicts` lists those that do not, :func:`number_table` refuses them). A number that
differs by design differs in its key: the clean accuracy on the 20 images an attack ran on is
``shift = clean``, ``samples = of autoattack``, ``n = 20``; a change from clean is a metric of
its own (``A_change``).

docs/pipeline.md documents the columns with a pandas and a DuckDB example.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from classwise.errors import InputError
from classwise.outputs.record import Planned

__all__ = [
    "COLUMNS",
    "KEY",
    "READERS",
    "conflicts",
    "number_files",
    "number_table",
    "read_number_table",
    "rows_of_file",
    "whole_set_rows",
]

#: The columns of the table, in order, and what each holds (docs/pipeline.md shows them).
COLUMNS: dict[str, str] = {
    "dataset": "the dataset (a key of the config's datasets)",
    "label_view": "the label view (original, or a view such as cleaned or real)",
    "model": "the model (a key of the config's models)",
    "shift": "the shift (clean, a corruption at a severity, an attack, a published set, ...); "
    "empty for a number over several shifts (a corruption error averaged over every copy)",
    "family": "the shift's family: the corruption or set of a severity of it, else its kind",
    "severity": "the shift's severity, empty where it has none (clean: 0 within a family's curve)",
    "metric": "the catalogue's name (A, WCA, W2CR, decisiveness, ...), or a per-class number "
    "(recall, precision, cfps, support, ...), or a comparison (A_change, flip_rate, ...)",
    "class": "the class index of a per-class number; empty for a number of the whole set",
    "value": "the number, a fraction (never a percentage); empty where undefined (0/0)",
    "ci_low": "the lower end of its interval, where the run computed one",
    "ci_high": "the upper end of its interval",
    "ci_method": "how the interval was computed (exact bound, bootstrap percentile, Clopper-Pearson)",
    "n": "the samples the number is computed on (abstentions included)",
    "n_abstained": "of those, the samples on which the model abstained (each an error)",
    "reference_shift": "for a comparison with another shift (a change, a flip rate): that shift",
    "pairing": "how the shift's samples relate to the reference shift's: reference, same samples, subset, unpaired, no reference",
    "reference_n": "the reference shift's samples of the model",
    "class_name": "the class's name",
    "samples": "which samples: all (every sample of the model under the shift), or those of a "
    "comparison (of autoattack: the samples that shift holds; shared with clean)",
    "worst": "what a worst-type metric names (a class, a pair, a superclass), the tie rule's pick",
    "tied": "how many share that worst value (more than 1: the name is the tie rule's, not a finding)",
    "source": "the file the number was read from, below the output directory",
}

#: The columns that identify a number: one key, one value.
KEY: tuple[str, ...] = ("dataset", "label_view", "model", "shift", "metric", "class", "n", "samples")

_INTEGER = ("class", "n", "n_abstained", "reference_n", "tied")
_FLOAT = ("severity", "value", "ci_low", "ci_high")

#: Two values of one key closer than this are one value (CSV and JSON round-trip floats exactly;
#: the slack only absorbs a sum taken in another order).
TOLERANCE = 1e-12

Reader = Callable[[Path, Mapping[str, str]], pd.DataFrame]


def _frame(common: Mapping[str, Any], columns: Mapping[str, Any] | pd.DataFrame) -> pd.DataFrame:
    """Rows of ``columns`` (equal-length arrays or scalars) with ``common`` in every row."""
    if isinstance(columns, pd.DataFrame):
        frame = columns.copy()
        for key, value in common.items():
            if key not in frame:
                frame[key] = value
        return frame
    length = max((len(value) for value in columns.values() if np.ndim(value) > 0), default=1)
    data = {key: value for key, value in common.items() if key not in columns}
    data.update(columns)
    return pd.DataFrame(data, index=pd.RangeIndex(length))


def _wildcards(w: Mapping[str, str]) -> dict[str, Any]:
    return {"dataset": w.get("dataset", ""), "label_view": w.get("labels", "original")}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"cannot read the numbers: {error}", path=path) from error
    if not isinstance(document, dict):
        raise InputError("expected a JSON object", path=path)
    return document


def _read_csv(path: Path, **kwargs: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""], **kwargs)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"cannot read the numbers: {error}", path=path) from error


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _named(classes: Sequence[Any], names: Sequence[str]) -> str:
    """What a metric names: class indices as their names, superclasses as they are."""
    return ", ".join(names[c] if isinstance(c, int) and 0 <= c < len(names) else str(c) for c in classes)


def _bootstrap_method(document: Mapping[str, Any]) -> str:
    b = document.get("bootstrap") or {}
    return f"bootstrap percentile ({b.get('replicates')} stratified replicates, seed {b.get('seed')})" if b else ""


def _metric_rows(document: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
    """One row per entry of a metrics document's ``metrics``: its value, the interval the tables
    show (the exact bound of a recall-type minimum before the bootstrap's percentile interval)
    and what it names."""
    method = _bootstrap_method(document)
    rows = []
    for name, entry in document.get("metrics", {}).items():
        low = high = float("nan")
        ci_method = ""
        if entry.get("ci_bound") is not None:
            low, high = (_number(x) for x in entry["ci_bound"])
            ci_method = "exact bound"
        elif entry.get("ci") is not None:
            low, high = (_number(x) for x in entry["ci"])
            ci_method = method
        classes = entry.get("classes") or []
        details = entry.get("details") or {}
        rows.append(
            {
                "metric": name,
                "value": _number(entry.get("value")),
                "ci_low": low,
                "ci_high": high,
                "ci_method": ci_method,
                "worst": _named(classes, names) if classes else "",
                "tied": int(details.get("n_tied", 1)) if classes else pd.NA,
            }
        )
    return rows


def worst_class_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """``worst_class.json``: every worst-class metric, and the coverage where the model abstained."""
    document = _read_json(path)
    names = [str(n) for n in document.get("class_names", [])]
    coverage = document.get("coverage") or {}
    rows = _metric_rows(document, names)
    if coverage:
        rows.append({"metric": "coverage", "value": _number(coverage.get("value"))})
    common = {
        **_wildcards(w),
        "model": w["model"],
        "shift": w["shift"],
        "n": int(document["n_samples"]),
        "n_abstained": int(coverage.get("n_abstained", 0)),
        "samples": "all",
    }
    return _frame(common, pd.DataFrame(rows))


def decisiveness_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """``decisiveness.json``: the decisiveness family, and the accuracy A it reports beside it."""
    document = _read_json(path)
    rows = _metric_rows(document, [])
    accuracy = document.get("accuracy")
    if accuracy is not None:
        rows.append({"metric": "A", "value": _number(accuracy)})
    common = {**_wildcards(w), "model": w["model"], "shift": w["shift"], "n": int(document["n_samples"]), "samples": "all"}
    return _frame(common, pd.DataFrame(rows))


#: The per-class numbers of ``per_class.csv`` -> the columns of their interval, where they have one.
_PER_CLASS_INTERVALS = {"recall": ("recall_ci_low", "recall_ci_high"), "precision": ("precision_ci_low", "precision_ci_high")}
_PER_CLASS_SKIPPED = {"class", "name", *(c for pair in _PER_CLASS_INTERVALS.values() for c in pair)}


def per_class_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """``per_class.csv``: each class's support, predictions, recall and precision (with their
    exact intervals), top-k recall, CFPS, coverage and worst-class probabilities."""
    frame = _read_csv(path, dtype={"name": str})
    metrics = [column for column in frame.columns if column not in _PER_CLASS_SKIPPED]
    c, m = len(frame), len(metrics)
    nan = np.full(c, np.nan)

    def interval(end: int) -> np.ndarray:
        parts = [
            frame[_PER_CLASS_INTERVALS[k][end]].to_numpy(dtype=np.float64) if k in _PER_CLASS_INTERVALS else nan for k in metrics
        ]
        return np.concatenate(parts)

    common = {**_wildcards(w), "model": w["model"], "shift": w["shift"], "n": int(frame["support"].sum()), "samples": "all"}
    return _frame(
        common,
        {
            "metric": np.repeat(metrics, c),
            "class": np.tile(frame["class"].to_numpy(), m),
            "class_name": np.tile(frame["name"].to_numpy(dtype=object), m),
            "value": frame[metrics].to_numpy(dtype=np.float64).T.ravel(),
            "ci_low": interval(0),
            "ci_high": interval(1),
            "ci_method": np.repeat(["Clopper-Pearson (exact)" if k in _PER_CLASS_INTERVALS else "" for k in metrics], c),
        },
    )


def _robustness_sibling(path: Path, stem: str) -> Path:
    """A file the class-wise robustness step writes beside ``path`` (same folder)."""
    return path.with_name(stem + ".csv")


def _summary_samples(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(shift, model) -> n, samples, pairing and reference n of the step's shift summary."""
    summary = _read_csv(_robustness_sibling(path, "shift_summary"), dtype={"shift": str, "model": str})
    return {
        (str(row["shift"]), str(row["model"])): {
            "n": int(row["n"]),
            "samples": str(row.get("samples", "all")),
            "pairing": str(row["pairing"]),
            "reference_n": int(row["reference_n"]),
        }
        for row in summary.to_dict("records")
    }


def _reference_samples(shift: str, pairing: str) -> str:
    """The samples of the reference shift's number compared with ``shift``: all of them unless
    the shift holds a subset (then those of the shift)."""
    return f"of {shift}" if pairing == "subset" else "all"


def shift_summary_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """The shift summary: A and WCA per (shift, model), the reference shift's on the same samples
    and both changes."""
    frame = _read_csv(path, dtype={"shift": str, "model": str, "worst_class_name": str})
    reference = "clean"
    base = {**_wildcards(w)}
    rows = []
    for row in frame.to_dict("records"):
        shift, model, pairing = str(row["shift"]), str(row["model"]), str(row["pairing"])
        n, reference_n = int(row["n"]), int(row["reference_n"])
        own = {"model": model, "shift": shift, "n": n, "samples": str(row.get("samples", "all")), "pairing": pairing}
        own["reference_n"] = reference_n
        if pairing != "reference":
            own["reference_shift"] = reference
        rows.append({**own, "metric": "A", "value": row["accuracy"]})
        rows.append(
            {
                **own,
                "metric": "WCA",
                "value": row["worst_class_accuracy"],
                "worst": row["worst_class_name"],
                "tied": int(row["worst_class_tied"]),
            }
        )
        if pairing in ("reference", "no reference"):
            continue
        compared = {
            "model": model,
            "shift": reference,
            "n": n if pairing == "subset" else reference_n,
            "samples": _reference_samples(shift, pairing),
        }
        rows.append({**compared, "metric": "A", "value": row["reference_accuracy"]})
        rows.append({**compared, "metric": "WCA", "value": row["reference_worst_class_accuracy"]})
        rows.append({**own, "metric": "A_change", "value": row["accuracy_change"]})
        rows.append({**own, "metric": "WCA_change", "value": row["worst_class_accuracy_change"]})
    return _frame(base, pd.DataFrame(rows))


def class_shift_rows(metric: str) -> Reader:
    """A class x shift matrix (``class_shift_accuracy.csv``: recall; ``class_shift_cfps.csv``:
    CFPS), each column a shift, or ``<reference> on <shift>``: the reference's on the shift's samples."""

    def read(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
        frame = _read_csv(path, dtype={"model": str, "class_name": str})
        samples = _summary_samples(path)
        parts = []
        for column in frame.columns[3:]:
            shift, of = str(column), ""
            if " on " in shift:
                shift, of = shift.split(" on ", 1)
            models = frame["model"].astype(str)
            known = np.array([samples.get((of or shift, model)) for model in models], dtype=object)
            held = np.array([entry is not None for entry in known], dtype=bool)  # a shift may lack a model
            parts.append(
                _frame(
                    {**_wildcards(w), "shift": shift, "metric": metric},
                    {
                        "model": models.to_numpy()[held],
                        "class": frame["class"].to_numpy()[held],
                        "class_name": frame["class_name"].to_numpy()[held],
                        "value": frame[column].to_numpy(dtype=np.float64)[held],
                        "n": [entry["n"] for entry in known[held]],
                        "samples": [f"of {of}" if of else entry["samples"] for entry in known[held]],
                    },
                )
            )
        return pd.concat(parts, ignore_index=True)

    return read


def classwise_table_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """The long table of Figures 2-3: each class's recall and CFPS per (shift, model), with n."""
    frame = _read_csv(path, dtype={"shift": str, "model": str, "class_name": str, "pairing": str})
    samples = _summary_samples(path)
    sample_set = [samples[(s, m)]["samples"] for s, m in zip(frame["shift"].astype(str), frame["model"].astype(str))]
    parts = []
    for column, metric in (("accuracy", "recall"), ("cfps", "cfps")):
        parts.append(
            _frame(
                {**_wildcards(w), "metric": metric},
                {
                    "model": frame["model"].astype(str).to_numpy(),
                    "shift": frame["shift"].astype(str).to_numpy(),
                    "class": frame["class"].to_numpy(),
                    "class_name": frame["class_name"].to_numpy(),
                    "value": frame[column].to_numpy(dtype=np.float64),
                    "n": frame["n"].to_numpy(),
                    "pairing": frame["pairing"].to_numpy(),
                    "samples": sample_set,
                },
            )
        )
    return pd.concat(parts, ignore_index=True)


def severity_curve_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """The severity curves: A, WCA and both changes per (model, family, severity)."""
    frame = _read_csv(path, dtype={"model": str, "family": str, "shift": str, "worst_class_name": str})
    if "model" not in frame:  # a note: no shift with a severity
        return pd.DataFrame(columns=list(COLUMNS))
    samples = _summary_samples(path)
    rows = []
    for row in frame.to_dict("records"):
        shift, model = str(row["shift"]), str(row["model"])
        known = samples[(shift, model)]
        own = {"model": model, "shift": shift, "n": int(row["n"]), "samples": known["samples"]}
        rows.append({**own, "metric": "A", "value": row["accuracy"]})
        rows.append({**own, "metric": "WCA", "value": row["worst_class_accuracy"], "worst": row["worst_class_name"]})
        if known["pairing"] not in ("reference", "no reference"):
            rows.append({**own, "metric": "A_change", "value": row["accuracy_change"], "reference_shift": "clean"})
            rows.append({**own, "metric": "WCA_change", "value": row["worst_class_accuracy_change"], "reference_shift": "clean"})
    return _frame(_wildcards(w), pd.DataFrame(rows))


def corruption_error_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """The corruption errors per class: the clean error, the mean error over every corrupted
    copy and the relative drop (numbers over several shifts: ``shift`` empty)."""
    frame = _read_csv(path, dtype={"model": str, "class_name": str})
    if "model" not in frame:  # a note: no corrupted copy
        return pd.DataFrame(columns=list(COLUMNS))
    samples = _summary_samples(path)
    clean_n = frame["model"].astype(str).map(lambda model: samples.get(("clean", model), {}).get("n", pd.NA))
    parts = []
    for metric in ("clean_error", "mean_corruption_error", "relative_drop"):
        parts.append(
            _frame(
                {**_wildcards(w), "metric": metric, "shift": "clean" if metric == "clean_error" else "", "samples": "all"},
                {
                    "model": frame["model"].astype(str).to_numpy(),
                    "class": frame["class"].to_numpy(),
                    "class_name": frame["class_name"].to_numpy(),
                    "value": frame[metric].to_numpy(dtype=np.float64),
                    "n": clean_n.to_numpy() if metric == "clean_error" else pd.NA,
                    "reference_shift": "" if metric == "clean_error" else "clean",
                },
            )
        )
    return pd.concat(parts, ignore_index=True)


def transformation_test_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """The transformation tests of one model: A and macro F1 under each shift and on clean on the
    same samples, and the flip rate over the samples both answered."""
    frame = _read_csv(path, dtype={"shift": str})
    rows = []
    for row in frame.to_dict("records"):
        shift, n = str(row["shift"]), int(row["n_samples"])
        clean_n = int(row.get("clean_n", n))
        pairing = "subset" if n < clean_n else "same samples"
        own = {"shift": shift, "n": n, "samples": "all", "reference_shift": "clean", "pairing": pairing, "reference_n": clean_n}
        clean = {"shift": "clean", "n": n, "samples": "all" if n == clean_n else f"of {shift}"}
        rows.append({**own, "metric": "A", "value": row["accuracy"]})
        rows.append({**clean, "metric": "A", "value": row["clean_accuracy"]})
        rows.append({**own, "metric": "macro_f1", "value": row["macro_f1"]})
        rows.append({**clean, "metric": "macro_f1", "value": row["clean_macro_f1"]})
        flip_n = int(row.get("flip_rate_n", n))
        rows.append({**own, "metric": "flip_rate", "value": row["flip_rate"], "n": flip_n, "samples": _answered(flip_n, n)})
    return _frame({**_wildcards(w), "model": w["model"]}, pd.DataFrame(rows))


def _answered(answered: int, n: int) -> str:
    return "all" if answered == n else "answered by both"


#: A class-drop table's ``pairing`` -> the table's (the robustness step's words, so that a merged
#: row keeps one), and which samples each side's numbers are on.
_DROP_PAIRINGS = {"paired": "same samples", "paired_subset": "subset", "paired_overlap": "subset", "unpaired": "unpaired"}
_TEST_NAMES = {
    "mcnemar_exact": "McNemar's exact test, two-sided",
    "fisher_exact": "Fisher's exact test, two-sided",
    "boschloo_exact": "Boschloo's exact test, two-sided",
    "none": "",
}
_INTERVAL_NAMES = {"newcombe_paired_score": "Newcombe paired hybrid score", "newcombe_hybrid_score": "Newcombe hybrid score"}
_ADJUSTMENT_NAMES = {"bh": "Benjamini-Hochberg", "holm": "Holm"}


def class_drop_rows(path: Path, w: Mapping[str, str]) -> pd.DataFrame:
    """The class-drop tests (``class_drops.csv``): per (model, shift, class) the class's accuracy
    (``recall``) under the shift and on clean on the samples compared, its change
    (``recall_change``, with its interval) and the test's p-value before and after the model's
    adjustment (``recall_change_p_value``, ``recall_change_p_adjusted``; ``ci_method`` names the
    test, the adjustment, its family and q). ``n`` is the evaluation's: the samples compared over
    every class, as ``per_class.csv`` counts them, so a shift paired on every clean sample gives
    the recall of both sides' ``per_class.csv``, and a subset shift clean's recall ``of <shift>``."""
    frame = _read_csv(path, dtype={"model": str, "shift": str, "class_name": str, "pairing": str, "test": str})
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    groups = frame.groupby(["model", "shift"], sort=False)
    n_shift = groups["n_shift"].transform("sum").to_numpy()
    n_clean = groups["n_clean"].transform("sum").to_numpy()
    whole_clean = n_clean + groups["clean_left_out"].transform("sum").to_numpy()
    whole_shift = n_shift + groups["shift_left_out"].transform("sum").to_numpy()
    pairing = frame["pairing"].to_numpy(dtype=object)
    shift = frame["shift"].to_numpy(dtype=object)
    # the shift's side: all of its samples unless clean holds only some of them
    shift_samples = np.where(n_shift == whole_shift, "all", "shared with clean")
    clean_samples = np.where(n_clean == whole_clean, "all", np.char.add("of ", shift.astype(str)))
    table_pairing = np.array([_DROP_PAIRINGS.get(p, p) for p in pairing], dtype=object)
    table_pairing = np.where((table_pairing == "subset") & (n_clean == whole_clean), "same samples", table_pairing)
    confidence = frame["confidence"].to_numpy(dtype=np.float64)
    interval = [
        f"{_INTERVAL_NAMES.get(m, m)}, {100 * c:g} %" if m in _INTERVAL_NAMES else ""
        for m, c in zip(frame["interval_method"].astype(str), confidence)
    ]
    adjusted = [
        f"{_ADJUSTMENT_NAMES.get(a, a)} over the model's {int(f)} tests, q = {q:g}" if t != "none" else ""
        for a, f, q, t in zip(frame["adjustment"].astype(str), frame["family_size"], frame["q"], frame["test"].astype(str))
    ]
    common = {
        **_wildcards(w),
        "model": frame["model"].to_numpy(),
        "class": frame["class"].to_numpy(),
        "class_name": frame["class_name"].to_numpy(dtype=object),
    }
    own = {**common, "shift": shift, "n": n_shift, "samples": shift_samples}
    compared = {**own, "reference_shift": "clean", "pairing": table_pairing, "reference_n": whole_clean}
    parts = [
        _frame(own, {"metric": "recall", "value": frame["accuracy_shift"].to_numpy(dtype=np.float64)}),
        _frame(
            {**common, "shift": "clean", "n": n_clean, "samples": clean_samples},
            {"metric": "recall", "value": frame["accuracy_clean"].to_numpy(dtype=np.float64)},
        ),
        _frame(
            compared,
            {
                "metric": "recall_change",
                "value": frame["change"].to_numpy(dtype=np.float64),
                "ci_low": frame["change_low"].to_numpy(dtype=np.float64),
                "ci_high": frame["change_high"].to_numpy(dtype=np.float64),
                "ci_method": interval,
            },
        ),
        _frame(
            compared,
            {
                "metric": "recall_change_p_value",
                "value": frame["p_value"].to_numpy(dtype=np.float64),
                "ci_method": [_TEST_NAMES.get(t, t) for t in frame["test"].astype(str)],
            },
        ),
        _frame(
            compared,
            {
                "metric": "recall_change_p_adjusted",
                "value": frame["p_adjusted"].to_numpy(dtype=np.float64),
                "ci_method": adjusted,
            },
        ),
    ]
    return pd.concat(parts, ignore_index=True)


#: Record name -> the reader of its data file. A record of numbers without a reader is listed in
#: tests/outputs/test_numbers.py's known exceptions, with why.
READERS: Mapping[str, Reader] = {
    "worst_class_metrics": worst_class_rows,
    "decisiveness_metrics": decisiveness_rows,
    "per_class_numbers": per_class_rows,
    "shift_summary_table": shift_summary_rows,
    "class_shift_accuracy": class_shift_rows("recall"),
    "class_shift_cfps": class_shift_rows("cfps"),
    "classwise_table": classwise_table_rows,
    "severity_curves_table": severity_curve_rows,
    "corruption_errors_table": corruption_error_rows,
    "transformation_tests": transformation_test_rows,
    "class_drops_table": class_drop_rows,
}

#: The named file of each record its reader reads (the CSV of a table).
READ_FILES: Mapping[str, str] = {
    "worst_class_metrics": "metrics",
    "decisiveness_metrics": "metrics",
    "per_class_numbers": "per_class",
    "shift_summary_table": "shift_summary_csv",
    "class_shift_accuracy": "class_shift_accuracy",
    "class_shift_cfps": "class_shift_cfps",
    "classwise_table": "table_csv",
    "severity_curves_table": "severity_curves_csv",
    "corruption_errors_table": "corruption_errors_csv",
    "transformation_tests": "csv",
    "class_drops_table": "drops_csv",
}


def number_files(planned: Iterable[Planned], out: str) -> list[str]:
    """The files of ``planned`` outputs that hold numbers (those with a reader), once each: what
    the rule of the table reads."""
    from classwise.outputs import output

    files = []
    for entry in planned:
        if entry.name in READERS:
            files.append(output(entry.name).files_of(out, entry.wildcards)[READ_FILES[entry.name]])
    return list(dict.fromkeys(files))


def read_number_table(
    files: Iterable[str | Path], out: str | Path, *, shift_families: Mapping[str, Sequence[Any]] | None = None
) -> pd.DataFrame:
    """:func:`number_table` of the output ``files`` below ``out``: what rule collect_numbers writes."""
    return number_table((_rows_of_file(path, out) for path in files), shift_families=shift_families)


def rows_of_file(path: str | Path, out: str | Path) -> pd.DataFrame:
    """The numbers of one output file below ``out`` (the output directory), as rows of
    :data:`COLUMNS`; a file no reader knows is an :class:`InputError`."""
    return _typed(_rows_of_file(path, out))


def _rows_of_file(path: str | Path, out: str | Path) -> pd.DataFrame:
    """:func:`rows_of_file` before its columns are put in order and typed (once, for every file)."""
    from classwise.outputs import record_of

    path, out = Path(path), Path(out)
    if not path.is_relative_to(out):  # its place below the output directory names its record
        raise InputError(f"expected a file below the run's output directory {str(out)!r}", path=path)
    relative = path.relative_to(out).as_posix()
    found = record_of(relative)
    if found is None or found[0].name not in READERS:
        raise InputError(f"no reader of numbers for this file; expected one of the records {sorted(READERS)}", path=path)
    record, wildcards = found
    if not relative.endswith(record.files[READ_FILES[record.name]]):
        raise InputError(f"expected the {READ_FILES[record.name]} file of {record.name}", path=path)
    frame = READERS[record.name](path, wildcards)
    frame["source"] = relative
    return frame


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every column of :data:`COLUMNS`, in order, each of its type."""
    frame = frame.reindex(columns=list(COLUMNS))
    for column in COLUMNS:
        if column in _INTEGER:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
        elif column in _FLOAT:
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
        else:
            # categories: a column holds a few distinct texts over millions of rows (a run of
            # 1,000 classes x 100 shifts x 10 models has 8 million), and Parquet keeps them so
            frame[column] = frame[column].astype(object).where(frame[column].notna(), "").astype(str).astype("category")
    return frame


def conflicts(rows: pd.DataFrame, *, tolerance: float = TOLERANCE) -> pd.DataFrame:
    """The rows of the keys (:data:`KEY`) that hold more than one value (an undefined value, NaN,
    equals only another NaN), with their sources: empty when every number has one value."""
    if not set(COLUMNS) <= set(rows.columns):
        rows = _typed(rows)
    repeated = rows.duplicated(list(KEY), keep=False).to_numpy()
    if not repeated.any():
        return rows.iloc[:0]
    candidates = rows[repeated]
    by_key = candidates.groupby(list(KEY), dropna=False, sort=False)["value"]
    spread = (by_key.transform("max") - by_key.transform("min")).to_numpy()
    undefined = candidates["value"].isna()
    some_undefined = undefined.groupby([candidates[k] for k in KEY], dropna=False, sort=False).transform("sum").to_numpy()
    size = by_key.transform("size").to_numpy()
    bad = (spread > tolerance) | ((some_undefined > 0) & (some_undefined < size))
    return candidates[bad]


def number_table(frames: Iterable[pd.DataFrame], *, shift_families: Mapping[str, Sequence[Any]] | None = None) -> pd.DataFrame:
    """One row per number of ``frames`` (rows of :func:`rows_of_file`): every key with one value
    (else an :class:`InputError` naming the first keys and the files that disagree), the rows of
    one key merged (each column's first value that is not empty, in the order of ``frames``),
    each shift's ``family`` and ``severity`` from ``shift_families`` (shift -> ``[family,
    severity or None]``), and the abstentions of each evaluation on its per-class rows."""
    parts = [frame for frame in frames if len(frame)]
    if not parts:
        return _typed(pd.DataFrame(columns=list(COLUMNS)))
    rows = _typed(pd.concat(parts, ignore_index=True))
    disagree = conflicts(rows)
    if len(disagree):
        shown = disagree.head(12)[[*KEY, "value", "source"]].to_string(index=False)
        count = disagree.drop_duplicates(list(KEY)).shape[0]
        raise InputError(
            f"{count} numbers have more than one value in this run "
            f"(one number, one value: a view computed again what it should have read):\n{shown}",
            field="value",
        )
    repeated = rows.duplicated(list(KEY), keep=False).to_numpy()
    if repeated.any():
        candidates = rows[repeated]
        first = candidates.index.to_series().groupby([candidates[k] for k in KEY], dropna=False, sort=False).transform("min")
        filled = candidates.astype(
            {c: object for c in candidates.columns if isinstance(candidates[c].dtype, pd.CategoricalDtype)}
        )
        filled = filled.replace({"": np.nan}).groupby(first.to_numpy(), sort=False).first()
        rows = pd.concat([rows[~repeated], filled]).sort_index()
        rows = _typed(rows.reset_index(drop=True))
    evaluation = ["dataset", "label_view", "model", "shift", "n", "samples"]
    missing = rows["n_abstained"].isna()
    if missing.any():
        known = rows.loc[~missing, [*evaluation, "n_abstained"]].drop_duplicates(evaluation)
        filled_in = rows.loc[missing, evaluation].merge(known, on=evaluation, how="left")["n_abstained"]
        rows.loc[missing, "n_abstained"] = filled_in.to_numpy()
    if shift_families:
        family = {shift: str(entry[0]) for shift, entry in shift_families.items()}
        severity = {shift: float(entry[1]) for shift, entry in shift_families.items() if entry[1] is not None}
        known_family = rows["shift"].astype(str).map(family)
        rows["family"] = known_family.where(known_family.notna(), rows["family"].astype(str)).astype("category")
        rows["severity"] = rows["shift"].astype(str).map(severity).astype("float64")
    return rows


def whole_set_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of numbers of a whole set (no class): ``results/metrics.csv``."""
    return table[table["class"].isna()].reset_index(drop=True)
