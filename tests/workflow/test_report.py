"""The HTML report: the table and image directives of classwise.pipeline.report, and `snakemake --report`
on a tiny run, opened in headless Chromium.

The workflow tests run tests/configs/report.yaml once in a temporary directory, build the report
as `make report` does, load it in Debian's `chromium` (--dump-dom for the page after its
JavaScript ran, --screenshot for what it looks like) and compare what the page shows with the
run's own CSV and PNG files. Chromium is installed with apt-get when it is missing; where that
is impossible (not root, no apt-get, no package index) the tests skip, saying why, and with the
environment variable CI=true every such reason is a failure instead: in CI they must run.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from browser import Visit, browser, check_class_panel, chromium_path, open_offline, per_class_rows, same_percent, shown_interval
from paths import REPO
from snakemake_runner import run_snakemake
from system_packages import tail

from classwise.bench.explorer import CHROMIUM_FLAGS
from classwise.errors import InputError
from classwise.pipeline.report import (
    format_cell,
    image_data_uri,
    preview_note,
    preview_table,
    register_directives,
    significant_digits,
)

CONFIG = REPO / "tests" / "configs" / "report.yaml"
STYLESHEET = REPO / "workflow" / "report" / "report.css"
WINDOW = (1400, 1000)
CATEGORIES = {
    "Worst-class metrics (Bitterwolf et al., 2022)",
    "Decisiveness and robustness (George et al., 2020)",
    "Class-wise robustness (Medi et al., 2024)",
    "Image-classification tests (model-testing catalogue)",
    "Accuracy extrapolation (Slavutsky and Benjamini, 2021)",
}
PAPERS = [re.search(r"\((.*)\)", name).group(1) for name in CATEGORIES]
# Results of the run that are not in the report: the points behind each extrapolation figure
# (one row per k, method and repetition; the figure and its RMSE table are in the report) and
# every class-drop test (one row per model, shift and class, a million at ImageNet's scale; the
# counts per class and the figure are in the report).
NOT_REPORTED = {"extrapolation_curves.csv", "class_drops.csv"}


# --- classwise.pipeline.report, without Snakemake ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.012987012987012988", "0.01299"),
        ("0.9143492769", "0.9143"),
        ("-0.50000000001", "-0.5"),
        ("123456.789", "123500"),
        ("1.2345678e-07", "1.235e-07"),
        ("1234567.891", "1.235e+06"),
        # shown as written: up to 6 digits, integers (counts), pre-formatted paper cells, text
        ("1.0", "1.0"),
        ("100.00", "100.00"),
        ("0.123456", "0.123456"),
        (".708", ".708"),
        ("12345678901", "12345678901"),
        ("8.00 (sunglass)", "8.00 (sunglass)"),
        ("0.913 / 0.913", "0.913 / 0.913"),
        ("pgd_linf_eps0.1", "pgd_linf_eps0.1"),
        ("", ""),
    ],
)
def test_format_cell_rounds_only_long_decimals(text: str, expected: str) -> None:
    assert format_cell(text, 4) == expected


def test_rounded_cells_keep_the_value_to_the_digits_asked() -> None:
    rng = np.random.default_rng(0)
    for value in np.concatenate([rng.uniform(-1, 1, 200), 10.0 ** rng.uniform(-4, 5, 200)]):
        for digits in (2, 4, 6):
            text = repr(float(value))
            shown = format_cell(text, digits)
            if significant_digits(text) <= digits + 2:
                assert shown == text
            else:
                assert float(shown) == pytest.approx(float(f"{value:.{digits}g}"), rel=1e-12)


def test_significant_digits() -> None:
    assert [significant_digits(t) for t in ("0.0120", "1.5e-3", "100.25", ".708", "-0.5")] == [3, 2, 5, 3, 1]


def _write_csv(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def test_preview_truncates_rows_selects_columns_and_says_so(tmp_path: Path) -> None:
    rows = [["name", "value", "note, quoted"]] + [[f"c{i}", repr(i / 7), "a, b"] for i in range(12)]
    path = _write_csv(tmp_path / "t.csv", rows)
    whole = preview_table(path, max_rows=100)
    assert whole.header == rows[0] and whole.n_rows == 12 and not whole.truncated
    assert whole.rows[3] == ["c3", f"{3 / 7:.4g}", "a, b"]
    assert preview_note(whole) == ""
    part = preview_table(path, max_rows=5, columns=["value", "name"], digits=2)
    assert part.header == ["value", "name"]
    assert part.rows == [[f"{i / 7:.2g}" if i else "0.0", f"c{i}"] for i in range(5)]
    assert part.truncated and part.n_hidden_columns == 1
    assert preview_note(part).startswith("Shown: the first 5 of 12 rows and 2 of 3 columns")


def test_preview_pads_short_rows(tmp_path: Path) -> None:
    path = _write_csv(tmp_path / "t.csv", [["a", "b", "c"], ["1"], ["1", "2", "3"]])
    assert preview_table(path).rows == [["1", "", ""], ["1", "2", "3"]]


def test_preview_errors_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.csv: cannot read"):
        preview_table(tmp_path / "missing.csv")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(InputError, match=r"empty\.csv: expected a CSV table with a header row"):
        preview_table(tmp_path / "empty.csv")
    path = _write_csv(tmp_path / "t.csv", [["a", "b"], ["1", "2"]])
    with pytest.raises(InputError, match=r"t\.csv: field 'columns': names columns \['z'\]"):
        preview_table(path, columns=["a", "z"])
    with pytest.raises(InputError, match="max-rows"):
        preview_table(path, max_rows=0)


def test_image_data_uri_round_trips_and_rejects_other_files(tmp_path: Path) -> None:
    data = bytes(range(256)) * 3
    (tmp_path / "f.png").write_bytes(data)
    uri = image_data_uri(tmp_path / "f.png")
    assert uri.startswith("data:image/png;base64,")
    assert base64.b64decode(uri.split(",", 1)[1]) == data
    (tmp_path / "f.csv").write_text("a\n")
    with pytest.raises(InputError, match=r"f\.csv: field 'suffix'"):
        image_data_uri(tmp_path / "f.csv")


def test_directives_render_plain_text_cells_and_embedded_images(tmp_path: Path) -> None:
    from docutils.core import publish_parts

    register_directives()
    table = _write_csv(tmp_path / "t.csv", [["metric", "m"], ["1.", "*x*"], ["A", "0.12345678"]])
    (tmp_path / "f.png").write_bytes(b"\x89PNG fake")
    source = f".. classwise-table:: {table}\n\n.. classwise-image:: {tmp_path / 'f.png'}\n   :alt: a figure\n"
    body = publish_parts(source, writer="html")["body"]
    page = _parse(body)
    # cells are text, not markup: "1." is no list and "*x*" no emphasis
    assert page.cells == ["metric", "m", "1.", "*x*", "A", "0.1235"]
    assert "<ol" not in body and "<em>" not in body
    assert page.images == [("data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode(), "a figure")]


# --- the report of a tiny run -----------------------------------------------------------------


def _snakemake(workdir: Path, *args: str) -> None:
    result = run_snakemake(workdir, CONFIG, *args)
    assert result.returncode == 0, f"{' '.join(args) or 'run'} failed:\n{tail(result.stdout + result.stderr, 40)}"


def _headless(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium,
        "--headless",
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        # let the report's JavaScript and transitions finish before the DOM or pixels are taken
        "--virtual-time-budget=10000",
        *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, f"chromium failed (exit {result.returncode}):\n{tail(result.stderr)}"
    return result


@dataclass
class Page:
    """What an HTML document shows: visible text, table cells and images (src, alt);
    scripts and styles left out."""

    text: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)
    images: list[tuple[str, str | None]] = field(default_factory=list)
    tags: dict[str, int] = field(default_factory=dict)


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.page = Page()
        self._hidden = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.page.tags[tag] = self.page.tags.get(tag, 0) + 1
        if tag in ("script", "style"):
            self._hidden += 1
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            values = dict(attrs)
            self.page.images.append((values.get("src") or "", values.get("alt")))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self.page.cells.append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if data.strip():
            self.page.text.append(" ".join(data.split()))
        if self._cell is not None:
            self._cell.append(data)


def _parse(document: str) -> Page:
    parser = _PageParser()
    parser.feed(document)
    parser.close()
    return parser.page


@dataclass
class Report:
    workdir: Path
    path: Path
    html: str
    results: dict
    categories: dict
    dom: Page
    screenshot: Path

    @property
    def run(self) -> Path:
        return self.workdir / "results"


def _script_json(document: str, name: str) -> dict:
    """The JSON object the report assigns to a global JavaScript variable."""
    match = re.search(rf"\b{name} = (\{{.*?\}});\s*\n", document)
    assert match, f"no `{name} = {{...}};` in the report"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    chromium = chromium_path("HTML report test")
    workdir = tmp_path_factory.mktemp("report-run")
    _snakemake(workdir)
    # as `make report` builds it
    _snakemake(workdir, "--report", "report.html", "--report-stylesheet", str(STYLESHEET))
    path = workdir / "report.html"
    # open a copy away from the run: a self-contained report needs nothing beside it
    alone = tmp_path_factory.mktemp("report-alone") / "report.html"
    shutil.copyfile(path, alone)
    profile = tmp_path_factory.mktemp("chromium-profile")
    dom = _headless(chromium, profile, "--dump-dom", alone.as_uri()).stdout
    screenshot = alone.with_suffix(".png")
    _headless(chromium, profile, f"--screenshot={screenshot}", alone.as_uri())
    document = path.read_text()
    return Report(
        workdir=workdir,
        path=path,
        html=document,
        results=_script_json(document, "results"),
        categories=_script_json(document, "categories"),
        dom=_parse(dom),
        screenshot=screenshot,
    )


def _read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


@pytest.mark.workflow
def test_report_is_one_self_contained_html_file(report: Report) -> None:
    assert report.html.lstrip().lower().startswith("<!doctype html>")
    assert not list(report.workdir.glob("report*.zip"))
    # nothing is loaded from outside the file: no external scripts, styles or images
    assert not re.search(r"<script[^>]*\bsrc=", report.html)
    assert not re.search(r"<link[^>]*\bhref=", report.html)
    for src, _ in report.dom.images:
        assert src.startswith("data:"), src[:80]
    for entry in report.results.values():
        assert entry["data_uri"].startswith("data:"), entry["filename"]


@pytest.mark.workflow
def test_every_table_and_figure_of_the_run_is_in_its_paper_category(report: Report) -> None:
    assert set(report.categories) == CATEGORIES
    for name, subcategories in report.categories.items():
        expected = {"digits", "simulation"} if name.startswith("Accuracy extrapolation") else {"digits"}
        assert set(subcategories) == expected, name
    # every CSV table and PNG figure the run wrote below tables/, figures/ and analyses/
    written = {
        str(path.relative_to(report.workdir))
        for folder in ("tables", "figures", "analyses")
        for path in (report.run / folder).rglob("*")
        if path.suffix in (".csv", ".png") and path.name not in NOT_REPORTED
    }
    reported = {path for paths in report.categories.values() for files in paths.values() for path in files}
    assert written == reported
    assert set(report.results) == reported
    # one per paper item: e.g. every (label view, shift) has its worst-class table
    # (the bootstrap is on: beside it the table with intervals and the worst-class figure; one
    # model, so no model comparison)
    worst = report.categories["Worst-class metrics (Bitterwolf et al., 2022)"]["digits"]
    assert sorted(worst) == sorted(
        f"results/{folder}/digits/{view}/{shift}/{name}"
        for view, shift in [
            ("original", "clean"),
            ("original", "gaussian_noise_s3"),
            ("original", "pgd_linf_eps0.1"),
            ("cleaned_cl", "clean"),
        ]
        for folder, name in [
            ("tables", "worst_class.csv"),
            ("tables", "worst_class_intervals.csv"),
            ("figures", "worst_probability.png"),
        ]
    )
    # the labels say the label view, shift and model of each result
    for path, entry in report.results.items():
        assert set(entry["labels"]) == {"result", "label view", "shift", "model"}, path
    entry = report.results["results/figures/digits/original/pgd_linf_eps0.1/reliability_linear.png"]
    assert entry["labels"] == {
        "result": "reliability figure (Figure 1)",
        "label view": "original",
        "shift": "pgd_linf_eps0.1",
        "model": "linear",
    }
    entry = report.results["results/figures/digits/robustness/mean_confusion/pgd_linf_eps0.1.png"]
    assert entry["labels"]["shift"] == "pgd_linf_eps0.1"
    entry = report.results["results/tables/digits/cleaned_cl/clean/worst_class.csv"]
    assert entry["labels"]["result"] == "worst-class metrics (Table 2)"


@pytest.mark.workflow
def test_every_caption_says_what_it_shows_and_which_paper_item_it_mirrors(report: Report) -> None:
    for path, entry in report.results.items():
        caption = html.unescape(re.sub(r"<[^>]+>", " ", entry["caption"]))
        assert "system-message" not in entry["caption"], f"{path}: reStructuredText error in its caption"
        assert any(paper in caption for paper in PAPERS), path
        assert re.search(r"\b(Table|Figure|Figures)\s+\d|Subset Performance|Transformations|Model Performance", caption), path
    caption = report.results["results/figures/digits/original/clean/per_class_recall.png"]["caption"]
    assert "Figure 1" in caption
    caption = report.results["results/figures/digits/original/gaussian_noise_s3/per_class_recall.png"]["caption"]
    assert "Figure 3" in caption
    caption = report.results["results/tables/digits/cleaned_cl/clean/worst_class.csv"]["caption"]
    assert "Table 2" in caption


@pytest.mark.workflow
def test_caption_tables_show_the_csv_of_the_run(report: Report) -> None:
    # a table of pre-formatted paper cells: shown exactly as written
    relative = "results/tables/digits/original/clean/worst_class.csv"
    shown = _parse(report.results[relative]["caption"]).cells
    expected = [cell for row in _read_csv(report.workdir / relative) for cell in row]
    assert shown == expected
    # a long full-precision table: the first rows, each number to 4 significant digits
    relative = "results/tables/digits/robustness/classwise.csv"
    rows = _read_csv(report.workdir / relative)
    caption = report.results[relative]["caption"]
    shown = _parse(caption).cells
    width = len(rows[0])
    n_shown = min(40, len(rows) - 1)
    assert len(shown) == width * (1 + n_shown)
    assert shown[:width] == rows[0]
    for i, row in enumerate(rows[1 : 1 + n_shown], start=1):
        for j, cell in enumerate(row):
            value = shown[i * width + j]
            if rows[0][j] in ("accuracy", "cfps"):
                assert float(value) == pytest.approx(float(cell), rel=5e-4, abs=1e-12), (i, j)
            else:
                assert value == cell, (i, j)
    if len(rows) - 1 > n_shown:
        assert f"the first {n_shown} of {len(rows) - 1} rows" in caption


@pytest.mark.workflow
def test_rendered_page_shows_the_categories_the_headline_table_and_a_figure_of_the_run(report: Report) -> None:
    text = " ".join(report.dom.text)
    assert "classwise report" in text
    for name in CATEGORIES:
        assert name in text, name
    # the headline table: the clean worst-class table of the run, cell for cell
    cells = report.dom.cells
    # and, further down, the same with intervals (the bootstrap is on)
    for name in ("worst_class.csv", "worst_class_intervals.csv"):
        rows = _read_csv(report.run / "tables" / "digits" / "original" / "clean" / name)
        flat = [cell for row in rows for cell in row]
        assert any(cells[i : i + len(flat)] == flat for i in range(len(cells) - len(flat) + 1)), (name, cells[:40])
    # the headline figure: the run's class-wise accuracy bars, embedded byte for byte
    png = (report.run / "figures" / "digits" / "original" / "clean" / "per_class_recall.png").read_bytes()
    embedded = [src for src, _ in report.dom.images if src.startswith("data:image/png;base64,")]
    assert any(base64.b64decode(src.split(",", 1)[1]) == png for src in embedded)
    # the rule graph was drawn
    assert report.dom.tags.get("canvas", 0) + report.dom.tags.get("svg", 0) > 0


@pytest.mark.workflow
def test_screenshot_is_a_rendered_page_not_a_blank_one(report: Report) -> None:
    from PIL import Image

    with Image.open(report.screenshot) as image:
        assert image.size == WINDOW
        pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    colours = np.unique(pixels, axis=0)
    # text, the table, the figure and the rule graph: many colours
    assert len(colours) > 500, len(colours)
    # What a blank or half-drawn page lacks, counted directly rather than as the share of the
    # commonest colour: that share depended on whether the screenshot caught the menu's grey
    # backdrop, which it does or not with the machine's load (the page is 90 % white without it).
    dark_text = int((pixels.astype(int).sum(axis=1) < 150).sum())
    figure_blue = int((np.abs(pixels.astype(int) - (31, 119, 180)).sum(axis=1) < 30).sum())  # matplotlib's C0 bars
    assert dark_text > 10_000, dark_text
    assert figure_blue > 10_000, figure_blue


# --- the explorer of the same run (results/explorer.html) ----------------------------------------


@pytest.fixture(scope="module")
def explorer(report: Report, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Visit]:
    """The run's explorer, copied away from the run (it needs nothing beside it) and opened offline."""
    alone = tmp_path_factory.mktemp("explorer-alone") / "explorer.html"
    shutil.copyfile(report.run / "explorer.html", alone)
    with browser("explorer test") as launched:
        yield open_offline(launched, alone)


