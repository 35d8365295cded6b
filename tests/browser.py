"""Headless Chromium for the browser tests (the HTML report, the explorer): Debian's
``chromium``, installed with apt-get when it is missing (tests/system_packages.py), driven by
Playwright for the explorer (never a browser of Playwright's own).

A page is waited for by a condition, never by a sleep, and with no time limit: a loaded machine
makes it take what it takes, and CI's own limit ends a hang. The explorer says when it is drawn
(``data-ready="true"`` on ``<html>``) and when it could not start (``"error"``), so a broken page
ends the wait too.
"""

from __future__ import annotations

import csv
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
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


def required_browser(test: str) -> str:
    """Debian's chromium and Playwright to drive it: the chromium's path, or skip (fail under CI)
    saying what is missing."""
    path = chromium_path(test)
    try:
        import playwright  # noqa: F401
    except ImportError:
        cannot_run(test, "the Python package playwright is missing (the dev extra: make install)")
    return path


@contextmanager
def browser(test: str) -> Iterator[Any]:
    """A Playwright browser on Debian's chromium (:func:`required_browser`)."""
    with chromium(required_browser(test)) as launched:
        yield launched


@dataclass
class Visit:
    """A page opened offline, and what happened: requests it tried to make to anywhere but its
    own file, script errors, console errors and dialogs (an ``alert`` that ran)."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


#: The limit of an action on a page (a click, a query, typing), in ms: on a page already drawn
#: they resolve at once, so this ends only a test whose element never comes (a bug, not a busy
#: machine), which would otherwise wait for CI's own limit. Waiting for a page to be drawn has none.
ACTION_TIMEOUT_MS = 600_000


def new_page(launched: Any, *, viewport: tuple[int, int] = (1400, 1000)) -> Any:
    """A page in a fresh context (no cache, no storage shared with another test)."""
    context = launched.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    return context.new_page()


def open_offline(launched: Any, path: Path, *, viewport: tuple[int, int] = (1400, 1000)) -> Visit:
    """Open ``path`` in a fresh context with every request but the file itself refused, and wait
    for the explorer to be drawn (a ``RuntimeError`` with its message when it could not start)."""
    page = new_page(launched, viewport=viewport)
    context = page.context
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


# --- an explorer's numbers against the run's CSV outputs --------------------------------------


def per_class_rows(metrics: Path, view: str, model: str, shift: str) -> list[dict[str, str]]:
    """The rows of ``<metrics>/<view>/<model>/<shift>/per_class.csv`` (``metrics``: a run's
    ``metrics/<dataset>``), every cell as written."""
    with open(metrics / view / model / shift / "per_class.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def confusion_counts(metrics: Path, view: str, model: str, shift: str) -> np.ndarray:
    with open(metrics / view / model / shift / "confusion.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return np.array([[int(cell) for cell in row[1:]] for row in rows[1:]])


def same_percent(shown: str, fraction: float | str) -> bool:
    """A percentage shown to two decimals (``82.42``) is the CSV's fraction at that precision."""
    return abs(float(shown) - 100 * float(fraction)) <= 0.005 + 1e-9


def shown_interval(shown: str) -> tuple[str, str]:
    """``[72.07, 91.91]`` -> ("72.07", "91.91")."""
    match = re.fullmatch(r"\[(\S+), (\S+)\]", shown)
    assert match, shown
    return match[1], match[2]


def _shown_confusions(cell: Any) -> list[tuple[str, float, int]]:
    found = []
    for text in cell.locator("[data-field=confusion]").all_text_contents():
        match = re.fullmatch(r"\u2192 (.*) \((\S+) %, (\d+)\)", text, flags=re.S)
        assert match, text
        found.append((match[1], float(match[2]), int(match[3])))
    return found


def _expected_confusions(confusion: np.ndarray, c: int, names: list[str], k: int = 3) -> list[tuple[str, int]]:
    """Class c's k most frequent confusions, brute force: most samples first, ties to the lower index."""
    cells = sorted((-int(confusion[c, j]), j) for j in range(len(names)) if j != c and confusion[c, j] > 0)
    return [(names[j], -minus) for minus, j in cells[:k]]


def check_class_panel(page: Any, metrics: Path, view: str, shifts: list[str], models: list[str], c: int) -> int:
    """Every number the class panel shows for class ``c`` (accuracy, its interval, n, CFPS, the
    confusions with their shares) against the run's ``per_class.csv`` and ``confusion.csv``
    below ``metrics`` (a run's ``metrics/<dataset>``); how many were compared."""
    checked = 0
    for shift in shifts:
        row = page.locator(f"#class-table tr[data-shift='{shift}']")
        for model in models:
            rows = per_class_rows(metrics, view, model, shift)
            truth = rows[c]
            cell = row.locator(f"td[data-model='{model}']")
            accuracy = cell.locator("[data-field=accuracy]").text_content()
            assert same_percent(accuracy, truth["recall"]), (shift, model, accuracy, truth["recall"])
            low, high = shown_interval(cell.locator("[data-field=interval]").text_content())
            assert same_percent(low, truth["recall_ci_low"]) and same_percent(high, truth["recall_ci_high"])
            assert row.locator(f"td[data-model='{model}'][data-field=n]").text_content() == truth["support"]
            # CFPS as the page holds it: the CSV's value to 4 significant digits
            cfps = row.locator(f"td[data-model='{model}'][data-field=cfps]").text_content()
            assert float(cfps) == float(f"{float(truth['cfps']):.4g}"), (cfps, truth["cfps"])
            shown = _shown_confusions(row.locator(f"td[data-model='{model}'].confusions"))
            names = [entry["name"] for entry in rows]
            expected = _expected_confusions(confusion_counts(metrics, view, model, shift), c, names)
            assert [(name, count) for name, _, count in shown] == expected
            for _, share, count in shown:
                assert abs(share - 100 * count / int(truth["support"])) <= 0.005 + 1e-9
            checked += 7
    return checked
