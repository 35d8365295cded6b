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
        features=f"{OUT}/features/{{dataset}}.csv",
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
        markdown=f"{ANALYSES_DIR}/{VIEW_MODEL}/subset_tests.md",
        csv=report(
            f"{ANALYSES_DIR}/{VIEW_MODEL}/subset_tests.csv",
            caption="../report/subset_tests.rst",
            category=REFERENCES["test_catalogue"].category,
            subcategory="{dataset}",
            labels={
                "result": "subset tests",
                "label view": "{labels}",
                "shift": ANALYSES["subset_tests"]["shift"],
                "model": "{model}",
            },
        ),
        latex=f"{ANALYSES_DIR}/{VIEW_MODEL}/subset_tests.tex",
        rows=report(
            f"{ANALYSES_DIR}/{VIEW_MODEL}/subset_tests_all.csv",
            caption="../report/subset_tests_all.rst",
            category=REFERENCES["test_catalogue"].category,
            subcategory="{dataset}",
            labels={
                "result": "subset tests, every subset",
                "label view": "{labels}",
                "shift": ANALYSES["subset_tests"]["shift"],
                "model": "{model}",
            },
        ),
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
        markdown=f"{ANALYSES_DIR}/{VIEW_MODEL}/reference_tests.md",
        csv=report(
            f"{ANALYSES_DIR}/{VIEW_MODEL}/reference_tests.csv",
            caption="../report/reference_tests.rst",
            category=REFERENCES["test_catalogue"].category,
            subcategory="{dataset}",
            labels={
                "result": "reference tests",
                "label view": "{labels}",
                "shift": "all",
                "model": "{model}",
            },
        ),
        latex=f"{ANALYSES_DIR}/{VIEW_MODEL}/reference_tests.tex",
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
        markdown=f"{ANALYSES_DIR}/{VIEW}/reference_tests_summary.md",
        csv=report(
            f"{ANALYSES_DIR}/{VIEW}/reference_tests_summary.csv",
            caption="../report/reference_tests_summary.rst",
            category=REFERENCES["test_catalogue"].category,
            subcategory="{dataset}",
            labels={
                "result": "reference tests summary",
                "label view": "{labels}",
                "shift": "all",
                "model": "all",
            },
        ),
        latex=f"{ANALYSES_DIR}/{VIEW}/reference_tests_summary.tex",
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
        markdown=f"{ANALYSES_DIR}/{VIEW_MODEL}/extrapolation.md",
        csv=report(
            f"{ANALYSES_DIR}/{VIEW_MODEL}/extrapolation.csv",
            caption="../report/extrapolation_table.rst",
            category=REFERENCES["slavutsky2021"].category,
            subcategory="{dataset}",
            labels={
                "result": "extrapolation RMSE table (Figure 3D)",
                "label view": "{labels}",
                "shift": ANALYSES["extrapolation"]["shift"],
                "model": "{model}",
            },
        ),
        latex=f"{ANALYSES_DIR}/{VIEW_MODEL}/extrapolation.tex",
        curves=f"{ANALYSES_DIR}/{VIEW_MODEL}/extrapolation_curves.csv",
        figure=report(
            f"{ANALYSES_DIR}/{VIEW_MODEL}/extrapolation.png",
            caption="../report/extrapolation_figure.rst",
            category=REFERENCES["slavutsky2021"].category,
            subcategory="{dataset}",
            labels={
                "result": "extrapolation curves (Figure 3)",
                "label view": "{labels}",
                "shift": ANALYSES["extrapolation"]["shift"],
                "model": "{model}",
            },
        ),
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
        markdown=f"{ANALYSES_DIR}/{VIEW}/extrapolation_summary.md",
        csv=report(
            f"{ANALYSES_DIR}/{VIEW}/extrapolation_summary.csv",
            caption="../report/extrapolation_summary.rst",
            category=REFERENCES["slavutsky2021"].category,
            subcategory="{dataset}",
            labels={
                "result": "extrapolation summary (Figure 3D)",
                "label view": "{labels}",
                "shift": ANALYSES["extrapolation"]["shift"],
                "model": "all",
            },
        ),
        latex=f"{ANALYSES_DIR}/{VIEW}/extrapolation_summary.tex",
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
        markdown=f"{ANALYSES_DIR}/extrapolation_simulation.md",
        csv=report(
            f"{ANALYSES_DIR}/extrapolation_simulation.csv",
            caption="../report/simulation_table.rst",
            category=REFERENCES["slavutsky2021"].category,
            subcategory="simulation",
            labels={
                "result": "simulation RMSE table (Figure 2)",
                "label view": "-",
                "shift": "-",
                "model": "-",
            },
        ),
        latex=f"{ANALYSES_DIR}/extrapolation_simulation.tex",
        json=f"{ANALYSES_DIR}/extrapolation_simulation.json",
        figure=report(
            f"{ANALYSES_DIR}/extrapolation_simulation.png",
            caption="../report/simulation_figure.rst",
            category=REFERENCES["slavutsky2021"].category,
            subcategory="simulation",
            labels={
                "result": "simulation figure (Figure 2)",
                "label view": "-",
                "shift": "-",
                "model": "-",
            },
        ),
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
