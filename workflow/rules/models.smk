# Models trained by the pipeline (the embedded demo): results/models/{model}.pt


rule train_model:
    output:
        checkpoint=f"{OUT}/models/{{model}}.pt",
    log:
        f"{OUT}/logs/train_model/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/train_model/{{model}}.tsv"
    conda:
        "../../envs/torch.yaml"
    # The demo's tiny models run fastest one thread per job, jobs in parallel; raise it for
    # real models with --set-threads or a profile (the job's torch uses exactly this many).
    threads: 1
    params:
        model=model_config,
        dataset_name=training_dataset,
        dataset=lambda wildcards: canonical(
            config["datasets"][training_dataset(wildcards)]
        ),
    script:
        "../../scripts/train_model.py"
