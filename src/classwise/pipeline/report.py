"""CSV tables as readable tables in the Snakemake HTML report (``snakemake --report``).

Snakemake's report shows images, HTML and PDF results in its main panel but offers CSV results
only as a download. The captions of workflow/report/ therefore show each table themselves with
the ``classwise-table`` reStructuredText directive defined here, and the landing page shows a
figure with ``classwise-image``::

    .. classwise-table:: results/tables/digits/original/clean/worst_class.csv
       :max-rows: 40
       :columns: metric, linear

    .. classwise-image:: results/figures/digits/original/clean/per_class_recall.png
       :alt: class-wise accuracy

A caption cites its source with the ``classwise-cite`` role, a key of
:data:`classwise.references.REFERENCES` and an optional locator, and says when its shifts include
corruptions made on the fly with ``classwise-corruption-note``, given the shift names::

    Mirrors **Table 1** of :classwise-cite:`bitterwolf2022`.

    .. classwise-corruption-note:: {{ snakemake.wildcards.shift }}

Conventions:

* The first CSV row is the header; every cell is shown as plain text (never parsed as
  reStructuredText, so data such as ``1.`` or ``*`` cannot turn into markup).
* A decimal number written with more than ``digits + 2`` significant digits (the
  full-precision floats of pandas' ``to_csv``) is shown rounded to ``digits`` significant
  digits, without an exponent for ordinary magnitudes; shorter numbers (the pipeline's own
  formats: ``100.00``, ``8.00 (8)``, ``0.708``, ``0.913 / 0.913``), integers and text are shown
  exactly as written.
* At most ``max-rows`` body rows are shown, then a note says how many rows the CSV has; the
  ``columns`` option shows only the named columns (in that order) and the note says how many
  were left out. The CSV itself, complete and at full precision, is the result the report
  offers for download.
* ``classwise-image`` embeds the image file as a base64 ``data:`` URI, so the report stays one
  self-contained file (Snakemake's own ``embeddedimage`` directive leaves the file's path in
  the page, which breaks once the report is moved away from results/).
* ``classwise-cite`` renders the short citation linked to the source (``Bitterwolf et al.,
  2022``; ``:classwise-cite:`george2020 Table 2``` adds the locator: ``George et al., 2020, Table
  2``), exactly as :func:`classwise.references.cite` writes it; ``classwise-corruption-note``
  renders :data:`classwise.shifts.corruptions.OWN_DEFINITIONS_NOTE` as a paragraph when one of
  its shifts is a corruption made on the fly (always, with the flag ``:always:``), and nothing
  otherwise.
* A missing or unreadable file, an empty file, an unknown column name or an image that is not a
  PNG, JPEG, GIF or SVG stops the report with an :class:`~classwise.errors.InputError` naming
  the file and the field; so does an unknown reference key.

Snakemake renders captions in its own process, so the directive must be registered there:
workflow/rules/tables.smk calls :func:`register_directives` before any rule.
"""

from __future__ import annotations

import base64
import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from classwise.errors import InputError
from classwise.references import reference
from classwise.shifts.corruptions import OWN_DEFINITIONS_NOTE, own_definitions_note

TABLE_DIRECTIVE = "classwise-table"
IMAGE_DIRECTIVE = "classwise-image"
NOTE_DIRECTIVE = "classwise-corruption-note"
CITE_ROLE = "classwise-cite"
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".svg": "image/svg+xml"}
DEFAULT_DIGITS = 4
DEFAULT_MAX_ROWS = 40

#: A decimal literal with a point or an exponent (plain integers are counts: never rounded).
_DECIMAL = re.compile(r"^[+-]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][+-]?\d+)?$")


def significant_digits(text: str) -> int:
    """The significant digits written in a decimal literal: ``"0.0120"`` -> 3, ``"1.5e-3"`` -> 2."""
    mantissa = re.split(r"[eE]", text.lstrip("+-"), maxsplit=1)[0]
    return len(mantissa.replace(".", "").lstrip("0"))


