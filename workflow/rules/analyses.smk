# Analyses over cached logits (the model-testing catalogue, Slavutsky and Benjamini, 2021):
#   features/{dataset}.csv                                   image statistics (+ user metadata)
#   analyses/{dataset}/{labels}/{model}/subset_tests.*       worst subset per feature and metric
#   analyses/{dataset}/{labels}/{model}/subset_tests_all.csv every (feature, subset, metric) test
#   analyses/{dataset}/{labels}/{model}/reference_tests.*    reference shift vs every other shift
#   analyses/{dataset}/{labels}/reference_tests_summary.*    the reports summarised across models
#   analyses/{dataset}/{labels}/{model}/extrapolation.*      RMSE of each method from k1 to k2 (C) classes
#   analyses/{dataset}/{labels}/{model}/extrapolation_curves.csv, extrapolation.png (Figure 3)
#   analyses/{dataset}/{labels}/extrapolation_summary.*      RMSE per method and model
#   analyses/extrapolation_simulation.* (.png, .json)        the paper's simulation (Figure 2)
# Settings: the `analyses:` config section (validated in analyses_common.smk with its functions,
# included by the Snakefile before this file).
# Tables come as Markdown (.md), CSV (.csv, full precision) and LaTeX booktabs (.tex).


rule compute_image_features:
    input:
        data=prepared_dataset,
        metadata=metadata_file,
    output:
        **outputs_of_rule("compute_image_features"),
    log:
        f"{OUT}/logs/compute_image_features/{{dataset}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        dataset=dataset_config,
        batch_size=ANALYSES["features"]["batch_size"],
    script:
        "../../scripts/compute_image_features.py"


rule run_subset_tests:
    input:
        logits=lambda wildcards: logits_path(
            wildcards.dataset, wildcards.model, ANALYSES["subset_tests"]["shift"]
        ),
        labels=view_labels,
        features=f"{OUT}/features/{{dataset}}.csv",
    output:
        **outputs_of_rule("run_subset_tests"),
    log:
        f"{OUT}/logs/run_subset_tests/{VIEW_MODEL}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        options=canonical(
            {
                key: value
                for key, value in ANALYSES["subset_tests"].items()
                if key != "enabled"
            }
        ),
        seed=config["seed"],
    script:
        "../../scripts/run_subset_tests.py"


rule run_reference_tests:
    input:
        logits=lambda wildcards: [
            logits_path(wildcards.dataset, wildcards.model, shift)
            for shift in reference_shifts(wildcards)
        ],
        labels=view_labels,
    output:
        **outputs_of_rule("run_reference_tests"),
    log:
        f"{OUT}/logs/run_reference_tests/{VIEW_MODEL}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        shifts=reference_shifts,
        reference=ANALYSES["reference_tests"]["reference"],
        thresholds=canonical(ANALYSES["reference_tests"]["thresholds"]),
        n_bins=ANALYSES["reference_tests"]["n_bins"],
        min_bin_count=ANALYSES["reference_tests"]["min_bin_count"],
        label_set=ANALYSES["reference_tests"]["label_set"],
    script:
        "../../scripts/run_reference_tests.py"


rule summarise_reference_tests:
    input:
        reports=lambda wildcards: per_model_analyses(
            wildcards, "reference_tests.csv", "reference_tests"
        ),
    output:
        **outputs_of_rule("summarise_reference_tests"),
    log:
        f"{OUT}/logs/summarise_reference_tests/{VIEW}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: analysis_models(wildcards.dataset, "reference_tests"),
        reference=ANALYSES["reference_tests"]["reference"],
    script:
        "../../scripts/summarise_reference_tests.py"


rule evaluate_extrapolation:
    input:
        logits=lambda wildcards: logits_path(
            wildcards.dataset, wildcards.model, ANALYSES["extrapolation"]["shift"]
        ),
        labels=view_labels,
    output:
        **outputs_of_rule("evaluate_extrapolation"),
    log:
        f"{OUT}/logs/evaluate_extrapolation/{VIEW_MODEL}.log",
    conda:
        "../../envs/torch.yaml"
    # CleaneX trains a small MLP with torch: one thread per job, jobs side by side.
    threads: 1
    params:
        shift=ANALYSES["extrapolation"]["shift"],
        k1=lambda wildcards: analysis_settings(wildcards.dataset, "extrapolation")["k1"],
        k2=ANALYSES["extrapolation"]["k2"],
        repetitions=ANALYSES["extrapolation"]["repetitions"],
        methods=ANALYSES["extrapolation"]["methods"],
        cleanex_max_steps=ANALYSES["extrapolation"]["cleanex_max_steps"],
        cleanex_tolerance=ANALYSES["extrapolation"]["cleanex_tolerance"],
        cleanex_patience=ANALYSES["extrapolation"]["cleanex_patience"],
        ties=ANALYSES["extrapolation"]["ties"],
        device=ANALYSES["extrapolation"]["device"],
        seed=config["seed"],
    script:
        "../../scripts/evaluate_extrapolation.py"


rule summarise_extrapolation:
    input:
        tables=lambda wildcards: per_model_analyses(
            wildcards, "extrapolation.csv", "extrapolation"
        ),
    output:
        **outputs_of_rule("summarise_extrapolation"),
    log:
        f"{OUT}/logs/summarise_extrapolation/{VIEW}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: analysis_models(wildcards.dataset, "extrapolation"),
        k1=lambda wildcards: analysis_settings(wildcards.dataset, "extrapolation")["k1"],
        k2=ANALYSES["extrapolation"]["k2"],
        repetitions=ANALYSES["extrapolation"]["repetitions"],
    script:
        "../../scripts/summarise_extrapolation.py"


rule simulate_extrapolation:
    output:
        **outputs_of_rule("simulate_extrapolation"),
    log:
        f"{OUT}/logs/simulate_extrapolation.log",
    conda:
        "../../envs/torch.yaml"
    threads: ANALYSES["simulation"]["threads"]
    params:
        k1=ANALYSES["simulation"]["k1"],
        k2=ANALYSES["simulation"]["k2"],
        sigma2=ANALYSES["simulation"]["sigma2"],
        repetitions=ANALYSES["simulation"]["repetitions"],
        methods=ANALYSES["simulation"]["methods"],
        cleanex_max_steps=ANALYSES["simulation"]["cleanex_max_steps"],
        cleanex_tolerance=ANALYSES["simulation"]["cleanex_tolerance"],
        cleanex_patience=ANALYSES["simulation"]["cleanex_patience"],
        device=ANALYSES["simulation"]["device"],
        seed=config["seed"],
    script:
        "../../scripts/simulate_extrapolation.py"
