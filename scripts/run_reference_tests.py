"""Snakemake script of rule run_reference_tests: cached logits of every shift -> test report."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.testsuites import ReferenceTestSettings, reference_tests_step

with job_log(snakemake, exit_when_done=True):
    reference_tests_step(
        logits_paths=dict(zip(snakemake.params.shifts, snakemake.input.logits)),
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.labels or None,
        settings=ReferenceTestSettings.from_config(dict(snakemake.params.items())),
        dataset=snakemake.wildcards.dataset,
        model=snakemake.wildcards.model,
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
    )
