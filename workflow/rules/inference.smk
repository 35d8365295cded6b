# Inference, once per (dataset, model, shift): results/logits/{dataset}/{model}/{shift}.npz
# Corruptions and attacks are applied on the fly inside the job, seeded per sample; a published
# shift set (datasets.<name>.shift_sets) is read from its own files.
# A model given by files of its outputs (source: predictions) is not run: import_predictions
# matches its file for the (dataset, shift) to the dataset's samples and writes the same cache.
# A shift split into S shards (inference.shards, an entry's shards; docs/attacks.md) runs as S
# infer_shard jobs of whole batches, each writing logits_shards/.../{shift}/{k}-of-{S}.npz, and
# merge_logit_shards writes the cache from them, byte for byte infer's file.
# With inference.models_per_decode above 1, the models a dataset runs share one decode per shift
# that runs no model: one infer_models_<dataset> job per shift writes all their logits (those of
# infer, byte for byte), computing only the missing or stale ones (classwise.pipeline.decode_groups).

# What every inference of a shift is made with, whichever job runs it (infer, infer_shard, a
# decode group's): the keys of classwise.steps.models.InferenceSettings but the dataset's, which
# a job of infer takes from its wildcards and a group's job is given.
INFERENCE_PARAMS = {
    "shift": infer_shift,
    "seed": config["seed"],
    "batch_size": config["inference"]["batch_size"],
    "device": EXECUTION.parameter(),
}


rule infer:
    input:
        unpack(model_weights),
        unpack(source_weights),
        data=inference_data,
    output:
        **outputs_of("cached_outputs"),
    log:
        f"{OUT}/logs/infer/{{dataset}}/{{model}}/{{shift}}.log",
    benchmark:
        f"{OUT}/benchmarks/infer/{{dataset}}/{{model}}/{{shift}}.tsv"
    wildcard_constraints:
        model=models_cached_by("infer"),
        shift=shifts_inferred_by("infer"),
    conda:
        "../../envs/torch.yaml"
    # The demo's tiny models run fastest one thread per job, jobs in parallel; raise it for
    # real models with --set-threads or a profile (the job's torch uses exactly this many).
    threads: 1
    params:
        **INFERENCE_PARAMS,
        model=model_config,
        dataset=dataset_config,
    script:
        "../../scripts/infer.py"


# The same job on one shard of the set: infer's inputs, parameters and script (which reads the
# shard from the wildcards), its own output, log and constraints.
use rule infer as infer_shard with:
    output:
        shard=f"{OUT}/logits_shards/{{dataset}}/{{model}}/{{shift}}/{{shard}}-of-{{shards}}.npz",
    log:
        f"{OUT}/logs/infer_shard/{{dataset}}/{{model}}/{{shift}}/{{shard}}-of-{{shards}}.log",
    benchmark:
        f"{OUT}/benchmarks/infer_shard/{{dataset}}/{{model}}/{{shift}}/{{shard}}-of-{{shards}}.tsv"
    wildcard_constraints:
        model=models_cached_by("infer"),
        shift=shifts_inferred_by("infer_shard"),
        shard="[1-9][0-9]*",
        shards="[1-9][0-9]*",


rule merge_logit_shards:
    input:
        shards=logit_shards,
    output:
        **outputs_of("cached_outputs"),
    log:
        f"{OUT}/logs/merge_logit_shards/{{dataset}}/{{model}}/{{shift}}.log",
    wildcard_constraints:
        model=models_cached_by("infer"),
        shift=shifts_inferred_by("merge_logit_shards"),
    conda:
        "../../envs/torch.yaml"
    script:
        "../../scripts/merge_logit_shards.py"


for _group in DECODE_GROUPS.values():
    _threads, _resources = inherited_resources("infer")

    rule:
        name:
            _group.rule
        input:
            **group_weights(_group),
            data=group_images(_group.dataset),
        output:
            **group_outputs(_group),
        log:
            f"{OUT}/logs/infer_models/{_group.dataset}/{{shift}}.log",
        benchmark:
            f"{OUT}/benchmarks/infer_models/{_group.dataset}/{{shift}}.tsv"
        wildcard_constraints:
            shift=_alternatives(_group.shifts),
        conda:
            "../../envs/torch.yaml"
        threads: _threads
        resources:
            **_resources,
        params:
            **INFERENCE_PARAMS,
            models={name: model_entry(name) for name in _group.models},
            group=group_folder(_group.dataset),
            dataset_name=_group.dataset,
            dataset=dataset_parameters(_group.dataset),
        script:
            "../../scripts/infer_models.py"

    workflow.ruleorder(_group.rule, "infer")


rule import_predictions:
    input:
        unpack(import_inputs),
    output:
        **outputs_of("cached_outputs"),
    log:
        f"{OUT}/logs/import_predictions/{{dataset}}/{{model}}/{{shift}}.log",
    wildcard_constraints:
        model=models_cached_by("import_predictions"),
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/torch.yaml"
    params:
        model=model_config,
        dataset=dataset_config,
        shift=shift_spec,
    script:
        "../../scripts/import_predictions.py"