def format_cell(text: str, digits: int = DEFAULT_DIGITS) -> str:
    """``text`` rounded to ``digits`` significant digits when it is a decimal number written
    with more than ``digits + 2``; anything else (integers, text, short or pre-formatted
    numbers such as ``100.00``) unchanged."""
    if digits < 1:
        raise InputError(f"expected a positive number of digits, got {digits}", field="digits")
    stripped = text.strip()
    if not _DECIMAL.match(stripped) or significant_digits(stripped) <= digits + 2:
        return text
    value = float(stripped)
    if value != 0.0 and not 1e-4 <= abs(value) < 10.0 ** (digits + 2):
        return f"{value:.{digits}g}"
    return np.format_float_positional(value, precision=digits, unique=True, fractional=False, trim="-")


@dataclass(frozen=True)
class TablePreview:
    """What the report shows of a CSV: the header, the shown rows (formatted), the number of
    body rows in the file and the number of columns left out."""

    header: list[str]
    rows: list[list[str]]
    n_rows: int
    n_hidden_columns: int

    @property
    def truncated(self) -> bool:
        return len(self.rows) < self.n_rows


def preview_table(
    path: str | Path,
    *,
    digits: int = DEFAULT_DIGITS,
    max_rows: int = DEFAULT_MAX_ROWS,
    columns: Sequence[str] | None = None,
) -> TablePreview:
    """Read the CSV at ``path`` and return what the report shows of it (see the module
    docstring for the conventions). Short rows are padded with empty cells."""
    if max_rows < 1:
        raise InputError(f"expected at least one row to show, got {max_rows}", field="max-rows")
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            records = list(csv.reader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise InputError(f"cannot read the table for the report: {error}", path=path) from error
    if not records:
        raise InputError("expected a CSV table with a header row, got an empty file", path=path)
    header, body = records[0], records[1:]
    width = max(len(row) for row in records)
    header = header + [""] * (width - len(header))
    if columns is None:
        keep = list(range(width))
    else:
        unknown = [name for name in columns if name not in header]
        if unknown:
            raise InputError(f"names columns {unknown}, expected some of {header}", path=path, field="columns")
        keep = [header.index(name) for name in columns]
    shown = []
    for row in body[:max_rows]:
        row = row + [""] * (width - len(row))
        shown.append([format_cell(row[i], digits) for i in keep])
    return TablePreview(
        header=[header[i] for i in keep],
        rows=shown,
        n_rows=len(body),
        n_hidden_columns=width - len(keep),
    )


def preview_note(preview: TablePreview) -> str:
    """The sentence under a shortened table ("" when the whole table is shown)."""
    parts = []
    if preview.truncated:
        parts.append(f"the first {len(preview.rows)} of {preview.n_rows} rows")
    if preview.n_hidden_columns:
        parts.append(f"{len(preview.header)} of {len(preview.header) + preview.n_hidden_columns} columns")
    if not parts:
        return ""
    return f"Shown: {' and '.join(parts)}; the CSV (download) has the whole table at full precision."


def image_data_uri(path: str | Path) -> str:
    """The image file at ``path`` as a base64 ``data:`` URI (type from the file suffix)."""
    mime = IMAGE_TYPES.get(Path(path).suffix.lower())
    if mime is None:
        raise InputError(f"expected an image with one of the suffixes {sorted(IMAGE_TYPES)}", path=path, field="suffix")
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"cannot read the image for the report: {error}", path=path) from error
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def register_directives() -> None:
    """Register the ``classwise-table``, ``classwise-image`` and ``classwise-corruption-note``
    directives and the ``classwise-cite`` role with docutils (idempotent)."""
    from docutils.parsers.rst import directives, roles

    directives.register_directive(TABLE_DIRECTIVE, _table_directive())
    directives.register_directive(IMAGE_DIRECTIVE, _image_directive())
    directives.register_directive(NOTE_DIRECTIVE, _note_directive())
    roles.register_local_role(CITE_ROLE, _cite_role)


