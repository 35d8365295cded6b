# Which per-shift jobs run as shift batches (jobs.batch_shifts; classwise.pipeline.shift_batches):
# every per-shift job of a dataset evaluated only on files of predictions, in batches of up to
# jobs.shifts_per_batch shifts; the per-shift rules take the other datasets only (their
# wildcard constraint PER_SHIFT_DATASETS), so no file has two rules that could make it.
# Included after outputs_common.smk (the plan) and before the rules.
from classwise.outputs import output
from classwise.pipeline.shift_batches import batched_datasets, shift_batches

BATCHED_DATASETS = batched_datasets(
    PLAN.models, PLAN.shifts, MODEL_SPECS, config["jobs"]["batch_shifts"]
)
SHIFT_BATCHES = shift_batches(
    final_outputs(),
    rule_of=lambda name: output(name).rule,
    datasets=BATCHED_DATASETS,
    imported={
        dataset: {model: dataset_shifts(dataset) for model in dataset_models(dataset)}
        for dataset in BATCHED_DATASETS
    },
    shifts_per_batch=config["jobs"]["shifts_per_batch"],
)
# The datasets of the per-shift rules (a pattern matching none where every dataset is batched).
PER_SHIFT_DATASETS = (
    _alternatives([name for name in DATASETS if name not in BATCHED_DATASETS]) or "(?!)"
)
