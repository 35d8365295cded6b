"""Fetch a family's published files into ``root``: sha256-checked downloads (the download core,
:func:`classwise.data.downloads.download`: retried, atomic, skipped when the file is already
there with its digest) and tar archives unpacked so that their folder appears whole or not at all."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from classwise.data.downloads import DEFAULT_NETWORK, NetworkOptions, check_sha256, download, unpack
from classwise.data.shift_sets.base import Archive

log = logging.getLogger(__name__)


def fetch_archives(
    archives: Sequence[Archive],
    root: str | Path,
    *,
    overrides: Mapping[str, Mapping[str, str]] | None = None,
    where: str = "shift_sets",
    keep_archives: bool = False,
    network: NetworkOptions = DEFAULT_NETWORK,
) -> list[dict[str, Any]]:
    """Download (and unpack) each archive below ``root``; return one record per file (url,
    sha256, where it went). ``overrides`` maps a file's base name to ``{"url", "sha256"}`` (a
    mirror). A folder that is already unpacked is kept as it is and nothing is downloaded for it.
    A tar archive is unpacked into a temporary folder beside its target and renamed into place
    once complete (every member must lie below that folder), then deleted unless ``keep_archives``.
    ``network`` sets the downloads' retries, backoff and socket timeout."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    records = []
    for archive in archives:
        name = Path(archive.filename).name
        chosen = {"url": archive.url, "sha256": archive.sha256, **dict((overrides or {}).get(name, {}))}
        sha = check_sha256(chosen["sha256"], field=f"{where}.downloads.{name}.sha256")
        record = {"file": archive.filename, "url": chosen["url"], "sha256": sha}
        if archive.unpacks_to is not None and (root / archive.unpacks_to).is_dir():
            log.info("%s: already unpacked", root / archive.unpacks_to)
            records.append({**record, "unpacked": archive.unpacks_to})
            continue
        target = root / archive.filename
        target.parent.mkdir(parents=True, exist_ok=True)
        download(chosen["url"], target, sha256=sha, network=network)
        if archive.unpacks_to is not None:
            unpack(target, root, archive.unpacks_to)
            if not keep_archives:
                target.unlink(missing_ok=True)
            record["unpacked"] = archive.unpacks_to
        records.append(record)
    return records
