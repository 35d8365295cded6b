# Config validation, wildcard constraints, path patterns and every input function.
import re

from snakemake.utils import validate

from classwise.config_checks import check_references
from classwise.shifts.spec import expand_shifts

validate(config, workflow.source_path("../schemas/config.schema.yaml"))
check_references(config)

OUT = config["output_dir"].rstrip("/")
DATASETS = list(config["datasets"])
MODELS = list(config["models"])
SHIFTS = expand_shifts(config["shifts"])
LABEL_VIEWS = list(config["label_views"])

VIEW_SHIFT = "{dataset}/{labels}/{shift}"
VIEW_MODEL_SHIFT = "{dataset}/{labels}/{model}/{shift}"
METRICS = f"{OUT}/metrics/{VIEW_MODEL_SHIFT}"
TABLES = f"{OUT}/tables/{VIEW_SHIFT}"
FIGURES = f"{OUT}/figures/{VIEW_SHIFT}"


def _alternatives(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    dataset=_alternatives(DATASETS),
    model=_alternatives(MODELS),
    shift=_alternatives(SHIFTS),
    labels=_alternatives(LABEL_VIEWS),


def model_config(wildcards):
    return config["models"][wildcards.model]


def training_dataset(wildcards):
    model = config["models"][wildcards.model]
    return model.get("train_on", DATASETS[0])


def dataset_config(wildcards):
    return config["datasets"][wildcards.dataset]


def superclasses_of(wildcards):
    return config["datasets"][wildcards.dataset].get("superclasses", {})


def shift_spec(wildcards):
    return SHIFTS[wildcards.shift].to_json()


def checkpoint_path(wildcards):
    return f"{OUT}/models/{wildcards.model}.pt"


def logits_path(dataset, model, shift):
    return f"{OUT}/logits/{dataset}/{model}/{shift}.npz"


def metric_inputs(wildcards):
    """The cached logits of (dataset, model, shift); a label view other than the original
    adds its label file (one label per sample, -1 = removed)."""
    inputs = {
        "logits": logits_path(wildcards.dataset, wildcards.model, wildcards.shift)
    }
    if wildcards.labels != "original":
        inputs["labels"] = f"{OUT}/labels/{wildcards.dataset}/{wildcards.labels}.csv"
    return inputs


def per_model_metrics(wildcards, filename):
    """One metrics file per model, keyed by model name, for the aggregating rules."""
    return {
        model: f"{OUT}/metrics/{wildcards.dataset}/{wildcards.labels}/{model}/{wildcards.shift}/{filename}"
        for model in MODELS
    }


def table_outputs(name, prefix=""):
    return {
        f"{prefix}markdown": f"{TABLES}/{name}.md",
        f"{prefix}csv": f"{TABLES}/{name}.csv",
        f"{prefix}latex": f"{TABLES}/{name}.tex",
    }


def final_outputs():
    """Every table and figure of every (dataset, label view, shift)."""
    outputs = []
    for dataset in DATASETS:
        for labels in LABEL_VIEWS:
            for shift in SHIFTS:
                tables = f"{OUT}/tables/{dataset}/{labels}/{shift}"
                figures = f"{OUT}/figures/{dataset}/{labels}/{shift}"
                outputs += [
                    f"{tables}/{name}.md"
                    for name in ("worst_class", "decisiveness", "gamma_sweep")
                ]
                outputs += [
                    f"{figures}/per_class_recall.png",
                    f"{figures}/per_class_cfps.png",
                ]
                for model in MODELS:
                    outputs += [
                        f"{figures}/confusion_{model}.png",
                        f"{figures}/reliability_{model}.png",
                    ]
    return outputs
