# Models made by the pipeline: results/models/{model}.pt
#   train_model      source: train (the embedded demo), trained from scratch
#   finetune_model   source: finetune, a torchvision model fine-tuned on a dataset's train split,
#                    starting from weights that download_finetune_base fetches into
#                    resources/models/{model}/base/ (a local rule: it needs the network)
#   compute_prototypes  source: prototype, a marginal classifier: the mean backbone feature of
#                    each class of a dataset's train split, cosine-scored; the backbone's
#                    weights are fetched by download_prototype_backbone into
#                    resources/models/{model}/backbone/ (a local rule)


localrules:
    download_finetune_base,
    download_prototype_backbone,


rule train_model:
    input:
        data=training_data,
    output:
        checkpoint=f"{OUT}/models/{{model}}.pt",
    log:
        f"{OUT}/logs/train_model/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/train_model/{{model}}.tsv"
    wildcard_constraints:
        model=models_made_by("train_model"),
    conda:
        "../../envs/torch.yaml"
    # The demo's tiny models run fastest one thread per job, jobs in parallel; raise it for
    # real models with --set-threads or a profile (the job's torch uses exactly this many).
    threads: 1
    params:
        model=model_config,
        dataset_name=training_dataset,
        dataset=training_dataset_config,
    script:
        "../../scripts/train_model.py"


rule download_finetune_base:
    output:
        manifest=f"{RESOURCES}/models/{{model}}/base/manifest.json",
    log:
        f"{OUT}/logs/download_finetune_base/{{model}}.log",
    wildcard_constraints:
        model=models_made_by("finetune_model"),
    conda:
        "../../envs/torch.yaml"
    params:
        model=finetune_base,
    script:
        "../../scripts/download_model.py"


rule finetune_model:
    input:
        unpack(finetune_inputs),
    output:
        checkpoint=f"{OUT}/models/{{model}}.pt",
    log:
        f"{OUT}/logs/finetune_model/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/finetune_model/{{model}}.tsv"
    wildcard_constraints:
        model=models_made_by("finetune_model"),
    conda:
        "../../envs/torch.yaml"
    # Torch's threads and the image decoders; profiles/slurm sets 8 beside one GPU.
    threads: 4
    # A GPU job (inference.device picks the device; auto = CUDA when available); runtime in
    # minutes. Locally, gpu only limits jobs when given with --resources gpu=N.
    resources:
        gpu=1,
        mem_mb=16000,
        runtime=240,
    params:
        model=model_config,
        dataset_name=training_dataset,
        dataset=training_dataset_config,
        device=config["inference"]["device"],
    script:
        "../../scripts/finetune_model.py"


rule download_prototype_backbone:
    output:
        manifest=f"{RESOURCES}/models/{{model}}/backbone/manifest.json",
    log:
        f"{OUT}/logs/download_prototype_backbone/{{model}}.log",
    wildcard_constraints:
        model=models_made_by("compute_prototypes"),
    conda:
        "../../envs/torch.yaml"
    params:
        model=prototype_backbone,
    script:
        "../../scripts/download_model.py"


rule compute_prototypes:
    input:
        unpack(prototype_inputs),
    output:
        prototypes=f"{OUT}/models/{{model}}.pt",
    log:
        f"{OUT}/logs/compute_prototypes/{{model}}.log",
    benchmark:
        f"{OUT}/benchmarks/compute_prototypes/{{model}}.tsv"
    wildcard_constraints:
        model=models_made_by("compute_prototypes"),
    conda:
        "../../envs/torch.yaml"
    # One forward pass of the backbone over the train split, as inference does: a GPU job on
    # a cluster (inference.device picks the device); threads also decode image files.
    threads: 4
    resources:
        gpu=1,
        mem_mb=16000,
        runtime=120,
    params:
        model=model_config,
        dataset_name=training_dataset,
        dataset=training_dataset_config,
        batch_size=config["inference"]["batch_size"],
        device=config["inference"]["device"],
    script:
        "../../scripts/compute_prototypes.py"
