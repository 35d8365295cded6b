# Shift batches (jobs.batch_shifts; classwise.pipeline.shift_batches; planned in
# batches_common.smk): on a dataset evaluated only on files of predictions, the per-shift rules
# run as one job per model (imports, metrics) or per label view (tables, figures) over up to
# jobs.shifts_per_batch shifts. Each batch is a rule of its own, <rule>_batch_<dataset>[_<view>]
# [_<model>][_<n>], without wildcards; its job runs the per-shift rule's script once per shift
# with what that shift's own job would have had (inputs, outputs, parameters, log file), so every
# file is that job's, and takes back the shifts made from unchanged inputs and parameters.
# Included after the rules it batches.
import hashlib
import os

from classwise.pipeline.shift_batches import as_entries
from classwise.pipeline.snakemake_internals import (
    expanded_job,
    flagged_path,
    named_output_templates,
    rule_named,
    script_path,
)


def _batched_rule(batch):
    """The per-shift rule a batch runs (under a module, its prefixed name; looked up while the
    Snakefile is read, when the module's renaming applies, and kept for the jobs)."""
    if batch.name not in _PER_SHIFT_RULE:
        _PER_SHIFT_RULE[batch.name] = rule_named(workflow, batch.rule)
    return _PER_SHIFT_RULE[batch.name]


_PER_SHIFT_RULE = {}


def _batch_inputs(batch):
    """Every shift's inputs, as the per-shift rule's own jobs have them (each file once: a
    dataset's own files are every shift's input)."""

    def inputs(wildcards):
        files = {}
        for job in _batch_jobs(batch):
            files.update(dict.fromkeys(job["input"]["values"]))
        return list(files)

    return inputs


def _batch_jobs(batch):
    """Each shift's job of the batch, as plain data: the per-shift rule's own inputs, outputs,
    parameters and log file for its wildcards (Snakemake's expansion of that rule). Once per
    batch: the batch's inputs and two of its parameters read them while Snakemake plans.
    """
    if batch.name not in _BATCH_JOBS:
        _BATCH_JOBS[batch.name] = _expanded_jobs(batch)
    return _BATCH_JOBS[batch.name]


_BATCH_JOBS = {}


def _expanded_jobs(batch):
    batched = _batched_rule(batch)
    jobs = []
    for shift in batch.shifts:
        job = expanded_job(batched, batch.item_wildcards(shift))
        jobs.append(
            {
                "rule": batched.name,
                **{key: as_entries(value) for key, value in job.items()},
            }
        )
    return jobs


def _batch_settings(batch):
    """What a batch job's rerun follows besides its files: every shift's parameters."""

    def settings(wildcards):
        return {
            shift: job["params"] for shift, job in zip(batch.shifts, _batch_jobs(batch))
        }

    return settings


def _batch_items(batch):
    # derived from the job's input and output, so not recorded in Snakemake's metadata (the
    # settings are): the paths of every shift's job, per output file
    def items(wildcards, input, output):
        return _batch_jobs(batch)

    return items


def _batch_outputs(batch):
    """The per-shift rule's named outputs for each shift, named <output>:<shift>, with their
    flags but report(): the report's captions and labels are templates of one job's wildcards,
    which a batch's rule does not have (docs/pipeline.md#many-shifts-of-predictions)."""
    templates = named_output_templates(_batched_rule(batch))
    outputs = {}
    for shift in batch.shifts:
        wildcards = batch.item_wildcards(shift)
        for name, (path, flags) in templates.items():
            for key, value in wildcards.items():
                path = path.replace(f"{{{key}}}", value)
            outputs[f"{name}:{shift}"] = flagged_path(
                path, {flag: value for flag, value in flags.items() if flag != "report"}
            )
    return outputs


def _script_digest(batch):
    """The sha256 of the script the batch runs per shift (empty where it is no local file)."""
    path = script_path(_batched_rule(batch))
    if not os.path.isfile(path):
        return ""
    with open(path, "rb") as stream:
        return hashlib.sha256(stream.read()).hexdigest()


for _batch in SHIFT_BATCHES:
    _threads, _resources = inherited_resources(_batch.rule)

    rule:
        name:
            _batch.name
        input:
            _batch_inputs(_batch),
        output:
            **_batch_outputs(_batch),
        log:
            f"{OUT}/logs/{_batch.name}.log",
        conda:
            _batched_rule(_batch).conda_env
        threads: _threads
        resources:
            **_resources,
        params:
            script=os.path.basename(_batched_rule(_batch).script),
            # the per-shift script's text: Snakemake follows the batch's own script only
            code=_script_digest(_batch),
            keep=f"{OUT}/batches/{_batch.name}",
            settings=_batch_settings(_batch),
            jobs=_batch_items(_batch),
        script:
            "../../scripts/run_shift_batch.py"
