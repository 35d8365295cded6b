# Class-wise robustness (Medi et al., 2024) and transformation tests
# (the model-testing catalogue), over cached logits and confusion matrices:
#   results/figures/{dataset}/robustness/classwise_robustness.png   Figures 2-3
#   results/figures/{dataset}/robustness/mean_confusion/{shift}.png Figure 4 (each PGD, AutoAttack, transfer)
#   results/figures/{dataset}/robustness/prediction_similarity.png  Figure 7
#   results/figures/{dataset}/robustness/targeted_success.png       Figure 5
#   results/figures/{dataset}/robustness/corruption_grid.png        one image, every corruption
#   results/tables/{dataset}/robustness/classwise.*                 the numbers of Figures 2-3
#   results/tables/{dataset}/robustness/targeted_success.*          the numbers of Figure 5
#   results/tables/{dataset}/robustness/transformation_tests_{model}.*  pass / warn / fail
#   results/tables/{dataset}/robustness/robust_fairness_{shift}.*      robust fairness, each attack
#   results/figures/{dataset}/robustness/robust_fairness_{shift}.png   class-wise clean vs robust
#   results/tables/{dataset}/robustness/transfer_matrix.*              source x target, transfer attacks
#   results/tables/{dataset}/{labels}/robustness/class_drops.*         each class's change from clean,
#                                                                      tested (CSV: every test; .md: the significant)
#   results/tables/{dataset}/{labels}/robustness/class_drop_counts.*   per class: under how many shifts it drops
#   results/figures/{dataset}/{labels}/robustness/class_drops.png      change against adjusted p, per family
rule analyse_classwise_robustness:
    input:
        # the metrics step's numbers, and the outputs files: every comparison is made on the
        # samples both sides hold, matched by sample id
        flat_classwise_files,
    output:
        **outputs_of_rule("analyse_classwise_robustness"),
    log:
        f"{OUT}/logs/analyse_classwise_robustness/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        files=classwise_files,
        unpaired_shifts=lambda wildcards: unpaired_shifts(wildcards.dataset),
        attack_shifts=lambda wildcards: attacked_shifts(wildcards.dataset),
        # corrupted copies all score every class (a published set on a class subset is not one)
        corrupted_shifts=lambda wildcards: corrupted_shifts(wildcards.dataset),
        # shift -> [family, severity]: the severity curves
        severity_steps=lambda wildcards: ROBUSTNESS_RUNS[
            wildcards.dataset
        ].severity_steps,
    script:
        "../../scripts/analyse_classwise_robustness.py"


# One job per (dataset, label view): the adjustment's family is every (shift, class) of a model,
# so every shift's outputs are read in one job (the predictions only, one model at a time).
rule test_class_drops:
    input:
        unpack(class_drop_inputs),
    output:
        **outputs_of_rule("test_class_drops"),
    log:
        f"{OUT}/logs/test_class_drops/{{dataset}}/{{labels}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        files=class_drop_files,
        shifts=class_drop_shifts,
        # natural shift sets: other images, compared unpaired whatever their sample ids
        unpaired=lambda wildcards: [
            s for s in class_drop_shifts(wildcards) if not SHIFTS[s].paired
        ],
        settings={
            key: value
            for key, value in ROBUSTNESS["class_drops"].items()
            if key != "enabled"
        },
        # shift -> its family: one panel of the figure each
        families=lambda wildcards: {
            s: SHIFTS[s].family for s in class_drop_shifts(wildcards)
        },
    script:
        "../../scripts/test_class_drops.py"


rule run_transformation_tests:
    input:
        clean=lambda wildcards: logits_path(wildcards.dataset, wildcards.model, "clean"),
        shifted=lambda wildcards: [
            logits_path(wildcards.dataset, wildcards.model, shift)
            for shift in transformed_shifts(wildcards.dataset)
        ],
    output:
        **outputs_of_rule("run_transformation_tests"),
    log:
        f"{OUT}/logs/run_transformation_tests/{{dataset}}/{{model}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        shifts=lambda wildcards: transformed_shifts(wildcards.dataset),
        # shifts given by labels files of their own: compared on the clean samples they hold
        subsets=lambda wildcards: ROBUSTNESS_RUNS[wildcards.dataset].own_samples,
        thresholds=ROBUSTNESS["transformation_tests"]["thresholds"],
    script:
        "../../scripts/run_transformation_tests.py"


rule analyse_targeted_attacks:
    input:
        runs=lambda wildcards: [
            p for runs in targeted_runs(wildcards).values() for p in runs.values()
        ],
        clean=lambda wildcards: [
            logits_path(wildcards.dataset, model, "clean")
            for model in targeted_models(wildcards.dataset)
        ],
    output:
        **outputs_of_rule("analyse_targeted_attacks"),
    log:
        f"{OUT}/logs/analyse_targeted_attacks/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        runs=targeted_runs,
        models=lambda wildcards: targeted_models(wildcards.dataset),
    script:
        "../../scripts/analyse_targeted_attacks.py"


# One job per (dataset, attack) reads every model's clean and attacked logits: a job per model
# would cost a Python start each.
rule analyse_robust_fairness:
    input:
        clean=lambda wildcards: [
            logits_path(wildcards.dataset, model, "clean")
            for model in dataset_models(wildcards.dataset)
        ],
        attacked=lambda wildcards: [
            logits_path(wildcards.dataset, model, wildcards.shift)
            for model in dataset_models(wildcards.dataset)
        ],
    output:
        **outputs_of_rule("analyse_robust_fairness"),
    log:
        f"{OUT}/logs/analyse_robust_fairness/{{dataset}}/{{shift}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: dataset_models(wildcards.dataset),
    script:
        "../../scripts/analyse_robust_fairness.py"


# One job per dataset reads every (source, target) pair's transfer logits and each target's clean
# logits: the class-wise transfer matrix.
rule analyse_transfer_attacks:
    input:
        clean=lambda wildcards: [
            logits_path(wildcards.dataset, model, "clean")
            for model in dataset_models(wildcards.dataset)
        ],
        transferred=transferred_logits,
    output:
        **outputs_of_rule("analyse_transfer_attacks"),
    log:
        f"{OUT}/logs/analyse_transfer_attacks/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        targets=lambda wildcards: dataset_models(wildcards.dataset),
        pairs=lambda wildcards: [
            [source, SHIFTS[shift].attack.name, target]
            for source, target, shift in transfer_pairs(wildcards.dataset)
        ],
    script:
        "../../scripts/analyse_transfer_attacks.py"


rule plot_corruption_grid:
    input:
        data=prepared_dataset,
    output:
        **outputs_of_rule("plot_corruption_grid"),
    log:
        f"{OUT}/logs/plot_corruption_grid/{{dataset}}.log",
    conda:
        "../../envs/torch.yaml"
    params:
        dataset=dataset_config,
        seed=config["seed"],
        corruptions=ROBUSTNESS["corruption_grid"].get("corruptions"),
        severities=ROBUSTNESS["corruption_grid"]["severities"],
        sample_index=ROBUSTNESS["corruption_grid"]["sample_index"],
    script:
        "../../scripts/plot_corruption_grid.py"
