# What inference and the label views need, fetched by local rules (compute nodes often have
# no internet; every download is sha256-checked, retried and written atomically):
#   resources/models/{model}/manifest.json    timm / torchvision / RobustBench weights
#   <dataset root>/...                         torchvision sets and CIFAR-10-C, then the marker
#   resources/datasets/{dataset}.prepared.json
#   resources/shift_sets/{dataset}/{key}/{file}.prepared.json   one file of a published shift set
#   resources/label-errors/{file}              label-errors and worst_classes files
#   resources/real/real.json                   ImageNet ReaL labels (a view of kind real)
#   results/labels/{dataset}/{labels}.csv      one label view: sample_id,label (-1 = removed)


localrules:
    download_model,
    prepare_dataset,
    prepare_shift_set,
    download_label_file,
    download_real_labels,


rule download_model:
    output:
        manifest=f"{RESOURCES}/models/{{model}}/manifest.json",
    log:
        f"{OUT}/logs/download_model/{{model}}.log",
    conda:
        "../../envs/torch.yaml"
    params:
        model=model_config,
    script:
        "../../scripts/download_model.py"


rule prepare_dataset:
    output:
        marker=f"{RESOURCES}/datasets/{{dataset}}.prepared.json",
    log:
        f"{OUT}/logs/prepare_dataset/{{dataset}}.log",
    conda:
        "../../envs/torch.yaml"
    params:
        dataset=dataset_config,
    script:
        "../../scripts/prepare_dataset.py"


rule prepare_shift_set:
    output:
        marker=f"{RESOURCES}/shift_sets/{{dataset}}/{{shift_set}}/{{archive}}.prepared.json",
    log:
        f"{OUT}/logs/prepare_shift_set/{{dataset}}/{{shift_set}}/{{archive}}.log",
    wildcard_constraints:
        shift_set=_alternatives(SHIFT_SET_DOWNLOADS) or "(?!)",
        archive=_alternatives(sorted(set().union(*SHIFT_SET_DOWNLOADS.values())))
        or "(?!)",
    conda:
        "../../envs/metrics.yaml"
    params:
        archive=shift_set_archive,
    script:
        "../../scripts/prepare_shift_set.py"


rule download_label_file:
    output:
        file="{label_dir}/{label_file}",
    log:
        "{label_dir}/.logs/{label_file}.log",
    wildcard_constraints:
        label_file=_alternatives(LABEL_FILES),
    conda:
        "../../envs/metrics.yaml"
    script:
        "../../scripts/download_label_file.py"


rule download_real_labels:
    output:
        file=REAL_DOWNLOAD,
    log:
        f"{RESOURCES}/real/.logs/real.json.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        url=real_download("url"),
        sha256=real_download("sha256"),
    script:
        "../../scripts/download_real_labels.py"


rule build_label_view:
    input:
        unpack(label_view_inputs),
    output:
        **outputs_of_rule("build_label_view"),
    log:
        f"{OUT}/logs/build_label_view/{{dataset}}/{{labels}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        view=view_config,
        label_errors_dir=lambda wildcards: (
            label_files_dir(wildcards.dataset, wildcards.labels)
            if required_files(view_config(wildcards))
            else None
        ),
    script:
        "../../scripts/build_label_view.py"
