"""Archives the download tests serve to themselves (no network here): a tar of named members and
an array as .npy bytes, in the layouts the published files have."""

from __future__ import annotations

import io
import tarfile

import numpy as np


def tar_bytes(members: dict[str, bytes], *, mode: str = "w") -> bytes:
    """A tar holding ``members`` (name -> content), in their order; uncompressed unless ``mode``
    says otherwise (``"w:gz"``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as the bytes of an .npy file."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()
