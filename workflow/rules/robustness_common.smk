# Config and input functions of the robustness rules (workflow/rules/robustness.smk).
from snakemake.utils import validate

validate(
    config["robustness"], workflow.source_path("../schemas/robustness.schema.yaml")
)

ROBUSTNESS = config["robustness"]
ROBUST_TABLES = f"{OUT}/tables/{{dataset}}/robustness"
ROBUST_FIGURES = f"{OUT}/figures/{{dataset}}/robustness"


def shifts_of_kind(dataset, kind):
    return [s for s in view_shifts(dataset, "original") if SHIFTS[s].kind == kind]


def targeted_shifts():
    return [name for name, spec in SHIFTS.items() if "target" in spec.params]


def classwise_confusions(wildcards):
    return {
        shift: {
            model: f"{OUT}/metrics/{wildcards.dataset}/original/{model}/{shift}/confusion.csv"
            for model in MODELS
        }
        for shift in view_shifts(wildcards.dataset, "original")
    }


def flat_confusions(wildcards):
    return [
        path
        for per_model in classwise_confusions(wildcards).values()
        for path in per_model.values()
    ]


def targeted_runs(wildcards):
    return {
        model: {
            SHIFTS[shift].params["target"]: logits_path(wildcards.dataset, model, shift)
            for shift in targeted_shifts()
        }
        for model in ROBUSTNESS["targeted_models"]
    }


def robustness_outputs():
    outputs = []
    for dataset in DATASETS:
        tables = f"{OUT}/tables/{dataset}/robustness"
        figures = f"{OUT}/figures/{dataset}/robustness"
        outputs += [f"{figures}/classwise_robustness.png", f"{tables}/classwise.md"]
        if shifts_of_kind(dataset, "corruption"):
            outputs += [f"{tables}/transformation_tests_{model}.md" for model in MODELS]
            outputs.append(f"{figures}/corruption_grid.png")
        if targeted_shifts() and ROBUSTNESS["targeted_models"]:
            outputs += [
                f"{figures}/targeted_success.png",
                f"{tables}/targeted_success.md",
            ]
    return outputs
