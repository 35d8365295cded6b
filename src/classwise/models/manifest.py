"""The manifest a model download writes beside its weights (``manifest.json``): what was fetched
from where, each file's sha256 and how it was verified, and the resolved data config. Reading it
imports no torch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from classwise.errors import InputError

__all__ = ["MANIFEST_FORMAT", "MANIFEST_NAME", "MANIFEST_VERSION", "read_manifest", "relative_to"]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "classwise-model-weights"
MANIFEST_VERSION = 1


def relative_to(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path.resolve())


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest at ``path`` (a manifest file or the directory holding ``manifest.json``)."""
    source = Path(path)
    if source.is_dir():
        source = source / MANIFEST_NAME
    if not source.is_file():
        raise InputError(f"no model manifest here (expected {MANIFEST_NAME}; run the download first)", path=source)
    try:
        manifest = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the model manifest ({exc})", path=source) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InputError(f"not a model manifest (format is not {MANIFEST_FORMAT!r})", path=source, field="format")
    if manifest.get("version") != MANIFEST_VERSION:
        raise InputError(
            f"unsupported manifest version {manifest.get('version')!r}; expected {MANIFEST_VERSION}",
            path=source,
            field="version",
        )
    manifest["_path"] = str(source)
    return manifest
