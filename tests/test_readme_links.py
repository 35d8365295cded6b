"""Every relative link and image of README.md resolves: the file exists and so does the heading
an anchor names. (The docs/ pages are checked by `mkdocs build --strict` in `make lint`; GitHub
renders README.md, which mkdocs does not build.)"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, punctuation but '-' and '_' dropped,
    spaces to '-'."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors_of(markdown: Path) -> set[str]:
    anchors, fenced = set(), False
    for line in markdown.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6} (.+)", line)):
            anchors.add(github_slug(heading.group(1)))
    return anchors


def relative_links(markdown: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", markdown.read_text(), flags=re.S)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_the_slug_is_github_s() -> None:
    # A heading with code, parentheses, a colon and an apostrophe, as GitHub anchors it.
    heading = "A model's outputs from a file (`source: predictions`)"
    assert github_slug(heading) == "a-models-outputs-from-a-file-source-predictions"
    assert github_slug("The embedded demo (`config/config.yaml`)") == "the-embedded-demo-configconfigyaml"


@pytest.mark.parametrize("target", relative_links(README))
def test_every_relative_link_of_the_readme_resolves(target: str) -> None:
    path, _, anchor = target.partition("#")
    destination = (README.parent / path) if path else README
    assert destination.exists(), f"README.md links to {target}: {destination} does not exist"
    if anchor:
        assert destination.suffix == ".md", f"README.md links to an anchor of a non-Markdown file: {target}"
        assert anchor in anchors_of(destination), f"README.md links to {target}: no such heading in {path}"


def test_the_readme_links_to_the_docs_and_shows_a_small_committed_figure() -> None:
    targets = relative_links(README)
    assert any(target.startswith("docs/uncertainty.md") for target in targets)
    images = [ROOT / target for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", README.read_text())]
    assert images, "README.md shows no figure"
    for image in images:
        assert image.stat().st_size < 100_000, f"{image} is over 100 KB"


def test_no_tracked_text_file_keeps_a_merge_conflict_marker() -> None:
    """A merge that committed its markers renders them in the docs (a '=======' line is a
    heading to Markdown) and breaks code only where Python reads it."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    suffixes = {".md", ".py", ".smk", ".yaml", ".yml", ".toml", ".js", ".css", ".rst", ".txt"}
    marked = [
        f"{name}:{number}"
        for name in tracked
        if Path(name).suffix in suffixes and (ROOT / name).is_file()
        for number, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "<<<<<<<"
    ]
    assert not marked, marked
