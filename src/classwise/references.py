"""The sources classwise implements, and how the project cites them.

One entry per source in :data:`REFERENCES`, by a short key. Everything that names a source reads
it from here: the captions of the tables (:mod:`classwise.pipeline.captions`), the report's
``classwise-cite`` role (:mod:`classwise.pipeline.report`), the run's ``README.md``
(:mod:`classwise.steps.reports`) and the report's categories (:attr:`Reference.category`).
docs/references.md lists them in full.

A short citation is ``Bitterwolf et al., 2022`` (one author: ``Name, 2022``; two: ``A and B,
2022``), followed by a locator when there is one (``Bitterwolf et al., 2022, Table 1``), with the
source's link in the form the output needs (:data:`Style`). The test catalogue has no author, year
or link: it is cited by its description.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from classwise.errors import InputError

#: ``text``: the link in parentheses after the citation (table captions, Markdown and LaTeX
#: alike); ``markdown``: a Markdown link; ``rst``: a reStructuredText link (report captions).
Style = Literal["text", "markdown", "rst"]


@dataclass(frozen=True)
class Reference:
    """A source: who wrote it, where it appeared, where to read it and what classwise takes from it."""

    key: str
    #: ``("J. Bitterwolf", "A. Meinke", ...)``; empty for a source without authors.
    authors: tuple[str, ...]
    title: str
    venue: str
    #: ``None`` for a source without a date.
    year: int | None
    #: A stable address of the text ("" when there is none).
    link: str
    #: What classwise computes from it: the name of its category in the HTML report.
    topic: str
    #: Code the authors published (GitHub ``owner/name``).
    code: tuple[str, ...] = ()
    #: How a source without authors is cited.
    label: str = ""

    @property
    def short(self) -> str:
        """``Bitterwolf et al., 2022``, ``Slavutsky and Benjamini, 2021``, or the label of a source
        without authors."""
        if not self.authors:
            return self.label
        surnames = [name.split()[-1] for name in self.authors]
        names = surnames[0] if len(surnames) == 1 else " and ".join(surnames) if len(surnames) == 2 else f"{surnames[0]} et al."
        return f"{names}, {self.year}" if self.year is not None else names

    @property
    def category(self) -> str:
        """The report category of the results that mirror this source: ``Worst-class metrics
        (Bitterwolf et al., 2022)``."""
        return f"{self.topic} ({self.short})"

    def cite(self, locator: str = "", *, style: Style = "text") -> str:
        """The short citation with ``locator`` (``"Table 1"``) and the link in ``style``:

        * ``text``: ``Bitterwolf et al., 2022, Table 1 (https://...)``
        * ``markdown``: ``[Bitterwolf et al., 2022](https://...), Table 1``
        * ``rst``: ```Bitterwolf et al., 2022 <https://...>`__, Table 1``
        """
        located = f", {locator}" if locator else ""
        if not self.link:
            return f"{self.short}{located}"
        if style == "markdown":
            return f"[{self.short}]({self.link}){located}"
        if style == "rst":
            return f"`{self.short} <{self.link}>`__{located}"
        return f"{self.short}{located} ({self.link})"

    def full(self) -> str:
        """The full reference as one Markdown line: authors, title, venue, year, link and code."""
        published = f"{self.venue}, {self.year}" if self.year is not None else self.venue
        text = " ".join(([f"{', '.join(self.authors)}."] if self.authors else []) + [f"*{self.title}*.", f"{published}."])
        if self.link:
            text += f" <{self.link}>"
        if self.code:
            text += " Code: " + ", ".join(f"[{repo}](https://github.com/{repo})" for repo in self.code) + "."
        return text


REFERENCES: Mapping[str, Reference] = {
    reference.key: reference
    for reference in (
        Reference(
            key="bitterwolf2022",
            authors=("J. Bitterwolf", "A. Meinke", "V. Boreiko", "M. Hein"),
            title="Classifiers Should Do Well Even on Their Worst Classes",
            venue="Shift Happens workshop at ICML",
            year=2022,
            # the workshop's OpenReview page, as the workshop's benchmark code cites it
            link="https://openreview.net/forum?id=QxIXCVYJ2WP",
            topic="Worst-class metrics",
            code=("shift-happens-benchmark/icml-2022", "j-cb/worst_classes"),
        ),
        Reference(
            key="george2020",
            authors=("C. A. George", "E. A. Barrera", "K. P. Nelson"),
            title="Applying the Decisiveness and Robustness Metrics to Convolutional Neural Networks",
            venue="arXiv preprint arXiv:2006.00058",
            year=2020,
            link="https://arxiv.org/abs/2006.00058",
            topic="Decisiveness and robustness",
        ),
        Reference(
            key="medi2024",
            authors=("T. Medi", "J. Grabinski", "M. Keuper"),
            title="Towards Class-wise Robustness Analysis",
            venue="arXiv preprint arXiv:2411.19853",
            year=2024,
            link="https://arxiv.org/abs/2411.19853",
            topic="Class-wise robustness",
        ),
        Reference(
            key="test_catalogue",
            authors=(),
            title="A catalogue of image-classification model tests: subset performance, reference versus "
            "evaluation set (model performance) and transformation tests",
            venue="The documentation of a model-testing product (no author, paper or stable link)",
            year=None,
            link="",
            topic="Image-classification tests",
            label="model-testing catalogue",
        ),
        Reference(
            key="slavutsky2021",
            authors=("Y. Slavutsky", "Y. Benjamini"),
            title="Predicting Classification Accuracy When Adding New Unobserved Classes",
            venue="International Conference on Learning Representations (ICLR)",
            year=2021,
            link="https://arxiv.org/abs/2010.15011",
            topic="Accuracy extrapolation",
            code=("YuliSl/CleaneX",),
        ),
    )
}
"""Every source, by key, in the order the documentation lists them."""


def reference(key: str) -> Reference:
    """The source of ``key``; :class:`~classwise.errors.InputError` naming the known keys otherwise."""
    try:
        return REFERENCES[key]
    except KeyError:
        raise InputError(f"unknown reference {key!r}; expected one of {list(REFERENCES)}", field="reference") from None


def cite(key: str, locator: str = "", *, style: Style = "text") -> str:
    """:meth:`Reference.cite` of the source of ``key``: ``cite("bitterwolf2022", "Table 1")``."""
    return reference(key).cite(locator, style=style)
