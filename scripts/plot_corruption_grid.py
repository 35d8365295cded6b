"""Snakemake script of rule plot_corruption_grid: one image under every corruption."""

from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import corruption_grid_step

with job_log(snakemake):  # noqa: F821 (snakemake is injected by Snakemake)
    corruption_grid_step(
        dataset_name=snakemake.wildcards.dataset,  # noqa: F821
        dataset_cfg=snakemake.params.dataset,  # noqa: F821
        seed=snakemake.params.seed,  # noqa: F821
        corruptions=snakemake.params.corruptions,  # noqa: F821
        severities=snakemake.params.severities,  # noqa: F821
        sample_index=snakemake.params.sample_index,  # noqa: F821
        figure_path=snakemake.output.figure,  # noqa: F821
    )
