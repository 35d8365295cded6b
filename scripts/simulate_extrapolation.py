"""Snakemake script of rule simulate_extrapolation: the rROC paper's simulation -> RMSE table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.extrapolation import SimulationSettings, simulation_step

with job_log(snakemake, exit_when_done=True) as log:
    simulation_step(
        settings=SimulationSettings.from_config(dict(snakemake.params.items())),
        caption=caption_of(snakemake),
        markdown_path=snakemake.output.markdown,
        csv_path=snakemake.output.csv,
        latex_path=snakemake.output.latex,
        json_path=snakemake.output.json,
        figure_path=snakemake.output.figure,
        threads=snakemake.threads,
        progress=log,
    )