@pytest.mark.workflow
def test_the_readme_and_the_report_link_the_explorer(report: Report) -> None:
    readme = (report.run / "README.md").read_text()
    assert "[`explorer.html`](explorer.html)" in readme
    assert re.search(r"\| `explorer\.html` \| every class, model and shift in one page", readme)
    # the report's landing page links it, relative to the report make report writes beside it
    assert re.search(r'href=\\"explorer\.html\\"', report.html)
    assert (report.run / "explorer.html").is_file()


@pytest.mark.workflow
def test_the_explorer_is_one_file_that_loads_nothing_and_starts(report: Report, explorer: Visit) -> None:
    document = (report.run / "explorer.html").read_text()
    assert document.lower().startswith("<!doctype html>")
    assert not re.search(r"<(script|img|iframe)[^>]*\bsrc=", document) and not re.search(r"<link\b", document)
    assert "Content-Security-Policy" in document
    assert explorer.requests == [] and explorer.errors == [] and explorer.dialogs == []
    options = explorer.page.locator("#view-select option").all_text_contents()
    assert options == ["digits \u00b7 original labels", "digits \u00b7 cleaned_cl labels"]


@pytest.mark.workflow
def test_typing_a_class_shows_its_numbers_from_the_csv_outputs(report: Report, explorer: Visit) -> None:
    page = explorer.page
    search = page.locator("#class-search")
    search.fill("")
    search.press_sequentially("8")
    page.locator("#class-name", has_text="8").wait_for(timeout=0)
    assert page.locator("#class-panel").get_attribute("data-class") == "8"
    shifts = ["clean", "gaussian_noise_s3", "pgd_linf_eps0.1"]
    assert page.locator("#class-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.shift)") == shifts
    assert check_class_panel(page, report.run / "metrics" / "digits", "original", shifts, ["linear"], 8) == 21
    # the label view of one shift: its own CSVs
    page.locator("#view-select").select_option(label="digits \u00b7 cleaned_cl labels")
    search.fill("")
    search.press_sequentially("3")
    page.locator("#class-name", has_text="3").wait_for(timeout=0)
    assert check_class_panel(page, report.run / "metrics" / "digits", "cleaned_cl", ["clean"], ["linear"], 3) == 7
    page.locator("#view-select").select_option(label="digits \u00b7 original labels")


