"""How an inference job runs its model: the device, the precision of the arithmetic and the memory
layout of the images (the config's ``inference.device``, ``inference.precision`` and
``inference.channels_last``). Torch-free, so that the workflow checks it before any job;
:mod:`classwise.inference.stream` applies it.

``precision``: ``fp32`` (the default) runs the model as it is; ``bf16`` and ``fp16`` run it under
``torch.autocast`` with that dtype (mixed precision: matrix products and convolutions in the low
precision, reductions and the loss in float32; the logits are stored as float32). Attacks run
under the same autocast, so their gradients are those of the model at that precision.
``channels_last``: the model's weights and its input batches in channels-last memory order (4-D
tensors only), which convolutions on GPUs run faster.

The rule's ``device`` parameter carries the three: the device string alone while precision and
layout are the defaults (:meth:`Execution.parameter`), so that the cached logits of earlier runs
keep the parameters they were made with and are not rerun; the logits sidecar records precision
and layout under ``inference`` only when they are not the defaults (:meth:`Execution.sidecar`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from classwise.errors import InputError

__all__ = ["DEFAULT_EXECUTION", "PRECISIONS", "Execution"]

#: The precisions an inference job runs at; the first is the default.
PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class Execution:
    """Where and how a model runs: ``device`` (``auto``, ``cpu``, ``cuda[:N]``; resolved in the
    job by :func:`classwise.inference.stream.resolve_device`), ``precision`` (one of :data:`PRECISIONS`)
    and ``channels_last``."""

    device: str = "auto"
    precision: str = PRECISIONS[0]
    channels_last: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.device, str) or not self.device:
            raise InputError(f"expected a device name ('auto', 'cpu', 'cuda[:N]'), got {self.device!r}", field="inference.device")
        if self.precision not in PRECISIONS:
            raise InputError(f"expected one of {list(PRECISIONS)}, got {self.precision!r}", field="inference.precision")
        if not isinstance(self.channels_last, bool):
            raise InputError(f"expected true or false, got {self.channels_last!r}", field="inference.channels_last")

    @property
    def default_arithmetic(self) -> bool:
        """Whether precision and layout are the defaults (fp32, channels first)."""
        return self.precision == PRECISIONS[0] and not self.channels_last

    @classmethod
    def from_config(cls, inference: Mapping[str, Any] | None, *, source: str = "config") -> Execution:
        """From the config's ``inference:`` section; an :class:`InputError` naming ``source`` and the
        field for a bad value."""
        section = dict(inference or {})
        try:
            return cls(
                device=section.get("device", "auto"),
                precision=section.get("precision", PRECISIONS[0]),
                channels_last=section.get("channels_last", False),
            )
        except InputError as error:
            prefix = f"field '{error.field}': "
            raise InputError(str(error).removeprefix(prefix), path=source, field=error.field) from None

    def parameter(self) -> str | dict[str, Any]:
        """The rule's ``device`` parameter: the device alone with the default precision and layout
        (the parameter every earlier run has), else ``{device, precision, channels_last}``."""
        if self.default_arithmetic:
            return self.device
        return {"device": self.device, "precision": self.precision, "channels_last": self.channels_last}

    @classmethod
    def from_parameter(cls, value: str | Mapping[str, Any] | Execution) -> Execution:
        """Inverse of :meth:`parameter` (an :class:`Execution` is returned as it is)."""
        if isinstance(value, Execution):
            return value
        if isinstance(value, str):
            return cls(device=value)
        if not isinstance(value, Mapping):
            raise InputError(f"expected a device name or a mapping, got {value!r}", field="inference.device")
        unknown = sorted(set(value) - {"device", "precision", "channels_last"})
        if unknown:
            raise InputError(
                f"unknown key(s) {unknown}; expected device, precision, channels_last", field=f"inference.{unknown[0]}"
            )
        return cls(**dict(value))

    def sidecar(self) -> dict[str, Any]:
        """What the logits sidecar records of it besides ``device``: nothing with the defaults (the
        sidecars of earlier runs), else ``{"inference": {"precision", "channels_last"}}``."""
        if self.default_arithmetic:
            return {}
        return {"inference": {"precision": self.precision, "channels_last": self.channels_last}}


#: A model run as it is on the default device (CUDA when available): the defaults of every
#: inference entry point (:mod:`classwise.inference.stream`).
DEFAULT_EXECUTION = Execution()
