"""What every shift kind answers (:class:`ShiftKind`), and the specification of one shift
(:class:`ShiftSpec`), which asks its kind.

A kind's questions fall in two groups. The workflow asks the first at DAG-build time, so they
import no torch: the shifts of a config entry, checked (:meth:`~ShiftKind.expand`), and what a
shift is (paired with clean by sample id, restricted to a class subset, an attack on the model,
crafted on another model, a published set, needing images, fitting a dataset's classes). The
jobs ask the rest, which import torch when called: which images the shift evaluates
(:meth:`~ShiftKind.evaluation_images`) and how it makes one batch of them
(:meth:`~ShiftKind.shifted_batch`).

:data:`KINDS` is the registry, kind name -> kind, in the order the ``shifts:`` section expands;
:mod:`classwise.shifts.kinds` fills it (one line per kind).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from classwise.errors import InputError, check_count

if TYPE_CHECKING:
    import torch
    from torch import nn

#: Kind name -> kind, in the order the ``shifts:`` section expands (filled by
#: :mod:`classwise.shifts.kinds`, which every import of this module runs first).
KINDS: dict[str, ShiftKind] = {}


def shift_kind(name: Any) -> ShiftKind:
    """The kind named ``name``; :class:`InputError` naming the known kinds otherwise."""
    if not isinstance(name, str) or name not in KINDS:
        raise InputError(f"unknown shift kind {name!r}; expected one of {list(KINDS)}", field="kind")
    return KINDS[name]


@dataclass(frozen=True)
class ShiftSpec:
    """One evaluation condition: a name, a kind (:data:`KINDS`) and the kind's parameters. Its
    JSON form ``{"name", "kind", "params"}`` is what the logits sidecars and the rules' parameters
    hold; what the shift is (paired, adversarial, ...) its kind answers.

    The parameters of each kind are described in its module (:mod:`classwise.shifts.kinds`):
    ``clean`` has none; ``corruption`` ``corruption`` and ``severity``; ``pgd`` ``norm``, ``eps``,
    ``steps``, ``step_size``, ``random_start`` and, when targeted, ``target``; ``autoattack``
    ``norm``, ``eps``, ``version``; ``transfer`` ``source`` and ``attack`` (a pgd or autoattack
    spec's JSON); ``dataset`` (a published shift set) ``family``, ``set``, ``root``, the family's
    own keys, ``paired`` and ``restricted``; ``labels`` (a shift given by a labels file, no
    images) ``family``, ``set``, ``condition``, ``labels``, ``paired`` and optionally
    ``severity``. An attack may also hold ``per_class``.
    """

    name: str
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shift_kind(self.kind)
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"shift name must be a non-empty string, got {self.name!r}", field="name")
        object.__setattr__(self, "params", dict(self.params))

    def to_json(self) -> dict[str, Any]:
        """JSON form ``{"name", "kind", "params"}`` (a dict, like the other ``to_json`` methods)."""
        return {"name": self.name, "kind": self.kind, "params": dict(self.params)}

    def to_dict(self) -> dict[str, Any]:
        """Alias of :meth:`to_json`."""
        return self.to_json()

    def canonical_json(self) -> str:
        """Canonical JSON text (sorted keys), e.g. for hashing."""
        return json.dumps(self.to_json(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, payload: Mapping[str, Any] | str) -> ShiftSpec:
        """Inverse of :meth:`to_json`; also accepts the JSON text."""
        data = json.loads(payload) if isinstance(payload, str) else payload
        if not isinstance(data, Mapping):
            raise InputError(f"expected a mapping, got {type(data).__name__}", field="shift")
        try:
            return cls(name=data["name"], kind=data["kind"], params=dict(data.get("params", {})))
        except KeyError as exc:
            raise InputError(f"shift specification lacks {exc.args[0]!r}", field=str(exc.args[0])) from None

    from_dict = from_json

    @property
    def shift_kind(self) -> ShiftKind:
        """The kind, which answers every question below."""
        return KINDS[self.kind]

    @property
    def paired(self) -> bool:
        """Whether the images are the base dataset's own samples (same sample ids): every shift
        made on the fly, and published corrupted copies."""
        return self.shift_kind.paired(self)

    @property
    def restricted(self) -> bool:
        """Whether the logits hold only a class subset's columns (ImageNet-R, ImageNet-A)."""
        return self.shift_kind.restricted(self)

    @property
    def adversarial(self) -> bool:
        """Whether the shift is an untargeted attack on the model (PGD, AutoAttack): what the
        robust-fairness tables compare with clean."""
        return self.shift_kind.adversarial(self)

    @property
    def adversarial_images(self) -> bool:
        """Whether the images are adversarial examples of an untargeted attack: on the model
        itself (:attr:`adversarial`: PGD, AutoAttack) or crafted on another model (``transfer``).
        The shifts whose confusion matrix averaged over models is Figure 4 of
        Medi et al., 2024: which classes the attack pushes samples into."""
        return self.shift_kind.adversarial_images(self)

    @property
    def target(self) -> int | None:
        """The class every sample is attacked towards (a targeted attack), else ``None``."""
        return self.shift_kind.target(self)

    @property
    def source_model(self) -> str | None:
        """The model whose attack images the shift feeds the evaluated model (``transfer``), else ``None``."""
        return self.shift_kind.source_model(self)

    @property
    def uses_a_model(self) -> bool:
        """Whether making its images runs a model (an attack on the model evaluated or on a source
        model): a job makes them beside the model; the images of the others are made on the CPU
        ahead of the model, once for every model that takes the same images."""
        return self.shift_kind.uses_a_model(self)

    @property
    def shift_set(self) -> str | None:
        """The ``datasets.<name>.shift_sets`` key of a published shift set (images read from its
        files, not made from the dataset's), else ``None``."""
        return self.shift_kind.shift_set(self)

    @property
    def needs_images(self) -> bool:
        """Whether the shift changes or replaces images (a dataset of labels alone cannot have it)."""
        return self.shift_kind.needs_images

    @property
    def corrupted_on_the_fly(self) -> bool:
        """Whether the images are the clean ones corrupted in the job (the corruption grid draws them)."""
        return self.shift_kind.corrupted_on_the_fly

    @property
    def transformed(self) -> bool:
        """Whether each image is its clean image transformed, in the full label space: what the
        transformation tests compare with clean sample by sample (a corruption made on the fly, a
        published corrupted copy such as CIFAR-10-C)."""
        return self.shift_kind.transformed(self)

    @property
    def corrupted(self) -> bool:
        """Whether the shift is a corrupted copy of the reference set, one of those the corruption
        errors average (by default the :attr:`transformed` ones; a ``labels`` shift with a severity)."""
        return self.shift_kind.corrupted(self)

    @property
    def severity_step(self) -> tuple[str, int] | None:
        """``(family, severity)`` of a shift that is one severity of a corruption family (the
        severity curves draw each family's shifts by severity), else ``None``."""
        return self.shift_kind.severity_step(self)

    @property
    def family(self) -> str:
        """The family the run's table of every number files the shift under: the corruption (or
        set) family of one severity of it, the family of a published or labels set, else the
        shift's kind (``clean``, ``pgd``, ...)."""
        step = self.severity_step
        if step is not None:
            return str(step[0])
        return str(self.params.get("family", self.kind))

    @property
    def labels_file(self) -> str | None:
        """The ``sample_id,label`` file of the shift's own samples (a ``labels`` shift), else
        ``None``: its samples are the dataset's, or a published set's."""
        return self.shift_kind.labels_file(self)

    @property
    def per_class(self) -> int | None:
        """The samples per class an expensive shift attacks (``per_class``), ``None`` for all."""
        value = self.params.get("per_class")
        return None if value is None else int(value)

    @property
    def attack(self) -> ShiftSpec:
        """The attack a shift crafts on its source model (:attr:`source_model`)."""
        if self.source_model is None:
            raise InputError(f"shift {self.name!r} ({self.kind}) is not a transfer attack", field="kind")
        return ShiftSpec.from_json(self.params["attack"])

    @property
    def corruption(self) -> str:
        return str(self.params["corruption"])

    @property
    def severity(self) -> int:
        return int(self.params["severity"])

    def misfit(self, dataset: str, classes: int) -> Misfit | None:
        """Why the shift cannot run on ``dataset`` of ``classes`` classes (None: it can)."""
        return self.shift_kind.misfit(self, dataset, classes)


class Misfit(NamedTuple):
    """Why a shift cannot run on a dataset: the message and the config field to change."""

    message: str
    field: str


class Entry(NamedTuple):
    """One entry of the ``shifts:`` section (``field``: its dotted path; ``entry``: its keys) and
    the shifts it expands into."""

    field: str
    entry: Mapping[str, Any]
    shifts: list[ShiftSpec]


@dataclass(frozen=True)
class Batch:
    """One batch of an image set: ``(N, C, H, W)`` float32 images in ``[0, 1]``, labels, sample ids."""

    images: np.ndarray
    labels: np.ndarray
    sample_ids: np.ndarray


@dataclass(frozen=True)
class Run:
    """What making a batch may use: the model evaluated (the one an attack attacks), the seed every
    draw derives from, the device, AutoAttack's line per attack, and the model a ``transfer``
    shift crafts its attack on (None for the others)."""

    model: nn.Module
    base_seed: int
    device: torch.device
    attack_log: IO[str] | None = None
    source_model: nn.Module | None = None


class ImageSources(Protocol):
    """Where a job's images come from (the workflow step implements it for its dataset)."""

    def test_split(self) -> Any:
        """The dataset's test images (an ``ImageSet`` or a lazy image-file dataset)."""
        ...

    def shift_set(self, spec: ShiftSpec) -> tuple[Any, np.ndarray | None]:
        """A published shift set's images (with the dataset's labels) and, for a set restricted to
        a class subset, the base class indices of that subset (None: the outputs are used whole)."""
        ...

    def labelled_samples(self, path: str) -> Any:
        """The samples of a shift's own labels file ``path``, in the dataset's classes (ids,
        labels and class names; no images)."""
        ...


class ShiftKind:
    """One kind of shift. The defaults describe a shift made on the fly from the dataset's own
    test images, in its full label space, that attacks nothing; a kind overrides what differs."""

    #: The ``kind`` of its specs' JSON form.
    name = ""
    #: The keys of the ``shifts:`` section this kind reads (none: its shifts come from elsewhere).
    config_keys: tuple[str, ...] = ()
    #: Whether its shifts attack the model evaluated (gradient or query attacks on its own
    #: outputs); untargeted, they are :meth:`adversarial`. A transfer attack is not one: its
    #: images attack another model.
    attacks_the_model = False
    #: Whether the shift changes or replaces images (False: a dataset of labels alone can have it).
    needs_images = True
    #: Whether the images are the clean ones corrupted in the job.
    corrupted_on_the_fly = False

    # ---------------------------------------------------------------- DAG-build time

    def expand(self, section: Mapping[str, Any], earlier: Mapping[str, ShiftSpec]) -> list[Entry]:
        """The entries of a ``shifts:`` section that this kind reads, each with its shifts,
        checked (an :class:`InputError` naming the field); ``earlier``: the shifts of the kinds
        before it in :data:`KINDS`, by name."""
        return []

    def paired(self, spec: ShiftSpec) -> bool:
        return True

    def restricted(self, spec: ShiftSpec) -> bool:
        return False

    def adversarial(self, spec: ShiftSpec) -> bool:
        return self.attacks_the_model and self.target(spec) is None

    def adversarial_images(self, spec: ShiftSpec) -> bool:
        return self.adversarial(spec)

    def target(self, spec: ShiftSpec) -> int | None:
        return None

    def source_model(self, spec: ShiftSpec) -> str | None:
        return None

    def shift_set(self, spec: ShiftSpec) -> str | None:
        return None

    def uses_a_model(self, spec: ShiftSpec) -> bool:
        return self.attacks_the_model or self.source_model(spec) is not None

    def transformed(self, spec: ShiftSpec) -> bool:
        return self.corrupted_on_the_fly

    def corrupted(self, spec: ShiftSpec) -> bool:
        return self.transformed(spec)

    def severity_step(self, spec: ShiftSpec) -> tuple[str, int] | None:
        return None

    def labels_file(self, spec: ShiftSpec) -> str | None:
        return None

    def misfit(self, spec: ShiftSpec, dataset: str, classes: int) -> Misfit | None:
        return None

    # ---------------------------------------------------------------- jobs

    def evaluation_images(self, spec: ShiftSpec, sources: ImageSources) -> tuple[Any, np.ndarray | None]:
        """The images the shift is evaluated on and the class subset its outputs are restricted
        to (None: all classes); by default the dataset's test split, whole."""
        return sources.test_split(), None

    def shifted_batch(self, spec: ShiftSpec, batch: Batch, run: Run) -> torch.Tensor:
        """The batch as the model sees it under the shift, a float32 tensor on ``run.device``; by
        default the images as they are. For a shift that runs no model (:meth:`uses_a_model`),
        inference calls it on a background thread with ``run.device`` the CPU, ahead of the
        model, and copies the images to the model's device itself."""
        import torch

        return torch.from_numpy(np.ascontiguousarray(batch.images)).to(run.device)


# ------------------------------------------------------------------------ parameter checks


def as_list(value: Any, field_name: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise InputError(f"expected a list, got {value!r}", field=field_name)
    return list(value)


def check_keys(entry: Mapping[str, Any], prefix: str, *, allowed: Iterable[str], required: tuple[str, ...]) -> None:
    """No key beyond ``allowed``, every key of ``required``."""
    allowed = set(allowed)
    extra = sorted(set(entry) - allowed)
    if extra:
        raise InputError(f"unknown key(s) {extra}; expected some of {sorted(allowed)}", field=f"{prefix}.{extra[0]}")
    for key in required:
        if key not in entry:
            raise InputError("is required", field=f"{prefix}.{key}")


def check_mapping(entry: Any, prefix: str) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {entry!r}", field=prefix)
    return entry


def number(value: Any, field_name: str, *, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a finite number, got {value!r}", field=field_name)
    if value < minimum:
        raise InputError(f"expected a number >= {minimum:g}, got {value!r}", field=field_name)
    return float(value)


def add_per_class(params: dict[str, Any], per_class: Any, field_prefix: str) -> None:
    """``per_class`` goes into the params only when set, so that a shift without it keeps the
    params (and the cached logits) it had before the option existed."""
    if per_class is None:
        return
    params["per_class"] = check_count(per_class, f"{field_prefix}.per_class")
