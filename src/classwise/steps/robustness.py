"""Workflow steps of the class-wise robustness analyses (Medi et al., 2024) and the
transformation tests (the model-testing catalogue), over cached logits and confusions."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.atomic import write_json, write_text
from classwise.references import cite
from classwise.shifts.corruptions import own_definitions_note

# numpy, pandas and the tables are imported by the steps that use them: a job imports this
# module before its step starts (the CPU before the step, python -m classwise.bench.demo).
if TYPE_CHECKING:
    import pandas as pd

    from classwise.metrics.outcomes import SampleOutcomes
    from classwise.robustness.pairing import CachedOutputs, ComparedResults


def _write_tables(frame: pd.DataFrame, caption: str, paths: Mapping[str, str | Path]) -> None:
    """Markdown/LaTeX rounded to four decimals, the CSV at full precision."""
    from classwise import tables

    tables.write_tables(tables.rounded_display(frame), caption, paths, data=frame)


def _note(shifts: Iterable[str]) -> str:
    """The on-the-fly corruption note as a sentence to append (" The corruptions ..."), or ""."""
    return _sentence(own_definitions_note(shifts))


#: What the mean-confusion directory holds when no shift attacks the models.
NO_ATTACK_NOTE = "No attack (PGD, AutoAttack or transfer) is evaluated on this dataset: no mean confusion under attack.\n"


def _sentence(text: str) -> str:
    """``text`` as a sentence to append (" ..."), or ""."""
    return f" {text}" if text else ""


def _subset_sentence(samples: Mapping[str, int], clean_samples: Mapping[str, int], what: str) -> str:
    """The caption's sentence on the samples compared (``samples``: per model, or per row, the
    ``what`` images; ``clean_samples``: the clean images of the same model or row)."""
    counts = sorted(set(samples.values()))
    of = sorted(set(clean_samples.values()))
    if all(samples[key] >= clean_samples[key] for key in samples):
        return f"Clean and {what} images matched by sample id."
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    whole = str(of[0]) if len(of) == 1 else f"{of[0]}-{of[-1]}"
    return (
        f"Over a subset of the clean images: n = {n} {what} images of {whole}; every clean number is on the same "
        "images, matched by sample id."
    )


@dataclass(frozen=True)
class MetricFiles:
    """What the metrics step wrote of one model under one shift (original labels), and the
    outputs file it read: the cross-shift views read A, WCA and the per-class numbers from the
    first two, the confusion figures the counts of the third, and count on the outputs file only
    what the metrics step cannot know (a shift's numbers on a subset of its samples)."""

    worst_class: str | Path
    per_class: str | Path
    confusion: str | Path
    outputs: str | Path

    @classmethod
    def from_json(cls, entry: Mapping[str, str]) -> MetricFiles:
        return cls(entry["worst_class"], entry["per_class"], entry["confusion"], entry["outputs"])

    def cached(self) -> CachedOutputs:
        from classwise.robustness.pairing import CachedOutputs

        return CachedOutputs(self.outputs, self.confusion, worst_class_path=self.worst_class, per_class_path=self.per_class)


def classwise_robustness_step(
    *,
    files: Mapping[str, Mapping[str, MetricFiles]],
    attack_shifts: Sequence[str],
    unpaired_shifts: Sequence[str] = (),
    corrupted_shifts: Sequence[str] = (),
    severity_steps: Mapping[str, Sequence[Any]] | None = None,
    title: str,
    figure_path: str | Path,
    similarity_path: str | Path,
    mean_confusion_dir: str | Path,
    table_paths: Mapping[str, str | Path],
    across_shifts: AcrossShiftsPaths | None = None,
) -> None:
    """Figures 2-3 (class-wise accuracy and CFPS per shift and model), Figure 4 (confusion under
    each of ``attack_shifts`` averaged over models, ``<mean_confusion_dir>/<shift>.png``; the
    workflow passes every untargeted PGD, AutoAttack and transfer shift), Figure 7 (prediction
    similarity on clean data) and the long table of the same numbers. ``files`` is
    ``{shift: {model: MetricFiles}}``.

    Every number of a model under a shift is the metrics step's, read; a shift is compared with
    clean model by model on the samples both hold, matched by sample id
    (:func:`classwise.robustness.pairing.compare_with_reference`; ``unpaired_shifts``: the sets
    of other images), the clean numbers on a subset of the clean samples counted from the
    outputs files, and a panel, title or row over a subset says its n. The mean confusion and
    the prediction similarity compare models: their confusions are counted on the samples every
    model of the shift holds (:func:`classwise.robustness.pairing.pair_confusions`). Without
    attacks the directory holds a note saying so (it is a declared output, so it always exists).
    With ``across_shifts``, the class-wise view across every shift too (:func:`across_shifts_outputs`)."""
    from classwise.plots.robustness import (
        plot_classwise_robustness,
        plot_mean_confusion,
        plot_prediction_similarity,
    )
    from classwise.robustness.classwise import classwise_table
    from classwise.robustness.pairing import (
        compare_with_reference,
        pair_confusions,
        pairing_table,
        read_confusion,
        samples_note,
        shift_samples,
    )

    class_names = read_confusion(next(iter(next(iter(files.values())).values())).confusion)[1]
    outputs = {shift: {model: entry.cached() for model, entry in per_model.items()} for shift, per_model in files.items()}
    compared = compare_with_reference(outputs, unpaired=unpaired_shifts)
    results, references = compared.results, compared.references
    pairing = pairing_table(results, references)
    notes = {shift: shift_samples(pairing, shift) for shift in results}
    plot_classwise_robustness(results, class_names, path=figure_path, title=title, notes=notes)
    reference = "clean" if "clean" in results else next(iter(results))
    figured = [reference, *(shift for shift in attack_shifts if shift != reference)]
    confusions = pair_confusions({shift: outputs[shift] for shift in figured if shift in outputs}, unpaired=unpaired_shifts)
    plot_prediction_similarity(
        confusions.confusions[reference],
        path=similarity_path,
        title=f"{title}: similarity of class-wise predictions ({reference})",
    )
    mean_confusion_dir = Path(mean_confusion_dir)
    mean_confusion_dir.mkdir(parents=True, exist_ok=True)
    if not attack_shifts:
        write_text(mean_confusion_dir / "README.txt", NO_ATTACK_NOTE)
    model_pairing = pairing_table(confusions.confusions, confusions.references)
    model_notes = {shift: shift_samples(model_pairing, shift) for shift in attack_shifts}
    for shift in attack_shifts:
        samples = f" ({model_notes[shift]})" if model_notes[shift] else ""
        plot_mean_confusion(
            confusions.confusions[shift],
            class_names,
            path=mean_confusion_dir / f"{shift}.png",
            title=f"{title}: confusion under {shift}{samples}, mean over models",
        )
    _write_tables(
        classwise_table(results, class_names, samples=pairing).set_index(["shift", "model", "class"]),
        f"{title}: class-wise accuracy and class false positive score per shift and model; n: the samples compared. "
        f"Source: {cite('medi2024', 'Figures 1-3')}.{_sentence(samples_note(pairing))}{_note(results)}",
        table_paths,
    )
    if across_shifts is not None:
        across_shifts_outputs(
            compared, class_names, corrupted_shifts, title=title, paths=across_shifts, severity_steps=severity_steps
        )


@dataclass(frozen=True)
class AcrossShiftsPaths:
    """Where :func:`across_shifts_outputs` writes: two tables (each ``{"markdown", "csv",
    "latex"}``), two class x shift CSVs and two figures."""

    shift_summary: Mapping[str, str | Path]
    corruption_errors: Mapping[str, str | Path]
    class_shift_accuracy: str | Path
    class_shift_cfps: str | Path
    worst_classes_figure: str | Path
    spread_figure: str | Path
    severity_curves: Mapping[str, str | Path] | None = None
    severity_figure: str | Path | None = None


def across_shifts_outputs(
    compared: ComparedResults,
    class_names: Sequence[str],
    corrupted_shifts: Sequence[str],
    *,
    title: str,
    paths: AcrossShiftsPaths,
    listed: int = 20,
    severity_steps: Mapping[str, Sequence[Any]] | None = None,
) -> None:
    """The class-wise view across the shifts of one dataset: the shift summary table (A and WCA
    per shift and model, with the change from clean on the same samples), the class x shift
    accuracy and CFPS matrices (CSV), the corruption errors per class (mean over every corrupted
    copy, and the relative drop; the Markdown lists each model's ``listed`` classes of highest
    mean corruption error, the CSV all), the worst classes x shifts heatmap and the spread of
    class-wise accuracy per shift. ``compared``: each shift's numbers and the clean numbers on
    each paired shift's samples, as :func:`classwise.robustness.pairing.compare_with_reference`
    gives them (one record, so that a shift's numbers never travel without their reference's).
    With ``paths.severity_curves``, the severity curves too: A and WCA per corruption family and
    severity (``severity_steps``: shift -> ``(family, severity)``), clean as severity 0."""
    import pandas as pd

    from classwise import tables
    from classwise.plots import save_png
    from classwise.plots.many_classes import accuracy_spread_figure, worst_classes_by_shift_figure
    from classwise.robustness.across_shifts import (
        REFERENCE_SHIFT,
        class_shift_matrix,
        corruption_summary,
        shift_summary,
        shift_summary_display,
    )
    from classwise.robustness.classwise import classwise_values
    from classwise.robustness.pairing import pairing_table, samples_note, shift_samples

    confusions, references = compared.results, compared.references
    summary = shift_summary(confusions, class_names, references=references)
    pairing = pairing_table(confusions, references)
    tables.write_tables(
        shift_summary_display(summary),
        f"{title}: accuracy A and worst-class accuracy WCA (its class in brackets) per shift and model, each "
        f"followed by its change from {REFERENCE_SHIFT} on the same samples, matched by sample id. Source: "
        f"{cite('medi2024', 'Figures 1-3')}, in the terms of {cite('bitterwolf2022', 'Table 1')}."
        f"{_sentence(samples_note(pairing))}{_note(confusions)}",
        paths.shift_summary,
        data=summary,
    )
    for path, value in ((paths.class_shift_accuracy, "accuracy"), (paths.class_shift_cfps, "cfps")):
        write_text(path, tables.to_csv(class_shift_matrix(confusions, class_names, value=value, references=references)))
    errors = corruption_summary(confusions, class_names, corrupted_shifts, references=references)
    corrupted = {shift: confusions[shift] for shift in [REFERENCE_SHIFT, *corrupted_shifts] if shift in confusions}
    corrupted_note = samples_note(pairing_table(corrupted, references))
    if errors.empty:
        display = pd.DataFrame({"note": [f"no corrupted copy of the dataset is evaluated beside {REFERENCE_SHIFT}"]})
    else:
        display = (
            errors.sort_values(["model", "mean_corruption_error"], ascending=[True, False], kind="stable")
            .groupby(level="model", sort=False)
            .head(listed)
        )
        display = tables.rounded_display(display.reset_index(["class", "class_name"]))
    tables.write_tables(
        display,
        f"{title}: class-wise error, clean and averaged over the {len(corrupted_shifts)} corrupted copies "
        f"(every corruption and severity); relative drop = (clean accuracy - mean corrupted accuracy) / clean "
        f"accuracy, the clean accuracy on each copy's samples (matched by sample id). Each model's {listed} classes of highest mean corruption error; the CSV holds every class. "
        f"Source: {cite('medi2024', 'Figure 3')}, one number per class.{_sentence(corrupted_note)}"
        f"{_note(corrupted_shifts)}",
        paths.corruption_errors,
        data=errors,
    )
    accuracy, _ = classwise_values(confusions, len(class_names))
    save_png(
        worst_classes_by_shift_figure(
            accuracy,
            class_names,
            title=f"{title}: the worst classes across shifts",
            notes={shift: shift_samples(pairing, shift) for shift in confusions},
        ),
        paths.worst_classes_figure,
    )
    save_png(accuracy_spread_figure(accuracy, title=f"{title}: class-wise accuracy per shift"), paths.spread_figure)
    if paths.severity_curves is not None and paths.severity_figure is not None:
        _severity_outputs(
            summary, severity_steps or {}, title=title, table_paths=paths.severity_curves, figure=paths.severity_figure
        )


def _severity_outputs(
    summary: pd.DataFrame,
    steps: Mapping[str, Sequence[Any]],
    *,
    title: str,
    table_paths: Mapping[str, str | Path],
    figure: str | Path,
) -> None:
    """The severity curves' table and figure (a note where no shift has a severity)."""
    import pandas as pd

    from classwise import tables
    from classwise.plots import save_png
    from classwise.plots.many_classes import severity_curves_figure
    from classwise.robustness.across_shifts import REFERENCE_SHIFT, severity_curves

    curves = severity_curves(summary, steps)
    if curves.empty:
        display = pd.DataFrame({"note": ["no shift with a severity (a corruption at a severity) is evaluated"]})
    else:
        display = tables.rounded_display(curves.reset_index(["family", "severity"]))
    tables.write_tables(
        display,
        f"{title}: accuracy A and worst-class accuracy WCA per model, corruption family and severity ({REFERENCE_SHIFT} as "
        f"severity 0), each with its change from {REFERENCE_SHIFT} on the same samples (n), matched by sample id. Source: "
        f"{cite('medi2024', 'Figure 3')}, by severity.",
        table_paths,
        data=curves,
    )
    save_png(severity_curves_figure(curves, title=f"{title}: accuracy by severity"), figure)


def transformation_tests_step(
    *,
    clean_path: str | Path,
    shifted_paths: Mapping[str, str | Path],
    thresholds: Mapping[str, Any],
    caption: str,
    table_paths: Mapping[str, str | Path],
    subsets: Sequence[str] = (),
) -> None:
    """The transformation tests of one model: accuracy, macro F1 and flip rate against clean per
    corruption, each marked pass / warn / fail (``subsets``: the shifts that may hold a subset of
    the clean samples, compared on those)."""
    from classwise.robustness.transformation_tests import Thresholds, transformation_test_table

    table = transformation_test_table(
        clean_path,
        dict(shifted_paths),
        thresholds=Thresholds.from_config(thresholds, field="robustness.transformation_tests.thresholds"),
        subsets=subsets,
    )
    _write_tables(table, caption, table_paths)


def targeted_success_step(
    *,
    runs: Mapping[str, Mapping[int, str | Path]],
    clean_paths: Mapping[str, str | Path],
    title: str,
    figure_path: str | Path,
    table_paths: Mapping[str, str | Path],
) -> None:
    """Figure 5: the targeted attack's success rate per target class, per model; and its table.
    ``runs`` is ``{model: {target: logits.npz}}``."""
    import numpy as np
    import pandas as pd

    from classwise.logits_io import load_outputs
    from classwise.plots.robustness import plot_targeted_success
    from classwise.robustness.targeted import targeted_success_table

    frames, rates, class_names = {}, {}, []
    for model, by_target in runs.items():
        clean = load_outputs(clean_paths[model])  # once: the table's clean rates and the figure's class names
        frame = targeted_success_table(dict(by_target), clean=clean)
        frames[model] = frame
        class_names = clean.class_names.tolist()
        full = np.full(len(class_names), np.nan)
        full[frame.index.to_numpy(dtype=int)] = frame["success_rate"].to_numpy(dtype=np.float64)
        rates[model] = full
    plot_targeted_success(rates, class_names, path=figure_path, title=title)
    _write_tables(
        pd.concat(frames, names=["model"]),
        f"{title}: success rate = share of samples not of the target class predicted as the target; n_attacked: "
        "those samples; clean rate: the share of the same samples (matched by sample id) predicted as the target "
        f"without the attack. Source: {cite('medi2024', 'Figure 5')}.",
        table_paths,
    )


def corruption_grid_step(
    *,
    dataset_name: str,
    dataset_cfg: Mapping[str, Any],
    seed: int,
    corruptions: Sequence[str] | None,
    severities: Sequence[int],
    sample_index: int,
    figure_path: str | Path,
) -> None:
    """One evaluation image under every corruption and severity, with the exact pixels (same
    per-sample seed) that inference feeds the models."""
    from classwise.data.imageset import ImageSet
    from classwise.data.sources import open_split
    from classwise.plots.corruption_grid import plot_corruption_grid

    # One image is decoded, not the whole split: image files of a folder differ in size, and a
    # split of ImageNet does not fit in memory.
    opened = open_split(dict(dataset_cfg), "test", name=dataset_name)
    index = min(int(sample_index), len(opened) - 1)
    if not isinstance(opened, ImageSet):
        opened, index = opened.subset([index]).to_imageset(), 0
    images = opened
    plot_corruption_grid(
        images.images[index],
        sample_id=str(images.sample_ids[index]),
        base_seed=seed,
        path=figure_path,
        corruptions=list(corruptions) if corruptions else None,
        severities=list(severities),
        title=f"{dataset_name}: sample {images.sample_ids[index]} under every corruption",
    )


def robust_fairness_step(
    *,
    clean_paths: Mapping[str, str | Path],
    attacked_paths: Mapping[str, str | Path],
    shift: str,
    caption: str,
    title: str,
    table_paths: Mapping[str, str | Path],
    figure_path: str | Path,
    json_path: str | Path,
) -> None:
    """The robust-fairness table and figure of every model under one attack
    (:mod:`classwise.metrics.robust_fairness`); ``clean_paths`` and ``attacked_paths`` map each
    model to its clean and attacked outputs, matched by sample id. The JSON holds, per model,
    the library's JSON with the overall ``accuracy`` and ``robust_accuracy`` beside it."""
    from classwise import tables
    from classwise.logits_io import load_sample_ids
    from classwise.metrics.robust_fairness import robust_fairness_of_files
    from classwise.plots.robustness import plot_clean_vs_robust

    results = {}
    clean_samples = {}
    class_names: list[str] = []
    for model, clean in clean_paths.items():
        results[model], clean_file = robust_fairness_of_files(clean, attacked_paths[model])
        clean_samples[model] = load_sample_ids(clean).size
        class_names = clean_file.class_names.tolist()
    # everything computed before anything is written
    display, data = tables.robust_fairness_table(results, class_names)
    samples = {model: result.n_samples for model, result in results.items()}
    caption += _sentence(_subset_sentence(samples, clean_samples, "attacked"))
    tables.write_tables(display, caption, table_paths, data=data)
    plot_clean_vs_robust(results, class_names, path=figure_path, title=title)
    write_json(
        json_path,
        {
            "shift": shift,
            "class_names": class_names,
            "models": {
                model: {"accuracy": result.accuracy, "robust_accuracy": result.robust_accuracy, **result.to_json()}
                for model, result in results.items()
            },
        },
    )


def transfer_matrix_step(
    *,
    clean_paths: Mapping[str, str | Path],
    transfer_paths: Mapping[tuple[str, str, str], str | Path],
    caption: str,
    table_paths: Mapping[str, str | Path],
) -> None:
    """The transfer matrix of one dataset (:func:`classwise.robustness.transfer.transfer_matrix`):
    ``clean_paths`` maps each target model to its clean outputs, ``transfer_paths`` each (source,
    attack, target) to the target's outputs under the source's transfer attack. Markdown and LaTeX show
    the matrix, the CSV one row per pair at full precision."""
    from classwise import tables
    from classwise.logits_io import load_sample_ids
    from classwise.robustness.transfer import transfer_matrix

    cells = transfer_matrix(clean_paths, transfer_paths)
    keys = [
        f"{source} / {attack} -> {target}" for source, attack, target in zip(cells["source"], cells["attack"], cells["target"])
    ]
    clean_samples = {target: load_sample_ids(path).size for target, path in clean_paths.items()}
    sentence = _subset_sentence(
        dict(zip(keys, cells["samples"].astype(int))),
        {key: clean_samples[target] for key, target in zip(keys, cells["target"])},
        "transferred",
    )
    tables.write_tables(
        tables.transfer_matrix_table(cells, samples=True),
        f"{caption} n: the images of each row; the CSV's clean accuracy is the target's on the same images.{_sentence(sentence)}",
        table_paths,
        data=cells,
    )


def view_outcomes(path: str | Path, label_view: str, view_labels_path: str | Path | None) -> SampleOutcomes:
    """A model's outcome on each sample of one outputs file under a label view: its top-1
    prediction as the metrics step ranks the scores (so that each class's accuracy is
    ``per_class.csv``'s), ``-1`` where it abstained (an error), the view's labels and samples."""
    import numpy as np

    from classwise.metrics.outcomes import SampleOutcomes
    from classwise.metrics.suite import argmax_scores
    from classwise.steps.metrics import load_view

    view = load_view(path, label_view, view_labels_path, hard_predictions=True)
    predicted = argmax_scores(view.scores, view.kind).argmax(axis=1).astype(np.int64)
    if view.abstained is not None:
        predicted[view.abstained] = -1
    return SampleOutcomes.from_predictions(
        view.sample_ids,
        view.labels,
        predicted,
        class_names=view.class_names,
        n_classes=int(view.scores.shape[1]),
        source=str(path),
    )


def class_drop_table(
    outputs: Mapping[str, Mapping[str, str | Path]],
    *,
    label_view: str = "original",
    view_labels_path: str | Path | None = None,
    unpaired_shifts: Collection[str] = (),
    settings: Mapping[str, Any],
) -> pd.DataFrame:
    """:func:`classwise.metrics.class_drops.class_drops` of the outputs files ``outputs`` (model
    -> shift -> file, ``clean`` among the shifts) under a label view, each model's family its
    shifts x classes; ``settings``: ``q``, ``adjustment``, ``unpaired_test``, ``confidence``.
    Read one model at a time (a family is one model's), each shift's samples numbered as clean's
    kept as clean's array. A shift not in ``unpaired_shifts`` that shares no sample with clean is
    an :class:`InputError` naming its file (the robustness step refuses it too)."""
    import numpy as np
    import pandas as pd

    from classwise.errors import InputError
    from classwise.metrics.class_drops import DropTestSettings, class_drops
    from classwise.metrics.outcomes import SampleOutcomes

    # checked once, before any outputs are read
    tests = DropTestSettings(
        q=float(settings["q"]),
        adjustment=str(settings["adjustment"]),
        unpaired_test=str(settings["unpaired_test"]),
        confidence=float(settings["confidence"]),
    )
    parts = []
    for model, by_shift in outputs.items():
        if "clean" not in by_shift:
            raise InputError(f"model {model!r} has no clean outputs to compare with", field=f"outputs.{model}")
        clean = view_outcomes(by_shift["clean"], label_view, view_labels_path)
        shifted = {}
        for shift, path in by_shift.items():
            if shift == "clean":
                continue
            outcomes = view_outcomes(path, label_view, view_labels_path)
            if np.array_equal(outcomes.sample_ids, clean.sample_ids):  # 50,000 ids per shift, held once
                outcomes = SampleOutcomes(clean.sample_ids, *(getattr(outcomes, f) for f in _OUTCOME_FIELDS))
            shifted[shift] = {model: outcomes}
        table = class_drops(
            {model: clean},
            shifted,
            n_classes=clean.n_classes,
            class_names=None if clean.class_names is None else list(clean.class_names),
            tests=tests,
            unpaired=unpaired_shifts,
        )
        other = table[(table["pairing"] == "unpaired") & ~table["shift"].isin(list(unpaired_shifts))]
        if len(other):
            shift = str(other["shift"].iloc[0])
            raise InputError(
                f"shift {shift!r} shares no sample id with clean; a set of other images is compared unpaired "
                "(paired: false in its shift set)",
                path=str(by_shift[shift]),
                field="sample_ids",
            )
        parts.append(table)
    return pd.concat(parts, ignore_index=True)


#: The fields of a :class:`~classwise.metrics.outcomes.SampleOutcomes` after its sample ids.
_OUTCOME_FIELDS = ("labels", "correct", "class_names", "n_classes", "source")


def _count(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _pairing_sentence(table: pd.DataFrame) -> str:
    """Which shifts were compared how, for a caption: ``"Paired on every sample: fog, snow.
    Paired on a subset of clean's samples: autoattack (n = 20 of 899)."``"""
    by_shift = table.groupby("shift", sort=False).agg(
        pairing=("pairing", "first"),
        n=("n_shift", "sum"),
        clean=("n_clean", "sum"),
        left_out=("clean_left_out", "sum"),
        models=("model", "nunique"),
    )
    sentences = []
    for pairing, text in (
        ("paired", "Paired on every clean sample"),
        ("paired_subset", "Paired on a subset of the clean samples"),
        ("paired_overlap", "Paired on the samples shared with clean"),
        ("unpaired", "Unpaired, other images against every clean sample"),
    ):
        rows = by_shift[by_shift["pairing"] == pairing]
        if rows.empty:
            continue
        names = []
        for shift, row in rows.iterrows():
            per_model = int(row["models"])
            n, whole = int(row["n"]) // per_model, int(row["clean"] + row["left_out"]) // per_model
            if pairing == "unpaired":
                names.append(f"{shift} (n = {n})")
            elif pairing == "paired":
                names.append(str(shift))
            else:
                names.append(f"{shift} (n = {n} of {whole})")
        sentences.append(f"{text}: {', '.join(names)}.")
    return " ".join(sentences)


def class_drops_step(
    *,
    outputs: Mapping[str, Mapping[str, str | Path]],
    label_view: str,
    view_labels_path: str | Path | None,
    unpaired_shifts: Collection[str],
    settings: Mapping[str, Any],
    families: Mapping[str, str],
    captions: Mapping[str, str],
    title: str,
    drops_paths: Mapping[str, str | Path],
    counts_paths: Mapping[str, str | Path],
    figure_path: str | Path,
) -> None:
    """The class-drop tests of one dataset and label view (:func:`class_drop_table`): the table
    of every (model, shift, class) as CSV, its significant rows (drops first, the largest first,
    then rises) as Markdown and LaTeX (``drops_paths``); per model and class under how many
    shifts it drops (``counts_paths``); the figure of the changes against their adjusted
    p-values, one panel per shift family (``families``: shift -> family). ``captions``: the
    ``drops`` and ``counts`` captions of the job, to which the counts of tests are added."""
    import pandas as pd

    from classwise import tables
    from classwise.metrics.class_drops import drop_counts, significant_changes
    from classwise.plots import save_png
    from classwise.plots.class_drops import class_drops_figure

    table = class_drop_table(
        outputs, label_view=label_view, view_labels_path=view_labels_path, unpaired_shifts=unpaired_shifts, settings=settings
    )
    significant = pd.concat([significant_changes(table, direction="drop"), significant_changes(table, direction="rise")])
    tested = int(table["p_value"].notna().sum())
    drops, rises = int((significant["change"] < 0).sum()), int((significant["change"] > 0).sum())
    counts = drop_counts(table)
    figure = class_drops_figure(table, families=families, q=float(settings["q"]), title=title)
    # everything computed before anything is written
    found = (
        f" {tested} tests ({table['model'].nunique()} models x {table['shift'].nunique()} shifts x the classes with "
        f"samples on both sides): {_count(drops, 'significant drop')} and {_count(rises, 'rise')}."
    )
    listed = "" if len(significant) <= tables.LISTED_CHANGES else f" The first {tables.LISTED_CHANGES} are listed."
    classes = counts[(counts["n_shifts_dropped"] > 0) | (counts["n_shifts_rose"] > 0)]
    shown = classes.groupby("model", sort=False).head(tables.LISTED_CLASSES)
    listed_classes = "" if len(shown) == len(classes) else f" Each model's first {tables.LISTED_CLASSES} classes are listed."
    sentence = _sentence(_pairing_sentence(table))
    tables.write_tables(
        tables.class_drops_display(significant), captions["drops"] + found + listed + sentence, drops_paths, data=table
    )
    tables.write_tables(
        tables.drop_counts_display(counts), captions["counts"] + found + listed_classes + sentence, counts_paths, data=counts
    )
    save_png(figure, figure_path)
