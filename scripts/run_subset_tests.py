"""Snakemake script of rule run_subset_tests: cached logits + features -> subset test tables."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.analyses import subset_tests_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    subset_tests_step(
        logits_path=snakemake.input.logits,  # noqa: F821
        label_view=snakemake.wildcards.labels,  # noqa: F821
        view_labels_path=snakemake.input.labels or None,  # noqa: F821
        features_path=snakemake.input.features,  # noqa: F821
        options=snakemake.params.options,  # noqa: F821
        seed=snakemake.params.seed,  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        csv_path=snakemake.output.csv,  # noqa: F821
        latex_path=snakemake.output.latex,  # noqa: F821
        rows_path=snakemake.output.rows,  # noqa: F821
    )
