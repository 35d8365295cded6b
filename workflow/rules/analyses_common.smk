# Settings, path patterns and input functions of the analyses (included by the Snakefile
# ahead of the rule files). Its `analyses` config section was validated against
# workflow/schemas/analyses.schema.yaml by common.smk, and which analysis runs where is
# PLAN.analyses (classwise.pipeline.plan.resolve_analyses).
from classwise.outputs import Scope, plan_scopes
from classwise.pipeline.plan import ANALYSIS_SHIFT_KEYS

ANALYSES = config["analyses"]
ANALYSES_DIR = f"{OUT}/analyses"
VIEW_MODEL = "{dataset}/{labels}/{model}"
VIEW = "{dataset}/{labels}"


def analysis_settings(dataset, section):
    """The settings of an analysis on a dataset, or None when it is skipped there."""
    return PLAN.analyses[dataset][section]


def analysed_views(dataset, section):
    """The configured label views of `dataset` an analysis runs on (none when it is skipped)."""
    settings = analysis_settings(dataset, section)
    if settings is None:
        return []
    shift = settings[ANALYSIS_SHIFT_KEYS[section]]
    return [
        view
        for view in ANALYSES["label_views"]
        if view in views_of(dataset)
        and shift in view_shifts(dataset, view)
        and (dataset, view) not in PLAN.label_set_views
    ]


def compared_shifts(dataset, view):
    """The shifts of a view the reference tests compare: those scoring every class (a class
    subset such as ImageNet-R's has other columns than the reference)."""
    return [s for s in view_shifts(dataset, view) if not SHIFTS[s].restricted]


def reference_views(dataset):
    """Views with the reference shift and at least one other shift to compare with it."""
    return [
        view
        for view in analysed_views(dataset, "reference_tests")
        if len(compared_shifts(dataset, view)) > 1
    ]


def reference_shifts(wildcards):
    """The reference shift first, then the view's other shifts in config order."""
    reference = ANALYSES["reference_tests"]["reference"]
    shifts = compared_shifts(wildcards.dataset, wildcards.labels)
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
    classwise.outputs' analyses stage, in catalogue order, at each scope of analysis_scopes
    where their analysis (Output.when) runs."""
    return plan_scopes("analyses", analysis_scopes())


def analysis_scopes():
    """Where each analysis runs, in plan order: per dataset, the image features of the subset
    tests, then each analysis over its views (each view, then its models); the simulation last.
    """
    for dataset in DATASETS:
        subset_views = analysed_views(dataset, "subset_tests")
        if subset_views:
            yield Scope({"dataset": dataset}, {"subset_tests"})
        views = {
            "subset_tests": subset_views,
            "reference_tests": reference_views(dataset),
            "extrapolation": analysed_views(dataset, "extrapolation"),
        }
        for section, labels_of in views.items():
            for labels in labels_of:
                view = {"dataset": dataset, "labels": labels}
                yield Scope(view, {section})
                for model in analysis_models(dataset, section):
                    yield Scope({**view, "model": model}, {section})
    if ANALYSES["simulation"]["enabled"]:
        yield Scope({}, {"simulation"})
