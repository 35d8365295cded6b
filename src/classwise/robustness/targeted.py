"""Success rate of targeted PGD per target class (Medi et al., 2024, Figure 5).

One targeted run per target class ``t`` is the shift ``pgd_targeted_<t>``: every evaluation
sample is attacked towards ``t``. Its success rate is the share of the samples *not* of class
``t`` that the model predicts as ``t`` under the attack; samples already of class ``t`` are not
attacks and are left out (:func:`classwise.metrics.cfps.targeted_success_rate`, which this
module reuses). With the clean logits the table also gives the clean base rate, the share of
the same non-``t`` samples already predicted as ``t`` without any attack.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from classwise.errors import InputError, check_count
from classwise.logits_io import ScoresFile, sidecar_path
from classwise.metrics.cfps import targeted_success_rate, targeted_success_rate_per_class
from classwise.robustness._scores import as_scores, predictions, where
from classwise.sample_ids import sample_id_positions

TARGETED_PREFIX = "pgd_targeted_"
"""Targeted PGD shifts are named ``pgd_targeted_<t>``, ``t`` the target class index."""

_NAME = re.compile(rf"^{TARGETED_PREFIX}(\d+)$")


def targeted_shift_name(target: int) -> str:
    """``pgd_targeted_<target>``."""
    return f"{TARGETED_PREFIX}{check_count(target, 'target', minimum=0, meaning='a class index')}"


def target_of_shift(shift: str | Mapping[str, Any]) -> int | None:
    """The target class of a shift, or ``None`` when it is not a targeted attack.

    ``shift`` is a shift name (``"pgd_targeted_3"`` -> 3) or a shift's JSON form
    (``{"name", "kind", "params"}``; ``params["target"]`` wins over the name).
    """
    if isinstance(shift, Mapping):
        params = shift.get("params") or {}
        target = params.get("target")
        if target is not None:
            return check_count(target, "params.target", minimum=0, meaning="a class index")
        shift = str(shift.get("name", ""))
    match = _NAME.match(shift)
    return int(match.group(1)) if match else None


def _target_from_file(path: Path) -> int:
    """The target of a logits file: its sidecar's ``shift`` when present, else its file name."""
    side = sidecar_path(path)
    if side.is_file():
        try:
            shift = json.loads(side.read_text(encoding="utf-8")).get("shift")
        except (OSError, ValueError) as exc:
            raise InputError(f"unreadable sidecar JSON ({exc})", path=side) from exc
        if isinstance(shift, Mapping):
            target = target_of_shift(shift)
            if target is not None:
                return target
    target = target_of_shift(path.stem)
    if target is None:
        raise InputError(
            f"cannot tell the target class: the file is not named {TARGETED_PREFIX}<t>.npz and its "
            "sidecar JSON has no shift.params.target",
            path=path,
        )
    return target


def _runs_by_target(
    runs: Mapping[int, ScoresFile | str | Path] | Sequence[str | Path],
) -> dict[int, ScoresFile]:
    """``{target: ScoresFile}`` from a mapping, or from paths whose target is read off the file."""
    out: dict[int, ScoresFile] = {}
    if isinstance(runs, Mapping):
        items = list(runs.items())
    else:
        items = [(_target_from_file(Path(p)), p) for p in runs]
    for target, source in items:
        index = check_count(target, "runs", minimum=0, meaning="a class index as key")
        if index in out:
            raise InputError(f"two runs target class {index}", field="runs")
        out[index] = as_scores(source)
    if not out:
        raise InputError("no targeted runs given", field="runs")
    return dict(sorted(out.items()))


def _check_runs(runs: Mapping[int, ScoresFile]) -> tuple[int, np.ndarray]:
    """All runs must have the same classes; every target must be one of them."""
    first = next(iter(runs.values()))
    n_classes, class_names = first.n_classes, first.class_names
    for target, scores in runs.items():
        source = where(scores, f"runs[{target}]")
        if scores.n_classes != n_classes or not np.array_equal(scores.class_names, class_names):
            raise InputError(
                f"class names differ from the first run's ({n_classes} classes)",
                path=source,
                field="class_names",
            )
        if target >= n_classes:
            raise InputError(f"target {target} is not a class index in [0, {n_classes})", path=source, field="target")
    return n_classes, class_names


