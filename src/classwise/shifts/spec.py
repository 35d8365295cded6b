"""Distribution shifts as named, JSON-serialisable specifications, expanded from the config."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from classwise.errors import InputError, field_path
from classwise.shifts.severity import DEFAULT_SEVERITIES, check_severity

ShiftKind = Literal["clean", "corruption", "pgd", "autoattack", "dataset", "transfer"]
SHIFT_KINDS: tuple[str, ...] = ("clean", "corruption", "pgd", "autoattack", "dataset", "transfer")
#: The shift kinds that attack the model (gradient or query attacks on its own outputs), read
#: by :attr:`ShiftSpec.adversarial`: a new attack kind joins the robust-fairness tables here.
#: ``transfer`` is not one: its images attack another model, and its robust accuracies have their
#: own table (the transfer matrix, :func:`classwise.robustness.transfer.transfer_matrix`).
ADVERSARIAL_KINDS: frozenset[str] = frozenset({"pgd", "autoattack"})
PGD_NORMS: tuple[str, ...] = ("linf", "l2")
AUTOATTACK_VERSIONS: tuple[str, ...] = ("standard", "rand")
"""As :data:`classwise.shifts.autoattack.VERSIONS` (not imported: this module must not import torch)."""
AUTOATTACK_MIN_CLASSES: dict[str, int] = {"standard": 4, "rand": 3}
"""The fewest classes each AutoAttack version's DLR losses can use (APGD-T's targeted DLR reads
the 3rd and 4th largest logits, APGD-DLR the 3rd)."""
PGD_DEFAULTS: dict[str, Any] = {"steps": 10, "random_start": True}
"""``step_size`` defaults to ``2.5 * eps / steps`` (Madry et al.) when not given."""


@dataclass(frozen=True)
class ShiftSpec:
    """One evaluation condition.

    * ``kind="clean"``: ``params == {}``.
    * ``kind="corruption"``: ``params == {"corruption": str, "severity": int}``.
    * ``kind="pgd"``: ``params == {"norm": "linf"|"l2", "eps": float, "steps": int,
      "step_size": float, "random_start": bool}``, and ``"target": int`` when targeted.
    * ``kind="autoattack"``: ``params == {"norm": "linf"|"l2", "eps": float,
      "version": "standard"|"rand"}`` (:func:`classwise.shifts.autoattack.autoattack`).

    An adversarial shift (:data:`ADVERSARIAL_KINDS`) may also hold ``"per_class": int``: its
    job attacks only that many samples of each class (:func:`stratified_subset`).
    * ``kind="transfer"``: ``params == {"source": str, "attack": <a pgd or autoattack spec's
      JSON>}``, and the attack's ``per_class`` when set: the attack crafted on model ``source``
      with the seed of the source's own attack shift, the images fed to the evaluated model.
    * ``kind="dataset"``: a published shift set, images read from its files
      (:mod:`classwise.data.shift_sets`): ``params`` hold ``family``, ``set``, ``root``, the
      family's own keys (``corruption``, ``severity``, ``variant``, ...), ``paired`` and
      ``restricted``.
    """

    name: str
    kind: ShiftKind
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in SHIFT_KINDS:
            raise InputError(f"unknown shift kind {self.kind!r}; expected one of {list(SHIFT_KINDS)}", field="kind")
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
    def paired(self) -> bool:
        """Whether the images are the base dataset's own samples (same sample ids): every shift
        made on the fly, and published corrupted copies."""
        return self.kind != "dataset" or bool(self.params.get("paired"))

    @property
    def restricted(self) -> bool:
        """Whether the logits hold only a class subset's columns (ImageNet-R, ImageNet-A)."""
        return self.kind == "dataset" and bool(self.params.get("restricted"))

    @property
    def adversarial(self) -> bool:
        """Whether the shift is an untargeted attack on the model (its kind is one of
        :data:`ADVERSARIAL_KINDS` and it has no target class): what the robust-fairness tables
        compare with clean."""
        return self.kind in ADVERSARIAL_KINDS and self.params.get("target") is None

    @property
    def adversarial_images(self) -> bool:
        """Whether the images are adversarial examples of an untargeted attack: on the model
        itself (:attr:`adversarial`: PGD, AutoAttack) or crafted on another model (``transfer``).
        The shifts whose confusion matrix averaged over models is Figure 4 of
        Medi et al., 2024: which classes the attack pushes samples into."""
        return self.adversarial or self.kind == "transfer"

    @property
    def per_class(self) -> int | None:
        """The samples per class an expensive shift attacks (``per_class``), ``None`` for all."""
        value = self.params.get("per_class")
        return None if value is None else int(value)

    @property
    def attack(self) -> ShiftSpec:
        """The attack a ``transfer`` shift crafts on its source model."""
        if self.kind != "transfer":
            raise InputError(f"shift {self.name!r} ({self.kind}) is not a transfer attack", field="kind")
        return ShiftSpec.from_json(self.params["attack"])

    @property
    def corruption(self) -> str:
        return str(self.params["corruption"])

    @property
    def severity(self) -> int:
        return int(self.params["severity"])


