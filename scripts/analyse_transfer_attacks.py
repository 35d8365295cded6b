"""Snakemake script of rule analyse_transfer_attacks: clean and transfer logits -> the transfer matrix."""

from classwise.pipeline.captions import caption_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import transfer_matrix_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    pairs = [tuple(pair) for pair in snakemake.params.pairs]
    transfer_matrix_step(
        clean_paths=dict(zip(snakemake.params.targets, snakemake.input.clean)),
        transfer_paths=dict(zip(pairs, snakemake.input.transferred)),
        caption=caption_of(snakemake),
        table_paths={"markdown": output.markdown, "csv": output.csv, "latex": output.latex},
    )
