"""Snakemake script of rule analyse_classwise_robustness: metrics -> Figures 2-4, 7, the
class-wise table and the class-wise view across shifts."""

from classwise.pipeline.captions import title_of
from classwise.pipeline.scripting import job_log
from classwise.steps.robustness import AcrossShiftsPaths, MetricFiles, classwise_robustness_step

with job_log(snakemake, exit_when_done=True):
    output = snakemake.output
    classwise_robustness_step(
        files={
            shift: {model: MetricFiles.from_json(entry) for model, entry in per_model.items()}
            for shift, per_model in snakemake.params.files.items()
        },
        attack_shifts=snakemake.params.attack_shifts,
        unpaired_shifts=snakemake.params.unpaired_shifts,
        corrupted_shifts=snakemake.params.corrupted_shifts,
        severity_steps=snakemake.params.severity_steps,
        title=title_of(snakemake),
        figure_path=output.figure,
        similarity_path=output.similarity,
        mean_confusion_dir=output.mean_confusion,
        table_paths={"markdown": output.table_markdown, "csv": output.table_csv, "latex": output.table_latex},
        across_shifts=AcrossShiftsPaths(
            shift_summary={
                "markdown": output.shift_summary_markdown,
                "csv": output.shift_summary_csv,
                "latex": output.shift_summary_latex,
            },
            corruption_errors={
                "markdown": output.corruption_errors_markdown,
                "csv": output.corruption_errors_csv,
                "latex": output.corruption_errors_latex,
            },
            class_shift_accuracy=output.class_shift_accuracy,
            class_shift_cfps=output.class_shift_cfps,
            worst_classes_figure=output.worst_classes_figure,
            spread_figure=output.spread_figure,
            severity_curves={
                "markdown": output.severity_curves_markdown,
                "csv": output.severity_curves_csv,
                "latex": output.severity_curves_latex,
            },
            severity_figure=output.severity_figure,
        ),
    )
