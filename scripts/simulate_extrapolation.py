"""Snakemake script of rule simulate_extrapolation: the rROC paper's simulation -> RMSE table."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.analyses import simulation_step

with job_log(snakemake) as log:  # noqa: F821 (snakemake is injected by Snakemake)
    simulation_step(
        k1s=snakemake.params.k1,  # noqa: F821
        k2=snakemake.params.k2,  # noqa: F821
        sigma2=snakemake.params.sigma2,  # noqa: F821
        repetitions=snakemake.params.repetitions,  # noqa: F821
        methods=snakemake.params.methods,  # noqa: F821
        cleanex_steps=snakemake.params.cleanex_steps,  # noqa: F821
        device=snakemake.params.device,  # noqa: F821
        seed=snakemake.params.seed,  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        csv_path=snakemake.output.csv,  # noqa: F821
        latex_path=snakemake.output.latex,  # noqa: F821
        json_path=snakemake.output.json,  # noqa: F821
        figure_path=snakemake.output.figure,  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
        progress=log,
    )
