# Paper-style tables and figures, one set per (dataset, label view, shift):
#   results/tables/{dataset}/{labels}/{shift}/worst_class.*    Table 1, Bitterwolf et al., 2022
#   .../worst_class_intervals.*, model_comparison.*           the same with intervals; every pair of
#                                                              models (metrics.bootstrap on)
#   results/tables/{dataset}/{labels}/{shift}/decisiveness.*   Table 1, George et al., 2020
#   .../decisiveness_intervals.*                               the same with intervals (bootstrap on)
#   results/tables/{dataset}/{labels}/{shift}/gamma_sweep.*    Table 2, George et al., 2020
#   results/figures/{dataset}/{labels}/{shift}/                per-class bars, confusion heatmaps,
#                                                              reliability diagrams (Figure 1)
# Each table comes as Markdown (.md), CSV (.csv) and LaTeX booktabs (.tex).
# Every output is an output record (classwise.outputs); a rule declares all of its records with
# outputs_of_rule(rule), the interval tables and the worst-class figure only with the bootstrap on
# (their Output.when).
# `snakemake --report` (make report) puts the CSVs and figures the records mark for the report
# into one HTML file, one category per paper and one subcategory per dataset; the captions are
# the .rst files of workflow/report/, written from the records, which show each CSV with the
# classwise-table directive registered here.
from classwise.pipeline.report import register_directives

register_directives()


report: "../report/workflow.rst"


rule aggregate_worst_class_tables:
    input:
        unpack(worst_class_table_inputs),
    output:
        **outputs_of_rule("aggregate_worst_class_tables"),
    log:
        f"{OUT}/logs/aggregate_worst_class_tables/{VIEW_SHIFT}.log",
    wildcard_constraints:
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: dataset_models(wildcards.dataset),
        bootstrap=bootstrap_params(),
    script:
        "../../scripts/aggregate_worst_class_tables.py"


rule compare_models:
    input:
        unpack(comparison_inputs),
    output:
        **outputs_of_rule("compare_models"),
    log:
        f"{OUT}/logs/compare_models/{VIEW_SHIFT}.log",
    wildcard_constraints:
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: dataset_models(wildcards.dataset),
        k=config["metrics"]["worst_class"]["k"],
        n=config["metrics"]["worst_class"]["n"],
        superclasses=superclasses_of,
        bootstrap=bootstrap_params(),
    script:
        "../../scripts/compare_models.py"


rule aggregate_decisiveness_tables:
    input:
        unpack(decisiveness_table_inputs),
    output:
        **outputs_of_rule("aggregate_decisiveness_tables"),
    log:
        f"{OUT}/logs/aggregate_decisiveness_tables/{VIEW_SHIFT}.log",
    wildcard_constraints:
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: scored_models(wildcards.dataset, [wildcards.shift]),
        bootstrap=bootstrap_params(),
    script:
        "../../scripts/aggregate_decisiveness_tables.py"


rule plot_class_wise_figures:
    input:
        unpack(figure_inputs),
    output:
        **outputs_of_rule("plot_class_wise_figures"),
    log:
        f"{OUT}/logs/plot_class_wise_figures/{VIEW_SHIFT}.log",
    wildcard_constraints:
        dataset=PER_SHIFT_DATASETS,
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: dataset_models(wildcards.dataset),
        confidence=BOOTSTRAP["confidence"],  # of per_class.csv's intervals, drawn as error bars
    script:
        "../../scripts/plot_class_wise_figures.py"


rule describe_results:
    input:
        # Written once every output it describes is, so that a run whose job failed leaves no
        # README describing it; ancient, since its text is the plan's (its params): a rerun of
        # those outputs does not rewrite it.
        ancient(requested(planned_outputs())),
    output:
        readme=f"{OUT}/README.md",
    log:
        f"{OUT}/logs/describe_results.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        description=config["description"],
        outputs=listed_outputs(),
        notes=PLAN.notes,
    script:
        "../../scripts/describe_results.py"
