# Shift batches (jobs.batch_shifts; classwise.pipeline.shift_batches): on a dataset evaluated only
# on files of predictions, the per-shift rules of SHIFT_BATCHES' BATCHED_RULES run as one job per
# model (imports, metrics) or per label view (tables, figures) over all its shifts. A generated
# rule <rule>_batch_<dataset>[_<view>] wins over the rule by ruleorder; its job runs the rule's
# script once per shift, with what that shift's own job would have had (inputs, outputs,
# parameters, log file), so every file is that job's. Included after the rules it batches.
import hashlib
import os

from snakemake.io import strip_wildcard_constraints
from snakemake.iocontainers import Wildcards

from classwise.outputs import output
from classwise.pipeline.shift_batches import (
    as_entries,
    batched_datasets,
    shift_batches,
)

SHIFT_BATCHES = shift_batches(
    final_outputs(),
    rule_of=lambda name: output(name).rule,
    datasets=batched_datasets(PLAN.models, MODEL_SPECS, config["jobs"]["batch_shifts"]),
    imported={
        dataset: {model: dataset_shifts(dataset) for model in dataset_models(dataset)}
        for dataset in DATASETS
    },
    shifts_per_batch=config["jobs"]["shifts_per_batch"],
)


def _batched_rule(batch):
    """The per-shift rule a batch runs (under a module, its prefixed name)."""
    return workflow.get_rule(workflow.modifier.modify_rulename(batch.rule))


def _batch_jobs(batch, wildcards):
    """Each shift's job of the batch, as plain data: the rule's own inputs, outputs, parameters
    and log file for those wildcards (Snakemake's expansion of the rule)."""
    key = (batch.name, tuple(sorted(wildcards.items())))
    if key not in _BATCH_JOBS:
        batched = _batched_rule(batch)
        jobs = []
        for shift in batch.shifts:
            item = Wildcards(
                fromdict=batch.item_wildcards(shift, wildcards.get("model"))
            )
            input, _, _, _ = batched.expand_input(item)
            output, _ = batched.expand_output(item)
            params, _ = batched.expand_params(item, input, output, None)
            jobs.append(
                {
                    "rule": batched.name,
                    "wildcards": as_entries(item),
                    "input": as_entries(input),
                    "output": as_entries(output),
                    "params": as_entries(params),
                    "log": as_entries(batched.expand_log(item)),
                }
            )
        _BATCH_JOBS[key] = jobs
    return _BATCH_JOBS[key]


_BATCH_JOBS = {}


def _batch_inputs(batch):
    def inputs(wildcards):
        return [
            f for job in _batch_jobs(batch, wildcards) for f in job["input"]["values"]
        ]

    return inputs


def _batch_settings(batch):
    """What a batch job's rerun follows besides its files: every shift's parameters."""

    def settings(wildcards):
        return {
            shift: job["params"]
            for shift, job in zip(batch.shifts, _batch_jobs(batch, wildcards))
        }

    return settings


def _batch_items(batch):
    # derived from the job's input and output, so not recorded in Snakemake's metadata (the
    # settings are): the paths of every shift's job, per output file
    def items(wildcards, input, output):
        return _batch_jobs(batch, wildcards)

    return items


def _batch_outputs(batch):
    """The rule's named outputs for each shift, named <output>:<shift>; {model} left in."""
    batched = _batched_rule(batch)
    outputs = {}
    for shift in batch.shifts:
        fixed = {
            key: value
            for key, value in batch.item_wildcards(shift).items()
            if key != "model"
        }
        for name, (start, end) in batched.output._names.items():
            pattern = strip_wildcard_constraints(str(batched.output[start]))
            for key, value in fixed.items():
                pattern = pattern.replace(f"{{{key}}}", value)
            outputs[f"{name}:{shift}"] = pattern
    return outputs


def _script_digest(batch):
    """The sha256 of the script the batch runs per shift (empty where it is no local file)."""
    batched = _batched_rule(batch)
    path = batched.basedir.join(batched.script).get_path_or_uri(secret_free=True)
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
            f"{OUT}/logs/{_batch.name}/{{model}}.log"
            if _batch.models
            else f"{OUT}/logs/{_batch.name}.log",
        wildcard_constraints:
            model=_alternatives(_batch.models or MODELS),
        conda:
            _batched_rule(_batch).conda_env
        threads: _threads
        resources:
            **_resources,
        params:
            script=os.path.basename(_batched_rule(_batch).script),
            # the per-shift script's text: Snakemake follows the batch's own script only
            code=_script_digest(_batch),
            keep=(
                f"{OUT}/batches/{_batch.name}/{{model}}"
                if _batch.models
                else f"{OUT}/batches/{_batch.name}"
            ),
            settings=_batch_settings(_batch),
            jobs=_batch_items(_batch),
        script:
            "../../scripts/run_shift_batch.py"

    workflow.ruleorder(_batch.name, _batch.rule)
