# The output records (classwise.outputs) as rules' outputs, and every output the run plans: what
# `rule all` requests and results/README.md lists (included by the Snakefile after the other
# *_common.smk files, whose final_outputs, analysis_outputs and robustness_outputs plan them).
from classwise.outputs import declared_outputs, listed_file, output, target


def outputs_of(name):
    """The named outputs of the record `name` for a rule's `output:`, wildcards left in: each of
    its files, the one the report shows marked with report() (its caption workflow/report/<name>.rst,
    its category and labels); a record of one file per wildcard value in a folder declares the folder.
    """
    record = output(name)
    files = record.files_of(OUT, {})
    if record.directory:
        files = {key: directory(f"{OUT}/{record.folder}") for key in files}
    outputs = {}
    for key, path in files.items():
        if key != record.shown:
            outputs[key] = path
            continue
        outputs[key] = report(
            path,
            caption=f"../report/{record.name}.rst",
            category=REFERENCES[record.category].category,
            subcategory=record.subcategory,
            labels=record.report_labels(config),
            **({"patterns": [record.pattern]} if record.directory else {}),
        )
    return outputs


def outputs_of_rule(rule):
    """The named outputs of every record whose rule is `rule` (outputs_of each, in catalogue
    order), but those whose run-wide condition does not hold (the interval tables and the
    worst-class figure without the bootstrap: Output.when). They come from the jobs that write
    the paper's tables and figures from the same files: a job of their own would add one job
    start per table.
    """
    outputs = {}
    for record in declared_outputs(rule, RUN_HOLDS):
        outputs.update(outputs_of(record.name))
    return outputs


def planned_outputs():
    """Every output of the run, planned: the tables, figures and data files of every (dataset,
    label view, shift), of the analyses and of robustness, and the explorer of them all.
    """
    return [
        *final_outputs(),
        *analysis_outputs(),
        *robustness_outputs(),
        Planned("explorer"),
        Planned("numbers"),
    ]


def requested(planned):
    """What a run requests of planned outputs: one file of each (a folder for a folder of files)."""
    return [target(p, OUT) for p in planned]


def listed_outputs():
    """The file results/README.md lists for each planned output (and the gates' report when the
    config has gates); the files beside it come from its record."""
    gates = [Planned("gates")] if GATES else []
    return [listed_file(p, OUT) for p in [*planned_outputs(), *gates]]
