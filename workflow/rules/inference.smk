# Inference, once per (dataset, model, shift): results/logits/{dataset}/{model}/{shift}.npz
# Corruptions and attacks are applied on the fly inside the job, seeded per sample; a published
# shift set (datasets.<name>.shift_sets) is read from its own files.


rule infer:
    input:
        unpack(model_weights),
        data=inference_data,
    output:
        logits=f"{OUT}/logits/{{dataset}}/{{model}}/{{shift}}.npz",
        metadata=f"{OUT}/logits/{{dataset}}/{{model}}/{{shift}}.json",
    log:
        f"{OUT}/logs/infer/{{dataset}}/{{model}}/{{shift}}.log",
    benchmark:
        f"{OUT}/benchmarks/infer/{{dataset}}/{{model}}/{{shift}}.tsv"
    conda:
        "../../envs/torch.yaml"
    # The demo's tiny models run fastest one thread per job, jobs in parallel; raise it for
    # real models with --set-threads or a profile (the job's torch uses exactly this many).
    threads: 1
    params:
        model=model_config,
        dataset=dataset_config,
        shift=shift_spec,
        seed=config["seed"],
        batch_size=config["inference"]["batch_size"],
        device=config["inference"]["device"],
    script:
        "../../scripts/infer.py"
