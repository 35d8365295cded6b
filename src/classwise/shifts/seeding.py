"""Seeds derived from names, identical across processes, platforms and Python versions.

Python's built-in ``hash()`` of a string changes between processes (``PYTHONHASHSEED``), so
seeds are derived with SHA-256 over an unambiguous encoding of the parts instead.
"""

from __future__ import annotations

import hashlib

import numpy as np

SEED_BITS = 63
"""Derived seeds lie in ``[0, 2**63)``: valid for ``torch.Generator.manual_seed``,
``numpy.random.default_rng`` and ``random.Random``."""


def _encode(part: object) -> bytes:
    if isinstance(part, (bool, np.bool_)):
        raise TypeError(f"seed parts must be str or int, got bool {part!r}")
    if isinstance(part, (int, np.integer)):
        text = f"i{len(str(int(part)))}:{int(part)}"
    elif isinstance(part, (str, np.str_)):
        value = str(part)
        text = f"s{len(value)}:{value}"
    else:
        raise TypeError(f"seed parts must be str or int, got {type(part).__name__} {part!r}")
    return text.encode("utf-8")


def sample_seed(base_seed: int, *parts: str | int) -> int:
    """A deterministic seed in ``[0, 2**63)`` for ``base_seed`` and the given name parts.

    ``sample_seed(0, "gaussian_noise_s3", "digits-0042")`` is the same on every machine;
    different parts (or a different order) give unrelated seeds. ``("ab", "c")`` and
    ``("a", "bc")`` differ, as do ``1`` and ``"1"``.
    """
    digest = hashlib.sha256()
    digest.update(b"classwise-seed-v1|")
    digest.update(_encode(base_seed))
    for part in parts:
        digest.update(b"|")
        digest.update(_encode(part))
    return int.from_bytes(digest.digest()[:8], "big") >> (64 - SEED_BITS)
