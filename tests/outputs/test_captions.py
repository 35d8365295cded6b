"""Captions and titles come from the job's wildcards and real parameters, not from params of
their own (classwise.pipeline.captions): rewording one reruns no job."""

from __future__ import annotations

import re
from types import SimpleNamespace

from paths import REPO
from snakemake.iocontainers import Namedlist

from classwise.pipeline.captions import CAPTIONS, TITLES, caption_of, captioned, title_of


def _job(rule: str, wildcards: dict[str, str], params: dict[str, object]) -> SimpleNamespace:
    return SimpleNamespace(rule=rule, wildcards=Namedlist(fromdict=wildcards), params=Namedlist(fromdict=params))


def test_no_rule_passes_a_caption_or_title_as_a_parameter() -> None:
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        for line in path.read_text().splitlines():
            report_caption = re.search(r'caption=f?"\.\./report/', line)  # the report's caption file, not a parameter
            assert not re.match(r"^\s+(caption|title)=(lambda|\(|f?\")", line) or report_caption, (path, line)


def test_no_report_caption_reads_a_caption_from_the_job_s_params() -> None:
    """Captions are not parameters (rewording one must rerun nothing), so ``snakemake.params.caption``
    renders as nothing in the report: each .rst caption says what its result shows itself."""
    for path in (REPO / "workflow" / "report").glob("*.rst"):
        assert "params.caption" not in path.read_text(), path.name


def test_every_script_asking_for_a_caption_or_title_has_one() -> None:
    """Each ``caption_of(snakemake[, part])`` of a rule's script names one captioned record of the rule."""
    asked = 0
    for script in (REPO / "scripts").glob("*.py"):
        text = script.read_text()
        for part in re.findall(r'caption_of\(snakemake(?:, "(\w+)")?\)', text):
            assert captioned(script.stem, part).name in CAPTIONS, (script.name, part)
            asked += 1
        if "title_of(snakemake)" in text:
            assert script.stem in TITLES, script.name
    assert asked == len(CAPTIONS)  # every caption is asked for


def test_captions_follow_the_job_s_wildcards_and_settings() -> None:
    wildcards = {"dataset": "pets", "labels": "original", "model": "net", "shift": "clean"}
    options = {"shift": "clean", "n_resamples": 99, "correction": "holm", "alpha": 0.05, "min_effect": 0.02}
    text = caption_of(_job("run_subset_tests", wildcards, {"options": options}))
    assert text.startswith("Subset performance tests of net on pets (original labels, shift clean)")
    assert "(99 random subsets of the same size), holm-adjusted p; fail = adjusted p <= 0.05 and shortfall > 0.02." in text
    extrapolation = {"shift": "clean", "k1": 2, "repetitions": 3}
    assert "3 seeded samples of 2 classes" in caption_of(_job("evaluate_extrapolation", wildcards, extrapolation))
    assert title_of(_job("evaluate_extrapolation", wildcards, extrapolation)).endswith("extrapolation from 2 sampled classes")
    assert "extrapolated to all classes; RMSE against the exact expected accuracy on all classes over k = 2..C." in caption_of(
        _job("evaluate_extrapolation", wildcards, extrapolation)
    )
    paper = {"shift": "clean", "k1": [10, 20], "k2": 100, "repetitions": 50, "methods": ["cleanex", "kde"]}
    paper |= {"cleanex_max_steps": 3000, "cleanex_tolerance": 0.01, "cleanex_patience": 500}
    text = caption_of(_job("evaluate_extrapolation", wildcards, paper))
    assert "50 seeded samples of 10 and 20 classes, each extrapolated to 100 classes" in text and "over k = 2..100." in text
    assert "RMSE ratio to CleaneX's" in text
    assert "fell by less than 0.01 of itself over 500 steps before 3000 steps († where some did not)" in text
    simulation = {"sigma2": 0.1, "k2": 200, "repetitions": 3, "methods": ["naive", "cleanex"]} | paper
    assert "'fits converged'" in caption_of(_job("simulate_extrapolation", {}, simulation))
    assert "'fits converged'" not in caption_of(_job("simulate_extrapolation", {}, simulation | {"methods": ["naive"]}))
    assert "from 10 and 20 sampled classes to 100:" in caption_of(_job("summarise_extrapolation", wildcards, paper))
    assert title_of(_job("compute_worst_class_metrics", wildcards, {})) == "net, pets, original labels, clean"


def test_interval_and_comparison_captions_state_the_bootstrap_they_describe() -> None:
    wildcards = {"dataset": "pets", "labels": "original", "shift": "clean"}
    params = {"bootstrap": {"replicates": 200, "confidence": 0.9, "seed": 3}}
    job = _job("aggregate_worst_class_tables", wildcards, params)
    assert caption_of(job).startswith("Worst-class metrics on pets")  # the paper table's caption is unchanged
    intervals = caption_of(job, "intervals")
    assert "with their 90 % intervals in brackets" in intervals
    assert "the exact bound" in intervals and "200 stratified bootstrap replicates (seed 3)" in intervals
    comparison = caption_of(_job("compare_models", wildcards, params))
    assert "90 % percentile interval of 200 paired stratified bootstrap replicates" in comparison
    assert "* marks a difference whose interval excludes 0" in comparison
    decisiveness = caption_of(_job("aggregate_decisiveness_tables", wildcards, params), "intervals")
    assert "followed by its 90 % percentile interval of 200 stratified bootstrap replicates (seed 3" in decisiveness


def test_report_captions_of_the_many_shift_figures_state_the_library_s_thresholds() -> None:
    """The .rst captions switch their text where the figures switch their form."""
    from classwise.plots.many_classes import MAX_BOXED_SHIFTS
    from classwise.plots.robustness import MAX_SHIFT_PANELS

    report = REPO / "workflow" / "report"
    spread = (report / "accuracy_spread.rst").read_text()
    assert f"length > {MAX_BOXED_SHIFTS} %" in spread and f"Past {MAX_BOXED_SHIFTS} shifts" in spread
    panels = (report / "classwise_robustness_figure.rst").read_text()
    assert f"length > {MAX_SHIFT_PANELS} %" in panels and f"Past {MAX_SHIFT_PANELS} shifts" in panels
    assert f"the {MAX_SHIFT_PANELS - 1} shifts of lowest" in panels


def test_the_analyses_captions_say_which_metrics_are_better_lower() -> None:
    wildcards = {"dataset": "pets", "labels": "original", "model": "net", "shift": "clean"}
    options = {"shift": "clean", "n_resamples": 99, "correction": "holm", "alpha": 0.05, "min_effect": 0.02}
    subsets = caption_of(_job("run_subset_tests", wildcards, {"options": options}))
    reference = caption_of(_job("run_reference_tests", wildcards, {"reference": "clean"}))
    for text in (subsets, reference):
        assert "Lower is better for average_uncertainty (the mean of 1 - max p" in text
        assert "positive_prediction_rate (the share of the most-predicted class)" in text
    assert "and calibration_mse. Source: " in reference and "calibration_mse" not in subsets
