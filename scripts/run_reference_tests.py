"""Snakemake script of rule run_reference_tests: cached logits of every shift -> test report."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.analyses import reference_tests_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    reference_tests_step(
        logits_paths=dict(zip(snakemake.params.shifts, snakemake.input.logits)),  # noqa: F821
        label_view=snakemake.wildcards.labels,  # noqa: F821
        view_labels_path=snakemake.input.labels or None,  # noqa: F821
        reference=snakemake.params.reference,  # noqa: F821
        dataset=snakemake.wildcards.dataset,  # noqa: F821
        model=snakemake.wildcards.model,  # noqa: F821
        thresholds=snakemake.params.thresholds,  # noqa: F821
        n_bins=snakemake.params.n_bins,  # noqa: F821
        min_bin_count=snakemake.params.min_bin_count,  # noqa: F821
        label_set=snakemake.params.label_set,  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        csv_path=snakemake.output.csv,  # noqa: F821
        latex_path=snakemake.output.latex,  # noqa: F821
    )
