"""What a ``torch.save`` file holds, read from its pickle's opcodes without torch and without
unpickling anything (loading a pickle runs the code it names).

A state dict, or a classwise checkpoint, references tensor-rebuilding functions, storages and
plain containers. A whole model saved with ``torch.save(model)`` references its ``nn.Module``
classes; ``torch.load(..., weights_only=True)`` refuses it with a long message, and the workflow
needs to tell the user before any job, at DAG-build time, where torch is not imported.
"""

from __future__ import annotations

import io
import pickletools
import zipfile
from pathlib import Path
from typing import IO

__all__ = ["pickle_references", "pickled_model_class"]

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
