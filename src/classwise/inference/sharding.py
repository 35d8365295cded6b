"""One (dataset, model, shift) inference split into shards: S jobs, each on its own GPU, whose
files merge into the one cached logits file, byte for byte the file of an unsharded run.

Shard ``k`` of ``S`` (``1 <= k <= S``) covers a contiguous run of whole inference batches
(:func:`shard_range`): the evaluation set, after any ``per_class`` subset is drawn on the whole
set, is cut at multiples of ``batch_size``, so every batch holds exactly the images it holds in
an unsharded run. Every random draw of the infer step depends on the seed and the sample
(corruptions, PGD's random start) or on the seed and the batch (AutoAttack, reseeded for every
batch), never on a generator that runs across batches, so each batch's logits are those of the
unsharded run.

A shard file (``.npz``, written by :func:`save_shard`) holds the arrays of its rows and, under
``shard.json``, where it lies (its :class:`ShardPosition`: ``index``, ``count``, ``start``,
``stop``, ``samples``, ``batch_size``) and the sidecar metadata the unsharded job would write. :func:`merge_shards`
checks that the files are shards ``1..S`` of one run (same ``S``, same number of samples and
batch size, each covering exactly its range, the same metadata) and writes their rows, in order,
with :func:`classwise.logits_io.save_logits`: the same writer, arrays and sidecar as an
unsharded job. Images skipped as unreadable (``on_bad_image: skip``) are listed in shard order,
which is the order an unsharded job meets them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from classwise.errors import InputError, check_count
from classwise.logits_io import open_npz, save_logits, write_npz_deterministic

__all__ = ["Shard", "ShardFile", "ShardPosition", "load_shard", "merge_shards", "save_shard", "shard_range"]

#: The array of a shard file that holds its position and metadata, as JSON text.
SHARD_JSON = "shard.json"
#: Sidecar fields that differ between the shards of one run: the merge joins them.
_JOINED = ("skipped_images",)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based: ``1-of-3``, ``2-of-3``, ``3-of-3``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        for name in ("count", "index"):  # normalised as well as checked (a numpy integer)
            object.__setattr__(self, name, check_count(getattr(self, name), f"shard.{name}"))
        if self.index > self.count:
            raise InputError(f"shard {self.index} of {self.count} does not exist", field="shard.index")

    @property
    def name(self) -> str:
        """``{index}-of-{count}``, the stem of the shard's file."""
        return f"{self.index}-of-{self.count}"

    @classmethod
    def of(cls, value: Shard | tuple[int, int] | Sequence[int]) -> Shard:
        """A :class:`Shard` from itself or an ``(index, count)`` pair."""
        if isinstance(value, Shard):
            return value
        if isinstance(value, (str, bytes)) or len(value) != 2:
            raise InputError(f"expected (index, count), got {value!r}", field="shard")
        return cls(int(value[0]), int(value[1]))


