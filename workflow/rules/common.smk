# Config validation, wildcard constraints and every input function.
import re

from snakemake.utils import validate

from classwise.shifts.spec import expand_shifts

validate(config, workflow.source_path("../schemas/config.schema.yaml"))

OUT = config["output_dir"].rstrip("/")
DATASETS = list(config["datasets"])
MODELS = list(config["models"])
SHIFTS = expand_shifts(config["shifts"])
LABEL_VIEWS = list(config["label_views"])


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


def shift_spec(wildcards):
    return SHIFTS[wildcards.shift].to_json()


def checkpoint_path(wildcards):
    return f"{OUT}/models/{wildcards.model}.pt"


def logits_path(dataset, model, shift):
    return f"{OUT}/logits/{dataset}/{model}/{shift}.npz"


def worst_class_metrics_of_models(wildcards):
    return {
        model: f"{OUT}/metrics/{wildcards.dataset}/{wildcards.labels}/{model}/{wildcards.shift}/worst_class.json"
        for model in MODELS
    }


def final_outputs():
    return [
        f"{OUT}/tables/{dataset}/{labels}/{shift}/worst_class.md"
        for dataset in DATASETS
        for labels in LABEL_VIEWS
        for shift in SHIFTS
    ]
