"""Reading cached scores for the robustness analyses: a path or an already loaded file.

These analyses use the predicted class alone, so a file of hard predictions serves as well
(:func:`classwise.logits_io.load_outputs`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from classwise.errors import InputError
from classwise.logits_io import ScoresFile, load_outputs


def as_scores(source: ScoresFile | str | Path) -> ScoresFile:
    """``source`` itself when already loaded, else :func:`classwise.logits_io.load_outputs`."""
    return source if isinstance(source, ScoresFile) else load_outputs(source)


def predictions(scores: ScoresFile) -> np.ndarray:
    """Top-1 predicted class per sample (``argmax``; ties -> lowest index), int64.
    :class:`InputError` for a model that abstained: these analyses compare the predicted
    classes of every sample across shifts and take no abstentions."""
    if scores.abstained is not None:
        raise InputError(
            f"the model abstained on {int(scores.abstained.sum())} samples; the robustness analyses need a predicted class "
            "for every sample (leave the model out of them)",
            path=scores.path,
            field="predictions",
        )
    return np.asarray(scores.scores).argmax(axis=1).astype(np.int64)


def where(scores: ScoresFile, fallback: str) -> str:
    """The file a scores object came from, for error messages."""
    return scores.path if scores.path is not None else fallback
