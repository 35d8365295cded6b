"""What a job that feeds several models from one decode needs to know (``infer_models_<dataset>``,
:func:`classwise.steps.models.infer_group_step`): in which batches to hold the models (those of
one decoding together, at most ``models_per_decode`` at once). Which models form a group is the
workflow's (:mod:`classwise.pipeline.decode_groups`); which of their files a rerun may take back
is :mod:`classwise.outputs.kept`'s, as for every job that does the work of several.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = ["take_batches"]

T = TypeVar("T")
K = TypeVar("K")


def take_batches(items: Iterable[T], key: Callable[[T], K], size: int) -> Iterable[list[T]]:
    """``items`` in batches of equal ``key`` (the models one decode can feed: the same decoding,
    :attr:`classwise.models.data_config.DataConfig.decoding`), each of at most ``size`` items, holding at most ``size`` items at once: when the
    items held reach ``size``, the largest batch (the first of equal ones) is given out; at the
    end the rest, in the order their keys came. Every item is given out once."""
    held: dict[Any, list[T]] = {}
    count = 0
    for item in items:
        held.setdefault(key(item), []).append(item)
        count += 1
        if count >= size:
            largest = max(held, key=lambda k: len(held[k]))  # max keeps the first of equal ones
            batch = held.pop(largest)
            count -= len(batch)
            yield batch
    yield from held.values()
