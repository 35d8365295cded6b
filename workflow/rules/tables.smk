# Paper-style tables: results/tables/{dataset}/{labels}/{shift}/


rule aggregate_tables:
    input:
        unpack(worst_class_metrics_of_models),
    output:
        markdown=f"{OUT}/tables/{{dataset}}/{{labels}}/{{shift}}/worst_class.md",
        csv=f"{OUT}/tables/{{dataset}}/{{labels}}/{{shift}}/worst_class.csv",
        latex=f"{OUT}/tables/{{dataset}}/{{labels}}/{{shift}}/worst_class.tex",
    log:
        f"{OUT}/logs/aggregate_tables/{{dataset}}/{{labels}}/{{shift}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=MODELS,
        caption=lambda wildcards: (
            f"Worst-class metrics on {wildcards.dataset} ({wildcards.labels} labels, "
            f"shift {wildcards.shift}), in percent; worst class in parentheses."
        ),
    script:
        "../../scripts/aggregate_tables.py"
