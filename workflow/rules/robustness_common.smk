# Config and input functions of the robustness rules (workflow/rules/robustness.smk).
from snakemake.utils import validate

from classwise.errors import InputError

validate(
    config["robustness"], workflow.source_path("../schemas/robustness.schema.yaml")
)

ROBUSTNESS = config["robustness"]
ROBUST_TABLES = f"{OUT}/tables/{{dataset}}/robustness"
ROBUST_FIGURES = f"{OUT}/figures/{{dataset}}/robustness"


def shifts_of_kind(dataset, kind):
    return [s for s in view_shifts(dataset, "original") if SHIFTS[s].kind == kind]


def adversarial_shifts(dataset):
    """The untargeted attacks evaluated on `dataset` (classwise.shifts.spec: ShiftSpec.adversarial)."""
    return [s for s in view_shifts(dataset, "original") if SHIFTS[s].adversarial]


def attacked_shifts(dataset):
    """The shifts of `dataset` whose images attack a model, untargeted (PGD, AutoAttack and
    transfer attacks; classwise.shifts.spec: ShiftSpec.adversarial_images): one Figure 4 each.
    """
    return [s for s in view_shifts(dataset, "original") if SHIFTS[s].adversarial_images]


def transfer_pairs(dataset):
    """(source, target, shift) of every transfer attack evaluated on `dataset`, each crafted on
    its source and evaluated on every model of the dataset (the source itself: white-box).
    """
    return [
        (SHIFTS[s].params["source"], model, s)
        for s in shifts_of_kind(dataset, "transfer")
        for model in dataset_models(dataset)
    ]


def transferred_logits(wildcards):
    return [
        logits_path(wildcards.dataset, target, shift)
        for _, target, shift in transfer_pairs(wildcards.dataset)
    ]


def transformed_shifts(dataset):
    """The shifts the transformation tests compare with clean, sample by sample: corruptions
    made on the fly and published corrupted copies of the dataset (CIFAR-10-C, ImageNet-C).
    """
    return [
        s
        for s in view_shifts(dataset, "original")
        if SHIFTS[s].kind == "corruption"
        or (
            SHIFTS[s].kind == "dataset"
            and SHIFTS[s].paired
            and not SHIFTS[s].restricted
        )
    ]


def full_label_space_shifts(dataset):
    """The shifts whose logits score every class of the dataset (not a class subset such as
    ImageNet-R's): what the analyses comparing shifts class by class read."""
    return [s for s in view_shifts(dataset, "original") if not SHIFTS[s].restricted]


def targeted_shifts(dataset):
    """The targeted attacks evaluated on `dataset` (one shift per target class)."""
    return [s for s in dataset_shifts(dataset) if "target" in SHIFTS[s].params]


def targeted_models(dataset):
    """The models of robustness.targeted_models evaluated on `dataset`."""
    return [m for m in ROBUSTNESS["targeted_models"] if m in dataset_models(dataset)]


def classwise_confusions(wildcards):
    return {
        shift: {
            model: f"{OUT}/metrics/{wildcards.dataset}/original/{model}/{shift}/confusion.csv"
            for model in dataset_models(wildcards.dataset)
        }
        for shift in full_label_space_shifts(wildcards.dataset)
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
            for shift in targeted_shifts(wildcards.dataset)
        }
        for model in targeted_models(wildcards.dataset)
    }


def _plan_robustness():
    """Say in results/README.md which configured robustness analyses cannot run on a dataset."""
    unknown = [m for m in ROBUSTNESS["targeted_models"] if m not in MODELS]
    if unknown:
        raise InputError(
            f"names models {unknown}, expected some of {MODELS}",
            path=CONFIG_SOURCE,
            field="robustness.targeted_models",
        )
    for dataset in DATASETS:
        has_clean = "clean" in view_shifts(dataset, "original")
        restricted = [
            s for s in view_shifts(dataset, "original") if SHIFTS[s].restricted
        ]
        if restricted:
            PLAN.notes.append(
                f"class-wise robustness and reference tests on {dataset}: leave out {restricted}, whose "
                "logits score a class subset only (their own tables and figures are written)"
            )
        if transformed_shifts(dataset) and not has_clean:
            PLAN.notes.append(
                f"transformation tests on {dataset}: skipped, they compare each corruption "
                "with the clean shift, which is not evaluated on it"
            )
        if adversarial_shifts(dataset) and not has_clean:
            PLAN.notes.append(
                f"robust fairness on {dataset}: skipped, it compares each attack with the clean "
                "shift, which is not evaluated on it"
            )
        if transfer_pairs(dataset) and not has_clean:
            PLAN.notes.append(
                f"transfer matrix on {dataset}: skipped, it reads each target's clean accuracy "
                "on the attacked samples, and clean is not evaluated on it"
            )
        if targeted_shifts(dataset) and not targeted_models(dataset):
            PLAN.notes.append(
                f"targeted attacks on {dataset}: skipped, no model of "
                "robustness.targeted_models is evaluated on it"
            )
        elif targeted_shifts(dataset) and not has_clean:
            PLAN.notes.append(
                f"targeted attacks on {dataset}: skipped, their success rates leave out the "
                "samples predicted as the target on clean images, and clean is not evaluated on it"
            )


_plan_robustness()


def robustness_outputs():
    """Every table and figure of the robustness analyses, planned (output records)."""
    planned = []
    for dataset in DATASETS:
        each = {"dataset": dataset}
        has_clean = "clean" in view_shifts(dataset, "original")
        if full_label_space_shifts(dataset):
            planned += [
                Planned(name, each)
                for name in (
                    "classwise_table",
                    "classwise_robustness_figure",
                    "prediction_similarity",
                    "shift_summary_table",
                    "corruption_errors_table",
                    "class_shift_accuracy",
                    "class_shift_cfps",
                    "worst_classes_by_shift",
                    "accuracy_spread",
                )
            ]
            planned += [
                Planned("mean_confusion", {**each, "shift": shift})
                for shift in attacked_shifts(dataset)
            ]
        if shifts_of_kind(dataset, "corruption"):
            planned.append(Planned("corruption_grid", each))
        if has_clean:
            planned += [
                Planned(name, {**each, "shift": shift})
                for shift in adversarial_shifts(dataset)
                for name in ("robust_fairness_table", "robust_fairness_figure")
            ]
        if transformed_shifts(dataset) and has_clean:
            planned += [
                Planned("transformation_tests", {**each, "model": model})
                for model in dataset_models(dataset)
            ]
        if transfer_pairs(dataset) and has_clean:
            planned.append(Planned("transfer_matrix", each))
        if targeted_shifts(dataset) and targeted_models(dataset) and has_clean:
            planned += [
                Planned("targeted_success_table", each),
                Planned("targeted_success_figure", each),
            ]
    return planned
