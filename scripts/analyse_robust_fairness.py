"""Snakemake script of rule analyse_robust_fairness: clean and attacked logits -> table + figure."""

from classwise.pipeline.captions import caption_of, title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import robust_fairness_step

with job_log(snakemake):
    output = snakemake.output
    models = snakemake.params.models
    robust_fairness_step(
        clean_paths=dict(zip(models, snakemake.input.clean)),
        attacked_paths=dict(zip(models, snakemake.input.attacked)),
        shift=snakemake.wildcards.shift,
        caption=caption_of(snakemake),
        title=title_of(snakemake),
        table_paths={"markdown": output.markdown, "csv": output.csv, "latex": output.latex},
        figure_path=output.figure,
        json_path=output.json,
    )
