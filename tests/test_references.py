"""The papers are cited by author, year, title, venue and link (classwise.references), never by a
file a user does not have; the captions, the report and the run's README carry the citation, and
say when their corruptions are classwise's own (made on the fly), not the published -C images."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from paths import REPO
from snakemake.iocontainers import Namedlist

from classwise.data.shift_sets.base import COMMON_CORRUPTIONS
from classwise.errors import InputError
from classwise.outputs import OUTPUTS
from classwise.pipeline.captions import CAPTIONS, caption_of
from classwise.pipeline.report import register_directives
from classwise.references import REFERENCES, Reference, cite, reference
from classwise.shifts.corruptions import CORRUPTIONS, OWN_DEFINITIONS_NOTE, made_on_the_fly, own_definitions_note
from classwise.shifts.spec import expand_shifts
from classwise.steps.reports import results_readme_step

#: The identifiers of the sources, checked by hand (arXiv abstracts; the worst-class paper has
#: no arXiv identifier we could verify: its OpenReview page, as the workshop's code cites it).
LINKS = {
    "bitterwolf2022": "https://openreview.net/forum?id=QxIXCVYJ2WP",
    "george2020": "https://arxiv.org/abs/2006.00058",
    "medi2024": "https://arxiv.org/abs/2411.19853",
    "slavutsky2021": "https://arxiv.org/abs/2010.15011",
    "test_catalogue": "",
}
SHORT = {
    "bitterwolf2022": "Bitterwolf et al., 2022",
    "george2020": "George et al., 2020",
    "medi2024": "Medi et al., 2024",
    "test_catalogue": "model-testing catalogue",
    "slavutsky2021": "Slavutsky and Benjamini, 2021",
}

# --- no file names, no folders outside the repository ---------------------------------------------

#: The names of the paper texts the project was written from (stems: with or without ``.txt``),
#: and the folder they sit in. This file is the one place allowed to spell them.
PAPER_FILES = re.compile(
    r"worst-class-metrics|decisiveness-robustness|accuracy-extrapolation-rroc|classwise-robustness-cfps"
    r"|image-classification-tests|shared/papers"
)
#: Folders outside the repository; the tests may read the shared test data beside it, nothing else may.
OUTSIDE = re.compile(r"\.\./shared/|/work/")


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=False)
    if listed.returncode == 0:
        paths = [REPO / name for name in listed.stdout.split("\0") if name]
    else:  # a copy without .git: what git would track
        roots = ["src", "docs", "workflow", "scripts", "config", "tests", "tools", "envs", "profiles"]
        paths = [p for root in roots for p in (REPO / root).rglob("*") if "__pycache__" not in p.parts]
        paths += [p for p in REPO.iterdir() if p.is_file() and not p.name.startswith(".")]
    texts = []
    for path in paths:
        if not path.is_file() or path == Path(__file__).resolve():
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # images, archives
            continue
        texts.append(path)
    return texts


def test_no_tracked_file_names_a_paper_file_or_a_folder_outside_the_repository() -> None:
    files = _tracked_text_files()
    assert any(path.name == "captions.py" for path in files) and any(path.suffix == ".rst" for path in files)
    offences = []
    for path in files:
        relative = path.relative_to(REPO)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PAPER_FILES.search(line) or (relative.parts[0] != "tests" and OUTSIDE.search(line)):
                offences.append(f"{relative}:{number}: {line.strip()[:100]}")
    assert not offences, "cite the paper (classwise.references), not its file:\n" + "\n".join(offences)


# --- the references ---------------------------------------------------------------------------


def test_each_source_s_short_citation_and_link() -> None:
    assert list(REFERENCES) == list(SHORT)
    for key, source in REFERENCES.items():
        assert source.key == key and source.short == SHORT[key] and source.link == LINKS[key]
        assert source.title and source.venue
    assert reference("slavutsky2021").code == ("YuliSl/CleaneX",)
    assert "shift-happens-benchmark/icml-2022" in reference("bitterwolf2022").code


def test_short_citations_follow_the_author_count() -> None:
    def one(*authors: str, year: int | None = 2020, label: str = "") -> Reference:
        return Reference("k", authors, "T", "V", year, "", "topic", label=label)

    assert one("A. Smith").short == "Smith, 2020"
    assert one("A. Smith", "B. Jones").short == "Smith and Jones, 2020"
    assert one("A. Smith", "B. Jones", "C. D. Brown").short == "Smith et al., 2020"
    assert one("A. Smith", year=None).short == "Smith"
    assert one(label="a catalogue", year=None).short == "a catalogue"


def test_cite_in_each_style_keeps_the_locator() -> None:
    link = LINKS["bitterwolf2022"]
    assert cite("bitterwolf2022", "Table 1") == f"Bitterwolf et al., 2022, Table 1 ({link})"
    assert cite("bitterwolf2022", "Table 1", style="markdown") == f"[Bitterwolf et al., 2022]({link}), Table 1"
    assert cite("bitterwolf2022", "Table 1", style="rst") == f"`Bitterwolf et al., 2022 <{link}>`__, Table 1"
    assert cite("george2020") == f"George et al., 2020 ({LINKS['george2020']})"
    for style in ("text", "markdown", "rst"):  # no link to give
        assert cite("test_catalogue", "Transformations", style=style) == "model-testing catalogue, Transformations"  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"field 'reference'.*unknown reference 'smith1999'"):
        cite("smith1999")


def test_docs_and_readme_give_every_full_reference() -> None:
    page = (REPO / "docs" / "references.md").read_text()
    readme = (REPO / "README.md").read_text()
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    assert {"References": "references.md"} in nav
    for source in REFERENCES.values():
        assert f"\n## {source.short[0].upper()}{source.short[1:]}\n\n{source.full()}\n" in page, source.key
        assert f"* {source.full()}\n" in readme, source.key
        assert source.title in page and (not source.link or source.link in page)


# --- corruptions made on the fly ---------------------------------------------------------------


def test_only_the_registry_s_corruption_shifts_are_made_on_the_fly() -> None:
    specs = expand_shifts({"corruptions": sorted(CORRUPTIONS), "severities": [1, 2, 3, 4, 5]})
    on_the_fly = [name for name, spec in specs.items() if spec.kind == "corruption"]
    assert len(on_the_fly) == 5 * len(CORRUPTIONS) and all(made_on_the_fly(name) for name in on_the_fly)
    assert not any(made_on_the_fly(name) for name in ("clean", "pgd_linf_eps0.1", "pgd_targeted_3", "snow_s6", "snow_s"))
    # published copies are named <entry>_<corruption>_s<severity>: whatever the entry, no registry
    # name ends in one of their corruptions
    assert not [(r, c) for r in CORRUPTIONS for c in COMMON_CORRUPTIONS if r.endswith(f"_{c}")]
    assert not made_on_the_fly("cifar10_c_gaussian_noise_s3") and not made_on_the_fly("imagenet_c_snow_s5")
    assert own_definitions_note(["clean", "gaussian_noise_s3"]) == OWN_DEFINITIONS_NOTE
    assert own_definitions_note(["clean", "imagenet_c_gaussian_noise_s3"]) == own_definitions_note([]) == ""
    assert "not comparable with published -C results" in OWN_DEFINITIONS_NOTE


# --- the table captions (classwise.pipeline.captions) -----------------------------------------

BOOTSTRAP = {"replicates": 200, "confidence": 0.95, "seed": 0}
CLASS_DROPS = {"q": 0.05, "adjustment": "bh", "unpaired_test": "fisher", "confidence": 0.95}
#: Each caption's source and locator, and the parameters its job has.
CAPTION_SOURCES: dict[str, tuple[str, str, dict]] = {
    "subset_tests": (
        "test_catalogue",
        "Subset Performance",
        {"options": {"shift": "SHIFT", "n_resamples": 99, "correction": "holm", "alpha": 0.05, "min_effect": 0.02}},
    ),
    "reference_tests": ("test_catalogue", "Model Performance", {"reference": "clean", "shifts": ["clean", "SHIFT"]}),
    "reference_tests_summary": ("test_catalogue", "Model Performance", {"reference": "clean"}),
    "extrapolation_table": ("slavutsky2021", "Figure 3", {"shift": "SHIFT", "k1": 5, "repetitions": 3}),
    "extrapolation_summary": ("slavutsky2021", "Figure 3 (D)", {"k1": 5, "repetitions": 3}),
    "simulation_table": ("slavutsky2021", "Figure 2", {"sigma2": 1.0, "k2": 200, "repetitions": 3}),
    "transformation_tests": ("test_catalogue", "Transformations", {"shifts": ["SHIFT"]}),
    "worst_class_table": ("bitterwolf2022", "Table 1", {"bootstrap": BOOTSTRAP}),
    "worst_class_intervals_table": ("bitterwolf2022", "Table 1", {"bootstrap": BOOTSTRAP}),
    "model_comparison_table": ("bitterwolf2022", "Table 1", {"bootstrap": BOOTSTRAP}),
    "model_ranking_table": ("bitterwolf2022", "Table 1", {"bootstrap": BOOTSTRAP}),
    "class_drops_table": ("medi2024", "Figure 3", {"settings": CLASS_DROPS, "shifts": ["SHIFT"]}),
    "class_drop_counts": ("medi2024", "Figure 3", {"settings": CLASS_DROPS, "shifts": ["SHIFT"]}),
    "decisiveness_table": ("george2020", "Table 1", {"bootstrap": BOOTSTRAP}),
    "decisiveness_intervals_table": ("george2020", "Table 1", {"bootstrap": BOOTSTRAP}),
    "gamma_sweep_table": ("george2020", "Table 2", {"bootstrap": BOOTSTRAP}),
    "robust_fairness_table": ("medi2024", "Figure 3", {}),
    "transfer_matrix": ("medi2024", "Figure 3", {}),
}
#: The captions whose table can hold a corruption made on the fly (the others: attacks, summaries).
CAPTIONS_WITH_SHIFTS = {key for key, (_, _, params) in CAPTION_SOURCES.items() if "SHIFT" in repr(params)} | {
    "worst_class_table",
    "worst_class_intervals_table",
    "model_comparison_table",
    "model_ranking_table",
    "decisiveness_table",
    "decisiveness_intervals_table",
    "gamma_sweep_table",
}


def _job(rule: str, shift: str, params: dict) -> SimpleNamespace:
    wildcards = {"dataset": "digits", "labels": "original", "model": "linear", "shift": shift}
    filled = yaml.safe_load(yaml.safe_dump(params).replace("SHIFT", shift))
    return SimpleNamespace(rule=rule, wildcards=Namedlist(fromdict=wildcards), params=Namedlist(fromdict=filled))


@pytest.mark.parametrize("key", sorted(CAPTIONS))
def test_every_table_caption_cites_its_source_and_says_when_its_corruptions_are_classwise_s(key: str) -> None:
    assert set(CAPTIONS) == set(CAPTION_SOURCES)
    source, locator, params = CAPTION_SOURCES[key]
    rule, table = OUTPUTS[key].rule, OUTPUTS[key].part
    corrupted = caption_of(_job(rule, "gaussian_noise_s3", params), table)
    clean = caption_of(_job(rule, "clean", params), table)
    for text in (corrupted, clean):
        assert re.search(rf"{re.escape(SHORT[source])}, {re.escape(locator)}(?!\w)", text), text
        assert LINKS[source] in text
        assert ".txt" not in text
    assert (OWN_DEFINITIONS_NOTE in corrupted) == (key in CAPTIONS_WITH_SHIFTS), corrupted
    assert OWN_DEFINITIONS_NOTE not in clean
    published = caption_of(_job(rule, "cifar10_c_gaussian_noise_s3", params), table)
    assert OWN_DEFINITIONS_NOTE not in published


def test_the_cleaned_label_table_cites_table_2() -> None:
    job = SimpleNamespace(
        rule="aggregate_worst_class_tables",
        wildcards=Namedlist(fromdict={"dataset": "d", "labels": "cleaned_cl", "shift": "clean"}),
        params=Namedlist(fromdict={"bootstrap": BOOTSTRAP}),
    )
    assert "Bitterwolf et al., 2022, Table 2 (cleaned labels)" in caption_of(job)


# --- the report's captions (workflow/report/*.rst, rendered as Snakemake does) -----------------

#: Each report caption's source (the landing page, workflow.rst, names several).
REPORT_SOURCES = {
    "accuracy_spread": "medi2024",
    "severity_curves_figure": "medi2024",
    "severity_curves_table": "medi2024",
    "class_shift_accuracy": "medi2024",
    "class_shift_cfps": "medi2024",
    "classwise_robustness_figure": "medi2024",
    "classwise_table": "medi2024",
    "confusion_figure": "medi2024",
    "corruption_errors_table": "medi2024",
    "corruption_grid": "medi2024",
    "decisiveness_intervals_table": "george2020",
    "decisiveness_table": "george2020",
    "extrapolation_figure": "slavutsky2021",
    "extrapolation_summary": "slavutsky2021",
    "extrapolation_table": "slavutsky2021",
    "gamma_sweep_table": "george2020",
    "mean_confusion": "medi2024",
    "model_comparison_table": "bitterwolf2022",
    "model_ranking_table": "bitterwolf2022",
    "class_drop_counts": "medi2024",
    "class_drops_figure": "medi2024",
    "per_class_cfps": "medi2024",
    "per_class_recall": "medi2024",
    "prediction_similarity": "medi2024",
    "reference_tests": "test_catalogue",
    "reference_tests_summary": "test_catalogue",
    "reliability_figure": "george2020",
    "robust_fairness_figure": "medi2024",
    "robust_fairness_table": "medi2024",
    "shift_summary_table": "medi2024",
    "simulation_figure": "slavutsky2021",
    "simulation_table": "slavutsky2021",
    "subset_tests": "test_catalogue",
    "subset_tests_all": "test_catalogue",
    "targeted_success_figure": "medi2024",
    "targeted_success_table": "medi2024",
    "transfer_matrix": "medi2024",
    "transformation_tests": "test_catalogue",
    "worst_class_intervals_table": "bitterwolf2022",
    "worst_class_table": "bitterwolf2022",
    "worst_classes_by_shift": "medi2024",
    "worst_probability_figure": "bitterwolf2022",
}
#: The captions of results that never hold a corruption made on the fly (attacks, summaries, the
#: simulation) and the one that only does (the corruption grid).
NO_NOTE = {
    "extrapolation_summary",
    "mean_confusion",
    "prediction_similarity",
    "reference_tests_summary",
    "robust_fairness_figure",
    "robust_fairness_table",
    "simulation_figure",
    "simulation_table",
    "targeted_success_figure",
    "targeted_success_table",
    "transfer_matrix",
}
ALWAYS_NOTE = {"corruption_grid"}


def _render(caption: Path, shift: str, tmp_path: Path) -> str:
    """The caption as Snakemake's report renders it (Jinja, then docutils), for a job on ``shift``."""
    from docutils.core import publish_parts
    from jinja2 import Environment

    text = caption.read_text()
    columns = [name.strip() for listed in re.findall(r":columns: (.*)", text) for name in listed.split(",")]
    table = tmp_path / "t.csv"
    table.write_text(",".join(["metric", *columns]) + "\n" + ",".join(["A"] + ["0.5"] * len(columns)) + "\n")
    shifts = ["clean", shift]
    snakemake = SimpleNamespace(
        wildcards=Namedlist(fromdict={"dataset": "digits", "labels": "original", "shift": shift, "model": "linear"}),
        params=Namedlist(
            fromdict={
                "confusions": {name: {} for name in shifts},
                "corrupted_shifts": shifts[1:],
                "severity_steps": {name: [name.rsplit("_s", 1)[0], 3] for name in shifts[1:]},
                "shifts": shifts,
                "shift": shift,
                "options": {"shift": shift, "n_resamples": 99, "correction": "holm", "alpha": 0.05, "min_effect": 0.02},
                "k1": 5,
                "k2": None,
                "repetitions": 3,
                "methods": ["naive", "cleanex"],
                "sigma2": 1.0,
                "reference": "clean",
                "models": ["linear"],
                "corruptions": None,
                "severities": [3],
                "settings": CLASS_DROPS,
            }
        ),
        output=Namedlist(
            fromdict={
                name: str(table)
                for name in (
                    "csv",
                    "table_csv",
                    "intervals_csv",
                    "sweep_csv",
                    "shift_summary_csv",
                    "corruption_errors_csv",
                    "severity_curves_csv",
                    "counts_csv",
                    "ranking_csv",
                    "rows",
                )
            }
        ),
        config={"metrics": {"bootstrap": BOOTSTRAP, "decisiveness": {"gamma": 0.005, "bins": 10}}},
    )
    register_directives()
    rendered = Environment(trim_blocks=True, lstrip_blocks=True).from_string(text).render(snakemake=snakemake)
    return publish_parts(rendered, writer="html")["body"]


