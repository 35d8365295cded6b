"""Which inference jobs share one decode of their images (``inference.models_per_decode``).

By default every (dataset, model, shift) is an ``infer`` job that decodes and shifts the images
itself, so four models of a dataset decode each image four times. With ``models_per_decode``
above 1, the models the pipeline runs on a dataset are one *group*: per shift that runs no model
(clean, a corruption, a published shift set) one job, ``infer_models_<dataset>``, writes every
model's logits, decoding and shifting each batch once for up to ``models_per_decode`` models
held together (:func:`classwise.steps.models.infer_group_step`). Attacks (whose images depend on
the model) and shifts split into shards keep their per-model jobs.

A group job's parameters are every model's, so adding or changing a model runs the job again:
it then takes back the files of its own copies that are up to date
(``logits_groups/<dataset>/<shift>/<model>/``, with the record of what each was made from:
:mod:`classwise.outputs.kept`, the shift batches' bookkeeping too) and computes only the others. Torch-free: the workflow decides
the groups while it builds the DAG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from classwise.models.spec import ModelSpec
    from classwise.shifts.kinds import ShiftSpec

__all__ = ["DecodeGroup", "decode_groups"]


@dataclass(frozen=True)
class DecodeGroup:
    """The models of one dataset whose inference shares one decode on each of ``shifts``."""

    dataset: str
    models: tuple[str, ...]
    shifts: tuple[str, ...]

    @property
    def rule(self) -> str:
        """The name of its rule (one rule per dataset: a rule's outputs are fixed, and they are
        this dataset's models' logits)."""
        return f"infer_models_{self.dataset}"


def decode_groups(
    models: Mapping[str, Sequence[str]],
    shifts: Mapping[str, Sequence[str]],
    *,
    specs: Mapping[str, ModelSpec],
    shift_specs: Mapping[str, ShiftSpec],
    shards: Mapping[str, int],
    models_per_decode: int,
) -> dict[str, DecodeGroup]:
    """Dataset -> its group: the models of ``models[dataset]`` the pipeline runs (not a file of
    predictions), on the shifts of ``shifts[dataset]`` that run no model and are one job (not
    split into shards). A dataset with fewer than two such models or no such shift has none, and
    ``models_per_decode`` 1 (the default) makes none."""
    from classwise.models.sources import model_source

    if models_per_decode < 2:
        return {}
    groups: dict[str, DecodeGroup] = {}
    for dataset, names in models.items():
        run = tuple(name for name in names if model_source(specs[name]).cached_by == "infer")
        shared = tuple(
            shift for shift in shifts.get(dataset, ()) if not shift_specs[shift].uses_a_model and shards.get(shift, 1) == 1
        )
        if len(run) >= 2 and shared:
            groups[dataset] = DecodeGroup(dataset, run, shared)
    return groups
