"""Snakemake script of rule analyse_classwise_robustness: confusions -> Figures 2-4, 7 + table."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import classwise_robustness_step

with job_log(snakemake):
    output = snakemake.output
    attacks = snakemake.params.attack_shifts
    classwise_robustness_step(
        confusion_paths=snakemake.params.confusions,
        attack_shifts=attacks,
        title=title_of(snakemake),
        figure_path=output.figure,
        similarity_path=output.similarity,
        mean_confusion_dir=output.mean_confusion,
        table_paths={"markdown": output.table_markdown, "csv": output.table_csv, "latex": output.table_latex},
    )