def clean_spec() -> ShiftSpec:
    return ShiftSpec(name="clean", kind="clean", params={})


def corruption_spec(corruption: str, severity: int) -> ShiftSpec:
    """The spec named ``{corruption}_s{severity}``; validates both."""
    from classwise.shifts.corruptions import CORRUPTIONS

    if corruption not in CORRUPTIONS:
        raise InputError(f"unknown corruption {corruption!r}; known: {sorted(CORRUPTIONS)}", field="shifts.corruptions")
    check_severity(severity, "shifts.severities")
    return ShiftSpec(
        name=f"{corruption}_s{int(severity)}",
        kind="corruption",
        params={"corruption": corruption, "severity": int(severity)},
    )


def pgd_spec(
    *,
    norm: str,
    eps: float,
    steps: int = 10,
    step_size: float | None = None,
    random_start: bool = True,
    target: int | None = None,
    per_class: int | None = None,
    field_prefix: str = "shifts.pgd",
) -> ShiftSpec:
    """The spec named ``pgd_{norm}_eps{eps:g}`` (untargeted) or ``pgd_targeted_{target}``
    (every sample attacked towards class ``target``); validates every parameter."""
    if norm not in PGD_NORMS:
        raise InputError(f"unknown norm {norm!r}; expected one of {list(PGD_NORMS)}", field=f"{field_prefix}.norm")
    eps_f = _number(eps, f"{field_prefix}.eps", minimum=0.0)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise InputError(f"expected an integer >= 0, got {steps!r}", field=f"{field_prefix}.steps")
    if step_size is None:
        step_size_f = 2.5 * eps_f / steps if steps else 0.0
    else:
        step_size_f = _number(step_size, f"{field_prefix}.step_size", minimum=0.0)
    if not isinstance(random_start, bool):
        raise InputError(f"expected true or false, got {random_start!r}", field=f"{field_prefix}.random_start")
    params: dict[str, Any] = {
        "norm": norm,
        "eps": eps_f,
        "steps": int(steps),
        "step_size": step_size_f,
        "random_start": random_start,
    }
    name = f"pgd_{norm}_eps{eps_f:g}"
    if target is not None:
        if isinstance(target, bool) or not isinstance(target, int) or target < 0:
            raise InputError(f"expected a class index >= 0, got {target!r}", field=f"{field_prefix}.targets")
        params["target"] = target
        name = f"pgd_targeted_{target}"
    _add_per_class(params, per_class, field_prefix)
    return ShiftSpec(name=name, kind="pgd", params=params)