def shard_range(n_samples: int, batch_size: int, shard: Shard | tuple[int, int]) -> tuple[int, int]:
    """The positions ``[start, stop)`` of ``shard`` among ``n_samples`` inferred in batches of
    ``batch_size``: the batches are dealt out in order, ``floor(k * B / S)`` batches before
    shard ``k + 1`` for ``B`` batches, so shard sizes differ by at most one batch (the last
    batch may be short) and a shard is empty only when there are fewer batches than shards."""
    shard = Shard.of(shard)
    batch_size = check_count(batch_size, "batch_size")
    n_samples = check_count(n_samples, "samples", minimum=0)
    n_batches = -(-n_samples // batch_size)
    first = (shard.index - 1) * n_batches // shard.count
    last = shard.index * n_batches // shard.count
    return min(first * batch_size, n_samples), min(last * batch_size, n_samples)


@dataclass(frozen=True)
class ShardPosition:
    """Where a shard's rows lie: shard ``shard`` of a set of ``samples`` samples inferred in
    batches of ``batch_size``, covering the positions ``[start, stop)`` (:func:`shard_range`
    for an inference; a file may claim others, which :func:`merge_shards` refuses)."""

    shard: Shard
    start: int
    stop: int
    samples: int
    batch_size: int

    @classmethod
    def of(cls, shard: Shard | tuple[int, int], samples: int, batch_size: int) -> ShardPosition:
        """The position of ``shard`` among ``samples`` samples inferred in batches of ``batch_size``."""
        start, stop = shard_range(samples, batch_size, shard)
        return cls(Shard.of(shard), start, stop, samples, batch_size)


@dataclass(frozen=True)
class ShardFile:
    """The rows of one shard and where they lie (:func:`load_shard`)."""

    position: ShardPosition
    logits: np.ndarray
    labels: np.ndarray
    sample_ids: np.ndarray
    class_names: np.ndarray
    class_indices: np.ndarray | None
    metadata: dict[str, Any]
    path: str


def save_shard(
    path: str | Path,
    *,
    position: ShardPosition,
    logits: np.ndarray,
    labels: np.ndarray,
    sample_ids: np.ndarray,
    class_names: np.ndarray,
    metadata: Mapping[str, Any],
    class_indices: np.ndarray | None = None,
) -> None:
    """Write one shard's rows (``logits`` float32, as the cache holds them) and its ``position``
    and sidecar metadata as one ``.npz``, atomically and deterministically. The arrays are kept in
    their own dtypes (the merge concatenates them as the unsharded job concatenates its
    batches)."""
    shard = position.shard
    record = {
        "index": shard.index,
        "count": shard.count,
        "start": position.start,
        "stop": position.stop,
        "samples": position.samples,
        "batch_size": position.batch_size,
        "metadata": dict(metadata),
    }
    arrays = {
        "logits": np.asarray(logits, dtype=np.float32),
        "labels": np.asarray(labels),
        "sample_ids": np.asarray(sample_ids),
        "class_names": np.asarray(class_names),
        SHARD_JSON: np.array([json.dumps(record, sort_keys=True, allow_nan=False)]),
    }
    if class_indices is not None:
        arrays["class_indices"] = np.asarray(class_indices, dtype=np.int64)
    write_npz_deterministic(path, arrays)


def load_shard(path: str | Path) -> ShardFile:
    """Read a shard file written by :func:`save_shard`; an :class:`InputError` names a file that is
    not one."""
    p = Path(path)
    if not p.is_file():
        raise InputError("shard file does not exist", path=p)
    with open_npz(p) as archive:
        names = set(archive.files)
        missing = sorted({"logits", "labels", "sample_ids", "class_names", SHARD_JSON} - names)
        if missing:
            raise InputError(f"not a shard file: missing {missing}", path=p, field=missing[0])
        try:
            record = json.loads(str(archive[SHARD_JSON][0]))
            position = ShardPosition(
                Shard(record["index"], record["count"]), *(int(record[key]) for key in ("start", "stop", "samples", "batch_size"))
            )
            metadata = dict(record["metadata"])
        except (ValueError, KeyError, IndexError, TypeError, InputError) as exc:
            raise InputError(f"unreadable shard record ({exc})", path=p, field=SHARD_JSON) from None
        arrays = {name: archive[name] for name in ("logits", "labels", "sample_ids", "class_names")}
        class_indices = archive["class_indices"] if "class_indices" in names else None
    start, stop = position.start, position.stop
    n = arrays["labels"].shape[0]
    if arrays["logits"].ndim != 2 or arrays["logits"].shape[0] != n or arrays["sample_ids"].shape != (n,):
        raise InputError(
            f"logits {arrays['logits'].shape}, labels ({n},) and sample_ids {arrays['sample_ids'].shape} disagree",
            path=p,
            field="logits",
        )
    # every position of the range is a row or an image skipped as unreadable: a shard that lost
    # rows otherwise would merge into a smaller set without a word
    skipped = metadata.get("skipped_images") or []
    if n + len(skipped) != stop - start:
        raise InputError(
            f"holds {n} rows and {len(skipped)} skipped images, but its range [{start}, {stop}) covers "
            f"{stop - start} samples; expected one of the two for each",
            path=p,
            field="logits",
        )
    # checked here, so that a bad shard is named rather than failing the merge's concatenation
    columns, n_names = arrays["logits"].shape[1], arrays["class_names"].size
    if arrays["class_names"].ndim != 1 or columns != n_names:
        raise InputError(
            f"logits have {columns} columns but there are {n_names} class names; expected one column per class",
            path=p,
            field="logits",
        )
    return ShardFile(position, class_indices=class_indices, metadata=metadata, path=str(p), **arrays)


def merge_shards(paths: Sequence[str | Path], logits_path: str | Path) -> int:
    """Merge the files of shards ``1..S`` of one inference (in any order) into the cached logits
    file ``logits_path`` and its sidecar, exactly as the unsharded job writes them; returns the
    number of rows.

    Raises :class:`InputError`, writing nothing, for a missing or repeated shard, shards of
    different counts, a shard that does not cover exactly its batches of the set, or shards of
    different runs (another number of samples or batch size, other sidecar metadata: another
    seed, model, shift, device or code version)."""
    if not paths:
        raise InputError("no shard files to merge", path=logits_path, field="shards")
    shards = sorted((load_shard(path) for path in paths), key=lambda s: s.position.shard.index)
    _check_complete(shards, logits_path)
    for shard in shards:
        _check_same_run(shard, shards[0])
    first = shards[0]
    filled = [s for s in shards if s.labels.shape[0]]
    if not filled:
        name = first.metadata.get("dataset", {}).get("name", "?")
        raise InputError("the evaluation set has no readable images", field=f"datasets.{name}")
    shapes = {json.dumps(s.metadata.get("preprocessing", {}).get("input_shape")) for s in filled}
    if len(shapes) > 1:
        raise InputError(f"the shards fed images of different shapes ({sorted(shapes)})", path=logits_path, field="input_shape")
    # the metadata of a shard that holds images (an empty one saw no input shape), with the
    # lists every shard contributes to joined in shard order
    metadata = dict(filled[0].metadata)
    for key in _JOINED:
        if key in metadata:
            metadata[key] = [item for s in shards for item in s.metadata.get(key, [])]
    save_logits(
        logits_path,
        logits=np.concatenate([s.logits for s in filled]),
        labels=np.concatenate([s.labels for s in filled]),
        sample_ids=np.concatenate([s.sample_ids for s in filled]),
        class_names=first.class_names,
        metadata=metadata,
        class_indices=first.class_indices,
    )
    return int(sum(s.labels.shape[0] for s in filled))


def _check_complete(shards: list[ShardFile], logits_path: str | Path) -> None:
    """Shards ``1..S`` of one count ``S``, each once (``shards`` sorted by index)."""
    first = shards[0]
    count = first.position.shard.count
    for shard in shards:
        if shard.position.shard.count != count:
            raise InputError(
                f"is shard {shard.position.shard.name}, but {first.path} is shard {first.position.shard.name}: shards of "
                "different counts cannot be merged",
                path=shard.path,
                field="shards",
            )
    indices = [s.position.shard.index for s in shards]
    repeated = sorted({i for i in indices if indices.count(i) > 1})
    if repeated:
        files = [s.path for s in shards if s.position.shard.index == repeated[0]]
        raise InputError(f"shard {repeated[0]}-of-{count} is given twice ({files})", path=files[-1], field="shards")
    missing = sorted(set(range(1, count + 1)) - set(indices))
    if missing:
        raise InputError(
            f"shard(s) {', '.join(f'{i}-of-{count}' for i in missing)} missing: only {len(shards)} of {count} given",
            path=logits_path,
            field="shards",
        )


def _check_same_run(shard: ShardFile, first: ShardFile) -> None:
    """``shard`` covers exactly its batches of the set ``first`` covers part of, and was computed
    with the same settings and classes."""
    at, run = shard.position, first.position
    if (at.samples, at.batch_size) != (run.samples, run.batch_size):
        raise InputError(
            f"covers a set of {at.samples} samples in batches of {at.batch_size}, but {first.path} "
            f"one of {run.samples} in batches of {run.batch_size}: shards of different runs",
            path=shard.path,
            field="shards",
        )
    expected = shard_range(run.samples, run.batch_size, at.shard)
    if (at.start, at.stop) != expected:
        raise InputError(
            f"covers samples [{at.start}, {at.stop}), but shard {at.shard.name} of "
            f"{run.samples} samples in batches of {run.batch_size} covers [{expected[0]}, {expected[1]})",
            path=shard.path,
            field="shards",
        )
    differs = _first_difference(_comparable(first.metadata), _comparable(shard.metadata))
    if differs is not None:
        raise InputError(
            f"was computed with other settings than {first.path}: {differs!r} differs; merge shards of one run",
            path=shard.path,
            field="shards",
        )
    if not (_same(shard.class_names, first.class_names) and _same(shard.class_indices, first.class_indices)):
        raise InputError(f"has other classes than {first.path}", path=shard.path, field="class_names")


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Both absent, or equal arrays."""
    if a is None or b is None:
        return a is None and b is None
    return bool(np.array_equal(a, b))


def _comparable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A shard's metadata less what legitimately differs between the shards of one run: the
    joined lists and the input shape (``None`` in a shard that met no image)."""
    kept = {key: value for key, value in metadata.items() if key not in _JOINED}
    if isinstance(kept.get("preprocessing"), Mapping):
        kept["preprocessing"] = {k: v for k, v in kept["preprocessing"].items() if k != "input_shape"}
    return kept


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The dotted key of the first difference between two JSON values (``None``: equal)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b)):
            found = _first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
        return None
    return None if a == b else (where or "(metadata)")
