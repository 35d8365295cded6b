# Metrics over cached logits: results/metrics/{dataset}/{labels}/{model}/{shift}/
#   worst_class.json     Bitterwolf et al., 2022 (+ bootstrap intervals, worst-class probabilities)
#   per_class.csv        per-class recall, precision, top-k recall, CFPS (Medi et al., 2024),
#                        recall/precision intervals (+ how often each class is the worst)
#   confusion.csv        true x predicted counts
#   decisiveness.json    George et al., 2020 (reported, measured, slope, gamma sweep;
#                        + bootstrap intervals)
# A label view reuses the same logits with other labels; it never reruns inference.
# One rule per metric family, so a changed parameter reruns only that family.


rule compute_worst_class_metrics:
    input:
        unpack(metric_inputs),
    output:
        **outputs_of_rule("compute_worst_class_metrics"),
    log:
        f"{OUT}/logs/compute_worst_class_metrics/{VIEW_MODEL_SHIFT}.log",
    wildcard_constraints:
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/metrics.yaml"
    params:
        k=config["metrics"]["worst_class"]["k"],
        n=config["metrics"]["worst_class"]["n"],
        superclasses=superclasses_of,
        confidence=BOOTSTRAP["confidence"],
        bootstrap=bootstrap_params(),
    script:
        "../../scripts/compute_worst_class_metrics.py"


rule compute_decisiveness_metrics:
    input:
        unpack(metric_inputs),
    output:
        **outputs_of_rule("compute_decisiveness_metrics"),
    log:
        f"{OUT}/logs/compute_decisiveness_metrics/{VIEW_MODEL_SHIFT}.log",
    wildcard_constraints:
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/metrics.yaml"
    params:
        gamma=config["metrics"]["decisiveness"]["gamma"],
        gammas=config["metrics"]["decisiveness"]["gamma_sweep"],
        bins=config["metrics"]["decisiveness"]["bins"],
        bootstrap=bootstrap_params(),
    script:
        "../../scripts/compute_decisiveness_metrics.py"
