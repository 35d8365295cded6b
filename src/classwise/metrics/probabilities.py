"""Class probabilities of N samples over C classes, without an N x C float64 matrix.

:class:`Probabilities` wraps the scores of one model on one evaluation set, either raw
logits or probabilities, and hands out float64 probabilities one block of rows at a time.
For logits the softmax is computed in float64 log space: the per-row log-normaliser
``lse_i = log sum_k exp(x_ik)`` is computed once (row-chunked, max-shifted, so it never
overflows) and kept as an ``(N,)`` vector; probabilities of a row block are then
``exp(x - lse)`` and correct-class log-probabilities ``x_iy - lse_i`` exactly.  The scores
array itself is kept as given (float32 stays float32), so memory stays at the size of the
input plus ``O(N + chunk)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from classwise.errors import InputError
from classwise.validation import ScoreKind, check_kind, check_labels, check_probabilities, check_score_matrix, row_locations

__all__ = ["Probabilities", "ScoreKind", "auto_chunk_rows", "map_row_blocks"]

#: Row blocks are sized to about this many elements (about 2 MiB of float64), which keeps
#: the temporaries in cache; ``iter_chunks`` callers may pass their own ``chunk_rows``.
_TARGET_CHUNK_ELEMENTS = 1 << 18


def map_row_blocks(fn, n_rows: int, step: int, *, workers: int | None = None) -> list:
    """``[fn(slice) for each block of step rows]``, blocks spread over threads.

    NumPy releases the GIL inside ufuncs on large blocks, so the blocks' float64 ``exp`` passes
    run in parallel on the available cores; results come back in block order, so reductions
    over them are deterministic.
    """
    slices = [slice(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]
    workers = workers or min(len(slices), os.cpu_count() or 1)
    if workers <= 1 or len(slices) <= 1:
        return [fn(rows) for rows in slices]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, slices))


def auto_chunk_rows(n_classes: int, target_elements: int = _TARGET_CHUNK_ELEMENTS) -> int:
    """Rows per block so that a block holds about ``target_elements`` values (at least 1 row)."""
    return max(1, target_elements // max(1, n_classes))


class Probabilities:
    """Class probabilities of N samples over C classes, from logits (softmax computed in
    float64 log space, row-chunked so the N x C float64 matrix is never materialised) or
    from given probabilities.

    Build with :meth:`from_scores`.  Logits may hold ``-inf`` (a class ruled out) but no NaN
    or ``+inf``, and each row needs a finite entry; probabilities must pass
    :func:`classwise.validation.check_probabilities`.  Given probabilities are used as they
    are (not renormalised).
    """

    __slots__ = ("_scores", "_kind", "_lse")

    def __init__(self, scores: np.ndarray, kind: ScoreKind, lse: np.ndarray | None):
        # Use from_scores: it validates and computes the log-normaliser.
        self._scores = scores
        self._kind: ScoreKind = kind
        # The per-row log-normaliser of logits; None for probabilities (from_scores sets it
        # exactly when kind is "logits", so the methods below test it in place of the kind).
        self._lse = lse

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_scores(cls, scores: np.ndarray, kind: ScoreKind) -> Probabilities:
        """Validate ``scores`` (N, C) of the given ``kind`` and wrap them (no copy)."""
        kind = check_kind(kind)
        arr = check_score_matrix(scores, field=kind)
        if arr.dtype.itemsize > 8:  # long double: compute in float64 like everything else
            arr = arr.astype(np.float64)
        if kind == "logits":
            lse = _row_logsumexp(arr)
            if not np.isfinite(lse).all():
                bad = np.flatnonzero(~np.isfinite(lse))
                raise InputError(f"NaN or infinite logits in {row_locations(bad)}", field=kind)
            return cls(arr, kind, lse)
        _validate_probs(arr)
        return cls(arr, kind, None)

    # ------------------------------------------------------------------ properties
    @property
    def n_samples(self) -> int:
        return int(self._scores.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self._scores.shape[1])

    @property
    def kind(self) -> ScoreKind:
        return self._kind

    @property
    def scores(self) -> np.ndarray:
        """The wrapped scores array, as given (read it, do not modify it)."""
        return self._scores

    # ------------------------------------------------------------------ per-sample values
    def check_labels(self, labels: np.ndarray) -> np.ndarray:
        """Return ``labels`` as an int64 ``(N,)`` array, or raise :class:`InputError`."""
        return check_labels(labels, self.n_samples, self.n_classes)

    def correct_class_log_prob(self, labels: np.ndarray) -> np.ndarray:
        """``(N,)`` float64 ``log p(y_i)``: exact log-softmax ``x_iy - lse_i`` for logits,
        ``log(p_iy)`` for probabilities (``-inf`` where ``p_iy == 0``)."""
        lab = self.check_labels(labels)
        picked = self._scores[np.arange(self.n_samples), lab].astype(np.float64)
        if self._lse is not None:
            return picked - self._lse
        with np.errstate(divide="ignore"):
            return np.log(picked)

    def correct_class_prob(self, labels: np.ndarray) -> np.ndarray:
        """``(N,)`` float64 ``p(y_i)``, computed exactly as :meth:`iter_chunks` computes
        the same entry (``exp(x_iy - lse_i)`` for logits, the given value for probabilities)."""
        lab = self.check_labels(labels)
        picked = self._scores[np.arange(self.n_samples), lab].astype(np.float64)
        if self._lse is not None:
            picked -= self._lse
            np.exp(picked, out=picked)
        return picked

    def predictions(self) -> np.ndarray:
        """``(N,)`` int64 argmax class of each sample (ties -> lowest index)."""
        return np.argmax(self._scores, axis=1).astype(np.int64, copy=False)

    # ------------------------------------------------------------------ row blocks
    def probabilities_of(self, rows: slice) -> np.ndarray:
        """A fresh float64 block of probabilities for ``rows`` (as :meth:`iter_chunks` yields)."""
        block = self._scores[rows].astype(np.float64)
        if self._lse is not None:
            block -= self._lse[rows, None]
            np.exp(block, out=block)
        return block

    def iter_chunks(self, chunk_rows: int = 4096) -> Iterator[tuple[slice, np.ndarray]]:
        """Yield ``(rows, p)`` for consecutive row blocks: ``p`` is a fresh float64
        ``(len(rows), C)`` array of probabilities that the caller may modify."""
        if int(chunk_rows) < 1:
            raise InputError(f"chunk_rows must be >= 1, got {chunk_rows}", field="chunk_rows")
        step = int(chunk_rows)
        for start in range(0, self.n_samples, step):
            rows = slice(start, min(start + step, self.n_samples))
            yield rows, self.probabilities_of(rows)  # always a fresh copy

    def __repr__(self) -> str:
        return f"Probabilities(kind={self._kind!r}, n_samples={self.n_samples}, n_classes={self.n_classes})"


def _row_logsumexp(x: np.ndarray) -> np.ndarray:
    """float64 ``log sum_k exp(x_ik)`` per row, row-chunked and max-shifted.

    A row holding NaN or +inf gives a non-finite result (NaN), which the caller rejects.
    """
    n, c = x.shape
    out = np.empty(n, dtype=np.float64)

    def block_lse(rows: slice) -> None:
        with np.errstate(invalid="ignore", over="ignore"):
            block = x[rows].astype(np.float64)
            m = block.max(axis=1)
            block -= m[:, None]
            np.exp(block, out=block)
            s = block.sum(axis=1)
            np.log(s, out=s)
            s += m
            out[rows] = s  # disjoint rows per block: no two threads write the same entry

    map_row_blocks(block_lse, n, auto_chunk_rows(c))
    return out


def _validate_probs(p: np.ndarray) -> None:
    """:func:`classwise.validation.check_probabilities` one block of rows at a time (no
    ``N x C`` temporaries)."""
    step = auto_chunk_rows(p.shape[1])
    for start in range(0, p.shape[0], step):
        check_probabilities(p[start : start + step], field="probs", row_offset=start)
