"""Snakemake script of rule compare_models: every model's logits -> paired comparison tables and
the models' ranking."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.metrics import WorstClassSettings
from classwise.steps.reports import compare_models_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    compare_models_step(
        logits_paths=dict(zip(snakemake.params.models, snakemake.input.logits)),
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.get("labels"),
        settings=WorstClassSettings.from_config(dict(snakemake.params.items())),
        caption=caption_of(snakemake),
        table_paths={"markdown": output.markdown, "csv": output.csv, "latex": output.latex},
        workers=snakemake.threads,
        ranking_paths={"markdown": output.ranking_markdown, "csv": output.ranking_csv, "latex": output.ranking_latex},
        ranking_caption=caption_of(snakemake, "ranking"),
    )