@pytest.mark.parametrize("name", sorted(REPORT_SOURCES))
def test_every_report_caption_links_its_source_and_says_when_its_corruptions_are_classwise_s(name: str, tmp_path: Path) -> None:
    captions = {path.stem for path in (REPO / "workflow" / "report").glob("*.rst")}
    assert captions - {"workflow"} == set(REPORT_SOURCES)
    source = reference(REPORT_SOURCES[name])
    caption = REPO / "workflow" / "report" / f"{name}.rst"
    corrupted, attacked = _render(caption, "gaussian_noise_s3", tmp_path), _render(caption, "pgd_linf_eps0.1", tmp_path)
    for body in (corrupted, attacked):
        assert "system-message" not in body and "Problematic" not in body, body
        cited = f'<a class="reference external" href="{source.link}">{source.short}</a>' if source.link else source.short
        assert cited in body, body
        assert ".txt" not in body
    note = OWN_DEFINITIONS_NOTE
    assert (note in corrupted) == (name not in NO_NOTE), corrupted
    assert (note in attacked) == (name in ALWAYS_NOTE), attacked


def test_the_landing_page_and_the_report_categories_cite_the_sources() -> None:
    landing = (REPO / "workflow" / "report" / "workflow.rst").read_text()
    assert "Table 1 of :classwise-cite:`bitterwolf2022`" in landing
    rules = "".join(path.read_text() for path in (REPO / "workflow" / "rules").glob("*.smk"))
    used = {record.category for record in OUTPUTS.values() if record.category is not None}
    assert used == set(REFERENCES)
    assert not re.search(r"\bcategory=\"", rules)
    # the rules' report categories are the records' (outputs_of in workflow/rules/outputs_common.smk)
    assert "category=REFERENCES[record.category].category" in rules
    assert REFERENCES["bitterwolf2022"].category == "Worst-class metrics (Bitterwolf et al., 2022)"


