"""The explorer page: one self-contained HTML file, nothing loaded from elsewhere.

The page is ``explorer.html`` (the template beside this module) with its stylesheet
(``explorer.css``), its script (``explorer.js``) and the data inlined. The data go in a
``<script type="application/json">`` block (:func:`script_json`), never run as script, with
every ``<``, ``>`` and ``&`` written as a JSON escape, so that no name (a class folder named
``</script><img src=x onerror=alert(1)>``) can close the block or open a tag; the script reads
it with ``JSON.parse`` and writes names with ``textContent``. A Content-Security-Policy lets
the page load nothing and run nothing but its own script and stylesheet (by their hashes):
no network, and no inline event handler even if markup ever slipped in.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from classwise.atomic import write_text

__all__ = ["content_security_policy", "render_page", "script_json", "write_explorer"]

_MARKER = re.compile(r"\{\{(\w+)\}\}")


def _asset(name: str) -> str:
    return resources.files("classwise.explorer").joinpath(name).read_text(encoding="utf-8")


def script_json(payload: Any) -> str:
    """``payload`` as JSON for a ``<script type="application/json">`` block: compact, NaN
    refused (JSON has none), and ``<``, ``>``, ``&`` escaped as ``\\u003c``, ``\\u003e``,
    ``\\u0026`` (outside strings JSON has none of them, inside a string the escape reads back
    as the same character)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def content_security_policy(script: str, style: str) -> str:
    """Load nothing, run only ``script`` and apply only ``style`` (the inlined ones, by hash)."""
    return (
        f"default-src 'none'; script-src '{_hash(script)}'; style-src '{_hash(style)}'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def render_page(payload: Mapping[str, Any]) -> str:
    """The explorer page of ``payload`` (:func:`classwise.explorer.payload.explorer_payload`)."""
    script, style, template = _asset("explorer.js"), _asset("explorer.css"), _asset("explorer.html")
    for text, closing in ((script, "</script"), (style, "</style")):
        if closing in text.lower():  # the page's own assets: a bug, not bad input
            raise ValueError(f"an inlined asset holds {closing!r}")
    parts = {
        "csp": html.escape(content_security_policy(script, style), quote=True),
        "title": html.escape(str(payload["title"]), quote=True),
        "style": style,
        "data": script_json(payload),
        "script": script,
    }
    # one pass: nothing inserted is read again for markers
    return _MARKER.sub(lambda match: parts[match[1]], template)


def write_explorer(path: str | Path, payload: Mapping[str, Any]) -> int:
    """Write the page of ``payload`` to ``path`` atomically; its size in bytes."""
    page = render_page(payload)
    write_text(path, page)
    return len(page.encode("utf-8"))