def autoattack_spec(
    *, norm: str, eps: float, version: str = "standard", per_class: int | None = None, field_prefix: str = "shifts.autoattack"
) -> ShiftSpec:
    """The spec named ``autoattack_{norm}_eps{eps:g}`` (``standard``) or
    ``autoattack_rand_{norm}_eps{eps:g}``; validates every parameter."""
    if version not in AUTOATTACK_VERSIONS:
        raise InputError(
            f"unknown AutoAttack version {version!r}; expected one of {list(AUTOATTACK_VERSIONS)}",
            field=f"{field_prefix}.version",
        )
    if norm not in PGD_NORMS:
        raise InputError(f"AutoAttack supports the norms {list(PGD_NORMS)}, got {norm!r}", field=f"{field_prefix}.norm")
    eps_f = _number(eps, f"{field_prefix}.eps", minimum=0.0)
    params: dict[str, Any] = {"norm": norm, "eps": eps_f, "version": version}
    _add_per_class(params, per_class, field_prefix)
    infix = "" if version == "standard" else f"{version}_"
    return ShiftSpec(name=f"autoattack_{infix}{norm}_eps{eps_f:g}", kind="autoattack", params=params)


def transfer_spec(source: str, attack: ShiftSpec, *, field_prefix: str = "shifts.transfer") -> ShiftSpec:
    """The spec named ``transfer_{source}_{attack.name}``: ``attack`` (an untargeted ``pgd`` or
    ``autoattack`` spec) crafted on model ``source``, evaluated on another model. Its
    ``per_class`` is the attack's, so that it attacks the same samples."""
    if not isinstance(source, str) or not source:
        raise InputError(f"expected a model name, got {source!r}", field=f"{field_prefix}.source")
    if attack.kind not in ADVERSARIAL_KINDS or attack.params.get("target") is not None:
        raise InputError(
            f"a transfer attack crafts an untargeted pgd or autoattack shift, got {attack.name!r} ({attack.kind})",
            field=f"{field_prefix}.attack",
        )
    params: dict[str, Any] = {"source": source, "attack": attack.to_json()}
    _add_per_class(params, attack.per_class, field_prefix)
    return ShiftSpec(name=f"transfer_{source}_{attack.name}", kind="transfer", params=params)


def _add_per_class(params: dict[str, Any], per_class: Any, field_prefix: str) -> None:
    """``per_class`` goes into the params only when set, so that a shift without it keeps the
    params (and the cached logits) it had before the option existed."""
    if per_class is None:
        return
    if isinstance(per_class, bool) or not isinstance(per_class, int) or per_class < 1:
        raise InputError(f"expected an integer >= 1, got {per_class!r}", field=f"{field_prefix}.per_class")
    params["per_class"] = int(per_class)


