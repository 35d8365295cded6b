"""What a job that feeds several models from one decode needs to know (``infer_models_<dataset>``,
:func:`classwise.steps.models.infer_group_step`): which of its models' logits files are still up
to date, and in which batches to hold the models (those of one decoding together, at most
``models_per_decode`` at once). Which models form a group is the workflow's:
:mod:`classwise.pipeline.decode_groups`.

A group keeps its own copy of each file it made, in a folder of its own (one per dataset and
shift), beside a record of what each was made from (:data:`RECORD`). Snakemake removes a job's
outputs before it runs and after it fails, so those are never trusted; the group's copies are
written only by the group (so no other rule's file is taken for one of them) and recorded only
once complete.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "RECORD",
    "fingerprint",
    "prune_group",
    "read_group_record",
    "share_file",
    "stale_models",
    "take_batches",
    "write_group_record",
]

RECORD = "_record.json"
"""The record's name in a group's folder (a model's name begins with a letter or digit, so no
model's file is named so)."""

T = TypeVar("T")
K = TypeVar("K")


def fingerprint(parameters: Mapping[str, Any]) -> str:
    """The sha256 of ``parameters`` as canonical JSON (keys sorted): what one model's logits were
    made from (its entry, its weights, the dataset, the shift, the seed, the batch size, the
    device); a file whose recorded fingerprint differs is stale."""
    text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_group_record(path: str | Path) -> dict[str, str]:
    """Model -> the fingerprint its logits were made from, as the group's record says; empty when
    there is no record or it is unreadable (then every file is recomputed: never trusted blind)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        return {str(name): str(value) for name, value in record["fingerprints"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_group_record(path: str | Path, dataset: str, shift: str, fingerprints: Mapping[str, str]) -> None:
    """The group's record of ``shift`` on ``dataset``: model -> the fingerprint its logits file
    was made from (:func:`read_group_record` reads it), written atomically."""
    from classwise.atomic import write_json

    write_json(path, {"dataset": dataset, "shift": shift, "fingerprints": dict(sorted(fingerprints.items()))})


def share_file(source: str | Path, target: str | Path) -> None:
    """``target`` the same file as ``source``: a hard link (no second copy of the bytes), or a
    copy where the file system refuses links; put in place atomically, replacing ``target``."""
    import shutil

    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    try:
        os.link(source, temporary)
    except OSError:
        shutil.copy2(source, temporary)
    os.replace(temporary, target)


def prune_group(folder: str | Path, models: Sequence[str]) -> None:
    """Remove from a group's folder the files of models that are no longer in the group."""
    folder = Path(folder)
    keep = {f"{model}{suffix}" for model in models for suffix in (".npz", ".json")} | {RECORD}
    for path in folder.glob("*"):
        if path.is_file() and path.name not in keep:  # a model taken out, or a killed job's temporary file
            path.unlink()


def stale_models(
    outputs: Mapping[str, Sequence[str | Path]],
    fingerprints: Mapping[str, str],
    recorded: Mapping[str, str],
    inputs: Mapping[str, Iterable[str | Path]],
) -> dict[str, str]:
    """Model -> why its logits must be computed: a file of ``outputs[model]`` (the group's copies
    of its logits and sidecar) missing, its fingerprint not the recorded one, or one of
    ``inputs[model]`` newer than its oldest file (Snakemake's own rule). The models not named are
    up to date and are kept."""
    reasons: dict[str, str] = {}
    for model, paths in outputs.items():
        files = [Path(path) for path in paths]
        missing = [path.name for path in files if not path.exists()]
        if missing:
            reasons[model] = f"no {', '.join(missing)}"
            continue
        if recorded.get(model) != fingerprints[model]:
            reasons[model] = "made from other parameters" if model in recorded else "not in the group's record"
            continue
        made = min(path.stat().st_mtime for path in files)
        newer = [str(path) for path in map(Path, inputs.get(model, ())) if path.exists() and path.stat().st_mtime > made]
        if newer:
            reasons[model] = f"{newer[0]} is newer"
    return reasons


def take_batches(items: Iterable[T], key: Callable[[T], K], size: int) -> Iterable[list[T]]:
    """``items`` in batches of equal ``key`` (the models one decode can feed: the same decoding,
    :attr:`classwise.models.data_config.DataConfig.decoding`), each of at most ``size`` items, holding at most ``size`` items at once: when the
    items held reach ``size``, the largest batch (the first of equal ones) is given out; at the
    end the rest, in the order their keys came. Every item is given out once."""
    held: dict[Any, list[T]] = {}
    count = 0
    for item in items:
        held.setdefault(key(item), []).append(item)
        count += 1
        if count >= size:
            largest = max(held, key=lambda k: len(held[k]))  # max keeps the first of equal ones
            batch = held.pop(largest)
            count -= len(batch)
            yield batch
    yield from held.values()
