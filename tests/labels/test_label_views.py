"""Label views reuse the cached logits with other labels or a subset."""

from __future__ import annotations

import numpy as np
import pytest

from classwise.errors import InputError
from classwise.labels.labelled_scores import apply_label_view
from classwise.logits_io import ScoresFile


def _scores_file(n: int = 5, c: int = 3) -> ScoresFile:
    return ScoresFile(
        scores=np.arange(n * c, dtype=np.float32).reshape(n, c),
        labels=np.arange(n) % c,
        kind="logits",
        sample_ids=np.array([f"s{i}" for i in range(n)]),
        class_names=np.array(["a", "b", "c"]),
        path="clean.npz",
    )


def test_original_view_is_the_stored_labels() -> None:
    view = apply_label_view(_scores_file(), "original")
    assert view.labels.tolist() == [0, 1, 2, 0, 1]
    assert view.scores.shape == (5, 3)


def test_other_view_relabels_and_drops_removed_rows() -> None:
    view = apply_label_view(_scores_file(), "cleaned", np.array([2, -1, 2, 0, -1]))
    assert view.labels.tolist() == [2, 2, 0]
    assert view.sample_ids.tolist() == ["s0", "s2", "s3"]
    np.testing.assert_array_equal(view.scores[1], np.array([6, 7, 8], dtype=np.float32))


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (np.array([0, 1, 2]), "expected 5 labels"),
        (np.array([0, 1, 2, 3, 0]), "must be -1 (removed) or in [0, 3)"),
        (np.array([0, 1, -2, 0, 0]), "1 are not, e.g. -2 for sample ids ['s2']"),
    ],
)
def test_bad_label_files_are_named(labels: np.ndarray, message: str) -> None:
    with pytest.raises(InputError) as info:
        apply_label_view(_scores_file(), "cleaned", labels, source="views/cleaned.csv")
    assert message in str(info.value)
    assert "views/cleaned.csv" in str(info.value)
