"""Snakemake script of rule run_reference_tests: cached logits of every shift -> test report."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.testsuites import reference_tests_step

with job_log(snakemake):
    reference_tests_step(
        logits_paths=dict(zip(snakemake.params.shifts, snakemake.input.logits)),
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.labels or None,
        reference=snakemake.params.reference,
        dataset=snakemake.wildcards.dataset,
        model=snakemake.wildcards.model,
        thresholds=snakemake.params.thresholds,
        n_bins=snakemake.params.n_bins,
        min_bin_count=snakemake.params.min_bin_count,
        label_set=snakemake.params.label_set,
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
    )
