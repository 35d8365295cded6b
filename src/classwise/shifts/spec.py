"""Distribution shifts as named, JSON-serialisable specifications, expanded from the config.

A shift's specification (:class:`ShiftSpec`) and each kind's parameters are defined by the kinds
(:mod:`classwise.shifts.kinds`, one module each); this module expands a config's ``shifts:``
section through them, says into how many jobs each shift's inference is split, draws the
samples an expensive attack runs on, and names the parameter rule ``infer`` gets of a shift.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from classwise.errors import InputError, check_count
from classwise.shifts.attack_settings import (
    AUTOATTACK_MIN_CLASSES,
    AUTOATTACK_VERSIONS,
    PGD_DEFAULTS,
    AutoAttackSettings,
    PgdSettings,
)
from classwise.shifts.kinds import KINDS, Entry, ShiftSpec
from classwise.shifts.kinds.autoattack import autoattack_spec
from classwise.shifts.kinds.clean import clean_spec
from classwise.shifts.kinds.corruption import corruption_spec
from classwise.shifts.kinds.pgd import PGD_NORMS, pgd_spec
from classwise.shifts.kinds.transfer import transfer_spec

__all__ = [
    "ADVERSARIAL_KINDS",
    "AUTOATTACK_MIN_CLASSES",
    "AUTOATTACK_VERSIONS",
    "PGD_DEFAULTS",
    "PGD_NORMS",
    "SHIFT_KINDS",
    "AutoAttackSettings",
    "PgdSettings",
    "ShiftSpec",
    "autoattack_spec",
    "check_shards",
    "clean_spec",
    "corruption_spec",
    "expand_shifts",
    "infer_parameter",
    "pgd_spec",
    "shard_counts",
    "stratified_subset",
    "transfer_spec",
]

SHIFT_KINDS: tuple[str, ...] = tuple(KINDS)
#: The shift kinds that attack the model (gradient or query attacks on its own outputs), read
#: by :attr:`ShiftSpec.adversarial`: a kind with ``attacks_the_model`` joins the robust-fairness
#: tables. ``transfer`` is not one: its images attack another model, and its robust accuracies
#: have their own table (the transfer matrix, :func:`classwise.robustness.transfer.transfer_matrix`).
ADVERSARIAL_KINDS: frozenset[str] = frozenset(name for name, kind in KINDS.items() if kind.attacks_the_model)


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
    is an inline PGD entry) in the listed order: the order of the kinds' registry
    (:data:`classwise.shifts.kinds.KINDS`), each kind expanding its own keys. That ``source``
    names a model is checked by :func:`classwise.pipeline.plan.check_runs`. An entry's ``shards``
    (how many jobs its inference is split into) is no part of the shift: :func:`shard_counts` reads it.
    """
    result: dict[str, ShiftSpec] = {}
    for entry in _entries(_section(cfg)):
        for spec in entry.shifts:
            if spec.name in result:
                raise InputError(f"two shifts are both named {spec.name!r}; remove the duplicate", field="shifts")
            result[spec.name] = spec
    return result


def check_shards(value: Any, field_name: str) -> int:
    """``value`` as a shard count: an integer ``>= 1`` (``1``: one job, unsharded)."""
    return check_count(value, field_name, meaning="the number of jobs")


def shard_counts(cfg: Mapping[str, Any], names: list[str] | None = None, *, default: int = 1) -> dict[str, int]:
    """How many jobs (shards, :mod:`classwise.inference.sharding`) the inference of each shift is split
    into: an entry's ``shards`` for the shifts of a ``pgd``, ``pgd_targeted`` (every target),
    ``autoattack`` or ``transfer`` entry that sets it, ``default`` (the config's
    ``inference.shards``) for every other shift of ``names`` (default: those of ``cfg``), published
    shift sets included. ``cfg`` is the ``shifts`` section or a mapping holding it; it must pass
    :func:`expand_shifts`. A bad count raises :class:`InputError` naming the field."""
    entries = _entries(_section(cfg))
    shifts = [spec.name for entry in entries for spec in entry.shifts] if names is None else names
    counts = {name: check_shards(default, "inference.shards") for name in shifts}
    for prefix, entry, entry_specs in entries:
        if entry.get("shards") is None:
            continue
        count = check_shards(entry["shards"], f"{prefix}.shards")
        counts.update({spec.name: count for spec in entry_specs if spec.name in counts})
    return counts


def _section(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``shifts`` section of ``cfg``: ``cfg["shifts"]`` when ``cfg`` holds it (a whole config
    or ``{"shifts": section}``), else ``cfg`` itself. Unwrapped once: a ``shifts`` key inside the
    section is an unknown key there (:func:`_entries`), never a second wrapper."""
    if not isinstance(cfg, Mapping):
        raise InputError(f"expected a mapping, got {type(cfg).__name__}", field="shifts")
    return cfg["shifts"] if "shifts" in cfg and isinstance(cfg["shifts"], Mapping) else cfg


def _entries(section: Mapping[str, Any]) -> list[Entry]:
    """Each entry of a ``shifts`` section (the section itself, :func:`_section`) with its shifts,
    checked, kind by kind in the registry's order: the one place that maps entries to shift
    names, for :func:`expand_shifts` and :func:`shard_counts`."""
    known_keys = {key for kind in KINDS.values() for key in kind.config_keys}
    unknown = sorted(set(section) - known_keys)
    if unknown:
        raise InputError(f"unknown key(s) {unknown}; expected some of {sorted(known_keys)}", field=f"shifts.{unknown[0]}")
    entries: list[Entry] = []
    earlier: dict[str, ShiftSpec] = {}
    for kind in KINDS.values():
        for entry in kind.expand(section, earlier):
            entries.append(entry)
            earlier.update((spec.name, spec) for spec in entry.shifts)
    return entries


def infer_parameter(spec: ShiftSpec, source_model: Mapping[str, Any] | None) -> dict[str, Any]:
    """What rule ``infer`` gets of its shift, in one parameter: the spec's JSON form and, for a
    shift crafted on another model (:attr:`ShiftSpec.source_model`), that model's config under
    ``source_model``. One parameter, so that adding transfer attacks changed no other shift's
    parameters (their cached inference does not rerun); a parameter of its own now would rerun
    the cached transfer attacks, so it stays packed (``scripts/infer.py`` unpacks it)."""
    json_form = spec.to_json()
    return json_form if source_model is None else {**json_form, "source_model": source_model}
