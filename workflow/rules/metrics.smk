# Metrics over cached logits: results/metrics/{dataset}/{labels}/{model}/{shift}/
# A label view reuses the same logits with other labels; it never reruns inference.


rule compute_worst_class_metrics:
    input:
        logits=lambda wildcards: logits_path(
            wildcards.dataset, wildcards.model, wildcards.shift
        ),
    output:
        metrics=f"{OUT}/metrics/{{dataset}}/{{labels}}/{{model}}/{{shift}}/worst_class.json",
        per_class=f"{OUT}/metrics/{{dataset}}/{{labels}}/{{model}}/{{shift}}/per_class.csv",
    log:
        f"{OUT}/logs/compute_worst_class_metrics/{{dataset}}/{{labels}}/{{model}}/{{shift}}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        k=config["metrics"]["worst_class"]["k"],
        n=config["metrics"]["worst_class"]["n"],
        superclasses=lambda wildcards: config["datasets"][wildcards.dataset].get(
            "superclasses", {}
        ),
        label_view=lambda wildcards: wildcards.labels,
    script:
        "../../scripts/compute_worst_class_metrics.py"
