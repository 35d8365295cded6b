"""Verified downloads: stream to a temporary name, check sha256, rename atomically. The one
download core of the package: datasets, shift sets, label views and model weights
(:mod:`classwise.models.fetch`) all download through it.

Conventions:

- A download names its expected sha256 (64 hex digits; :func:`download`), or, for a file whose
  digest is not published (``record=True``), checks the digest recorded beside it on first
  download; for model weights whose publisher gives none, part of it or nothing
  (:func:`download_recorded`, which returns the digest for the model's manifest). The file only ever appears at
  ``dest`` complete and verified; while it streams it lives under a temporary name in ``dest``'s
  directory, which is removed on any failure.
- A ``dest`` that already exists with the expected digest is not downloaded again (so a download
  rule can be rerun, and a user can drop a file in place by hand on a machine without internet).
- Network failures (connection refused or reset, timeouts, truncated bodies, HTTP 5xx, 408 and
  429) are retried ``retries`` times with exponential backoff (``backoff * 2**attempt`` seconds),
  the settings of one :class:`NetworkOptions` (``network=``, the same record for every download,
  model weights included); other HTTP errors (404, 403, ...) fail at once. After the last attempt a
  :class:`DownloadError` names the URL, the destination and the last error.
  :func:`retried` holds these rules for any request (the model fetcher's ``HEAD`` too).
- A checksum mismatch is not a network error and is not retried: it raises
  :class:`~classwise.errors.InputError` naming the file, the URL and both digests, and leaves
  nothing behind.

Only the standard library (``urllib``) is used, so downloads work wherever Python does; they
belong in Snakemake ``localrule``s (or a step run before the workflow) so that jobs on compute
nodes without internet never download.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import re
import shutil
import socket
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from classwise.atomic import atomic_open, atomic_path
from classwise.errors import InputError, check_count

__all__ = [
    "DEFAULT_NETWORK",
    "DownloadError",
    "NetworkOptions",
    "check_sha256",
    "download",
    "download_recorded",
    "retried",
    "sha256_file",
    "unpack",
]

log = logging.getLogger(__name__)

CHUNK_SIZE = 1 << 20
"""Bytes read (and hashed) per step while streaming or hashing a file."""

USER_AGENT = "classwise-downloader/1 (+urllib)"
"""Some hosts refuse urllib's default agent string; this one names the tool."""

RETRYABLE_HTTP_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
"""HTTP statuses that are worth another attempt; any other HTTP error is final."""

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

T = TypeVar("T")


class DownloadError(OSError):
    """A download that failed for a network reason after all its attempts (or a final HTTP error)."""


def check_sha256(value: object, *, field: str = "sha256") -> str:
    """``value`` as a lower-case 64-hex-digit sha256, or :class:`InputError` naming ``field``."""
    if not isinstance(value, str) or not _SHA256_RE.match(value.strip().lower()):
        raise InputError(f"expected a sha256 digest of 64 hexadecimal digits, got {value!r}", field=field)
    return value.strip().lower()


