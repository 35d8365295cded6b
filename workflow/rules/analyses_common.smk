# Settings, path patterns and input functions of the analyses (included by the Snakefile
# ahead of the rule files). Its `analyses` config section was validated against
# workflow/schemas/analyses.schema.yaml by common.smk, and which analysis runs where is
# PLAN.analyses (classwise.pipeline.plan.resolve_analyses).
from classwise.outputs import plan_scopes
from classwise.pipeline.plan import analysis_scopes, compared_shifts

ANALYSES = config["analyses"]
ANALYSES_DIR = f"{OUT}/analyses"
VIEW_MODEL = "{dataset}/{labels}/{model}"
VIEW = "{dataset}/{labels}"


def analysis_settings(dataset, section):
    """The settings of an analysis on a dataset, or None when it is skipped there."""
    return PLAN.analyses[dataset][section]


def reference_shifts(wildcards):
    """The reference shift first, then the view's other shifts in config order."""
    reference = ANALYSES["reference_tests"]["reference"]
    shifts = compared_shifts(PLAN, wildcards.dataset, wildcards.labels, SHIFTS)
    return [reference, *(shift for shift in shifts if shift != reference)]


def view_labels(wildcards):
    """The label file of a view other than `original` (nothing for `original`)."""
    if wildcards.labels == "original":
        return []
    return view_labels_path(wildcards)


def metadata_file(wildcards):
    return ANALYSES["features"]["metadata"].get(wildcards.dataset, [])


def analysis_models(dataset, section):
    """The models an analysis runs for on `dataset`: those with scores on its shifts."""
    return PLAN.analysis_models.get((dataset, section), dataset_models(dataset))


def per_model_analyses(wildcards, filename, section):
    return [
        f"{ANALYSES_DIR}/{wildcards.dataset}/{wildcards.labels}/{model}/{filename}"
        for model in analysis_models(wildcards.dataset, section)
    ]


def analysis_outputs():
    """Every table, figure and data file of the enabled analyses, planned: the records of
    classwise.outputs' analyses stage, in catalogue order, at each scope where their analysis
    (Output.when) runs (classwise.pipeline.plan.analysis_scopes)."""
    return plan_scopes(
        "analyses",
        analysis_scopes(PLAN, simulation=ANALYSES["simulation"]["enabled"]),
    )
