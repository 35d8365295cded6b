"""Snakemake script of rule run_subset_tests: cached logits + features -> subset test tables."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.testsuites import subset_tests_step

with job_log(snakemake):
    subset_tests_step(
        logits_path=snakemake.input.logits,
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.labels or None,
        features_path=snakemake.input.features,
        options=snakemake.params.options,
        seed=snakemake.params.seed,
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
        rows_path=snakemake.output.rows,
    )
