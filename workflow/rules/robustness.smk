# Class-wise robustness (classwise-robustness-cfps.txt) and transformation tests
# (image-classification-tests.txt), over cached logits and confusion matrices:
#   results/figures/{dataset}/robustness/classwise_robustness.png   Figures 2-3
#   results/figures/{dataset}/robustness/mean_confusion_{shift}.png Figure 4 (each PGD shift)
#   results/figures/{dataset}/robustness/prediction_similarity.png  Figure 7
#   results/figures/{dataset}/robustness/targeted_success.png       Figure 5
#   results/figures/{dataset}/robustness/corruption_grid.png        one image, every corruption
#   results/tables/{dataset}/robustness/classwise.*                 the numbers of Figures 2-3
#   results/tables/{dataset}/robustness/targeted_success.*          the numbers of Figure 5
#   results/tables/{dataset}/robustness/transformation_tests_{model}.*  pass / warn / fail
include: "robustness_common.smk"


rule analyse_classwise_robustness:
    input:
        flat_confusions,
    output:
        **table_outputs("classwise", prefix="table_", tables=ROBUST_TABLES),
        figure=f"{ROBUST_FIGURES}/classwise_robustness.png",
        similarity=f"{ROBUST_FIGURES}/prediction_similarity.png",
        mean_confusion=directory(f"{ROBUST_FIGURES}/mean_confusion"),
    log:
        f"{OUT}/logs/analyse_classwise_robustness/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        confusions=classwise_confusions,
        attack_shifts=lambda wildcards: shifts_of_kind(wildcards.dataset, "pgd"),
        title=lambda wildcards: wildcards.dataset,
    script:
        "../../scripts/analyse_classwise_robustness.py"


rule run_transformation_tests:
    input:
        clean=lambda wildcards: logits_path(wildcards.dataset, wildcards.model, "clean"),
        shifted=lambda wildcards: [
            logits_path(wildcards.dataset, wildcards.model, shift)
            for shift in shifts_of_kind(wildcards.dataset, "corruption")
        ],
    output:
        **table_outputs("transformation_tests_{model}", tables=ROBUST_TABLES),
    log:
        f"{OUT}/logs/run_transformation_tests/{{dataset}}/{{model}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        shifts=lambda wildcards: shifts_of_kind(wildcards.dataset, "corruption"),
        thresholds=ROBUSTNESS["transformation_tests"]["thresholds"],
        caption=lambda wildcards: (
            f"Transformation tests of {wildcards.model} on {wildcards.dataset}: accuracy, macro F1 "
            "and prediction flip rate against clean, per corruption."
        ),
    script:
        "../../scripts/run_transformation_tests.py"


rule analyse_targeted_attacks:
    input:
        runs=lambda wildcards: [
            p for runs in targeted_runs(wildcards).values() for p in runs.values()
        ],
        clean=lambda wildcards: [
            logits_path(wildcards.dataset, model, "clean")
            for model in ROBUSTNESS["targeted_models"]
        ],
    output:
        **table_outputs("targeted_success", tables=ROBUST_TABLES),
        figure=f"{ROBUST_FIGURES}/targeted_success.png",
    log:
        f"{OUT}/logs/analyse_targeted_attacks/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        runs=targeted_runs,
        models=ROBUSTNESS["targeted_models"],
        title=lambda wildcards: f"{wildcards.dataset}: targeted PGD",
    script:
        "../../scripts/analyse_targeted_attacks.py"


rule plot_corruption_grid:
    output:
        figure=f"{ROBUST_FIGURES}/corruption_grid.png",
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