def sha256_file(path: str | Path, *, chunk_size: int = CHUNK_SIZE) -> str:
    """The lower-case hex sha256 of the file at ``path``, read in chunks (constant memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def _is_retryable(error: BaseException) -> bool:
    if isinstance(error, urllib.error.HTTPError):
        return error.code in RETRYABLE_HTTP_STATUS
    return isinstance(
        error,
        (urllib.error.URLError, ConnectionError, TimeoutError, socket.timeout, http.client.HTTPException, _Truncated),
    )


class _Truncated(OSError):
    """The body ended before the ``Content-Length`` the server announced."""


def _stream(url: str, tmp: Path, *, timeout: float, chunk_size: int) -> str:
    """Stream ``url`` into ``tmp`` (overwriting it); return the sha256 of what was written."""
    digest = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response, open(tmp, "wb") as out:
        length = response.headers.get("Content-Length")
        expected = int(length) if length is not None and length.strip().isdigit() else None
        received = 0
        while chunk := response.read(chunk_size):
            out.write(chunk)
            digest.update(chunk)
            received += len(chunk)
        if expected is not None and received != expected:
            raise _Truncated(f"received {received} of {expected} bytes")
        out.flush()
    return digest.hexdigest()


@dataclass(frozen=True)
class NetworkOptions:
    """How a download behaves on the network: ``retries``, the further attempts after a
    retryable failure (so at most ``retries + 1`` requests); ``backoff``, the wait before retry
    ``i`` (1-based) being ``backoff * 2**(i - 1)`` seconds; ``timeout``, the socket timeout of each
    request in seconds.

    Checked when made: :class:`InputError` naming the field unless ``retries`` is an integer
    >= 0 (not a bool), ``backoff`` >= 0 and ``timeout`` > 0.
    """

    retries: int = 3
    backoff: float = 2.0
    timeout: float = 60.0

    def __post_init__(self) -> None:
        check_count(self.retries, "retries", minimum=0)
        if not self.backoff >= 0:
            raise InputError(f"expected a number >= 0, got {self.backoff!r}", field="backoff")
        if not self.timeout > 0:
            raise InputError(f"expected a number > 0, got {self.timeout!r}", field="timeout")


DEFAULT_NETWORK = NetworkOptions()
"""3 retries, waits of 2, 4 and 8 s before them, 60 s socket timeout."""


def retried(attempt: Callable[[], T], *, what: str, network: NetworkOptions) -> T:
    """``attempt()``'s result, calling it again after a network failure: at most
    ``network.retries + 1`` calls, the wait before retry ``i`` (1-based)
    ``network.backoff * 2**(i - 1)`` seconds (``attempt`` applies ``network.timeout`` itself).

    An :class:`InputError` (a checksum mismatch) is raised at once; any other error that is not
    a network failure (a final HTTP status, an unknown URL scheme, ...) becomes a
    :class:`DownloadError` at once; after the last attempt a :class:`DownloadError` names
    ``what`` and the last error.
    """
    attempts = network.retries + 1
    last_error: BaseException | None = None
    for index in range(attempts):
        if index:
            wait = network.backoff * 2 ** (index - 1)
            log.warning("%s: attempt %d/%d failed (%s); retrying in %.1f s", what, index, attempts, last_error, wait)
            time.sleep(wait)
        try:
            return attempt()
        except InputError:
            raise
        except Exception as error:  # noqa: BLE001 - classified just below
            if not _is_retryable(error):
                raise DownloadError(f"{what} failed: {error}") from error
            last_error = error
    raise DownloadError(f"{what} failed after {attempts} attempt(s); last error: {last_error}") from last_error


def _download_checked(
    url: str,
    target: Path,
    expected: Callable[[str], str | None],
    *,
    network: NetworkOptions,
    chunk_size: int,
) -> str:
    """Stream ``url`` to ``target`` atomically, retried; return its sha256. ``expected(sha256)``
    says what was expected instead (for the error) when the digest is wrong, else ``None``."""

    def attempt() -> str:
        with atomic_path(target) as tmp:
            actual = _stream(url, tmp, timeout=network.timeout, chunk_size=chunk_size)
            wanted = expected(actual)
            if wanted is not None:
                raise InputError(
                    f"checksum mismatch for the download of {url}: expected {wanted}, got sha256 {actual}; the file was not kept",
                    path=target,
                    field="sha256",
                )
        return actual

    return retried(attempt, what=f"{target}: downloading {url}", network=network)


def download(
    url: str,
    dest: str | Path,
    *,
    sha256: str | None,
    record: bool = False,
    network: NetworkOptions = DEFAULT_NETWORK,
    chunk_size: int = CHUNK_SIZE,
) -> Path:
    """Download ``url`` to ``dest`` and verify its sha256; return ``dest`` as a :class:`Path`.

    ``network`` (a :class:`NetworkOptions`) sets the retries, the backoff between them and the
    socket timeout of each request. Raises :class:`InputError` on a checksum mismatch (not retried) and
    :class:`DownloadError` when the network attempts are exhausted or the server answers with a
    final HTTP error. See the module docstring for the guarantees.

    ``record`` (with ``sha256=None``) is for a file whose digest nobody publishes: the digest of
    the file the first call finds or downloads is written to ``<dest>.sha256``, and every later
    call checks the file against that record as it would against a given ``sha256``.
    """
    record_path = Path(f"{dest}.sha256")
    expected: str | None
    if sha256 is None and record:
        expected = check_sha256(record_path.read_text().strip(), field=str(record_path)) if record_path.is_file() else None
    else:
        expected = check_sha256(sha256)
    target = Path(dest)
    if target.is_file():
        actual = sha256_file(target, chunk_size=chunk_size)
        if expected is None:
            _record(record_path, actual)
            log.warning("%s: present; no sha256 published, recorded %s in %s", target, actual, record_path)
            return target
        if actual == expected:
            log.info("%s: already present with the expected sha256, not downloading", target)
            return target
        log.warning("%s: present with sha256 %s, expected %s; downloading again", target, actual, expected)
    actual = _download_checked(
        url,
        target,
        lambda actual: None if expected is None or actual == expected else f"sha256 {expected}",
        network=network,
        chunk_size=chunk_size,
    )
    if expected is None:  # the file is in place: record its digest for the next calls
        _record(record_path, actual)
        log.warning("%s: no sha256 published; recorded the download's, %s, in %s", target, actual, record_path)
    else:
        log.info("%s: downloaded from %s, sha256 verified", target, url)
    return target


def _record(path: Path, digest: str) -> None:
    with atomic_open(path, "w", encoding="utf-8") as handle:
        handle.write(digest + "\n")


def download_recorded(
    url: str,
    dest: str | Path,
    *,
    sha256_prefix: str | None = None,
    network: NetworkOptions = DEFAULT_NETWORK,
    chunk_size: int = CHUNK_SIZE,
) -> str:
    """Download ``url`` to ``dest`` when its full sha256 is not known, and return the sha256 (for
    the caller to record). With ``sha256_prefix`` (leading hex digits of the digest, such as
    the torch.hub file-name convention gives) the digest must start with it, and a ``dest``
    already present that does is kept without downloading. Retries, atomicity and errors as
    :func:`download`.
    """
    prefix = sha256_prefix.lower() if sha256_prefix else None
    target = Path(dest)
    if prefix is not None and target.is_file():
        actual = sha256_file(target, chunk_size=chunk_size)
        if actual.startswith(prefix):
            log.info("%s: already present with sha256 %s..., not downloading", target, prefix)
            return actual
    actual = _download_checked(
        url,
        target,
        lambda actual: None if prefix is None or actual.startswith(prefix) else f"a sha256 starting with {prefix}",
        network=network,
        chunk_size=chunk_size,
    )
    log.info("%s: downloaded from %s, sha256 %s", target, url, actual)
    return actual


def unpack(archive: str | Path, root: str | Path, folder: str, *, check: Callable[[Path], None] | None = None) -> Path:
    """Unpack the tar ``archive`` (any compression) whose members all lie below ``folder`` into
    ``root/folder``, which appears only when complete; return it.

    ``check`` (raising :class:`InputError`) is called on the unpacked folder before it is moved
    into place, so a folder missing files never appears. An existing ``root/folder`` is kept
    (another job unpacked the same archive meanwhile): remove an incomplete one first.
    """
    archive, root = Path(archive), Path(root)
    target = root / folder
    staging = Path(tempfile.mkdtemp(prefix=f".{Path(folder).name}.", dir=root))
    try:
        with tarfile.open(archive) as tar:
            names = [member.name for member in tar.getmembers()]
            outside = [n for n in names if Path(n).parts[:1] != (folder,)]
            if outside:
                raise InputError(f"expected only {folder}/... members, found {outside[:5]}", path=archive, field="members")
            tar.extractall(staging, filter="data")
        if not (staging / folder).is_dir():
            raise InputError(f"holds no {folder}/ folder", path=archive, field="members")
        if check is not None:
            check(staging / folder)
        if not target.exists():  # else another job unpacked the same archive meanwhile (the folder only appears whole)
            (staging / folder).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
