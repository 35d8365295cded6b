"""What a merged job keeps of its items' files, and when it may take them back.

Two kinds of job do the work of several: a decode group's (``infer_models_<dataset>``: several
models on one shift, :mod:`classwise.pipeline.decode_groups`) and a shift batch's (one rule on
several shifts, :mod:`classwise.pipeline.shift_batches`). Snakemake reruns such a job whole when
one of its items changes, and removes all its outputs before it runs, so neither trusts those.
Each keeps, in a folder of its own per item (a model, a shift), a copy of the item's outputs
(hard links: no second copy of the bytes) beside a record of what they were made from
(:data:`RECORD`), written only once the copies are complete. On its next run it takes back the
items whose copies are still made from the same thing and computes only the others, so a changed
item recomputes only itself. What "made from" covers is the caller's: a decode group's model
entry, weights path and inference settings (:func:`fingerprint`; its weights' and images' times
are checked here, :meth:`KeptFiles.why_stale`), a shift batch's parameters, script and the bytes
of its inputs (:func:`classwise.pipeline.shift_batches.made_from`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["RECORD", "KeptFiles", "fingerprint", "prune", "share_file"]

RECORD = "_record.json"
"""The record's name in an item's folder (beside copies named ``<position>-<file name>``)."""


def fingerprint(values: Any) -> str:
    """The sha256 of ``values`` as canonical JSON (keys sorted): what an item's files were made
    from; files whose recorded fingerprint differs are stale."""
    text = json.dumps(values, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def share_file(source: str | Path, target: str | Path) -> None:
    """``target`` the same file as ``source``: a hard link (no second copy of the bytes), or a
    copy where the file system refuses links; put in place atomically, replacing ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    try:
        os.link(source, temporary)
    except OSError:
        shutil.copy2(source, temporary)
    os.replace(temporary, target)


@dataclass(frozen=True)
class KeptFiles:
    """A merged job's own copies of one item's ``outputs``, in ``folder``."""

    folder: Path
    outputs: tuple[str, ...]

    @classmethod
    def of(cls, folder: str | Path, outputs: Iterable[str | Path]) -> KeptFiles:
        return cls(Path(folder), tuple(str(path) for path in outputs))

    @property
    def copies(self) -> list[Path]:
        """The copy of each output, by position (two outputs may share a file name)."""
        return [self.folder / f"{index}-{Path(path).name}" for index, path in enumerate(self.outputs)]

    def why_stale(self, made_from: str, inputs: Iterable[str | Path] = ()) -> str | None:
        """Why the copies cannot be taken back, or ``None`` when they can: no readable record,
        one made from something else or for other files, a copy missing, or one of ``inputs``
        newer than the oldest copy (Snakemake's own rule; for inputs too large to read whole
        on every run, which ``made_from`` then names by path only)."""
        try:
            record = json.loads((self.folder / RECORD).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "no record of what its files were made from"
        if not isinstance(record, dict) or record.get("made_from") != made_from:
            return "made from other parameters"
        if record.get("outputs") != list(self.outputs):
            return "made for other files"
        missing = [Path(path).name for path, copy in zip(self.outputs, self.copies) if not copy.is_file()]
        if missing:
            return f"no copy of {', '.join(missing)}"
        made = min(copy.stat().st_mtime for copy in self.copies)
        newer = [str(path) for path in map(Path, inputs) if path.exists() and path.stat().st_mtime > made]
        return f"{newer[0]} is newer" if newer else None

    def take_back(self) -> None:
        """Each output the same file as its copy again."""
        for copy, path in zip(self.copies, self.outputs):
            share_file(copy, path)

    def keep(self, made_from: str) -> None:
        """Copy the outputs (just made from ``made_from``) into the folder, replacing what was
        there, and record them once the copies are complete."""
        from classwise.atomic import write_json

        if self.folder.exists():
            shutil.rmtree(self.folder)  # the old record first, and a killed job's temporary files
        for path, copy in zip(self.outputs, self.copies):
            share_file(path, copy)
        write_json(self.folder / RECORD, {"made_from": made_from, "outputs": list(self.outputs)})


def prune(folder: str | Path, items: Sequence[str]) -> None:
    """Remove from a merged job's ``folder`` everything but the folders of ``items`` (an item no
    longer among the job's, or a file of an older layout)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name in items and path.is_dir():
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