def stratified_subset(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """The positions of ``per_class`` samples of each class (all of a class that has fewer),
    drawn uniformly without replacement from ``numpy.random.default_rng(seed)``, in ascending
    order. The same labels and seed give the same positions; every shift with the same
    ``per_class`` attacks the same samples (the workflow's seed is the config's ``seed``)."""
    labels = np.asarray(labels)
    keys = np.random.default_rng(seed).permutation(len(labels))
    order = np.lexsort((keys, labels))  # by class, then by the random key
    sorted_labels = labels[order]
    first = np.searchsorted(sorted_labels, sorted_labels, side="left")
    rank = np.arange(len(labels)) - first
    return np.sort(order[rank < per_class])


def expand_shifts(cfg: Mapping[str, Any]) -> dict[str, ShiftSpec]:
    """All shifts of a config ``shifts`` section, by name, in a fixed order.

    ``cfg`` is either the section itself or a mapping holding it under ``"shifts"``. The order is
    ``clean`` (when ``clean: true``, the default), then ``{corruption}_s{severity}`` for each
    corruption in the listed order and, within it, each severity in the listed order
    (default ``[3]``), then ``pgd_{norm}_eps{eps:g}`` for each PGD entry in the listed order,
    then ``pgd_targeted_{t}`` for each target class of ``pgd_targeted`` (one attack per target),
    then each ``autoattack`` entry in the listed order, then each ``transfer`` entry
    (``{source, attack}``: ``attack`` names a ``pgd`` or ``autoattack`` shift of this section, or
    is an inline PGD entry) in the listed order. That ``source`` names a model is checked by
    :func:`classwise.pipeline.plan.check_runs`. An entry's ``shards`` (how many jobs its
    inference is split into) is no part of the shift: :func:`shard_counts` reads it.
    """
    if not isinstance(cfg, Mapping):
        raise InputError(f"expected a mapping, got {type(cfg).__name__}", field="shifts")
    section = cfg["shifts"] if "shifts" in cfg and isinstance(cfg["shifts"], Mapping) else cfg
    known_keys = {"clean", "corruptions", "severities", "pgd", "pgd_targeted", "autoattack", "transfer"}
    unknown = sorted(set(section) - known_keys)
    if unknown:
        raise InputError(f"unknown key(s) {unknown}; expected some of {sorted(known_keys)}", field=f"shifts.{unknown[0]}")

    specs: list[ShiftSpec] = []
    clean = section.get("clean", True)
    if not isinstance(clean, bool):
        raise InputError(f"expected true or false, got {clean!r}", field="shifts.clean")
    if clean:
        specs.append(clean_spec())

    corruptions = _list(section.get("corruptions", []) or [], "shifts.corruptions")
    severities = _list(section.get("severities", list(DEFAULT_SEVERITIES)), "shifts.severities")
    for i, severity in enumerate(severities):
        check_severity(severity, field_path("shifts.severities", i))
    from classwise.shifts.corruptions import CORRUPTIONS

    for i, corruption in enumerate(corruptions):
        if not isinstance(corruption, str) or corruption not in CORRUPTIONS:
            raise InputError(
                f"unknown corruption {corruption!r}; known: {sorted(CORRUPTIONS)}",
                field=field_path("shifts.corruptions", i),
            )
        for severity in severities:
            specs.append(corruption_spec(corruption, severity))

    for _, _, entry_specs in _attack_entries(section):
        specs += entry_specs

    result: dict[str, ShiftSpec] = {}
    for spec in specs:
        if spec.name in result:
            raise InputError(f"two shifts are both named {spec.name!r}; remove the duplicate", field="shifts")
        result[spec.name] = spec
    return result


def check_shards(value: Any, field_name: str) -> int:
    """``value`` as a shard count: an integer ``>= 1`` (``1``: one job, unsharded)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"expected an integer >= 1 (the number of jobs), got {value!r}", field=field_name)
    return int(value)


def shard_counts(cfg: Mapping[str, Any], names: list[str] | None = None, *, default: int = 1) -> dict[str, int]:
    """How many jobs (shards, :mod:`classwise.sharding`) the inference of each shift is split
    into: an entry's ``shards`` for the shifts of a ``pgd``, ``pgd_targeted`` (every target),
    ``autoattack`` or ``transfer`` entry that sets it, ``default`` (the config's
    ``inference.shards``) for every other shift of ``names`` (default: those of ``cfg``), published
    shift sets included. ``cfg`` is the ``shifts`` section or a mapping holding it; it must pass
    :func:`expand_shifts`. A bad count raises :class:`InputError` naming the field."""
    section = cfg["shifts"] if "shifts" in cfg and isinstance(cfg["shifts"], Mapping) else cfg
    shifts = list(expand_shifts(section)) if names is None else names
    counts = {name: check_shards(default, "inference.shards") for name in shifts}
    for prefix, entry, entry_specs in _attack_entries(section):
        if entry.get("shards") is None:
            continue
        count = check_shards(entry["shards"], f"{prefix}.shards")
        counts.update({spec.name: count for spec in entry_specs if spec.name in counts})
    return counts


def _attack_entries(section: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], list[ShiftSpec]]]:
    """Each attack entry of a ``shifts`` section (``pgd``, ``pgd_targeted``, ``autoattack``,
    ``transfer``, in that order) as ``(field, entry, its shifts)``, checked: the one place that
    maps entries to shift names, for :func:`expand_shifts` and :func:`shard_counts`."""
    attacks: dict[str, ShiftSpec] = {}

    def found(prefix: str, entry: Mapping[str, Any], specs: list[ShiftSpec]) -> tuple[str, Mapping[str, Any], list[ShiftSpec]]:
        attacks.update({spec.name: spec for spec in specs if spec.adversarial})
        return prefix, entry, specs

    for i, entry in enumerate(_list(section.get("pgd", []) or [], "shifts.pgd")):
        prefix = field_path("shifts.pgd", i)
        yield found(prefix, entry, [_pgd_entry(entry, prefix)])

    targeted = section.get("pgd_targeted")
    if targeted is not None:
        prefix = "shifts.pgd_targeted"
        _check_pgd_keys(targeted, prefix, extra_keys=("targets",))
        targets = _list(targeted["targets"], f"{prefix}.targets")
        yield found(prefix, targeted, [_pgd_entry(targeted, prefix, target=target) for target in targets])

    for i, entry in enumerate(_list(section.get("autoattack", []) or [], "shifts.autoattack")):
        prefix = field_path("shifts.autoattack", i)
        if not isinstance(entry, Mapping):
            raise InputError(f"expected a mapping, got {entry!r}", field=prefix)
        _check_keys(entry, prefix, allowed={"norm", "eps", "version", "per_class", "shards"}, required=("norm", "eps"))
        spec = autoattack_spec(
            norm=entry["norm"],
            eps=entry["eps"],
            version=entry.get("version", "standard"),
            per_class=entry.get("per_class"),
            field_prefix=prefix,
        )
        yield found(prefix, entry, [spec])

    for i, entry in enumerate(_list(section.get("transfer", []) or [], "shifts.transfer")):
        prefix = field_path("shifts.transfer", i)
        yield found(prefix, entry, [_transfer_entry(entry, prefix, attacks)])


def _check_pgd_keys(entry: Any, prefix: str, *, extra_keys: tuple[str, ...] = (), inline: bool = False) -> None:
    """``inline``: a transfer entry's own PGD attack, whose ``shards`` is the transfer entry's."""
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {entry!r}", field=prefix)
    allowed = {"norm", "eps", "steps", "step_size", "random_start", "per_class", *extra_keys}
    if not inline:
        allowed.add("shards")
    _check_keys(entry, prefix, allowed=allowed, required=("norm", "eps", *extra_keys))


def _check_keys(entry: Mapping[str, Any], prefix: str, *, allowed: set[str], required: tuple[str, ...]) -> None:
    extra = sorted(set(entry) - allowed)
    if extra:
        raise InputError(f"unknown key(s) {extra}; expected some of {sorted(allowed)}", field=f"{prefix}.{extra[0]}")
    for key in required:
        if key not in entry:
            raise InputError("is required", field=f"{prefix}.{key}")


def _pgd_entry(entry: Any, prefix: str, *, target: int | None = None, inline: bool = False) -> ShiftSpec:
    """One PGD shift from a config entry (``shifts.pgd[i]``, or ``shifts.pgd_targeted`` and a target)."""
    if target is None:
        _check_pgd_keys(entry, prefix, inline=inline)
    return pgd_spec(
        norm=entry["norm"],
        eps=entry["eps"],
        steps=entry.get("steps", PGD_DEFAULTS["steps"]),
        step_size=entry.get("step_size"),
        random_start=entry.get("random_start", PGD_DEFAULTS["random_start"]),
        target=target,
        per_class=entry.get("per_class"),
        field_prefix=prefix,
    )


def _transfer_entry(entry: Any, prefix: str, attacks: Mapping[str, ShiftSpec]) -> ShiftSpec:
    """One transfer shift from a config entry ``{source, attack}``."""
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {entry!r}", field=prefix)
    _check_keys(entry, prefix, allowed={"source", "attack", "shards"}, required=("source", "attack"))
    attack = entry["attack"]
    if isinstance(attack, Mapping):
        spec = _pgd_entry(attack, f"{prefix}.attack", inline=True)
    elif isinstance(attack, str) and attack in attacks:
        spec = attacks[attack]
    else:
        raise InputError(
            f"unknown attack {attack!r}; expected the name of an untargeted pgd or autoattack shift "
            f"({sorted(attacks)}) or an inline pgd entry",
            field=f"{prefix}.attack",
        )
    return transfer_spec(entry["source"], spec, field_prefix=prefix)


def _list(value: Any, field_name: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise InputError(f"expected a list, got {value!r}", field=field_name)
    return list(value)


def _number(value: Any, field_name: str, *, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"expected a finite number, got {value!r}", field=field_name)
    if value < minimum:
        raise InputError(f"expected a number >= {minimum:g}, got {value!r}", field=field_name)
    return float(value)
