# The explorer: every class, model and shift of the run in one self-contained HTML page,
# written from the cached metric outputs (never the logits), what each file reads planned by
# classwise.pipeline.explorer (EXPLORER_VIEWS, workflow/rules/explorer_common.smk):
#   results/explorer.html   per dataset and label view: the models x shifts table, a class x
#                           shift heatmap per model, a search box for any class, the worst
#                           classes of each model and shift


rule build_explorer:
    input:
        explorer_inputs(EXPLORER_VIEWS),
    output:
        **outputs_of_rule("build_explorer"),
    log:
        f"{OUT}/logs/build_explorer.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        views=EXPLORER_VIEWS,
        description=config["description"],
        # the level of per_class.csv's recall intervals (compute_worst_class_metrics' confidence)
        confidence=BOOTSTRAP["confidence"],
    script:
        "../../scripts/build_explorer.py"
