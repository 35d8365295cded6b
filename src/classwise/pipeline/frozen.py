"""Read-only lists and dicts for the plan: built once, then only read.

The plan's lists and dicts reach the rules' parameters, and Snakemake records a parameter as its
``repr`` and reruns a job whose recorded parameters differ: a tuple or a ``MappingProxyType``
there would rerun every job of a finished run (``MappingProxyType`` is not even recorded).
These subclasses are a ``list`` and a ``dict`` to every reader (the same ``repr``, equality,
JSON) and refuse every change; pickled (as Snakemake hands a job's parameters to its script)
they become a plain ``list`` and ``dict``, so a script needs nothing of this module.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NoReturn, TypeVar

__all__ = ["ReadOnlyDict", "ReadOnlyList", "frozen"]

T = TypeVar("T")


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"the plan is read-only once built: {type(self).__name__} cannot be changed")


class ReadOnlyList(list[Any]):
    """A ``list`` that refuses every change."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[type, tuple[list[Any]]]:
        return list, (list(self),)


class ReadOnlyDict(dict[Any, Any]):
    """A ``dict`` that refuses every change."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:
        return dict, (dict(self),)


def frozen(value: T) -> T:
    """``value`` with every list, dict and set in it (through tuples and dataclasses too) made
    read-only: :class:`ReadOnlyList`, :class:`ReadOnlyDict`, ``frozenset``."""
    result: Any
    if isinstance(value, tuple) and type(value) is tuple:  # a named tuple's fields stay as they are
        result = tuple(frozen(item) for item in value)
    elif isinstance(value, dict):
        result = ReadOnlyDict({key: frozen(item) for key, item in value.items()})
    elif isinstance(value, list):
        result = ReadOnlyList(frozen(item) for item in value)
    elif isinstance(value, (set, frozenset)):
        result = frozenset(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        result = dataclasses.replace(
            value, **{f.name: frozen(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        )
    else:
        result = value
    return result
