"""The hyper-parameters of one training run (:class:`Hyperparameters`): epochs, learning rate,
batch size, weight decay and seed, as a ``source: train`` entry gives them.

Torch-free: the workflow reads the defaults of a ``source: train`` entry from here while it
builds its DAG (:data:`classwise.models.sources.train.TRAINING_DEFAULTS`), and the train step
makes the record from the entry before it imports torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from classwise.errors import InputError, check_count

__all__ = ["Hyperparameters"]


@dataclass(frozen=True)
class Hyperparameters:
    """One training run: ``epochs`` passes over the set (``>= 0``) in mini-batches of
    ``batch_size`` (``>= 1``), learning rate ``lr`` and ``weight_decay`` (both ``>= 0``), and the
    ``seed`` of the shuffling and of every other draw. Checked when made: an :class:`InputError`
    names the bad field. The defaults are those of a ``source: train`` entry."""

    epochs: int = 10
    lr: float = 0.01
    batch_size: int = 64
    weight_decay: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        # normalised as well as checked (a numpy integer): to_dict's record is written as JSON
        object.__setattr__(self, "epochs", check_count(self.epochs, "epochs", minimum=0))
        object.__setattr__(self, "batch_size", check_count(self.batch_size, "batch_size"))
        for name, number in (("lr", self.lr), ("weight_decay", self.weight_decay)):
            if isinstance(number, bool) or not isinstance(number, (int, float)) or number < 0:
                raise InputError(f"expected a number >= 0, got {number!r}", field=name)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> Hyperparameters:
        """A ``source: train`` entry's, the defaults for those it leaves out."""
        default = cls()
        return cls(
            epochs=int(entry.get("epochs", default.epochs)),
            lr=float(entry.get("lr", default.lr)),
            batch_size=int(entry.get("batch_size", default.batch_size)),
            weight_decay=float(entry.get("weight_decay", default.weight_decay)),
            seed=int(entry.get("seed", default.seed)),
        )

    def to_dict(self) -> dict[str, Any]:
        """``{epochs, lr, batch_size, weight_decay, seed}``, in that order."""
        return asdict(self)
