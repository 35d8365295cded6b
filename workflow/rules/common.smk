# Config validation, wildcard constraints, path patterns and every input function.
import copy
import functools
import json
import os
import re

from snakemake.utils import validate

from classwise.pipeline.snakemake_internals import literal_resources, rule_named

from classwise.pipeline.config_checks import (
    check_models,
    check_references,
    check_schema,
    configured_shifts,
    section_schema,
    names_as_strings,
    shift_shards,
)
from classwise.data.sources import dataset_source, input_files, job_parameters
from classwise.inference.execution import Execution
from classwise.data.shift_sets import (
    archive_record,
    downloaded_files,
    expand_shift_sets,
    merge_shifts,
    shift_archives,
)
from classwise.labels.real import REAL_URL
from classwise.labels.views import LABEL_FILES, required_files
from classwise.models.sources import model_source
from classwise.models.sources.base import PipelineSource
from classwise.outputs import Planned, Scope, file_of, output, plan_scopes
from classwise.pipeline.plan import build_plan, views_of as dataset_views
from classwise.pipeline.decode_groups import decode_groups
from classwise.references import REFERENCES  # the report's categories, one per source
from classwise.shifts.spec import infer_parameter
from classwise.superclasses import resolve_superclasses

# The files the config was read from: --configfile, the demo, or, where classwise is a module
# (deployed by snakedeploy, or named by a path), those the including workflow's configfile: read.
CONFIG_SOURCE = (
    ", ".join(os.path.abspath(path) for path in map(str, workflow.configfiles))
    or "the config the including workflow passes"
)
# A name written as digits (files: {1: a.csv}) is the string YAML read as a number.
names_as_strings(config, source=CONFIG_SOURCE)
# The config as the user wrote it, before the schema fills in defaults: a value the user set
# that cannot apply is an error, a default that cannot apply adapts (see classwise.pipeline.plan).
USER_CONFIG = copy.deepcopy(config)
# A one-line message naming the file and the key before validate's schema dump.
check_schema(
    config, workflow.source_path("../schemas/config.schema.yaml"), source=CONFIG_SOURCE
)
validate(config, workflow.source_path("../schemas/config.schema.yaml"))
# The analyses and robustness sections each against its own schema, which fills in their
# defaults; the simulation evaluates no model, so it runs where the config asks for it.
validate(config["analyses"], workflow.source_path("../schemas/analyses.schema.yaml"))
config["analyses"]["simulation"].setdefault(
    "enabled", "simulation" in (USER_CONFIG.get("analyses") or {})
)
check_schema(
    {"robustness": config["robustness"]},
    section_schema(
        "robustness", workflow.source_path("../schemas/robustness.schema.yaml")
    ),
    source=CONFIG_SOURCE,
)
validate(
    config["robustness"], workflow.source_path("../schemas/robustness.schema.yaml")
)

OUT = config["output_dir"].rstrip("/")
DATASETS = list(config["datasets"])
MODELS = list(config["models"])
# Every shift by name: those made on the fly (`shifts:`), then each dataset's published
# shift sets (datasets.<name>.shift_sets), their files checked before any job.
SHIFT_SETS = expand_shift_sets(config["datasets"], source=CONFIG_SOURCE)
SHIFTS = merge_shifts(
    configured_shifts(config, source=CONFIG_SOURCE), SHIFT_SETS, source=CONFIG_SOURCE
)
# Every models: entry parsed once, its source's keys and names checked before any job: the
# sources are asked with these specs (a job parses its rule's `model` parameter once itself).
MODEL_SPECS = check_models(config, source=CONFIG_SOURCE)
check_references(config, source=CONFIG_SOURCE, shifts=list(SHIFTS), specs=MODEL_SPECS)
# Into how many jobs each shift's inference is split (inference.shards, an entry's shards):
# a shift of one job is infer's, one of more is infer_shard's and merge_logit_shards'.
SHARDS = shift_shards(config, list(SHIFTS), source=CONFIG_SOURCE)
# How inference runs (inference.device, precision, channels_last), checked; infer's `device`
# parameter is the device alone at fp32 and channels first, so earlier runs' logits stay cached.
EXECUTION = Execution.from_config(config["inference"], source=CONFIG_SOURCE)
# The plan, built once and only read after: which models run on which dataset, shift and label
# view, checked (checkpoints, train splits, class counts), and which comparisons, analyses and
# robustness analyses run where, with a note for each default that adapted.
PLAN = build_plan(
    config,
    USER_CONFIG,
    shifts=SHIFTS,
    shift_sets=SHIFT_SETS,
    specs=MODEL_SPECS,
    source=CONFIG_SOURCE,
)
# Which models of a dataset share one decode per shift (inference.models_per_decode; none by
# default): their infer_models_<dataset> jobs write those logits instead of infer.
DECODE_GROUPS = decode_groups(
    PLAN.models,
    PLAN.shifts,
    specs=MODEL_SPECS,
    shift_specs=SHIFTS,
    shards=SHARDS,
    models_per_decode=config["inference"]["models_per_decode"],
)
# The bootstrap of the worst-class metrics (docs/uncertainty.md); 0 replicates turns it off.
BOOTSTRAP = config["metrics"]["bootstrap"]
BOOTSTRAP_ON = BOOTSTRAP["replicates"] > 0
# Which run-wide conditions of the output records (classwise.outputs.RUN_CONDITIONS) hold: a rule
# declares a record only where its own hold (outputs_of_rule).
RUN_HOLDS = ["bootstrap"] if BOOTSTRAP_ON else []
RESOURCES = "resources"


