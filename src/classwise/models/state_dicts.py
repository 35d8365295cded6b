"""Reading weight files (``.safetensors`` or torch pickles) and fitting them to a model, with
errors that name the file, the parameter and both shapes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from classwise.errors import InputError
from classwise.models.pickled import pickled_model_class
from classwise.models.weight_shapes import WRAPPER_KEYS, strip_prefixes, unwrap_state_dict

__all__ = ["check_fits", "load_into", "read_marked_payload", "read_state_dict", "runtime_load_error", "unreadable_torch_file"]

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def unreadable_torch_file(exc: BaseException, source: Path, *, what: str, expected: str, instead: str) -> InputError:
    """The :class:`InputError` for a ``torch.load(..., weights_only=True)`` failure on ``source``
    (the file a config's ``path`` names): a pickled whole model gets one line saying what to save
    ``instead``; anything else torch's first line, without its terminal colour codes."""
    model_class = pickled_model_class(source)
    if model_class is not None:
        return InputError(
            f"holds a whole model saved with torch.save(model) ({model_class}), not {expected}; {instead}",
            path=source,
            field="path",
        )
    text = _ANSI_ESCAPE.sub("", str(exc))
    first = text.splitlines()[0].strip() if text else ""
    return InputError(f"cannot read {what} ({type(exc).__name__}: {first})", path=source)


def read_marked_payload(
    path: str | Path,
    *,
    format_marker: str,
    version: int,
    required: tuple[str, ...],
    name: str,
    short: str,
    rule: str | None,
    instead: str | None = None,
    mmap: bool = False,
) -> dict[str, Any]:
    """A ``torch.save`` dict classwise wrote (read on the CPU with ``weights_only=True``), checked
    to carry ``format_marker``, ``version`` and every key in ``required``. Errors name the file
    and call it ``name`` (``short`` where it is read); a missing file points at the ``rule``
    that makes it (``None``: a file the user gives), an unreadable one says what to save
    ``instead`` (default: rerun the rule)."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{name} does not exist" + (f" (run the {rule} rule)" if rule else ""), path=source)
    try:
        payload = torch.load(str(source), map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as exc:  # torch raises many types for corrupt or foreign files
        raise unreadable_torch_file(
            exc, source, what=short, expected=f"a {name}", instead=instead or f"rerun the {rule} rule"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != format_marker:
        raise InputError(f"not a {name} (format is not {format_marker!r})", path=source, field="format")
    if payload.get("version") != version:
        raise InputError(f"unsupported version {payload.get('version')!r}; expected {version}", path=source, field="version")
    for key in required:
        if key not in payload:
            raise InputError(f"{short} lacks this entry", path=source, field=key)
    return payload


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of a weights file: safetensors, or a ``torch.save`` of a state dict
    (possibly nested under ``state_dict``/``model``/... and prefixed with ``module.``).

    Read with ``weights_only=True`` (no arbitrary code). Unreadable files raise :class:`InputError`.
    """
    source = Path(path)
    if not source.is_file():
        raise InputError("weights file does not exist", path=source)
    try:
        if source.suffix == ".safetensors":
            from safetensors.torch import load_file

            payload: Any = load_file(str(source), device="cpu")
        else:
            payload = torch.load(str(source), map_location="cpu", weights_only=True)
    except Exception as exc:  # safetensors and torch raise many types for foreign files
        raise unreadable_torch_file(
            exc,
            source,
            what="weights",
            expected="a state dict",
            instead="save the weights with torch.save(model.state_dict(), PATH) and point path at that file",
        ) from None
    payload = unwrap_state_dict(payload, lambda value: isinstance(value, torch.Tensor))
    if not isinstance(payload, Mapping) or not all(isinstance(v, torch.Tensor) for v in payload.values()):
        raise InputError(
            f"expected a state dict (parameter name -> tensor), possibly under one of {list(WRAPPER_KEYS)}",
            path=source,
        )
    return strip_prefixes(payload)


def check_fits(model: nn.Module, state: object, source: str | Path, *, what: str) -> None:
    """:class:`InputError` unless ``state`` is a mapping with exactly ``model``'s keys, each a
    tensor of the same shape."""
    if not isinstance(state, Mapping):
        raise InputError("state_dict is not a mapping", path=source, field="state_dict")
    expected = model.state_dict()
    missing = [key for key in expected if key not in state]
    unexpected = [key for key in state if key not in expected]
    if missing or unexpected:
        raise InputError(
            f"weights do not fit {what}: missing {missing[:5]}{' ...' if len(missing) > 5 else ''}, "
            f"unexpected {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''}",
            path=source,
            field=f"state_dict.{(missing or unexpected)[0]}",
        )
    for key, reference in expected.items():
        value = state[key]
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        if shape != tuple(reference.shape):
            raise InputError(
                f"parameter {key!r} has shape {shape} but {what} expects "
                f"{tuple(reference.shape)} (wrong architecture or num_classes?)",
                path=source,
                field=f"state_dict.{key}",
            )


def load_into(model: nn.Module, path: str | Path, *, what: str) -> nn.Module:
    """Read ``path``, check it fits ``model`` (:func:`check_fits`) and load it strictly."""
    state = read_state_dict(path)
    check_fits(model, state, path, what=what)
    model.load_state_dict(state)
    return model


_SIZE_MISMATCH = re.compile(
    r"size mismatch for ([^:]+): copying a param with shape torch\.Size\(\[([^\]]*)\]\) from checkpoint, "
    r"the shape in current model is torch\.Size\(\[([^\]]*)\]\)"
)
_MISSING = re.compile(r'Missing key\(s\) in state_dict: "([^"]+)"')
_UNEXPECTED = re.compile(r'Unexpected key\(s\) in state_dict: "([^"]+)"')


def runtime_load_error(exc: BaseException, source: str | Path, *, what: str) -> InputError:
    """Turn a ``load_state_dict`` ``RuntimeError`` (raised inside a library's loader) into an
    :class:`InputError` naming the file, the first offending parameter and both shapes."""
    text = str(exc)
    match = _SIZE_MISMATCH.search(text)
    if match:
        key, got, want = match.groups()
        return InputError(
            f"parameter {key!r} has shape ({got}) but {what} expects ({want}) (wrong architecture or num_classes?)",
            path=source,
            field=f"state_dict.{key}",
        )
    for pattern, label in ((_MISSING, "missing"), (_UNEXPECTED, "unexpected")):
        match = pattern.search(text)
        if match:
            return InputError(
                f"weights do not fit {what}: {label} parameter {match.group(1)!r}",
                path=source,
                field=f"state_dict.{match.group(1)}",
            )
    first = text.splitlines()[0] if text else ""
    return InputError(f"weights do not fit {what} ({type(exc).__name__}: {first})", path=source)