@pytest.mark.workflow
def test_the_models_x_shifts_table_is_the_shift_summary_with_intervals_and_sorts(report: Report, explorer: Visit) -> None:
    page = explorer.page
    page.locator("#view-select").select_option(label="digits \u00b7 original labels")
    summary = list(csv.DictReader(open(report.run / "tables" / "digits" / "robustness" / "shift_summary.csv", newline="")))
    rows = page.locator("#summary-table tbody tr")
    assert rows.count() == len(summary) == 3

    def cells(i: int) -> dict[str, str]:
        return (
            rows.nth(i)
            .locator("td")
            .evaluate_all("cells => Object.fromEntries(cells.map(c => [c.dataset.column, c.textContent]))")
        )

    for i, truth in enumerate(summary):
        shown = cells(i)
        assert (shown["shift"], shown["model"], shown["n"]) == (truth["shift"], truth["model"], truth["n"])
        assert same_percent(shown["accuracy"], truth["accuracy"])
        assert same_percent(shown["worst_class_accuracy"], truth["worst_class_accuracy"])
        tied = int(truth["worst_class_tied"])
        assert shown["worst_class"] == truth["worst_class_name"] + (f"; {tied} tied" if tied > 1 else "")
        if truth["pairing"] == "reference":
            assert shown["accuracy_change"] == shown["worst_class_accuracy_change"] == "" and shown["pairing"] == "reference"
        else:
            assert same_percent(shown["accuracy_change"], truth["accuracy_change"])
            assert same_percent(shown["worst_class_accuracy_change"], truth["worst_class_accuracy_change"])
            assert shown["pairing"] == truth["pairing"] == "same samples"
        metrics = json.loads(
            (report.run / "metrics" / "digits" / "original" / "linear" / truth["shift"] / "worst_class.json").read_text()
        )
        for column, entry, key in (("accuracy_interval", "A", "ci"), ("worst_class_interval", "WCA", "ci_bound")):
            low, high = shown_interval(shown[column])
            assert same_percent(low, metrics["metrics"][entry][key][0]) and same_percent(high, metrics["metrics"][entry][key][1])
    # sorting: click A % twice, lowest then highest first
    header = page.locator("#summary-table th[data-column=accuracy]")
    header.click()
    assert header.get_attribute("aria-sort") == "ascending"
    ascending = [cells(i)["shift"] for i in range(rows.count())]
    assert ascending == [row["shift"] for row in sorted(summary, key=lambda row: float(row["accuracy"]))]
    header.click()
    assert [cells(i)["shift"] for i in range(rows.count())] == ascending[::-1]


