"""What a ``torch.save`` file holds, read without torch: its pickle's class references.

A state dict (or a classwise checkpoint) references only tensor-rebuilding functions, storages
and plain containers. A file made with ``torch.save(model)`` references the model's classes
(``torch.nn.modules...``, ``timm.models...``, ``__main__.Net``), which ``torch.load`` refuses
by default (``weights_only=True``) with a long message; reading the pickle's opcodes finds them
at DAG-build time, before any job, and in a fraction of a second.
"""

from __future__ import annotations

import io
import pickletools
import zipfile
from pathlib import Path

#: Modules whose globals a weights-only file may reference.
_PLAIN_MODULES = ("collections", "builtins", "__builtin__", "_codecs", "torch._utils", "torch", "numpy", "numpy.core.multiarray")
_STRING_OPCODES = {"SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8", "SHORT_BINSTRING", "BINSTRING", "STRING"}


def _globals_of(stream: io.BufferedIOBase) -> list[str]:
    """``module.name`` of every GLOBAL / STACK_GLOBAL opcode of one pickle."""
    found: list[str] = []
    strings: list[str] = []
    for opcode, argument, _ in pickletools.genops(stream):
        if opcode.name == "GLOBAL":
            module, name = str(argument).split(" ", 1)
            found.append(f"{module}.{name}")
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.append(f"{strings[-2]}.{strings[-1]}")
        elif opcode.name in _STRING_OPCODES:
            strings.append(str(argument))
    return found


def pickled_classes(path: str | Path) -> list[str]:
    """The classes a ``torch.save`` file references beyond tensors and plain containers (sorted,
    distinct); empty for a state dict. Files that are no pickle (safetensors) or that cannot be
    parsed give an empty list: the job that loads them reports what is wrong."""
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
                if not names:
                    return []
                with archive.open(names[0]) as member:
                    references = _globals_of(io.BufferedReader(member))  # type: ignore[arg-type]
        else:
            references = []
            with open(path, "rb") as handle:
                # The legacy format: magic number, protocol, system info, then the object.
                for _ in range(4):
                    references += _globals_of(handle)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - anything unparsable is left to the loading job
        return []
    return sorted({ref for ref in references if ref.rsplit(".", 1)[0] not in _PLAIN_MODULES})
