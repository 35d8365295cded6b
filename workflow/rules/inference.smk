# Inference, once per (dataset, model, shift): results/logits/{dataset}/{model}/{shift}.npz
# Corruptions and attacks are applied on the fly inside the job, seeded per sample; a published
# shift set (datasets.<name>.shift_sets) is read from its own files.
# A model given by files of its outputs (source: predictions) is not run: import_predictions
# matches its file for the (dataset, shift) to the dataset's samples and writes the same cache.


rule infer:
    input:
        unpack(model_weights),
        unpack(source_weights),
        data=inference_data,
    output:
        logits=f"{OUT}/logits/{{dataset}}/{{model}}/{{shift}}.npz",
        metadata=f"{OUT}/logits/{{dataset}}/{{model}}/{{shift}}.json",
    log:
        f"{OUT}/logs/infer/{{dataset}}/{{model}}/{{shift}}.log",
    benchmark:
        f"{OUT}/benchmarks/infer/{{dataset}}/{{model}}/{{shift}}.tsv"
    wildcard_constraints:
        model=models_cached_by("infer"),
    conda:
        "../../envs/torch.yaml"
    # The demo's tiny models run fastest one thread per job, jobs in parallel; raise it for
    # real models with --set-threads or a profile (the job's torch uses exactly this many).
    threads: 1
    params:
        model=model_config,
        dataset=dataset_config,
        shift=infer_shift,
        seed=config["seed"],
        batch_size=config["inference"]["batch_size"],
        device=config["inference"]["device"],
    script:
        "../../scripts/infer.py"


rule import_predictions:
    input:
        outputs=predictions_file,
        data=dataset_inputs,
    output:
        logits=f"{OUT}/logits/{{dataset}}/{{model}}/{{shift}}.npz",
        metadata=f"{OUT}/logits/{{dataset}}/{{model}}/{{shift}}.json",
    log:
        f"{OUT}/logs/import_predictions/{{dataset}}/{{model}}/{{shift}}.log",
    wildcard_constraints:
        model=models_cached_by("import_predictions"),
    conda:
        "../../envs/torch.yaml"
    params:
        model=model_config,
        dataset=dataset_config,
        shift=shift_spec,
    script:
        "../../scripts/import_predictions.py"