@pytest.mark.workflow
def test_the_worst_classes_are_listed_as_the_tables_rank_them(report: Report, explorer: Visit) -> None:
    page = explorer.page
    page.locator("#view-select").select_option(label="digits \u00b7 original labels")
    page.locator("#worst-shift").select_option(label="pgd_linf_eps0.1")
    truth = per_class_rows(report.run / "metrics" / "digits", "original", "linear", "pgd_linf_eps0.1")
    ranked = sorted(range(len(truth)), key=lambda c: (float(truth[c]["recall"]), c))
    shown = page.locator("#worst-table tbody tr")
    assert [int(c) for c in shown.evaluate_all("rows => rows.map(r => r.dataset.class)")] == ranked[:10]
    for i, c in enumerate(ranked[:10]):
        assert same_percent(shown.nth(i).locator("[data-field=accuracy]").text_content(), truth[c]["recall"])
    lowest = [c for c in ranked if float(truth[c]["recall"]) == float(truth[ranked[0]]["recall"])]
    ties = page.locator("#worst-ties").text_content()
    assert (f"{len(lowest)} classes tie at the lowest accuracy" in ties) == (len(lowest) > 1)


@pytest.mark.workflow
def test_the_heatmap_draws_every_class_by_mean_accuracy_and_hovering_names_the_cell(report: Report, explorer: Visit) -> None:
    page = explorer.page
    page.locator("#view-select").select_option(label="digits \u00b7 original labels")
    shifts = ["clean", "gaussian_noise_s3", "pgd_linf_eps0.1"]
    recall = np.array(
        [
            [float(row["recall"]) for row in per_class_rows(report.run / "metrics" / "digits", "original", "linear", s)]
            for s in shifts
        ]
    )
    # rows: lowest mean accuracy first, ties to the lower index
    order = sorted(range(recall.shape[1]), key=lambda c: (recall[:, c].mean(), c))
    canvas = page.locator("#heatmap")
    assert canvas.get_attribute("data-window") == "0.00,10.00,0.00,3.00"
    # the top-left cell (the plot starts 170 px right of and 110 px below the canvas's corner):
    # the hardest class under the easiest shift (highest mean accuracy)
    easiest = shifts[int(np.argmax(recall.mean(axis=1)))]
    canvas.hover(position={"x": 180, "y": 120})
    tooltip = page.locator("#heatmap-tooltip:not([hidden])")
    tooltip.wait_for(timeout=0)
    lines = tooltip.locator("div").all_text_contents()
    assert lines[0] == per_class_rows(report.run / "metrics" / "digits", "original", "linear", easiest)[order[0]]["name"]
    assert lines[1] == f"shift: {easiest}"
    truth = per_class_rows(report.run / "metrics" / "digits", "original", "linear", easiest)[order[0]]
    assert same_percent(re.match(r"accuracy: (\S+) %", lines[3]).group(1), truth["recall"])
    assert lines[5] == f"n = {truth['support']}"
    # scrolling zooms the classes around the pointer
    page.mouse.wheel(0, -300)
    page.locator("#heatmap:not([data-window='0.00,10.00,0.00,3.00'])").wait_for(timeout=0)
    r0, r1, c0, c1 = map(float, canvas.get_attribute("data-window").split(","))
    assert r1 - r0 < 10 and (c0, c1) == (0.0, 3.0)
