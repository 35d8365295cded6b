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
rule analyse_classwise_robustness:
    input:
        flat_confusions,
        # the sample ids: every comparison is made on the samples both sides hold
        flat_classwise_logits,
    output:
        table_markdown=f"{ROBUST_TABLES}/classwise.md",
        table_csv=report(
            f"{ROBUST_TABLES}/classwise.csv",
            caption="../report/classwise_table.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class-wise robustness table (Figures 1-3)",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        table_latex=f"{ROBUST_TABLES}/classwise.tex",
        figure=report(
            f"{ROBUST_FIGURES}/classwise_robustness.png",
            caption="../report/classwise_robustness_figure.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class-wise robustness figure (Figures 1-3)",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        similarity=report(
            f"{ROBUST_FIGURES}/prediction_similarity.png",
            caption="../report/prediction_similarity.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "prediction similarity (Figure 7)",
                "label view": "original",
                "shift": "clean",
                "model": "all",
            },
        ),
        mean_confusion=report(
            directory(f"{ROBUST_FIGURES}/mean_confusion"),
            caption="../report/mean_confusion.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            patterns=["{shift}.png"],
            labels={
                "result": "mean confusion under attack (Figure 4)",
                "label view": "original",
                "shift": "{shift}",
                "model": "all",
            },
        ),
        shift_summary_markdown=f"{ROBUST_TABLES}/shift_summary.md",
        shift_summary_csv=report(
            f"{ROBUST_TABLES}/shift_summary.csv",
            caption="../report/shift_summary_table.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "shift summary (A and WCA per shift)",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        shift_summary_latex=f"{ROBUST_TABLES}/shift_summary.tex",
        corruption_errors_markdown=f"{ROBUST_TABLES}/corruption_errors.md",
        corruption_errors_csv=report(
            f"{ROBUST_TABLES}/corruption_errors.csv",
            caption="../report/corruption_errors_table.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "corruption errors per class",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        corruption_errors_latex=f"{ROBUST_TABLES}/corruption_errors.tex",
        class_shift_accuracy=report(
            f"{ROBUST_TABLES}/class_shift_accuracy.csv",
            caption="../report/class_shift_matrix.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class x shift accuracy matrix",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        class_shift_cfps=report(
            f"{ROBUST_TABLES}/class_shift_cfps.csv",
            caption="../report/class_shift_matrix.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class x shift CFPS matrix",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        worst_classes_figure=report(
            f"{ROBUST_FIGURES}/worst_classes_by_shift.png",
            caption="../report/worst_classes_by_shift.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "the worst classes across shifts",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
        spread_figure=report(
            f"{ROBUST_FIGURES}/accuracy_spread.png",
            caption="../report/accuracy_spread.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "spread of class-wise accuracy per shift",
                "label view": "original",
                "shift": "all",
                "model": "all",
            },
        ),
    log:
        f"{OUT}/logs/analyse_classwise_robustness/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        confusions=classwise_confusions,
        logits=classwise_logits,
        unpaired_shifts=lambda wildcards: unpaired_shifts(wildcards.dataset),
        attack_shifts=lambda wildcards: attacked_shifts(wildcards.dataset),
        # transformed shifts all score every class (a published set on a class subset is not one)
        corrupted_shifts=lambda wildcards: transformed_shifts(wildcards.dataset),
    script:
        "../../scripts/analyse_classwise_robustness.py"


rule run_transformation_tests:
    input:
        clean=lambda wildcards: logits_path(wildcards.dataset, wildcards.model, "clean"),
        shifted=lambda wildcards: [
            logits_path(wildcards.dataset, wildcards.model, shift)
            for shift in transformed_shifts(wildcards.dataset)
        ],
    output:
        markdown=f"{ROBUST_TABLES}/transformation_tests_{{model}}.md",
        csv=report(
            f"{ROBUST_TABLES}/transformation_tests_{{model}}.csv",
            caption="../report/transformation_tests.rst",
            category=REFERENCES["test_catalogue"].category,
            subcategory="{dataset}",
            labels={
                "result": "transformation tests",
                "label view": "original",
                "shift": "all",
                "model": "{model}",
            },
        ),
        latex=f"{ROBUST_TABLES}/transformation_tests_{{model}}.tex",
    log:
        f"{OUT}/logs/run_transformation_tests/{{dataset}}/{{model}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        shifts=lambda wildcards: transformed_shifts(wildcards.dataset),
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
        markdown=f"{ROBUST_TABLES}/targeted_success.md",
        csv=report(
            f"{ROBUST_TABLES}/targeted_success.csv",
            caption="../report/targeted_success_table.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "targeted attack success table (Figure 5)",
                "label view": "original",
                "shift": "targeted PGD",
                "model": "all",
            },
        ),
        latex=f"{ROBUST_TABLES}/targeted_success.tex",
        figure=report(
            f"{ROBUST_FIGURES}/targeted_success.png",
            caption="../report/targeted_success_figure.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "targeted attack success (Figure 5)",
                "label view": "original",
                "shift": "targeted PGD",
                "model": "all",
            },
        ),
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
        markdown=f"{ROBUST_TABLES}/robust_fairness_{{shift}}.md",
        csv=report(
            f"{ROBUST_TABLES}/robust_fairness_{{shift}}.csv",
            caption="../report/robust_fairness_table.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "robust fairness table (Figure 3 under attack)",
                "label view": "original",
                "shift": "{shift}",
                "model": "all",
            },
        ),
        latex=f"{ROBUST_TABLES}/robust_fairness_{{shift}}.tex",
        json=f"{ROBUST_TABLES}/robust_fairness_{{shift}}.json",
        figure=report(
            f"{ROBUST_FIGURES}/robust_fairness_{{shift}}.png",
            caption="../report/robust_fairness_figure.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class-wise clean vs robust accuracy (Figure 3 under attack)",
                "label view": "original",
                "shift": "{shift}",
                "model": "all",
            },
        ),
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
        markdown=f"{ROBUST_TABLES}/transfer_matrix.md",
        csv=report(
            f"{ROBUST_TABLES}/transfer_matrix.csv",
            caption="../report/transfer_matrix.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "transfer matrix (Figure 3 under transfer attacks)",
                "label view": "original",
                "shift": "transfer",
                "model": "all",
            },
        ),
        latex=f"{ROBUST_TABLES}/transfer_matrix.tex",
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
        figure=report(
            f"{ROBUST_FIGURES}/corruption_grid.png",
            caption="../report/corruption_grid.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "corruption grid (no paper figure)",
                "label view": "-",
                "shift": "corruptions",
                "model": "-",
            },
        ),
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