def dataset_models(dataset):
    """The models evaluated on `dataset` (datasets.<name>.models, default every model)."""
    return PLAN.models[dataset]


def views_of(dataset):
    """`original` and the dataset's own label views."""
    return dataset_views(config["datasets"][dataset])


LABEL_VIEWS = sorted({view for dataset in DATASETS for view in views_of(dataset)})

VIEW_SHIFT = "{dataset}/{labels}/{shift}"
VIEW_MODEL_SHIFT = "{dataset}/{labels}/{model}/{shift}"
TABLES = f"{OUT}/tables/{VIEW_SHIFT}"
FIGURES = f"{OUT}/figures/{VIEW_SHIFT}"


def _alternatives(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    dataset=_alternatives(DATASETS),
    model=_alternatives(MODELS),
    shift=_alternatives(SHIFTS),
    labels=_alternatives(LABEL_VIEWS),


def canonical(value):
    """Keys sorted, so reordering a config's keys is not a parameter change that reruns jobs."""
    return json.loads(json.dumps(value, sort_keys=True))


def model_entry(name):
    """Model `name`'s config entry as a job parameter (keys sorted)."""
    return canonical(config["models"][name])


def model_config(wildcards):
    return model_entry(wildcards.model)


def training_dataset(wildcards):
    return PipelineSource.training_set(MODEL_SPECS[wildcards.model], config["datasets"])


def dataset_config(wildcards):
    return dataset_parameters(wildcards.dataset)


def dataset_parameters(name):
    """Dataset `name`'s config entry as a job parameter (classwise.data.sources.job_parameters)."""
    return job_parameters(config["datasets"][name])


def superclasses_of(wildcards):
    return resolve_superclasses(
        config["datasets"][wildcards.dataset].get("superclasses")
    )


def view_config(wildcards):
    return canonical(
        config["datasets"][wildcards.dataset]["label_views"][wildcards.labels]
    )


def dataset_shifts(dataset):
    """Every shift evaluated on `dataset` (datasets.<name>.shifts, default every shift of
    `shifts:` and of the dataset's own shift sets)."""
    return PLAN.shifts[dataset]


def view_shifts(dataset, view):
    """The shifts a label view's metric tables cover (classwise.pipeline.plan.resolve_views)."""
    return PLAN.view_shifts[(dataset, view)]


def shift_spec(wildcards):
    return SHIFTS[wildcards.shift].to_json()


def infer_shift(wildcards):
    """What infer needs of its shift, in one parameter: the spec, and for a shift crafted on
    another model that model's config (classwise.shifts.spec.infer_parameter)."""
    return infer_parameter(SHIFTS[wildcards.shift], source_config(wildcards))


def model_weights(wildcards):
    """What infer loads, as named inputs: `weights` (the checkpoint the pipeline trained or
    fine-tuned, the download_model manifest, or a local file) unless the model reads none.
    """
    weights = weights_of(wildcards.model)
    return {} if weights is None else {"weights": weights}


def weights_of(name):
    """The file or manifest infer loads model `name` from (None when it reads none)."""
    spec = MODEL_SPECS[name]
    return model_source(spec).weights_input(
        name, spec, models_dir=f"{OUT}/models", resources=RESOURCES
    )


def source_weights(wildcards):
    """What infer loads besides the model for a transfer shift: `source_weights`, the weights of
    the model the attack is crafted on (nothing for other shifts)."""
    source = SHIFTS[wildcards.shift].source_model
    if source is None:
        return {}
    weights = weights_of(source)
    return {} if weights is None else {"source_weights": weights}


def source_config(wildcards):
    """The config entry of a transfer shift's source model (None for other shifts)."""
    source = SHIFTS[wildcards.shift].source_model
    return None if source is None else model_entry(source)


def models_made_by(rule):
    """The names of the models whose source says `rule` makes them, as a wildcard constraint
    (a pattern that never matches when there are none), so that train_model and
    finetune_model never compete for results/models/{model}.pt."""
    names = [
        name for name, spec in MODEL_SPECS.items() if model_source(spec).made_by == rule
    ]
    return _alternatives(names) if names else "(?!)"


def models_cached_by(rule):
    """The names of the models whose cached outputs `rule` writes (infer runs the model,
    import_predictions reads its files), as a wildcard constraint."""
    names = [
        name
        for name, spec in MODEL_SPECS.items()
        if model_source(spec).cached_by == rule
    ]
    return _alternatives(names) if names else "(?!)"


def shifts_inferred_by(rule):
    """The shifts whose cached logits `rule` writes (for the models infer runs), as a wildcard
    constraint: infer's are those of one job, merge_logit_shards' (and infer_shard's) those
    split into shards. Sharding a shift leaves infer's jobs of the others as they were.
    """
    sharded = rule != "infer"
    names = [name for name, count in SHARDS.items() if (count > 1) == sharded]
    return _alternatives(names) if names else "(?!)"


def group_weights(group):
    """What a decode group's job loads: each model's weights (as infer's `weights`), named
    `weights:<model>` (nothing for a model that reads none)."""
    weights = {name: weights_of(name) for name in group.models}
    return {
        f"weights:{name}": path for name, path in weights.items() if path is not None
    }


def group_outputs(group):
    """A decode group's outputs: every model's logits and sidecar. The job keeps its own copy of
    each in its folder (group_folder), from which a rerun takes back those still up to date.
    """
    outputs = {}
    for name in group.models:
        wildcards = {"dataset": group.dataset, "model": name, "shift": "{shift}"}
        for key, path in output("cached_outputs").files_of(OUT, wildcards).items():
            outputs[f"{key}:{name}"] = path
    return outputs


def group_images(dataset):
    """A decode group's `data` input: inference_data of its dataset (its rule has no dataset
    wildcard)."""
    return lambda wildcards: images_of(dataset, wildcards.shift)


def group_folder(dataset):
    """A decode group's `group` parameter: the folder where its job keeps the files it made on
    the shift and the record of what each was made from (classwise.outputs.kept).
    """
    return lambda wildcards: f"{OUT}/logits_groups/{dataset}/{wildcards.shift}"


def inherited_resources(rule):
    """The threads and the literal resources Snakemake gave `rule` (its own and a profile's
    set-threads and set-resources), for the generated rules that do its work (a decode group's
    job takes infer's). Resources given as expressions (the default tmpdir, mem_mb and disk_mb,
    or `2*input.size_mb`) are evaluated per job and left to the rule's own defaults and settings.
    """
    return literal_resources(rule_named(workflow, rule))


def logit_shards(wildcards):
    """The shard files merge_logit_shards joins: 1-of-S to S-of-S, S the shift's shards."""
    count = SHARDS[wildcards.shift]
    folder = (
        f"{OUT}/logits_shards/{wildcards.dataset}/{wildcards.model}/{wildcards.shift}"
    )
    return [f"{folder}/{index}-of-{count}.npz" for index in range(1, count + 1)]


def predictions_file(wildcards):
    """The user's file of a predictions model's outputs on (dataset, shift) (import_predictions)."""
    from classwise.models.sources.predictions import outputs_file

    return outputs_file(
        MODEL_SPECS[wildcards.model],
        wildcards.dataset,
        wildcards.shift,
        wildcards.model,
    )


def import_inputs(wildcards):
    """What import_predictions reads: the model's file for (dataset, shift) and the dataset's."""
    return {"outputs": predictions_file(wildcards), "data": dataset_inputs(wildcards)}


def dataset_inputs(wildcards):
    """The marker of a downloaded dataset and the files the user gives for it (a label file)."""
    dataset = config["datasets"][wildcards.dataset]
    return dataset_marker(wildcards.dataset) + input_files(dataset)


def scored_models(dataset, shifts):
    """The models of `dataset` with scores on every one of `shifts` (not hard predictions only)."""
    return PLAN.scored_models(dataset, shifts)


def finetune_inputs(wildcards):
    """What finetune_model reads: the download manifest of the starting weights (none for
    weights: null) and the marker of its training set when that set is downloaded. The entry
    (its values and torchvision names) was checked with every entry before any job.
    """
    inputs = {"data": training_data(wildcards)}
    if MODEL_SPECS[wildcards.model].options.get("weights") is not None:
        inputs["base"] = f"{RESOURCES}/models/{wildcards.model}/base/manifest.json"
    return inputs


def prototype_inputs(wildcards):
    """What compute_prototypes reads: the backbone (its download manifest or checkpoint file;
    nothing for random torchvision weights) and the marker of its training set when that set is
    downloaded. The entry (backbone included) was checked with every entry before any job.
    """
    from classwise.models.sources.prototype import backbone_input

    inputs = {"data": training_data(wildcards)}
    backbone = backbone_input(
        wildcards.model, MODEL_SPECS[wildcards.model], resources=RESOURCES
    )
    if backbone is not None:
        inputs["backbone"] = backbone
    return inputs


def prototype_backbone(wildcards):
    """The backbone entry of a prototype classifier (download_prototype_backbone)."""
    return canonical(config["models"][wildcards.model]["backbone"])


def training_data(wildcards):
    """The marker of a model's training set when that set is downloaded (else nothing)."""
    return dataset_marker(training_dataset(wildcards))


def training_dataset_config(wildcards):
    """The job parameters of a model's training set (train_model, finetune_model,
    compute_prototypes)."""
    return dataset_parameters(training_dataset(wildcards))


def finetune_base(wildcards):
    """The torchvision entry of a fine-tuned model's starting weights (download_finetune_base)."""
    from classwise.models.finetune_spec import base_model_config

    return canonical(base_model_config(config["models"][wildcards.model]))


def dataset_marker(dataset):
    """The marker of a downloaded dataset (nothing for data the user provides)."""
    if dataset_source(config["datasets"][dataset], dataset).downloaded:
        return [f"{RESOURCES}/datasets/{dataset}.prepared.json"]
    return []


def prepared_dataset(wildcards):
    return dataset_marker(wildcards.dataset)


def inference_data(wildcards):
    """What infer reads besides the model: the dataset's download marker, or for a published
    shift set the markers of the downloaded files it reads (nothing for a directory the user
    provides)."""
    return images_of(wildcards.dataset, wildcards.shift)


def images_of(dataset, shift):
    """The download markers of the images of `dataset` under `shift` (inference_data)."""
    spec = SHIFTS[shift]
    key = spec.shift_set
    if key is None:
        return dataset_marker(dataset)
    entry = config["datasets"][dataset]["shift_sets"][key]
    return [
        f"{RESOURCES}/shift_sets/{dataset}/{key}/{name}.prepared.json"
        for name in shift_archives(spec, entry)
    ]


def shift_set_archive(wildcards):
    """What one downloaded file of a shift set is (prepare_shift_set's params): its sha256 and
    where it goes, not its url (a mirror reruns nothing)."""
    entry = config["datasets"][wildcards.dataset]["shift_sets"][wildcards.shift_set]
    record = archive_record(entry, wildcards.shift_set, wildcards.archive)
    return canonical({key: value for key, value in record.items() if key != "url"})


# The downloaded shift sets and their files: wildcard values of prepare_shift_set.
SHIFT_SET_DOWNLOADS = {
    key: downloaded_files(entry, key)
    for dataset in DATASETS
    for key, entry in (config["datasets"][dataset].get("shift_sets") or {}).items()
    if downloaded_files(entry, key)
}


# ImageNet ReaL's real.json when a view gives no `file` (rule download_real_labels).
REAL_DOWNLOAD = f"{RESOURCES}/real/real.json"
REAL_DOWNLOADS = [
    view_cfg
    for dataset in DATASETS
    for view_cfg in config["datasets"][dataset].get("label_views", {}).values()
    if view_cfg["kind"] == "real" and "file" not in view_cfg
]


def real_download(key):
    """The url or sha256 of the ReaL download (the first view that downloads it sets them)."""
    defaults = {"url": REAL_URL, "sha256": None}
    return (
        REAL_DOWNLOADS[0].get(key, defaults[key]) if REAL_DOWNLOADS else defaults[key]
    )


def label_files_dir(dataset, view):
    view_cfg = config["datasets"][dataset]["label_views"][view]
    return view_cfg.get("label_errors_dir", f"{RESOURCES}/label-errors")


def label_view_inputs(wildcards):
    view_cfg = view_config(wildcards)
    inputs = {}
    names = required_files(view_cfg)
    if names:
        directory = label_files_dir(wildcards.dataset, wildcards.labels)
        inputs["files"] = [f"{directory}/{name}" for name in names]
    if view_cfg.get("paper_file"):
        inputs["paper_file"] = view_cfg["paper_file"]
    if view_cfg["kind"] == "real":
        inputs["real"] = view_cfg.get("file", REAL_DOWNLOAD)
    if view_cfg["kind"] == "confident_learning":
        inputs["reference"] = logits_path(
            wildcards.dataset, view_cfg["reference_model"], "clean"
        )
    return inputs


def logits_path(dataset, model, shift):
    """The cached outputs of (dataset, model, shift): the record cached_outputs' file."""
    return file_of(
        "cached_outputs", OUT, {"dataset": dataset, "model": model, "shift": shift}
    )


def view_labels_path(wildcards):
    """The labels file of the job's label view (the record label_view's)."""
    return file_of(
        "label_view", OUT, {"dataset": wildcards.dataset, "labels": wildcards.labels}
    )


def metric_inputs(wildcards):
    """The cached logits of (dataset, model, shift); a label view other than the original
    adds its label file (one label per sample, -1 = removed)."""
    inputs = {
        "logits": logits_path(wildcards.dataset, wildcards.model, wildcards.shift)
    }
    if wildcards.labels != "original":
        inputs["labels"] = view_labels_path(wildcards)
    return inputs


def bootstrap_params():
    """The bootstrap settings as a job parameter, None when it is off (so that changing the
    seed of a bootstrap that is off reruns nothing)."""
    return canonical(BOOTSTRAP) if BOOTSTRAP_ON else None


def comparison_inputs(wildcards):
    """The cached logits of every model of the dataset (in its model order) and, for a label
    view other than the original, its label file."""
    inputs = {
        "logits": [
            logits_path(wildcards.dataset, model, wildcards.shift)
            for model in dataset_models(wildcards.dataset)
        ]
    }
    if wildcards.labels != "original":
        inputs["labels"] = view_labels_path(wildcards)
    return inputs


def per_model_metrics(wildcards, record, models=None):
    """The file of output `record` of each model (default every model of the dataset) on the
    job's dataset, view and shift, keyed by model name, for the aggregating rules."""
    return {
        model: file_of(
            record,
            OUT,
            {
                "dataset": wildcards.dataset,
                "labels": wildcards.labels,
                "model": model,
                "shift": wildcards.shift,
            },
        )
        for model in (dataset_models(wildcards.dataset) if models is None else models)
    }


def worst_class_table_inputs(wildcards):
    """Every model's worst-class metrics of (dataset, view, shift), keyed by model."""
    return per_model_metrics(wildcards, "worst_class_metrics")


def decisiveness_table_inputs(wildcards):
    """The decisiveness metrics of the models with scores on the shift, keyed by model."""
    scored = scored_models(wildcards.dataset, [wildcards.shift])
    return per_model_metrics(wildcards, "decisiveness_metrics", scored)


def figure_inputs(wildcards):
    """What the per-class figures of (dataset, view, shift) read: every model's per-class CSV
    and worst-class metrics, in model order."""
    return {
        "per_class": list(per_model_metrics(wildcards, "per_class_numbers").values()),
        "metrics": list(per_model_metrics(wildcards, "worst_class_metrics").values()),
    }


@functools.cache  # read by rule all, the README's rule, the gates and the shift batches
def final_outputs():
    """Every table and figure of every (dataset, label view, shift), planned: the records of
    classwise.outputs' metrics stage, in catalogue order, at each scope below where their
    conditions (Output.when) hold. A label view's labels; each shift's tables and figures (the
    decisiveness ones where a model has scores and the view one true class per image; with the
    bootstrap on, the interval tables, the worst-class figures and, on datasets of two models or
    more, the model comparisons); each model's per-class numbers and figures."""
    return tuple(plan_scopes("metrics", metric_scopes()))


def metric_scopes():
    """The scopes of the metrics stage in plan order, each with the conditions that hold there."""
    for dataset in DATASETS:
        compared = {"compared"} if dataset in PLAN.compared else set()
        for labels in views_of(dataset):
            shifts = view_shifts(dataset, labels)
            one_label = (
                set() if (dataset, labels) in PLAN.label_set_views else {"one_label"}
            )
            holds = {*RUN_HOLDS, *compared, *one_label}
            view = {"dataset": dataset, "labels": labels}
            own = {"view"} if labels != "original" and shifts else set()
            yield Scope(view, holds | own)
            for shift in shifts:
                each = {**view, "shift": shift}
                scored = scored_models(dataset, [shift])
                yield Scope(each, holds | ({"scored"} if scored else set()))
                for model in dataset_models(dataset):
                    per_model = {**each, "model": model}
                    yield Scope(
                        per_model, holds | ({"scored"} if model in scored else set())
                    )
