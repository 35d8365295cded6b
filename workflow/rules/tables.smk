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
# `snakemake --report` (make report) puts the CSVs and figures marked with report() below, in
# analyses.smk, robustness.smk and metrics.smk into one HTML file, one category per paper and
# one subcategory per dataset; the captions are the .rst files of workflow/report/, which show
# each CSV with the classwise-table directive registered here.
from classwise.pipeline.report import register_directives

register_directives()


report: "../report/workflow.rst"


rule aggregate_worst_class_tables:
    input:
        unpack(lambda wildcards: per_model_metrics(wildcards, "worst_class.json")),
    output:
        # beside the paper's table, the same with each number's interval
        **bootstrap_outputs(
            {
                "intervals_markdown": f"{TABLES}/worst_class_intervals.md",
                "intervals_csv": report(
                    f"{TABLES}/worst_class_intervals.csv",
                    caption="../report/worst_class_intervals_table.rst",
                    category=REFERENCES["bitterwolf2022"].category,
                    subcategory="{dataset}",
                    labels={
                        "result": "worst-class metrics with intervals (Table 1)",
                        "label view": "{labels}",
                        "shift": "{shift}",
                        "model": "all",
                    },
                ),
                "intervals_latex": f"{TABLES}/worst_class_intervals.tex",
            }
        ),
        markdown=f"{TABLES}/worst_class.md",
        csv=report(
            f"{TABLES}/worst_class.csv",
            caption="../report/worst_class_table.rst",
            category=REFERENCES["bitterwolf2022"].category,
            subcategory="{dataset}",
            # Table 2 of the paper is the same table on cleaned labels
            labels=lambda wildcards: {
                "result": "worst-class metrics (Table %d)"
                % (1 if wildcards.labels == "original" else 2),
                "label view": wildcards.labels,
                "shift": wildcards.shift,
                "model": "all",
            },
        ),
        latex=f"{TABLES}/worst_class.tex",
    log:
        f"{OUT}/logs/aggregate_worst_class_tables/{VIEW_SHIFT}.log",
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
        markdown=f"{TABLES}/model_comparison.md",
        csv=report(
            f"{TABLES}/model_comparison.csv",
            caption="../report/model_comparison_table.rst",
            category=REFERENCES["bitterwolf2022"].category,
            subcategory="{dataset}",
            labels={
                "result": "model comparison (Table 1 metrics)",
                "label view": "{labels}",
                "shift": "{shift}",
                "model": "all",
            },
        ),
        latex=f"{TABLES}/model_comparison.tex",
    log:
        f"{OUT}/logs/compare_models/{VIEW_SHIFT}.log",
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
        unpack(
            lambda wildcards: per_model_metrics(
                wildcards,
                "decisiveness.json",
                scored_models(wildcards.dataset, [wildcards.shift]),
            )
        ),
    output:
        # beside the paper's Table 1, the same with each number's interval
        **bootstrap_outputs(
            {
                "intervals_markdown": f"{TABLES}/decisiveness_intervals.md",
                "intervals_csv": report(
                    f"{TABLES}/decisiveness_intervals.csv",
                    caption="../report/decisiveness_intervals_table.rst",
                    category=REFERENCES["george2020"].category,
                    subcategory="{dataset}",
                    labels={
                        "result": "decisiveness table with intervals (Table 1)",
                        "label view": "{labels}",
                        "shift": "{shift}",
                        "model": "all",
                    },
                ),
                "intervals_latex": f"{TABLES}/decisiveness_intervals.tex",
            }
        ),
        table_markdown=f"{TABLES}/decisiveness.md",
        table_csv=report(
            f"{TABLES}/decisiveness.csv",
            caption="../report/decisiveness_table.rst",
            category=REFERENCES["george2020"].category,
            subcategory="{dataset}",
            labels={
                "result": "decisiveness table (Table 1)",
                "label view": "{labels}",
                "shift": "{shift}",
                "model": "all",
            },
        ),
        table_latex=f"{TABLES}/decisiveness.tex",
        sweep_markdown=f"{TABLES}/gamma_sweep.md",
        sweep_csv=report(
            f"{TABLES}/gamma_sweep.csv",
            caption="../report/gamma_sweep_table.rst",
            category=REFERENCES["george2020"].category,
            subcategory="{dataset}",
            labels={
                "result": "gamma sweep table (Table 2)",
                "label view": "{labels}",
                "shift": "{shift}",
                "model": "all",
            },
        ),
        sweep_latex=f"{TABLES}/gamma_sweep.tex",
    log:
        f"{OUT}/logs/aggregate_decisiveness_tables/{VIEW_SHIFT}.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        models=lambda wildcards: scored_models(wildcards.dataset, [wildcards.shift]),
        bootstrap=bootstrap_params(),
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
    output:
        **bootstrap_outputs(
            {
                "worst_probability": report(
                    f"{FIGURES}/worst_probability.png",
                    caption="../report/worst_probability_figure.rst",
                    category=REFERENCES["bitterwolf2022"].category,
                    subcategory="{dataset}",
                    labels={
                        "result": "worst-class probabilities (Table 1 metrics)",
                        "label view": "{labels}",
                        "shift": "{shift}",
                        "model": "all",
                    },
                )
            }
        ),
        recall=report(
            f"{FIGURES}/per_class_recall.png",
            caption="../report/per_class_recall.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class-wise accuracy (Figures 1, 3)",
                "label view": "{labels}",
                "shift": "{shift}",
                "model": "all",
            },
        ),
        cfps=report(
            f"{FIGURES}/per_class_cfps.png",
            caption="../report/per_class_cfps.rst",
            category=REFERENCES["medi2024"].category,
            subcategory="{dataset}",
            labels={
                "result": "class-wise CFPS (Figures 2, 3)",
                "label view": "{labels}",
                "shift": "{shift}",
                "model": "all",
            },
        ),
    log:
        f"{OUT}/logs/plot_class_wise_figures/{VIEW_SHIFT}.log",
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
        ancient(described_outputs()),
    output:
        readme=f"{OUT}/README.md",
    log:
        f"{OUT}/logs/describe_results.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        description=config["description"],
        outputs=final_outputs(),
        notes=PLAN.notes,
    script:
        "../../scripts/describe_results.py"
