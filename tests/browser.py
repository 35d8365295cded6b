"""Headless Chromium for the browser tests (the HTML report, the explorer): Debian's
``chromium``, installed with apt-get when it is missing (tests/system_packages.py), driven by
Playwright for the explorer (never a browser of Playwright's own).

A page is waited for by a condition, never by a sleep, and with no time limit: a loaded machine
makes it take what it takes, and CI's own limit ends a hang. The explorer says when it is drawn
(``data-ready="true"`` on ``<html>``) and when it could not start (``"error"``), so a broken page
ends the wait too.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from system_packages import apt_install, cannot_run

from classwise.bench.explorer import BROWSERS, chromium, wait_until_ready


def installed_chromium() -> str | None:
    for name in BROWSERS:
        if shutil.which(name):
            return shutil.which(name)
    return None


def chromium_path(test: str) -> str:
    """Debian's chromium, installed with apt-get when missing (we are root), or skip saying why."""
    found = installed_chromium()
    if found:
        return found
    apt_install(test, ["chromium"], missing=BROWSERS)
    found = installed_chromium()
    if not found:
        cannot_run(test, "apt-get installed chromium, but no chromium program is on PATH")
    return found


@contextmanager
def browser(test: str) -> Iterator[Any]:
    """A Playwright browser on Debian's chromium, or skip (fail under CI) saying what is missing."""
    path = chromium_path(test)
    try:
        import playwright  # noqa: F401
    except ImportError:
        cannot_run(test, "the Python package playwright is missing (the dev extra: make install)")
    with chromium(path) as launched:
        yield launched


@dataclass
class Visit:
    """A page opened offline, and what happened: requests it tried to make to anywhere but its
    own file, script errors, console errors and dialogs (an ``alert`` that ran)."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def open_offline(launched: Any, path: Path, *, viewport: tuple[int, int] = (1400, 1000)) -> Visit:
    """Open ``path`` in a fresh context with every request but the file itself refused, and wait
    for the explorer to be drawn (a ``RuntimeError`` with its message when it could not start)."""
    context = launched.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    visit = Visit(page)
    url = path.resolve().as_uri()

    def route(request_route: Any) -> None:
        if request_route.request.url == url:
            request_route.continue_()
        else:
            visit.requests.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", route)
    page.on("pageerror", lambda error: visit.errors.append(str(error)))
    page.on("console", lambda message: visit.errors.append(message.text) if message.type == "error" else None)

    def dialog(opened: Any) -> None:
        visit.dialogs.append(opened.message)
        opened.dismiss()

    page.on("dialog", dialog)
    page.goto(url, timeout=0)
    wait_until_ready(page)
    return visit
