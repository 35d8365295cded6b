"""Snakemake script of rule test_class_drops: every model's outputs on clean and the shifts of a
label view -> the class-drop tests, their counts per class and their figure."""

from classwise.pipeline.captions import caption_of, title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import class_drops_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    class_drops_step(
        outputs=snakemake.params.files,
        label_view=snakemake.wildcards.labels,
        view_labels_path=snakemake.input.get("labels"),
        unpaired_shifts=snakemake.params.unpaired,
        settings=snakemake.params.settings,
        families=snakemake.params.families,
        captions={"drops": caption_of(snakemake), "counts": caption_of(snakemake, "counts")},
        title=title_of(snakemake),
        drops_paths={"markdown": output.drops_markdown, "csv": output.drops_csv, "latex": output.drops_latex},
        counts_paths={"markdown": output.counts_markdown, "csv": output.counts_csv, "latex": output.counts_latex},
        figure_path=output.figure,
    )
