"""The explorer: one self-contained HTML page of every class, model and shift of a run
(``results/explorer.html``), where any class can be found.

At ImageNet's size the static figures name the 20 worst classes and the 12 hardest shifts; the
explorer holds the rest. It is written from the cached metric outputs, never the logits:

* :mod:`classwise.explorer.data` reads, per dataset and label view, each (model, shift)'s
  ``per_class.csv``, ``confusion.csv`` and ``worst_class.json`` and the robustness step's
  ``shift_summary.csv`` (:class:`ViewFiles` -> :class:`ViewData`);
* :mod:`classwise.explorer.payload` reduces them to what the page shows (:func:`view_payload`):
  the models x shifts table, the class x shift values in counts, each class's most frequent
  confusions, the worst classes with their ties, the orders by mean accuracy;
* :mod:`classwise.explorer.page` writes the page (:func:`render_page`): the data as JSON in a
  ``<script type="application/json">`` block with ``<``, ``>`` and ``&`` escaped, the page's own
  JavaScript and CSS inlined (no plotting library: the heatmap is a canvas), and a
  Content-Security-Policy that loads nothing and runs no script but its own.

Class, model and shift names come from users' folders and configs: they are data, never markup.
The page renders every name with ``textContent``.
"""

from __future__ import annotations

from classwise.explorer.data import ViewData, ViewFiles, read_view, top_confusions
from classwise.explorer.page import render_page, script_json, write_explorer
from classwise.explorer.payload import explorer_payload, view_payload, worst_class_lists

__all__ = [
    "ViewData",
    "ViewFiles",
    "explorer_payload",
    "read_view",
    "render_page",
    "script_json",
    "top_confusions",
    "view_payload",
    "worst_class_lists",
    "write_explorer",
]