def targeted_success_rates(
    runs: Mapping[int, ScoresFile | str | Path] | Sequence[str | Path],
) -> np.ndarray:
    """``(C,)`` success rate per target class (NaN for a class without a run), for Figure 5.

    ``runs`` maps each target class index to its ``pgd_targeted_<t>`` logits (a path or a
    loaded :class:`ScoresFile`), or lists the paths and lets each file tell its target (sidecar
    ``shift.params.target``, else the file name). Entry ``t`` is
    ``#{pred = t, y != t} / #{y != t}`` under the attack towards ``t``.
    """
    by_target = _runs_by_target(runs)
    n_classes, _ = _check_runs(by_target)
    preds, targets, labels = [], [], []
    for target, scores in by_target.items():
        preds.append(predictions(scores))
        labels.append(scores.labels)
        targets.append(np.full(scores.n_samples, target, dtype=np.int64))
    return targeted_success_rate_per_class(np.concatenate(preds), np.concatenate(targets), np.concatenate(labels), n_classes)


def _clean_on(clean: ScoresFile, clean_predicted: np.ndarray, run: ScoresFile) -> np.ndarray:
    """The clean predictions (``clean_predicted``, of ``clean``'s samples) of ``run``'s samples,
    in its order (matched by sample id)."""
    rows = sample_id_positions(
        run.sample_ids,
        clean.sample_ids,
        path=where(clean, "clean"),
        available_name="the clean outputs",
        missing=f"{{count}} of {{total}} sample(s) of {where(run, 'a targeted run')} are not in the clean outputs",
    )
    if not np.array_equal(clean.labels[rows], run.labels):
        raise InputError("labels differ from the clean outputs' for the same samples", path=where(run, "run"), field="labels")
    return clean_predicted[rows]


def targeted_success_table(
    runs: Mapping[int, ScoresFile | str | Path] | Sequence[str | Path],
    *,
    clean: ScoresFile | str | Path | None = None,
) -> pd.DataFrame:
    """One row per target class run (index ``target``, ascending).

    Columns: ``class_name``, ``n_attacked`` (samples not of the target class), ``n_success``
    (of those, predicted as the target), ``success_rate`` (their ratio; NaN without attacked
    samples) and, with ``clean`` logits, ``clean_rate``: the share of the same non-target
    samples (matched by sample id: a ``per_class`` run holds a subset of the clean ones) that
    the clean model already predicts as the target. :class:`InputError` when a run holds a
    sample the clean file lacks or labels a sample differently.
    """
    by_target = _runs_by_target(runs)
    _, class_names = _check_runs(by_target)
    clean_scores = None if clean is None else as_scores(clean)
    if clean_scores is not None and not np.array_equal(clean_scores.class_names, class_names):
        raise InputError(
            "class names differ from the targeted runs'",
            path=where(clean_scores, "clean"),
            field="class_names",
        )
    clean_predicted = None if clean_scores is None else predictions(clean_scores)
    rows = []
    for target, scores in by_target.items():
        pred, labels = predictions(scores), scores.labels
        goal = np.full(scores.n_samples, target, dtype=np.int64)
        attacked = labels != target
        row: dict[str, Any] = {
            "target": target,
            "class_name": str(class_names[target]),
            "n_attacked": int(attacked.sum()),
            "n_success": int((attacked & (pred == target)).sum()),
            "success_rate": targeted_success_rate(pred, goal, labels),
        }
        if clean_scores is not None and clean_predicted is not None:
            row["clean_rate"] = targeted_success_rate(_clean_on(clean_scores, clean_predicted, scores), goal, labels)
        rows.append(row)
    return pd.DataFrame(rows).set_index("target")
