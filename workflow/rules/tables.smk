# Paper-style tables and figures, one set per (dataset, label view, shift):
#   results/tables/{dataset}/{labels}/{shift}/worst_class.*    Table 1, worst-class-metrics.txt
#   results/tables/{dataset}/{labels}/{shift}/decisiveness.*   Table 1, decisiveness-robustness.txt
#   results/tables/{dataset}/{labels}/{shift}/gamma_sweep.*    Table 2, decisiveness-robustness.txt
#   results/figures/{dataset}/{labels}/{shift}/                per-class bars, confusion heatmaps,
#                                                              reliability diagrams (Figure 1)
# Each table comes as Markdown (.md), CSV (.csv) and LaTeX booktabs (.tex).


rule aggregate_worst_class_tables:
    input:
        unpack(lambda wildcards: per_model_metrics(wildcards, "worst_class.json")),
    output:
        **table_outputs("worst_class"),
    log:
        f"{OUT}/logs/aggregate_worst_class_tables/{VIEW_SHIFT}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=MODELS,
        caption=lambda wildcards: (
            f"Worst-class metrics on {wildcards.dataset} ({wildcards.labels} labels, "
            f"shift {wildcards.shift}), in percent; worst class in parentheses."
        ),
    script:
        "../../scripts/aggregate_worst_class_tables.py"


rule aggregate_decisiveness_tables:
    input:
        unpack(lambda wildcards: per_model_metrics(wildcards, "decisiveness.json")),
    output:
        **table_outputs("decisiveness", prefix="table_"),
        **table_outputs("gamma_sweep", prefix="sweep_"),
    log:
        f"{OUT}/logs/aggregate_decisiveness_tables/{VIEW_SHIFT}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=MODELS,
        caption=lambda wildcards: (
            f"Decisiveness, geometric accuracy and robustness on {wildcards.dataset} "
            f"({wildcards.labels} labels, shift {wildcards.shift})."
        ),
    script:
        "../../scripts/aggregate_decisiveness_tables.py"


rule plot_class_wise_figures:
    input:
        per_class=lambda wildcards: per_model_metrics(
            wildcards, "per_class.csv"
        ).values(),
        metrics=lambda wildcards: per_model_metrics(
            wildcards, "worst_class.json"
        ).values(),
        confusion=lambda wildcards: per_model_metrics(
            wildcards, "confusion.csv"
        ).values(),
    output:
        recall=f"{FIGURES}/per_class_recall.png",
        cfps=f"{FIGURES}/per_class_cfps.png",
        confusion=[f"{FIGURES}/confusion_{model}.png" for model in MODELS],
    log:
        f"{OUT}/logs/plot_class_wise_figures/{VIEW_SHIFT}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=MODELS,
        title=lambda wildcards: f"{wildcards.dataset}, {wildcards.labels} labels, {wildcards.shift}",
    script:
        "../../scripts/plot_class_wise_figures.py"


rule describe_results:
    output:
        readme=f"{OUT}/README.md",
    log:
        f"{OUT}/logs/describe_results.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        description=config["description"],
        outputs=final_outputs(),
    script:
        "../../scripts/describe_results.py"
