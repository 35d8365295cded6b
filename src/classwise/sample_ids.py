"""Matching rows of two sources by ``sample_id``: the one aligner of classwise.

Logits files, label views, feature tables and metadata CSVs each list their samples by id,
not necessarily in the same order or over the same samples. :func:`sample_id_positions` finds
where each wanted id sits among the available ones; every reader that joins two such sources
(shifted logits to clean logits, a second model's logits to the first, a label view, image
features or user metadata to the evaluated samples) goes through it, so that ids are compared
the same way (as strings) and a mismatch is reported the same way (counts and the first ids,
naming the file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from classwise.errors import InputError

__all__ = ["sample_id_positions"]

_MAX_IDS_IN_MESSAGE = 5


def _examples(ids: np.ndarray) -> str:
    return repr([str(i) for i in ids[:_MAX_IDS_IN_MESSAGE]])


def _check_unique(ids: np.ndarray, name: str, path: str | Path | None, field: str) -> None:
    duplicated = pd.Index(ids).duplicated()
    if duplicated.any():
        repeated = pd.unique(ids[duplicated])
        raise InputError(
            f"duplicate sample ids in {name}: {_examples(repeated)} ({repeated.size} in all)", path=path, field=field
        )


def sample_id_positions(
    wanted: Sequence[str] | np.ndarray,
    available: Sequence[str] | np.ndarray,
    *,
    path: str | Path | None = None,
    field: str = "sample_id",
    available_name: str = "this file",
    missing: str = "{count} of {total} sample ids are missing",
    exact: bool = False,
    wanted_name: str = "the reference",
    wanted_path: str | Path | None = None,
    extra: str = "{count} sample id(s) are not in the reference",
) -> np.ndarray:
    """Positions ``pos`` (int64) with ``available[pos] == wanted``; ids are compared as strings.

    ``available`` (the source being read, ``path``) must not repeat an id and must hold every
    wanted id; extra available ids are ignored unless ``exact``, which asks for the same set of
    unique ids on both sides (in any order). Otherwise :class:`InputError` under ``field``:
    duplicates are named with ``available_name`` / ``wanted_name`` (the latter's error with
    ``wanted_path``), and the ``missing`` / ``extra`` templates (``{count}``, ``{total}``: the
    number of wanted ids) say what is lacking, followed by the first ids.
    """
    want = np.asarray(wanted).astype(str)
    have = np.asarray(available).astype(str)
    if exact:
        _check_unique(want, wanted_name, wanted_path, field)
    _check_unique(have, available_name, path, field)
    positions = pd.Index(have).get_indexer(want).astype(np.int64, copy=False)
    absent = positions < 0
    problems = []
    if absent.any():
        problems.append(missing.format(count=int(absent.sum()), total=want.size) + f", e.g. {_examples(want[absent])}")
    if exact:
        surplus = pd.Index(want).get_indexer(have) < 0
        if surplus.any():
            problems.append(extra.format(count=int(surplus.sum()), total=want.size) + f", e.g. {_examples(have[surplus])}")
    if problems:
        raise InputError("; ".join(problems), path=path, field=field)
    return positions
