# Settings, checks, path patterns and input functions of the analyses (included by
# analyses.smk, before its rules). The `analyses:` config section is validated against
# workflow/schemas/analyses.schema.yaml, which fills in the defaults.
from classwise.errors import InputError

validate(config["analyses"], workflow.source_path("../schemas/analyses.schema.yaml"))

ANALYSES = config["analyses"]
ANALYSES_DIR = f"{OUT}/analyses"
VIEW_MODEL = "{dataset}/{labels}/{model}"
VIEW = "{dataset}/{labels}"


def _check_analyses():
    unknown = [v for v in ANALYSES["label_views"] if v not in LABEL_VIEWS]
    if unknown:
        raise InputError(
            f"names label views {unknown}, expected some of {LABEL_VIEWS}",
            path="config",
            field="analyses.label_views",
        )
    for section in ("subset_tests", "extrapolation"):
        shift = ANALYSES[section]["shift"]
        if ANALYSES[section]["enabled"] and shift not in SHIFTS:
            raise InputError(
                f"names shift {shift!r}, expected one of {list(SHIFTS)}",
                path="config",
                field=f"analyses.{section}.shift",
            )
    reference = ANALYSES["reference_tests"]["reference"]
    if ANALYSES["reference_tests"]["enabled"] and reference not in SHIFTS:
        raise InputError(
            f"names shift {reference!r}, expected one of {list(SHIFTS)}",
            path="config",
            field="analyses.reference_tests.reference",
        )
    for dataset in ANALYSES["features"]["metadata"]:
        if dataset not in DATASETS:
            raise InputError(
                f"names dataset {dataset!r}, expected one of {DATASETS}",
                path="config",
                field="analyses.features.metadata",
            )


_check_analyses()


def analysed_views(dataset, shift):
    """The configured label views of `dataset` that are evaluated on `shift`."""
    return [
        view
        for view in ANALYSES["label_views"]
        if view in views_of(dataset) and shift in view_shifts(dataset, view)
    ]


def reference_views(dataset):
    """Views with the reference shift and at least one other shift to compare with it."""
    reference = ANALYSES["reference_tests"]["reference"]
    return [
        view
        for view in analysed_views(dataset, reference)
        if len(view_shifts(dataset, view)) > 1
    ]


def reference_shifts(wildcards):
    """The reference shift first, then the view's other shifts in config order."""
    reference = ANALYSES["reference_tests"]["reference"]
    shifts = view_shifts(wildcards.dataset, wildcards.labels)
    return [reference, *(shift for shift in shifts if shift != reference)]


def view_labels(wildcards):
    """The label file of a view other than `original` (nothing for `original`)."""
    if wildcards.labels == "original":
        return []
    return f"{OUT}/labels/{wildcards.dataset}/{wildcards.labels}.csv"


def metadata_file(wildcards):
    return ANALYSES["features"]["metadata"].get(wildcards.dataset, [])


def per_model_analyses(wildcards, filename):
    return [
        f"{ANALYSES_DIR}/{wildcards.dataset}/{wildcards.labels}/{model}/{filename}"
        for model in MODELS
    ]


def analysis_outputs():
    """Every table and figure of the enabled analyses."""
    outputs = []
    subset = ANALYSES["subset_tests"]
    reference = ANALYSES["reference_tests"]
    extrapolation = ANALYSES["extrapolation"]
    for dataset in DATASETS:
        if subset["enabled"]:
            for labels in analysed_views(dataset, subset["shift"]):
                outputs += [
                    f"{ANALYSES_DIR}/{dataset}/{labels}/{model}/subset_tests.md"
                    for model in MODELS
                ]
        if reference["enabled"]:
            for labels in reference_views(dataset):
                outputs.append(
                    f"{ANALYSES_DIR}/{dataset}/{labels}/reference_tests_summary.md"
                )
        if extrapolation["enabled"]:
            for labels in analysed_views(dataset, extrapolation["shift"]):
                outputs.append(
                    f"{ANALYSES_DIR}/{dataset}/{labels}/extrapolation_summary.md"
                )
                outputs += [
                    f"{ANALYSES_DIR}/{dataset}/{labels}/{model}/extrapolation.png"
                    for model in MODELS
                ]
    if ANALYSES["simulation"]["enabled"]:
        outputs.append(f"{ANALYSES_DIR}/extrapolation_simulation.md")
    return outputs
