"""Snakemake script of rule evaluate_extrapolation: cached logits -> RMSE table, curves, figure."""

from classwise.pipeline.captions import caption_of, title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.analyses import extrapolation_step

with job_log(snakemake) as log:  # noqa: F821 (snakemake is injected by Snakemake)
    extrapolation_step(
        logits_path=snakemake.input.logits,  # noqa: F821
        label_view=snakemake.wildcards.labels,  # noqa: F821
        view_labels_path=snakemake.input.labels or None,  # noqa: F821
        k1=snakemake.params.k1,  # noqa: F821
        repetitions=snakemake.params.repetitions,  # noqa: F821
        methods=snakemake.params.methods,  # noqa: F821
        cleanex_steps=snakemake.params.cleanex_steps,  # noqa: F821
        ties=snakemake.params.ties,  # noqa: F821
        device=snakemake.params.device,  # noqa: F821
        seed=snakemake.params.seed,  # noqa: F821
        title=title_of(snakemake),  # noqa: F821
        caption=caption_of(snakemake),  # noqa: F821
        markdown_path=snakemake.output.markdown,  # noqa: F821
        csv_path=snakemake.output.csv,  # noqa: F821
        latex_path=snakemake.output.latex,  # noqa: F821
        curves_path=snakemake.output.curves,  # noqa: F821
        figure_path=snakemake.output.figure,  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
        progress=log,
    )
