"""What a ``torch.save`` file holds, read without torch and without running anything its pickle
names (loading a pickle the usual way imports and calls whatever it names).

A state dict, or a classwise checkpoint, references tensor-rebuilding functions, storages and
plain containers. A whole model saved with ``torch.save(model)`` references its ``nn.Module``
classes; ``torch.load(..., weights_only=True)`` refuses it with a long message, and the workflow
needs to tell the user before any job, at DAG-build time, where torch is not imported.
:func:`pickled_model_class` reads the pickle's opcodes alone; :func:`saved_object` rebuilds its
containers with inert stand-ins for every global (a tensor becomes its shape), so the plan can
read a checkpoint's tensor shapes.
"""

from __future__ import annotations

import collections
import io
import pickle
import pickletools
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

__all__ = ["SavedTensor", "pickle_references", "pickled_model_class", "saved_object"]

_STRING_OPCODES = frozenset(
    {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"}
)
_MODULE_STATE_KEYS = frozenset({"_modules", "_parameters"})
#: The legacy (non-zip) format is a sequence of pickles: magic number, protocol, system
#: information, then the object.
_LEGACY_PICKLES = 4


def _scan(stream: IO[bytes], found: list[str], strings: list[str]) -> None:
    for opcode, argument, _ in pickletools.genops(stream):
        if opcode.name == "GLOBAL":
            module, _, name = str(argument).partition(" ")
            found.append(f"{module}.{name}")
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.append(f"{strings[-2]}.{strings[-1]}")
        elif opcode.name in _STRING_OPCODES:
            strings.append(str(argument))


def pickle_references(path: str | Path) -> tuple[list[str], set[str]]:
    """The ``module.name`` globals the pickle of a ``torch.save`` file (zip or legacy format)
    refers to, in order, and the strings it holds; empty when the file is no pickle."""
    found: list[str] = []
    strings: list[str] = []
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                name = next((n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
                if name is not None:
                    _scan(io.BytesIO(archive.read(name)), found, strings)
        else:
            with open(path, "rb") as handle:
                for _ in range(_LEGACY_PICKLES):
                    _scan(handle, found, strings)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        pass  # a partial scan still names what it found; the loading job reports the rest
    return found, set(strings)


def pickled_model_class(path: str | Path) -> str | None:
    """The class of a whole model saved with ``torch.save(model)`` (a pickled ``nn.Module``),
    e.g. ``torchvision.models.resnet.ResNet``; ``None`` if ``path`` is not one."""
    found, strings = pickle_references(path)
    is_module = (
        any(g.startswith("torch.nn.modules.") for g in found)
        or "torch._utils._rebuild_parameter" in found
        or _MODULE_STATE_KEYS <= strings
    )
    return found[0] if is_module and found else None


@dataclass(frozen=True)
class SavedTensor:
    """A tensor of a ``torch.save`` file as :func:`saved_object` reads it: its shape, no data."""

    shape: tuple[int, ...]


class _Inert:
    """What every global of the pickle besides :data:`_STAND_INS` becomes: a class whose
    instances take any argument, state or item and hold nothing (nothing is imported or run)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def append(self, value: Any) -> None:
        pass

    def extend(self, values: Any) -> None:
        pass


def _tensor(storage: Any, storage_offset: Any, size: Any, *rest: Any) -> SavedTensor:
    return SavedTensor(tuple(int(d) for d in size))


def _parameter(data: Any, *rest: Any) -> Any:
    return data


def _subclass(function: Callable[..., Any], new_type: Any, args: Any, state: Any) -> Any:
    return function(*args)  # a tensor subclass: rebuilt as the tensor it wraps


#: The globals whose meaning the shapes need, each replaced by a function of this module:
#: torch's tensor and parameter rebuilders (their arguments hold the shape) and the ordered dict
#: of a state dict.
_STAND_INS: dict[str, Callable[..., Any]] = {
    "collections.OrderedDict": collections.OrderedDict,
    "torch._utils._rebuild_tensor_v2": _tensor,
    "torch._utils._rebuild_tensor_v3": _tensor,
    "torch._utils._rebuild_parameter": _parameter,
    "torch._utils._rebuild_parameter_with_state": _parameter,
    "torch._tensor._rebuild_from_type_v2": _subclass,
}


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return _STAND_INS.get(f"{module}.{name}", _Inert)

    def persistent_load(self, pid: Any) -> Any:
        return None  # a storage: its bytes are never read


def saved_object(path: str | Path) -> Any:
    """The object a ``torch.save`` file (zip or legacy format) holds, rebuilt without torch: every
    tensor a :class:`SavedTensor` (its shape), dicts, lists and tuples as they are, any other
    global an inert stand-in. ``None`` when the file cannot be read so (no torch file, a truncated
    or foreign pickle): the job that loads it with torch says why."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                name = next((n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
                return None if name is None else _InertUnpickler(io.BytesIO(archive.read(name))).load()
        with open(path, "rb") as handle:
            for _ in range(_LEGACY_PICKLES - 1):  # magic number, protocol, system information
                _InertUnpickler(handle).load()
            return _InertUnpickler(handle).load()
    except Exception:  # unpickling foreign bytes raises many types; the plan then checks nothing here
        return None
