"""Snakemake script of rule plot_corruption_grid: one image under every corruption."""

from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import corruption_grid_step

with job_log(snakemake, exit_when_done=True):
    corruption_grid_step(
        dataset_name=snakemake.wildcards.dataset,
        dataset_cfg=snakemake.params.dataset,
        seed=snakemake.params.seed,
        corruptions=snakemake.params.corruptions,
        severities=snakemake.params.severities,
        sample_index=snakemake.params.sample_index,
        figure_path=snakemake.output.figure,
    )
