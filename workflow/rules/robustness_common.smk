# Config and input functions of the robustness rules (workflow/rules/robustness.smk). Which
# analysis runs on which dataset, over which shifts, is planned by
# classwise.pipeline.plan.resolve_robustness (with a note in results/README.md for each that
# cannot run), PLAN.robustness; the functions below read that plan.
from classwise.outputs import Scope, plan_scopes

ROBUSTNESS = config["robustness"]
ROBUSTNESS_RUNS = PLAN.robustness
ROBUST_TABLES = f"{OUT}/tables/{{dataset}}/robustness"
ROBUST_FIGURES = f"{OUT}/figures/{{dataset}}/robustness"


def attacked_shifts(dataset):
    """The shifts of `dataset` whose images attack a model, untargeted (PGD, AutoAttack and
    transfer attacks): one Figure 4 each."""
    return ROBUSTNESS_RUNS[dataset].attacked


def transfer_pairs(dataset):
    """(source, target, shift) of every transfer attack evaluated on `dataset`, each crafted on
    its source and evaluated on every model of the dataset (the source itself: white-box).
    """
    return ROBUSTNESS_RUNS[dataset].transfers


def transferred_logits(wildcards):
    return [
        logits_path(wildcards.dataset, target, shift)
        for _, target, shift in transfer_pairs(wildcards.dataset)
    ]


def transformed_shifts(dataset):
    """The shifts the transformation tests compare with clean, sample by sample: corruptions
    made on the fly and published corrupted copies of the dataset (CIFAR-10-C, ImageNet-C).
    """
    return ROBUSTNESS_RUNS[dataset].transformed


def corrupted_shifts(dataset):
    """The corrupted copies of `dataset` the corruption errors average."""
    return ROBUSTNESS_RUNS[dataset].corrupted


def targeted_models(dataset):
    """The models of robustness.targeted_models evaluated on `dataset`."""
    return ROBUSTNESS_RUNS[dataset].targeted_models


def classwise_files(wildcards):
    """Per shift scoring every class of the dataset (not a class subset such as ImageNet-R's)
    and model: what the metrics step wrote of it under the original labels and the outputs file
    it read (classwise.steps.robustness.MetricFiles)."""
    return {
        shift: {
            model: {
                **{
                    name: file_of(
                        record,
                        OUT,
                        {
                            "dataset": wildcards.dataset,
                            "labels": "original",
                            "model": model,
                            "shift": shift,
                        },
                    )
                    for name, record in (
                        ("worst_class", "worst_class_metrics"),
                        ("per_class", "per_class_numbers"),
                        ("confusion", "confusion_counts"),
                    )
                },
                "outputs": logits_path(wildcards.dataset, model, shift),
            }
            for model in dataset_models(wildcards.dataset)
        }
        for shift in ROBUSTNESS_RUNS[wildcards.dataset].full_label_space
    }


def flat_classwise_files(wildcards):
    return [
        path
        for per_model in classwise_files(wildcards).values()
        for files in per_model.values()
        for path in files.values()
    ]


def unpaired_shifts(dataset):
    """The shifts of `dataset` (full label space) whose images are not the base dataset's
    samples (natural shift sets): compared with clean unpaired, never matched by sample id.
    """
    return [
        s for s in ROBUSTNESS_RUNS[dataset].full_label_space if not SHIFTS[s].paired
    ]


def class_drop_shifts(wildcards):
    """The shifts whose change from clean the class-drop tests of a (dataset, label view) test,
    class by class (classwise.pipeline.plan.RobustnessRuns.class_drops)."""
    return ROBUSTNESS_RUNS[wildcards.dataset].class_drops[wildcards.labels]


def class_drop_files(wildcards):
    """Model -> shift -> the outputs file the class-drop tests read, clean first."""
    shifts = ["clean", *class_drop_shifts(wildcards)]
    return {
        model: {shift: logits_path(wildcards.dataset, model, shift) for shift in shifts}
        for model in dataset_models(wildcards.dataset)
    }


def class_drop_inputs(wildcards):
    """Every outputs file of class_drop_files and, for a label view other than the original,
    its labels file (the metrics step's view of the same samples)."""
    inputs = {
        "outputs": [
            path
            for by_shift in class_drop_files(wildcards).values()
            for path in by_shift.values()
        ]
    }
    if wildcards.labels != "original":
        inputs["labels"] = f"{OUT}/labels/{wildcards.dataset}/{wildcards.labels}.csv"
    return inputs


def targeted_runs(wildcards):
    return {
        model: {
            SHIFTS[shift].target: logits_path(wildcards.dataset, model, shift)
            for shift in ROBUSTNESS_RUNS[wildcards.dataset].targeted
        }
        for model in targeted_models(wildcards.dataset)
    }


def robustness_outputs():
    """Every table and figure of the robustness analyses the plan runs: the records of
    classwise.outputs' robustness stage, in catalogue order, at each scope of robustness_scopes
    where their analysis (Output.when) runs."""
    return plan_scopes("robustness", robustness_scopes())


def robustness_scopes():
    """Where each robustness analysis runs, in plan order, dataset by dataset (the plan of
    classwise.pipeline.plan.resolve_robustness): the class-wise analysis and its mean confusion
    figure per attack, the corruption grid, the robust fairness per attack, the transformation
    tests per model, the transfer matrix, the targeted attacks; and per label view the
    class-drop tests."""
    for dataset, runs in ROBUSTNESS_RUNS.items():
        each = {"dataset": dataset}
        if runs.classwise:
            yield Scope(each, {"classwise"})
            for shift in runs.attacked:
                yield Scope({**each, "shift": shift}, {"classwise", "attacked"})
        for labels in runs.class_drops:
            yield Scope({**each, "labels": labels}, {"class_drops"})
        if runs.corruption_grid:
            yield Scope(each, {"corruption_grid"})
        for shift in runs.robust_fairness:
            yield Scope({**each, "shift": shift}, {"robust_fairness"})
        if runs.transformation_tests:
            for model in dataset_models(dataset):
                yield Scope({**each, "model": model}, {"transformation_tests"})
        if runs.transfer_matrix:
            yield Scope(each, {"transfer_matrix"})
        if runs.targeted_attacks:
            yield Scope(each, {"targeted_attacks"})
