"""Fetching model weight files: verified, retried, atomic.

A weights file is checked in the strongest way its source allows:

- ``sha256``: a full digest (given in the config, or published by the Hugging Face Hub as the
  file's ``X-Linked-Etag``) -> :func:`classwise.data.downloads.download` verifies it;
- ``sha256_prefix``: the leading hex digits of the sha256 embedded in the file name, the
  ``torch.hub`` convention (``resnet50-0676ba61.pth``) used by torchvision and timm's own URLs;
- neither: the digest is computed while downloading and recorded in the model's manifest, so
  later loads can detect a changed or damaged file.

Every variant downloads through the one download core, :mod:`classwise.data.downloads`
(``download`` with a full digest, ``download_recorded`` without): ``dest`` only appears
complete, and network failures are retried with exponential backoff by the same rules and the
same record of them (:class:`~classwise.data.downloads.NetworkOptions`), the ``HEAD`` of
:func:`remote_sha256` included.
"""

from __future__ import annotations

import email.message
import http.client
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from classwise.data.downloads import (
    DEFAULT_NETWORK,
    RETRYABLE_HTTP_STATUS,
    USER_AGENT,
    DownloadError,
    NetworkOptions,
    check_sha256,
    download,
    download_recorded,
    retried,
)
from classwise.errors import InputError

__all__ = ["FetchedFile", "fetch_file", "hash_prefix_from_url", "remote_sha256"]


_HASH_PREFIX_RE = re.compile(r"-([a-f0-9]{8,64})\.")
"""torch.hub's convention: ``name-<first hex digits of the sha256>.ext`` (at least 8 digits here)."""
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class FetchedFile:
    """One downloaded file: where it is, where it came from, its sha256 and how that was checked
    (``"config"``, ``"hub-etag"``, ``"url-prefix"`` or ``"recorded"``: nothing to check against)."""

    path: Path
    url: str
    sha256: str
    size: int
    check: str


def hash_prefix_from_url(url: str) -> str | None:
    """The sha256 prefix embedded in ``url``'s file name (torch.hub convention), if any."""
    name = Path(urllib.parse.urlparse(url).path).name
    match = _HASH_PREFIX_RE.search(name)
    return match.group(1) if match else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Keep HEAD a HEAD: urllib would follow a redirect with a GET (downloading the file)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


def _head(url: str, network: NetworkOptions) -> tuple[int, email.message.Message]:
    """Status and headers of a HEAD request to ``url`` (redirects are not followed), retried
    by the download core's rules."""
    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"})

    def attempt() -> tuple[int, email.message.Message]:
        try:
            with opener.open(request, timeout=network.timeout) as response:
                return response.status, response.headers
        except urllib.error.HTTPError as error:
            if error.code in RETRYABLE_HTTP_STATUS:
                raise
            return error.code, error.headers

    return retried(attempt, what=f"HEAD {url}", network=network)


def remote_sha256(url: str, network: NetworkOptions = DEFAULT_NETWORK) -> str | None:
    """The sha256 a Hugging Face style server publishes for ``url``, or ``None``.

    The Hub answers ``resolve`` URLs of LFS files with ``X-Linked-Etag: "<sha256>"`` (plain
    ``ETag`` for files it serves itself); an etag that is not 64 hex digits (a git blob id) is
    ignored. A missing file (404/410) raises :class:`InputError` naming the URL.
    """
    status, headers = _head(url, network)
    if status in (404, 410):
        raise InputError(f"the server has no file at {url} (HTTP {status})", field="url")
    if status >= 400:
        raise DownloadError(f"HEAD {url} answered HTTP {status}")
    for header in ("X-Linked-Etag", "ETag"):
        value = headers.get(header)
        if value:
            tag = value.strip().removeprefix("W/").strip('"').lower()
            if _SHA256_RE.match(tag):
                return tag
    return None


def fetch_file(
    url: str,
    dest: str | Path,
    *,
    sha256: str | None = None,
    sha256_prefix: str | None = None,
    check: str | None = None,
    network: NetworkOptions = DEFAULT_NETWORK,
) -> FetchedFile:
    """Download ``url`` to ``dest`` (atomically, retried) and verify what can be verified.

    With ``sha256`` the full digest is checked by :func:`classwise.data.downloads.download`;
    otherwise (:func:`classwise.data.downloads.download_recorded`) with ``sha256_prefix`` the
    digest must start with it, and without it is only recorded. ``check`` names how the
    expected digest was obtained (for the manifest). A file already at ``dest`` that passes the
    check is kept without downloading. A mismatch raises :class:`InputError` naming the file,
    the URL and both digests, and keeps nothing.
    """
    target = Path(dest)
    if sha256 is not None:
        expected = check_sha256(sha256)
        download(url, target, sha256=expected, network=network)
        return FetchedFile(target, url, expected, target.stat().st_size, check or "config")
    actual = download_recorded(url, target, sha256_prefix=sha256_prefix, network=network)
    return FetchedFile(target, url, actual, target.stat().st_size, check or ("url-prefix" if sha256_prefix else "recorded"))