def _cite_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = None
) -> tuple[list[Any], list[Any]]:
    """``:classwise-cite:`KEY [LOCATOR]```: the short citation of KEY, linked to the source, then
    ``, LOCATOR``."""
    from docutils import nodes

    key, _, locator = text.strip().partition(" ")
    source = reference(key)
    cited: list[Any] = [nodes.reference(rawtext, source.short, refuri=source.link)] if source.link else [nodes.Text(source.short)]
    if locator.strip():
        cited.append(nodes.Text(f", {locator.strip()}"))
    return cited, []


def _note_directive() -> type:
    """``.. classwise-corruption-note:: SHIFT ...`` (shift names, none or several), or with the
    flag ``:always:`` for a result that shows only corruptions made on the fly."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class CorruptionNote(Directive):
        required_arguments = 0
        optional_arguments = 1
        final_argument_whitespace = True
        has_content = False
        option_spec = {"always": directives.flag}

        def run(self) -> list:
            shifts = self.arguments[0].split() if self.arguments else []
            note = OWN_DEFINITIONS_NOTE if "always" in self.options else own_definitions_note(shifts)
            return [nodes.paragraph(text=note, classes=["classwise-note"])] if note else []

    return CorruptionNote


def _image_directive() -> type:
    """``.. classwise-image:: PATH`` with options ``:alt:`` and ``:width:`` (default 100%)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class ClasswiseImage(Directive):
        required_arguments = 1
        final_argument_whitespace = True
        has_content = False
        option_spec = {"alt": directives.unchanged, "width": directives.length_or_percentage_or_unitless}

        def run(self) -> list:
            path = self.arguments[0]
            node = nodes.image(
                uri=image_data_uri(path),
                alt=self.options.get("alt", Path(path).name),
                width=self.options.get("width", "100%"),
                classes=["classwise-image"],
            )
            self.state.document.settings.record_dependencies.add(path)
            return [node]

    return ClasswiseImage


def _table_directive() -> type:
    """The docutils directive class (built lazily so that docutils is imported only here)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    def column_list(argument: str | None) -> list[str]:
        names = [name.strip() for name in (argument or "").split(",") if name.strip()]
        if not names:
            raise ValueError("expected a comma-separated list of column names")
        return names

    class ClasswiseTable(Directive):
        """``.. classwise-table:: PATH`` with options ``:max-rows:``, ``:digits:``, ``:columns:``."""

        required_arguments = 1
        final_argument_whitespace = True
        has_content = False
        option_spec = {
            "max-rows": directives.positive_int,
            "digits": directives.positive_int,
            "columns": column_list,
        }

        def run(self) -> list:
            path = self.arguments[0]
            preview = preview_table(
                path,
                digits=self.options.get("digits", DEFAULT_DIGITS),
                max_rows=self.options.get("max-rows", DEFAULT_MAX_ROWS),
                columns=self.options.get("columns"),
            )
            self.state.document.settings.record_dependencies.add(path)
            table = nodes.table(classes=["classwise-table"])
            group = nodes.tgroup(cols=len(preview.header))
            table += group
            for _ in preview.header:
                group += nodes.colspec(colwidth=1)
            head = nodes.thead()
            head += _row(preview.header)
            group += head
            body = nodes.tbody()
            for cells in preview.rows:
                body += _row(cells)
            group += body
            result: list[nodes.Element] = [table]
            note = preview_note(preview)
            if note:
                result.append(nodes.paragraph(text=note))
            return result

    def _row(cells: Sequence[str]) -> nodes.row:
        row = nodes.row()
        for text in cells:
            entry = nodes.entry()
            entry += nodes.paragraph(text=text)
            row += entry
        return row

    return ClasswiseTable
