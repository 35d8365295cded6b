"""The one aligner by sample id, against a naive dictionary lookup."""

from __future__ import annotations

import numpy as np
import pytest

from classwise.errors import InputError
from classwise.sample_ids import sample_id_positions


def test_positions_match_a_dictionary_lookup() -> None:
    rng = np.random.default_rng(0)
    available = np.array([f"img{i}" for i in rng.permutation(50)])
    wanted = available[rng.choice(50, size=20, replace=False)]
    where = {sample_id: i for i, sample_id in enumerate(available)}
    positions = sample_id_positions(wanted, available)
    assert positions.tolist() == [where[s] for s in wanted]
    # ids compare as strings: integer ids match their text
    assert sample_id_positions(np.array([2, 0]), np.array(["0", "1", "2"])).tolist() == [2, 0]


def test_missing_extra_and_duplicate_ids_are_named() -> None:
    with pytest.raises(InputError, match=r"1 of 2 sample ids are missing, e.g. \['z'\]") as info:
        sample_id_positions(["a", "z"], ["a", "b"], path="f.csv")
    assert info.value.path == "f.csv" and info.value.field == "sample_id"
    sample_id_positions(["a"], ["a", "b"])  # extra available ids are fine ...
    with pytest.raises(InputError, match=r"1 sample id\(s\) are not in the reference, e.g. \['b'\]"):
        sample_id_positions(["a"], ["a", "b"], exact=True)  # ... unless the sets must agree
    with pytest.raises(InputError, match=r"duplicate sample ids in this file: \['a'\] \(1 in all\)"):
        sample_id_positions(["a"], ["a", "a"])
    with pytest.raises(InputError, match=r"duplicate sample ids in the reference") as info:
        sample_id_positions(["a", "a"], ["a"], exact=True, wanted_path="ref.npz")
    assert info.value.path == "ref.npz"
