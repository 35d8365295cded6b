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
        """``(N,)`` labels and predicted classes, in the order of :meth:`sample_ids`."""
        ...


def confusion_matrix(labels: np.ndarray, predicted: np.ndarray, n_classes: int) -> np.ndarray:
    """``(C, C)`` int64 counts ``[true, predicted]``."""
    flat = np.asarray(labels, dtype=np.int64) * n_classes + np.asarray(predicted, dtype=np.int64)
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


class CachedOutputs:
    """:class:`ModelOutputs` of the workflow's files: the sample ids of a cached outputs file
    (:func:`classwise.logits_io.load_sample_ids`, its scores left unread), the confusion matrix
    the metrics step wrote beside it (a CSV indexed by class name) and, read once and only when
    asked, the labels and predicted classes of the outputs file."""

    def __init__(self, outputs_path: str | Path, confusion_path: str | Path) -> None:
        self.source = str(outputs_path)
        self.confusion_path = Path(confusion_path)
        self._rows: tuple[np.ndarray, np.ndarray] | None = None

    def sample_ids(self) -> np.ndarray:
        from classwise.logits_io import load_sample_ids

        return load_sample_ids(self.source)

    def confusion(self) -> np.ndarray:
        return read_confusion(self.confusion_path)[0]

    def labels_and_predictions(self) -> tuple[np.ndarray, np.ndarray]:
        if self._rows is None:  # read once: a clean file serves every subset shift
            from classwise.logits_io import load_outputs
            from classwise.robustness._scores import predictions

            scores = load_outputs(self.source)
            self._rows = (scores.labels, predictions(scores))
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


def pairing_table(
    confusions: Mapping[str, Mapping[str, np.ndarray]],
    references: Mapping[str, Mapping[str, np.ndarray]] | None = None,
    *,
    reference: str = REFERENCE_SHIFT,
) -> pd.DataFrame:
    """One row per (shift, model), input order: ``n`` (the samples compared: the sum of the
    confusion), ``reference_n`` (the reference shift's samples of the model) and ``pairing``
    (a key of :data:`PAIRINGS`). ``references`` as :attr:`PairedConfusions.references`; without
    it every shift is taken to hold the reference's samples."""
    rows = []
    base = confusions.get(reference, {})
    for shift, by_model in confusions.items():
        for model, matrix in by_model.items():
            n = int(round(float(np.sum(matrix))))
            whole = int(round(float(np.sum(base[model])))) if model in base else 0
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
