"""Snakemake script of rule simulate_extrapolation: the rROC paper's simulation -> RMSE table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.extrapolation import simulation_step

with job_log(snakemake, exit_when_done=True) as log:
    simulation_step(
        k1s=snakemake.params.k1,
        k2=snakemake.params.k2,
        sigma2=snakemake.params.sigma2,
        repetitions=snakemake.params.repetitions,
        methods=snakemake.params.methods,
        cleanex_max_steps=snakemake.params.cleanex_max_steps,
        cleanex_tolerance=snakemake.params.cleanex_tolerance,
        cleanex_patience=snakemake.params.cleanex_patience,
        device=snakemake.params.device,
        seed=snakemake.params.seed,
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
        json_path=snakemake.output.json,
        figure_path=snakemake.output.figure,
        threads=snakemake.threads,
        progress=log,
    )
