"""Text in any script: a font fallback for the characters matplotlib's default font lacks.

matplotlib draws every text with DejaVu Sans, which has Latin, Greek and Cyrillic but no
Chinese, Japanese, Korean, Arabic, Devanagari ... A class named ``日本`` would come out as
empty boxes, with one ``Glyph 26085 missing`` warning per character and text. Before a figure
is saved, :func:`add_font_fallbacks` gives each text with such characters a fallback: the
installed fonts that have them (:data:`PREFERRED_FALLBACKS` first), after its own font in
its ``font.family`` list (matplotlib's font fallback). Characters no installed font has are
named in one :class:`MissingGlyphsWarning`, which says which font to install, instead of
matplotlib's warning per glyph.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font
from matplotlib.text import Text

#: Fonts tried first for characters the default font lacks (where installed): Noto, which has
#: every script, then other common fonts of many scripts. Any other installed font that has
#: the characters comes after them.
PREFERRED_FALLBACKS: tuple[str, ...] = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Noto Sans",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Arial Unicode MS",
)

#: What :class:`MissingGlyphsWarning` asks to install.
INSTALL_HINT = (
    "install a font that has them, e.g. Noto Sans CJK for Chinese, Japanese and Korean (Debian/Ubuntu: "
    "apt install fonts-noto-cjk; conda: conda install -c conda-forge font-ttf-noto-cjk) or Noto Sans for the "
    "other scripts (fonts-noto-core; font-ttf-noto), then delete matplotlib's font cache (fontlist-*.json in "
    "matplotlib.get_cachedir()) so that it sees the new font"
)

#: matplotlib's own font of placeholder boxes, one for every code point: it "has" every
#: character but draws none of them.
_PLACEHOLDER_FONT = "Last Resort"

#: matplotlib's own warning per missing glyph, replaced by one :class:`MissingGlyphsWarning`.
_GLYPH_WARNING = r"Glyph \d+ .* missing from font"


class MissingGlyphsWarning(UserWarning):
    """Some text has characters that no installed font has: they are drawn as empty boxes."""


@functools.cache
def _charmap(path: str) -> frozenset[int]:
    """The code points a font file has glyphs for (empty if matplotlib cannot read it)."""
    try:
        return frozenset(FT2Font(path).get_charmap())
    except (OSError, RuntimeError, ValueError):
        return frozenset()


def installed_fonts() -> list[tuple[str, str]]:
    """``(family name, file)`` of every font matplotlib knows but its placeholder boxes, one
    file per family (the regular one where there is a choice), :data:`PREFERRED_FALLBACKS`
    first, then by name."""
    files: dict[str, str] = {}
    for entry in sorted(font_manager.fontManager.ttflist, key=lambda e: (e.style != "normal", abs(_weight(e.weight) - 400))):
        if not entry.name.startswith(_PLACEHOLDER_FONT):
            files.setdefault(entry.name, entry.fname)
    rank = {name: i for i, name in enumerate(PREFERRED_FALLBACKS)}
    return sorted(files.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0]))


def _weight(weight: int | str) -> int:
    return weight if isinstance(weight, int) else int(font_manager.weight_dict.get(str(weight), 400))


def fallback_fonts(characters: set[str], fonts: Sequence[tuple[str, str]]) -> tuple[list[str], set[str]]:
    """The families of ``fonts`` (``(name, file)`` in order of preference) that together have
    the most of ``characters``, each chosen for the most characters still missing (ties: the
    earlier font), and the characters none of them has."""
    missing = {ord(char) for char in characters}
    chosen: list[str] = []
    while missing:
        best_name, best_path, best = "", "", 0
        for name, path in fonts:
            covered = len(missing & _charmap(path))
            if covered > best:
                best_name, best_path, best = name, path, covered
        if not best:
            break
        chosen.append(best_name)
        missing -= _charmap(best_path)
    return chosen, {chr(code) for code in missing}


def add_font_fallbacks(fig: Figure, fonts: Sequence[tuple[str, str]] | None = None) -> set[str]:
    """Give every text of ``fig`` whose font lacks some of its characters the installed fonts
    that have them (``fonts``: :func:`installed_fonts` by default) as fallbacks; returns the
    characters no font has (drawn as empty boxes)."""
    unfound: set[str] = set()
    candidates = fonts
    for text in fig.findobj(Text):
        wide = {char for char in text.get_text() if ord(char) > 127 and not char.isspace()}
        if not wide:
            continue
        own = _charmap(font_manager.findfont(text.get_fontproperties()))
        lacking = {char for char in wide if ord(char) not in own}
        if not lacking:
            continue
        candidates = installed_fonts() if candidates is None else candidates
        families, left = fallback_fonts(lacking, candidates)
        if families:
            text.set_fontfamily([*text.get_fontfamily(), *families])
        unfound |= left
    return unfound


@contextmanager
def readable_text(fig: Figure, fonts: Sequence[tuple[str, str]] | None = None) -> Iterator[None]:
    """Around rendering ``fig``: :func:`add_font_fallbacks`, and for the characters no font
    has one :class:`MissingGlyphsWarning` (naming them and the font to install) in place of
    matplotlib's warning per glyph."""
    unfound = add_font_fallbacks(fig, fonts)
    if not unfound:
        yield
        return
    shown = "".join(sorted(unfound))
    warnings.warn(
        f"no installed font has the characters {shown!r}: they are drawn as empty boxes; {INSTALL_HINT}",
        MissingGlyphsWarning,
        stacklevel=3,
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_GLYPH_WARNING)
        yield
