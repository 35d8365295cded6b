"""Like with like: the confusion matrices of every shift and model on the samples that both
sides of a comparison share, matched by sample id.

A shift made from the clean images (a corruption, an attack, a transfer attack, a published
corrupted copy such as ImageNet-C) holds the clean set's sample ids, or a subset of them (an
attack on ``per_class`` samples of each class). Its change from clean is measured against the
clean predictions of the *same* samples: with AutoAttack on 20 of 899 images, against the clean
accuracy of those 20, not of all 899. :func:`pair_confusions` gives, per shift and model,

* the shift's confusion matrix on the samples compared: the samples that every model of the
  shift holds and, for a paired shift, that the reference shift (``clean``) holds too;
* for a paired shift, the reference shift's confusion matrix on the same samples
  (``references``).

A natural shift set (other images: ImageNet-V2, ImageNet-Sketch, CIFAR-10.1) shares no sample
with clean; the caller names it ``unpaired``, and it is compared with the whole clean set and
shown as ``unpaired: other images`` (:func:`pairing_table`). Each table row or figure panel over
a subset of the clean set says its ``n``.

Reading is cheap where nothing is left out: a shift whose samples are the whole clean set keeps
its cached confusion matrix, and only a comparison over fewer samples reads the labels and the
predicted classes (:class:`CachedOutputs`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from classwise.errors import InputError, field_path
from classwise.logits_io import ABSTAINED
from classwise.robustness.results import ClassResults, as_results
from classwise.sample_ids import sample_id_positions

#: The shift every other is compared with.
REFERENCE_SHIFT = "clean"

#: How a (shift, model) is compared with the reference shift (:func:`pairing_table`).
PAIRINGS: dict[str, str] = {
    "reference": "the reference shift itself",
    "same samples": "paired: the reference's samples, matched by sample id",
    "subset": "paired: a subset of the reference's samples, compared on the same samples",
    "unpaired": "unpaired: other images, compared with all of the reference's samples",
    "no reference": "the reference shift is not evaluated for the model: nothing to compare with",
}


class ModelOutputs(Protocol):
    """One model's outputs under one shift, as far as :func:`pair_confusions` reads them."""

    #: The file (or a name) that error messages point to.
    source: str

    def sample_ids(self) -> np.ndarray:
        """The unique sample ids, as strings."""
        ...

    def confusion(self) -> np.ndarray:
        """``(C, C)`` confusion ``[true, predicted]`` over every sample."""
        ...

    def labels_and_predictions(self) -> tuple[np.ndarray, np.ndarray]:
        """``(N,)`` labels and predicted classes (``-1``: abstained), in the order of
        :meth:`sample_ids`."""
        ...

    def results(self) -> ClassResults:
        """A, WCA and the per-class numbers over every sample."""
        ...


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, n_classes: int) -> np.ndarray:
    """``(C, C)`` int64 counts ``[true, predicted]`` of the answered samples (a prediction of
    ``-1``, an abstention, names no class: it is left out, as in the metrics step's confusion)."""
    labels, predicted = np.asarray(labels, dtype=np.int64), np.asarray(predicted, dtype=np.int64)
    answered = predicted != ABSTAINED
    flat = labels[answered] * n_classes + predicted[answered]
    return np.bincount(flat, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


@dataclass(frozen=True, eq=False)
class ArrayOutputs:
    """:class:`ModelOutputs` from arrays in memory."""

    ids: np.ndarray
    labels: np.ndarray
    predicted: np.ndarray
    n_classes: int
    source: str = "outputs"

    def sample_ids(self) -> np.ndarray:
        return np.asarray(self.ids).astype(str)

    def confusion(self) -> np.ndarray:
        return confusion_matrix(self.labels, self.predicted, self.n_classes)

    def labels_and_predictions(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.labels, dtype=np.int64), np.asarray(self.predicted, dtype=np.int64)

    def results(self) -> ClassResults:
        return ClassResults.from_predictions(self.labels, self.predicted, self.n_classes, source=self.source)


class CachedOutputs:
    """:class:`ModelOutputs` of the workflow's files: the sample ids of a cached outputs file
    (:func:`classwise.logits_io.load_sample_ids`, its scores left unread), what the metrics step
    wrote of it (the confusion matrix, a CSV indexed by class name; A, WCA and the per-class
    numbers, ``worst_class.json`` and ``per_class.csv``) and, read once and only when asked, the
    labels and predicted classes of the outputs file."""

    def __init__(
        self,
        outputs_path: str | Path,
        confusion_path: str | Path,
        *,
        worst_class_path: str | Path | None = None,
        per_class_path: str | Path | None = None,
    ) -> None:
        self.source = str(outputs_path)
        self.confusion_path = Path(confusion_path)
        self.worst_class_path = worst_class_path
        self.per_class_path = per_class_path
        self._rows: tuple[np.ndarray, np.ndarray] | None = None
        self._results: ClassResults | None = None

    def results(self) -> ClassResults:
        """What the metrics step wrote, read once (without its files: the numbers of the
        confusion, which knows no abstention)."""
        if self._results is None:
            if self.worst_class_path is None or self.per_class_path is None:
                self._results = ClassResults.from_confusion(self.confusion(), source=str(self.confusion_path))
            else:
                self._results = ClassResults.read(self.worst_class_path, self.per_class_path)
        return self._results

    def sample_ids(self) -> np.ndarray:
        from classwise.logits_io import load_sample_ids

        return load_sample_ids(self.source)

    def confusion(self) -> np.ndarray:
        return read_confusion(self.confusion_path)[0]

    def labels_and_predictions(self) -> tuple[np.ndarray, np.ndarray]:
        if self._rows is None:  # read once: a clean file serves every subset shift
            from classwise.logits_io import load_outputs

            scores = load_outputs(self.source)
            self._rows = (scores.labels, scores.predictions)
        return self._rows


def read_confusion(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """A confusion CSV of the metrics step (rows and columns the class names): the float64
    counts and the class names."""
    frame = pd.read_csv(path, index_col=0)
    return frame.to_numpy(dtype=np.float64), [str(c) for c in frame.columns]


@dataclass(frozen=True)
class PairedConfusions:
    """What :func:`pair_confusions` returns."""

    #: ``{shift: {model: (C, C)}}`` on the samples compared (input order).
    confusions: dict[str, dict[str, np.ndarray]]
    #: ``{shift: {model: (C, C)}}``: the reference shift's confusion on the same samples, for
    #: every paired shift other than the reference (an unpaired shift is absent).
    references: dict[str, dict[str, np.ndarray]]
    reference: str = REFERENCE_SHIFT


def _shared(ids: list[np.ndarray]) -> np.ndarray:
    """The ids of the first array that every other holds, in the first's order."""
    shared = ids[0]
    for other in ids[1:]:
        shared = shared[pd.Index(shared).isin(other)]
    return shared


def _on(outputs: ModelOutputs, ids: np.ndarray, all_ids: np.ndarray, n_classes: int | None) -> np.ndarray:
    """The confusion of ``outputs`` on ``ids`` (a subset of its ``all_ids``): its own matrix when
    nothing is left out, else counted from its labels and predictions at those ids."""
    if ids.size == all_ids.size:
        return outputs.confusion()
    positions = sample_id_positions(ids, all_ids, path=outputs.source, available_name="this file")
    labels, predicted = outputs.labels_and_predictions()
    c = n_classes if n_classes is not None else outputs.confusion().shape[0]
    return confusion_matrix(labels[positions], predicted[positions], c).astype(np.float64)


def pair_confusions(
    outputs: Mapping[str, Mapping[str, ModelOutputs]],
    *,
    unpaired: Collection[str] = (),
    reference: str = REFERENCE_SHIFT,
) -> PairedConfusions:
    """The confusions of ``outputs`` (``{shift: {model: ModelOutputs}}``) on the samples each
    comparison shares, matched by sample id.

    Per shift, the samples compared are those every model of the shift holds (so that models are
    compared like with like too) and, for a shift not named in ``unpaired``, that every model
    holds under ``reference`` as well; the reference shift's confusion of each model on exactly
    those samples is ``references[shift][model]``. A shift in ``unpaired`` (other images) keeps
    all of its samples and gets no reference: it is compared with the whole reference set.

    :class:`InputError` when a paired shift shares no sample with the reference (a set of other
    images belongs in ``unpaired``), or when the same sample's label differs between a shift and
    the reference (their class supports on the shared samples differ)."""
    n_classes: int | None = None
    confusions: dict[str, dict[str, np.ndarray]] = {}
    references: dict[str, dict[str, np.ndarray]] = {}
    reference_ids: dict[str, np.ndarray] = {}
    reference_shared: np.ndarray | None = None
    if reference in outputs:
        reference_ids = {model: o.sample_ids() for model, o in outputs[reference].items()}
        reference_shared = _shared(list(reference_ids.values()))
    for shift, by_model in outputs.items():
        if not by_model:
            raise InputError("no models given", field=field_path("outputs", shift))
        ids = reference_ids if shift == reference else {model: o.sample_ids() for model, o in by_model.items()}
        shared = _shared(list(ids.values()))
        paired = shift != reference and shift not in unpaired and reference_shared is not None
        if paired:
            assert reference_shared is not None
            shared = shared[pd.Index(shared).isin(reference_shared)]
            if shared.size == 0:
                raise InputError(
                    f"shift {shift!r} shares no sample id with {reference!r}: a set of other images is compared unpaired",
                    path=next(iter(by_model.values())).source,
                    field="sample_ids",
                )
        confusions[shift] = {model: _on(o, shared, ids[model], n_classes) for model, o in by_model.items()}
        if n_classes is None:
            n_classes = next(iter(confusions[shift].values())).shape[0]
        if not paired:
            continue
        references[shift] = {}
        for model in by_model:
            if model not in outputs[reference]:
                continue
            matrix = _on(outputs[reference][model], shared, reference_ids[model], n_classes)
            if not np.array_equal(matrix.sum(axis=1), confusions[shift][model].sum(axis=1)):
                raise InputError(
                    f"labels differ from those of {reference!r} on the samples both hold",
                    path=by_model[model].source,
                    field="labels",
                )
            references[shift][model] = matrix
    return PairedConfusions(confusions, references, reference)


@dataclass(frozen=True)
class ComparedResults:
    """What :func:`compare_with_reference` returns."""

    #: ``{shift: {model: ClassResults}}`` on the samples compared with the reference (input order).
    results: dict[str, dict[str, ClassResults]]
    #: ``{shift: {model: ClassResults}}``: the reference shift's numbers on the same samples, for
    #: every paired shift other than the reference (an unpaired shift is absent).
    references: dict[str, dict[str, ClassResults]]
    reference: str = REFERENCE_SHIFT


def _results_on(outputs: ModelOutputs, ids: np.ndarray, all_ids: np.ndarray, n_classes: int, samples: str) -> ClassResults:
    """The numbers of ``outputs`` on ``ids`` (a subset of its ``all_ids``, described by
    ``samples``): those the metrics step computed when nothing is left out, else counted from
    its labels and predictions."""
    if ids.size == all_ids.size:
        return outputs.results()
    positions = sample_id_positions(ids, all_ids, path=outputs.source, available_name="this file")
    labels, predicted = outputs.labels_and_predictions()
    return ClassResults.from_predictions(
        labels[positions], predicted[positions], n_classes, source=outputs.source, samples=samples
    )


def compare_with_reference(
    outputs: Mapping[str, Mapping[str, ModelOutputs]],
    *,
    unpaired: Collection[str] = (),
    reference: str = REFERENCE_SHIFT,
) -> ComparedResults:
    """Each model's numbers under each shift and, for a paired shift, the reference shift's
    numbers of the same model on the same samples, matched by sample id.

    A shift is compared with the reference model by model, on the samples that both the shift
    and the reference hold for that model: where those are all of the shift's samples (a
    corrupted copy, an attack on a subset), the shift's numbers are the metrics step's, read,
    never computed again; the reference's are the metrics step's where the shift holds all of
    its samples and counted on the shared samples otherwise (the clean numbers of the 20
    images an attack ran on). A shift in ``unpaired`` (other images), the reference itself and
    a model without a reference run keep the metrics step's numbers and get no reference.

    :class:`InputError` when a paired shift shares no sample with the reference (a set of other
    images belongs in ``unpaired``), or when a sample's label differs between a shift and the
    reference (their class supports on the shared samples differ)."""
    results: dict[str, dict[str, ClassResults]] = {}
    references: dict[str, dict[str, ClassResults]] = {}
    reference_ids: dict[str, np.ndarray] = {}
    for shift, by_model in outputs.items():
        if not by_model:
            raise InputError("no models given", field=field_path("outputs", shift))
        results[shift] = {}
        for model, o in by_model.items():
            base = outputs.get(reference, {}).get(model)
            if shift == reference or shift in unpaired or base is None:
                results[shift][model] = o.results()
                continue
            if model not in reference_ids:
                reference_ids[model] = base.sample_ids()
            ids, whole = o.sample_ids(), reference_ids[model]
            shared = ids[pd.Index(ids).isin(whole)]
            if shared.size == 0:
                raise InputError(
                    f"shift {shift!r} shares no sample id with {reference!r}: a set of other images is compared unpaired",
                    path=o.source,
                    field="sample_ids",
                )
            own = o.results() if shared.size == ids.size else None
            n_classes = own.n_classes if own is not None else base.results().n_classes
            if own is None:
                own = _results_on(o, shared, ids, n_classes, f"shared with {reference}")
            results[shift][model] = own
            compared = _results_on(base, shared, whole, n_classes, f"of {shift}")
            if not np.array_equal(compared.support, results[shift][model].support):
                raise InputError(
                    f"labels differ from those of {reference!r} on the samples both hold", path=o.source, field="labels"
                )
            references.setdefault(shift, {})[model] = compared
    return ComparedResults(results, references, reference)


def pairing_table(
    confusions: Mapping[str, Mapping[str, ClassResults | np.ndarray]],
    references: Mapping[str, Mapping[str, ClassResults | np.ndarray]] | None = None,
    *,
    reference: str = REFERENCE_SHIFT,
) -> pd.DataFrame:
    """One row per (shift, model), input order: ``n`` (the samples compared), ``reference_n``
    (the reference shift's samples of the model) and ``pairing`` (a key of :data:`PAIRINGS`).
    ``confusions`` and ``references`` as :attr:`ComparedResults.results` and
    :attr:`ComparedResults.references` (or confusion matrices, as :class:`PairedConfusions`);
    without ``references`` every shift is taken to hold the reference's samples."""
    rows = []
    base = confusions.get(reference, {})
    for shift, by_model in confusions.items():
        for model, matrix in by_model.items():
            n = as_results(matrix).n
            whole = as_results(base[model]).n if model in base else 0
            if shift == reference:
                pairing = "reference"
            elif model not in base:
                pairing = "no reference"
            elif references is None:  # the caller's word: every shift holds the reference's samples
                pairing = "same samples"
            elif references is not None and model not in references.get(shift, {}):
                pairing = "unpaired"
            else:
                pairing = "subset" if n < whole else "same samples"
            rows.append({"shift": shift, "model": model, "n": n, "reference_n": whole, "pairing": pairing})
    return pd.DataFrame(rows, columns=["shift", "model", "n", "reference_n", "pairing"]).set_index(["shift", "model"])


def samples_note(pairing: pd.DataFrame, *, reference: str = REFERENCE_SHIFT) -> str:
    """The sentences a caption adds for :func:`pairing_table`: which shifts cover a subset of
    the reference's samples (with their n) and which are unpaired; ``""`` when every shift holds
    the reference's samples."""
    sentences = []
    subsets = pairing[pairing["pairing"] == "subset"]
    if len(subsets):
        parts = [
            f"{shift} (n = {_counts(rows['n'])} of {_counts(rows['reference_n'])})"
            for shift, rows in subsets.groupby(level="shift", sort=False)
        ]
        sentences.append(
            f"Over a subset of the {reference} images, compared with {reference} on the same images: {', '.join(parts)}."
        )
    unpaired = pairing[pairing["pairing"] == "unpaired"]
    if len(unpaired):
        parts = [f"{shift} (n = {_counts(rows['n'])})" for shift, rows in unpaired.groupby(level="shift", sort=False)]
        sentences.append(f"Unpaired, other images, compared with all {reference} images: {', '.join(parts)}.")
    return " ".join(sentences)


def _counts(values: pd.Series) -> str:
    """``20`` when every model has the same count, else ``19-20``."""
    low, high = int(values.min()), int(values.max())
    return str(low) if low == high else f"{low}-{high}"


def shift_samples(pairing: pd.DataFrame, shift: str, *, reference: str = REFERENCE_SHIFT) -> str:
    """A figure panel's or title's note of ``shift``'s samples: ``"n = 20 of 899"`` for a subset
    of the reference's, ``"other images, n = 500"`` unpaired, ``""`` otherwise."""
    if shift not in pairing.index.get_level_values("shift"):
        return ""
    rows = pairing.xs(shift, level="shift")
    kinds = set(rows["pairing"])
    if "subset" in kinds:
        return f"n = {_counts(rows['n'])} of {_counts(rows['reference_n'])}"
    if "unpaired" in kinds:
        return f"other images, n = {_counts(rows['n'])}"
    return ""