def test_an_unknown_source_in_a_caption_stops_the_report() -> None:
    from docutils.core import publish_parts

    register_directives()
    with pytest.raises(InputError, match="unknown reference 'nobody2030'"):
        publish_parts("See :classwise-cite:`nobody2030 Table 9`.", writer="html")


# --- the run's README (classwise.steps.reports) -----------------------------------------------


def _demo_outputs(root: Path) -> list[str]:
    """The paper tables and figures of the demo's shifts (config/config.yaml), as final_outputs lists them."""
    shifts = expand_shifts(yaml.safe_load((REPO / "config" / "config.yaml").read_text())["shifts"])
    names = [name for name, spec in shifts.items() if "target" not in spec.params]
    outputs = []
    for shift in names:
        outputs += [
            f"{root}/tables/digits/original/{shift}/{table}.md" for table in ("worst_class", "decisiveness", "gamma_sweep")
        ]
        outputs += [f"{root}/figures/digits/original/{shift}/{figure}.png" for figure in ("per_class_recall", "confusion_mlp")]
        outputs.append(f"{root}/figures/digits/original/{shift}/reliability_mlp.png")
    return outputs


def test_the_demo_s_results_readme_cites_each_paper_with_a_link_and_notes_its_corruptions(tmp_path: Path) -> None:
    demo = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    root = tmp_path / "results"
    results_readme_step(
        description=demo["description"], output_dir=root, outputs=_demo_outputs(root), readme_path=root / "README.md"
    )
    text = (root / "README.md").read_text()
    assert (
        f"| `tables/digits/original/clean/worst_class.md` | [Bitterwolf et al., 2022]({LINKS['bitterwolf2022']}), "
        "Table 1 (original labels) / Table 2 (cleaned labels) |"
    ) in text
    assert (
        f"| `tables/digits/original/gaussian_noise_s3/gamma_sweep.md` | [George et al., 2020]({LINKS['george2020']}), Table 2"
        in text
    )
    assert f"| `figures/digits/original/clean/confusion_mlp.png` | [Medi et al., 2024]({LINKS['medi2024']}), Figure 4" in text
    assert f"\n{OWN_DEFINITIONS_NOTE}\n" in text
    references = text.split("\n## References\n\n", 1)[1].splitlines()
    assert references == [f"- {REFERENCES[key].full()}" for key in ("bitterwolf2022", "george2020", "medi2024")]
    assert ".txt" not in text and "shared" not in text


def test_a_readme_without_corruptions_made_on_the_fly_has_no_note_and_cites_its_description(tmp_path: Path) -> None:
    root = tmp_path / "results"
    outputs = [f"{root}/tables/d/original/{shift}/worst_class.md" for shift in ("clean", "cifar10_c_snow_s3")]
    description = "Figure 3 of Slavutsky and Benjamini, 2021, and the worst-class table."
    results_readme_step(description=description, output_dir=root, outputs=outputs, readme_path=root / "README.md")
    text = (root / "README.md").read_text()
    assert OWN_DEFINITIONS_NOTE not in text
    assert text.endswith(f"## References\n\n- {REFERENCES['bitterwolf2022'].full()}\n- {REFERENCES['slavutsky2021'].full()}\n")
