"""The config resolved against itself and the data, before any job runs.

Two kinds of problem are told apart here:

* a value the **user** wrote that cannot apply (a checkpoint that is a pickled module, a model
  trained on a set without a train split, a target class beyond a dataset's classes, ``k1`` not
  below a dataset's class count) is an :class:`InputError` naming the config file and the field;
* a **default** that cannot apply (the extrapolation's ``k1 = 5`` on a 3-class dataset, the
  ``clean`` reference of an analysis when ``shifts.clean`` is false) adapts or skips that analysis,
  and says so in one line of :attr:`Plan.notes`, which the workflow writes to
  ``results/README.md``.

Class counts come from the config and one directory listing (never from decoding images), so
this runs at DAG-build time in milliseconds. Whether a model given by files of its outputs
(``source: predictions``) has scores on a shift is read from each file's header: with hard
predictions only, the metrics and analyses that need scores are skipped for it, with a note.
Each such file is also checked against its dataset as far as its header and its sample ids tell
(score columns, and ids where the dataset's are known before any job: a label file's, an image
directory's listing), and a checkpoint's classifier head against its ``num_classes`` (its
tensor shapes read without torch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from classwise.data.sources import (
    TRAIN_SPLIT_SOURCES,
    dataset_classes,
    dataset_classes_with_images,
    dataset_image_shape,
    dataset_notes,
    has_images,
    shift_sample_ids,
)
from classwise.errors import InputError, field_path
from classwise.metrics.catalogue import label_sets_metric_names
from classwise.models.sources import model_source
from classwise.models.spec import ModelSpec
from classwise.outputs import Scope
from classwise.outputs.catalogue import ANALYSES, Analysis
from classwise.pipeline.config_checks import check_models
from classwise.pipeline.frozen import frozen
from classwise.shifts.kinds import KINDS

__all__ = [
    "ANALYSES",
    "TRAIN_SPLIT_SOURCES",
    "Plan",
    "analysis_scopes",
    "build_plan",
    "check_runs",
    "dataset_classes",
    "dataset_image_shape",
    "evaluated_models",
    "evaluated_shifts",
    "model_outputs",
    "resolve_analyses",
    "resolve_analysis_views",
    "resolve_comparisons",
    "resolve_robustness",
    "resolve_views",
    "views_of",
]

#: What a model with hard predictions only (no scores) goes without, for the notes.
WITHOUT_SCORES = (
    "W2CA, WSupCA and the top-k metrics, the decisiveness metrics and reliability figure, and the "
    "subset tests, reference tests and extrapolation"
)


def model_outputs(spec: ModelSpec, datasets: Mapping[str, Mapping[str, Any]]) -> int | None:
    """How many classes a configured model (its parsed entry) scores, or None where only building
    it would tell."""
    classes = {name: dataset_classes(name, dataset) for name, dataset in datasets.items()}
    return model_source(spec).classes_scored(spec, datasets, classes)


def evaluated_models(config: Mapping[str, Any]) -> dict[str, list[str]]:
    """Dataset -> the models evaluated on it (``datasets.<name>.models``, default every model)."""
    every = list(config["models"])
    return {name: list(dataset.get("models", every)) for name, dataset in config["datasets"].items()}


@dataclass(frozen=True)
class Plan:
    """What runs where: the models per dataset, the analyses per dataset (None = skipped, else
    the settings to use) and one line per default that was adapted or skipped.

    Built once, by :func:`build_plan`, and read-only after: the dataclass is frozen and its lists,
    dicts and sets refuse changes (:func:`classwise.pipeline.frozen.frozen`), so no include of
    the workflow can change what another reads."""

    models: dict[str, list[str]]
    classes: dict[str, int | None]
    #: Dataset -> every shift evaluated on it (``datasets.<name>.shifts``, default the shifts of
    #: ``shifts:`` and the dataset's own shift sets), targeted attacks included.
    shifts: dict[str, list[str]] = field(default_factory=dict)
    #: The classes that hold images (fewer than ``classes`` when a folder holds part of a label space).
    classes_with_images: dict[str, int | None] = field(default_factory=dict)
    #: (dataset, label view) -> the shifts its metric tables cover; ``original`` included.
    view_shifts: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    analyses: dict[str, dict[str, dict[str, Any] | None]] = field(default_factory=dict)
    #: The datasets whose models are compared pair by pair (bootstrap on, two models or more).
    compared: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Whether each dataset holds images (False: labels only).
    with_images: dict[str, bool] = field(default_factory=dict)
    #: (dataset, model, shift) whose cached outputs are hard predictions only (no scores).
    hard_predictions: set[tuple[str, str, str]] = field(default_factory=set)
    #: (dataset, analysis) -> the models it runs for (those with scores on its shifts).
    analysis_models: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: (dataset, label view) of the views with several correct labels per image (ImageNet ReaL):
    #: only their worst-class metrics, tables and figures run.
    label_set_views: set[tuple[str, str]] = field(default_factory=set)
    #: (dataset, analysis) -> the label views it runs on (:func:`resolve_analyses`).
    analysis_views: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: Dataset -> its robustness analyses (:func:`resolve_robustness`).
    robustness: dict[str, RobustnessRuns] = field(default_factory=dict)

    def scored_models(self, dataset: str, shifts: Sequence[str]) -> list[str]:
        """The models evaluated on ``dataset`` that have scores on every one of ``shifts``."""
        return [model for model in self.models[dataset] if not any((dataset, model, s) in self.hard_predictions for s in shifts)]


def evaluated_shifts(
    config: Mapping[str, Any], shifts: Mapping[str, Any], shift_sets: Mapping[str, Mapping[str, Any]], *, source: str = "config"
) -> dict[str, list[str]]:
    """Dataset -> the shifts evaluated on it. ``shifts`` are every shift of the config (name ->
    spec), ``shift_sets`` each dataset's published shifts (:func:`classwise.data.shift_sets.expand_shift_sets`).
    A dataset's ``shifts`` list may name the shifts of ``shifts:`` and its own shift sets only."""
    evaluated = {}
    for name, dataset in config["datasets"].items():
        own = list(shift_sets.get(name, {}))
        on_the_fly = [shift for shift, spec in shifts.items() if spec.shift_set is None]
        if "shifts" not in dataset:
            evaluated[name] = [*on_the_fly, *own]
            continue
        foreign = [shift for shift in dataset["shifts"] if shift not in on_the_fly and shift not in own]
        if foreign:
            raise InputError(
                f"names shift {foreign[0]!r}, a shift set of another dataset; expected some of {[*on_the_fly, *own]}",
                path=source,
                field=f"datasets.{name}.shifts",
            )
        evaluated[name] = list(dataset["shifts"])
    return evaluated


def build_plan(
    config: Mapping[str, Any],
    user_config: Mapping[str, Any],
    *,
    shifts: Mapping[str, Any],
    shift_sets: Mapping[str, Mapping[str, Any]],
    specs: Mapping[str, ModelSpec],
    source: str = "config",
) -> Plan:
    """The run's plan, once, from ``config`` (the schema's defaults filled in) and
    ``user_config`` (as the user wrote it: a value the user set that cannot apply is an error, a
    default adapts, with a note). Each step reads what the one before settled: which models run
    on which dataset and shift (:func:`check_runs`), which label view covers which shifts
    (:func:`resolve_views`), which datasets compare their models (:func:`resolve_comparisons`),
    which analyses run where (:func:`resolve_analyses`, over the shifts of the original labels)
    and which robustness analyses (:func:`resolve_robustness`). Read-only once returned."""
    plan = check_runs(config, shifts=shifts, source=source, shift_sets=shift_sets, specs=specs)
    resolve_views(plan, config, user_config, shifts=shifts, source=source)
    resolve_comparisons(plan, config["metrics"]["bootstrap"])
    user_analyses = user_config.get("analyses") or {}
    _check_analysis_names(config, user_analyses, shifts=shifts, source=source)
    resolve_analyses(
        plan,
        config["analyses"],
        user_analyses,
        dataset_shifts={dataset: plan.view_shifts[(dataset, "original")] for dataset in config["datasets"]},
        source=source,
    )
    resolve_analysis_views(plan, config, shifts=shifts)
    robustness = resolve_robustness(plan, config["robustness"], shifts=shifts, models=list(specs), source=source)
    return frozen(replace(plan, robustness=robustness))


def views_of(dataset_cfg: Mapping[str, Any]) -> list[str]:
    """A dataset's label views: ``original`` and those of its ``label_views``."""
    return ["original", *dataset_cfg.get("label_views", {})]


def _check_analysis_names(
    config: Mapping[str, Any], user_analyses: Mapping[str, Any], *, shifts: Mapping[str, Any], source: str
) -> None:
    """A label view, shift or dataset that the user named in ``analyses`` and the config does not
    define stops the run (a default that cannot apply is resolved per dataset instead)."""
    analyses, datasets = config["analyses"], list(config["datasets"])
    label_views = sorted({view for dataset_cfg in config["datasets"].values() for view in views_of(dataset_cfg)})
    unknown = [view for view in analyses["label_views"] if view not in label_views]
    if unknown and "label_views" in user_analyses:
        raise InputError(
            f"names label views {unknown}, expected some of {label_views}", path=source, field="analyses.label_views"
        )
    for analysis in ANALYSES:
        section, key = analysis.name, analysis.shift_key
        shift = analyses[section][key]
        if analyses[section]["enabled"] and key in (user_analyses.get(section) or {}) and shift not in shifts:
            raise InputError(
                f"names shift {shift!r}, expected one of {list(shifts)}", path=source, field=f"analyses.{section}.{key}"
            )
    for dataset in analyses["features"]["metadata"]:
        if dataset not in datasets:
            raise InputError(
                f"names dataset {dataset!r}, expected one of {datasets}", path=source, field="analyses.features.metadata"
            )


def check_runs(
    config: Mapping[str, Any],
    *,
    shifts: Mapping[str, Any],
    source: str = "config",
    shift_sets: Mapping[str, Mapping[str, Any]] | None = None,
    specs: Mapping[str, ModelSpec] | None = None,
) -> Plan:
    """Raise :class:`InputError` for a model that cannot run where the config sends it; return
    the models, class counts and shifts per dataset. ``shifts`` are the expanded shifts (name ->
    spec), ``shift_sets`` each dataset's published shifts (see :func:`evaluated_shifts`),
    ``specs`` each model's parsed entry (None: parsed here by
    :func:`~classwise.pipeline.config_checks.check_models`, without looking the names up); the
    sources are asked with these."""
    datasets = config["datasets"]
    models = check_models(config, source=source, check_names=False) if specs is None else specs
    plan = Plan(
        models=evaluated_models(config),
        classes={name: dataset_classes(name, dataset) for name, dataset in datasets.items()},
        shifts=evaluated_shifts(config, shifts, shift_sets or {}, source=source),
        classes_with_images={name: dataset_classes_with_images(name, dataset) for name, dataset in datasets.items()},
        with_images={name: has_images(dataset) for name, dataset in datasets.items()},
        notes=[note for name, dataset in datasets.items() for note in dataset_notes(name, dataset)],
    )
    for name, spec in models.items():
        model_source(spec).check_run(name, spec, datasets, source, shifts=list(shifts))
    _check_transfer_sources(shifts, models, source)
    for dataset, names in plan.models.items():
        unknown = [model for model in names if model not in models]
        if unknown or not names:
            raise InputError(
                f"names models {unknown}, expected some of {sorted(models)}" if unknown else "names no model",
                path=source,
                field=f"datasets.{dataset}.models",
            )
        _check_without_images(dataset, datasets[dataset], plan.shifts[dataset], names, models, shifts, source)
        for model in names:
            _check_fit(model, models[model], dataset, datasets, plan.classes, source)
        _check_targets(dataset, plan.shifts[dataset], shifts, plan.classes[dataset], source)
        _check_transfers(dataset, plan.shifts[dataset], shifts, names, source)
        _check_superclasses(dataset, datasets[dataset], plan.classes[dataset], source)
        # the files of outputs are checked before their headers are read for scores, so that
        # the missing files of a model are named all at once
        if any(model_source(models[model]).cached_by != "infer" for model in names):
            shift_ids = {name: shift_sample_ids(dataset, datasets[dataset], shifts[name]) for name in plan.shifts[dataset]}
            for model in names:
                evaluated = _evaluated_shifts(plan, config, dataset, model, shifts)
                model_source(models[model]).check_outputs(
                    model,
                    models[model],
                    dataset,
                    datasets,
                    {name: shift_ids[name] for name in evaluated},
                    plan.classes[dataset],
                    source,
                )
        _find_hard_predictions(plan, config, models, dataset, shifts, source)
    return plan


def _check_without_images(
    dataset: str,
    dataset_cfg: Mapping[str, Any],
    evaluated: Sequence[str],
    names: Sequence[str],
    models: Mapping[str, ModelSpec],
    shifts: Mapping[str, Any],
    source: str,
) -> None:
    """On a dataset given by its labels alone, no model can run and no shift can perturb an
    image. (A model given by files of its outputs may give them for any shift, a published set's
    included: its files are matched to the shift's samples by sample id.)"""
    from_files = [model for model in names if model_source(models[model]).cached_by != "infer"]
    if has_images(dataset_cfg):
        return
    what = f"dataset {dataset!r} (source {dataset_cfg.get('source')}) has labels, no images"
    running = [model for model in names if model not in from_files]
    if running:
        raise InputError(
            f"model {running[0]!r} (source {models[running[0]].source}) runs on images, and {what}; "
            f"evaluate only models whose outputs come from files (source: predictions) on it, naming them with "
            f"datasets.{dataset}.models",
            path=source,
            field=f"datasets.{dataset}.models",
        )
    for name in evaluated:
        if shifts[name].needs_images:
            without_images = [kind.name for kind in KINDS.values() if not kind.needs_images]
            raise InputError(
                f"shift {name!r} ({shifts[name].kind}) perturbs images, and {what}; evaluate only "
                f"{without_images} on it with datasets.{dataset}.shifts",
                path=source,
                field=f"datasets.{dataset}.shifts",
            )


def _evaluated_shifts(plan: Plan, config: Mapping[str, Any], dataset: str, model: str, shifts: Mapping[str, Any]) -> list[str]:
    """The shifts whose outputs of ``model`` on ``dataset`` the workflow reads: the untargeted
    shifts, and the targeted attacks for the models of ``robustness.targeted_models``."""
    targeted_models = (config.get("robustness") or {}).get("targeted_models") or []
    return [name for name in plan.shifts[dataset] if "target" not in shifts[name].params or model in targeted_models]


def _find_hard_predictions(
    plan: Plan,
    config: Mapping[str, Any],
    models: Mapping[str, ModelSpec],
    dataset: str,
    shifts: Mapping[str, Any],
    source: str,
) -> None:
    """Record the (dataset, model, shift) whose outputs are hard predictions, one note per model."""
    for model in plan.models[dataset]:
        spec = models[model]
        hard = [
            shift
            for shift in _evaluated_shifts(plan, config, dataset, model, shifts)
            if not model_source(spec).has_scores(model, spec, dataset, shift, source)
        ]
        plan.hard_predictions.update((dataset, model, shift) for shift in hard)
        if hard:
            plan.notes.append(
                f"model {model} on {dataset}: hard predictions only on {hard} (no scores), so it goes without "
                f"{WITHOUT_SCORES} there"
            )


def _check_fit(
    model_name: str,
    spec: ModelSpec,
    dataset: str,
    datasets: Mapping[str, Mapping[str, Any]],
    classes_of: Mapping[str, int | None],
    source: str,
) -> None:
    """The model scores as many classes as ``dataset`` has (``classes_of``: each dataset's
    count), and whatever else its source requires."""
    classes = classes_of[dataset]
    outputs = model_source(spec).classes_scored(spec, datasets, classes_of)
    hint = f"name the models evaluated on it with datasets.{dataset}.models"
    if outputs is not None and classes is not None and outputs != classes:
        raise InputError(
            f"model {model_name!r} scores {outputs} classes, dataset {dataset!r} has {classes}; {hint}",
            path=source,
            field=f"datasets.{dataset}.models",
        )
    model_source(spec).check_fit(model_name, spec, dataset, datasets, hint, source)


def _check_targets(dataset: str, evaluated: list[str], shifts: Mapping[str, Any], classes: int | None, source: str) -> None:
    """Every shift fits the dataset's classes (its kind says how: targeted PGD's targets are
    classes of the dataset, AutoAttack's DLR losses have enough classes)."""
    if classes is None:
        return
    for name in evaluated:
        misfit = shifts[name].misfit(dataset, classes) if name in shifts else None
        if misfit is not None:
            raise InputError(
                f"{misfit.message}; list the shifts evaluated on it with datasets.{dataset}.shifts",
                path=source,
                field=misfit.field,
            )


def _check_transfer_sources(shifts: Mapping[str, Any], models: Mapping[str, ModelSpec], source: str) -> None:
    """A transfer attack is crafted on a model of the config that the pipeline runs (not one
    given by files of its outputs: it has no gradients to attack)."""
    for i, (name, spec) in enumerate((n, s) for n, s in shifts.items() if s.source_model is not None):
        model = spec.source_model
        if model not in models:
            raise InputError(
                f"shift {name!r} transfers an attack from model {model!r}, which is not a model of the config; "
                f"expected one of {sorted(models)}",
                path=source,
                field=field_path("shifts.transfer", i, "source"),
            )
        if model_source(models[model]).cached_by != "infer":
            raise InputError(
                f"shift {name!r} transfers an attack from model {model!r}, whose outputs come from files "
                "(no gradients to attack); craft it on a model the pipeline runs",
                path=source,
                field=field_path("shifts.transfer", i, "source"),
            )


def _check_transfers(
    dataset: str, evaluated: Sequence[str], shifts: Mapping[str, Any], names: Sequence[str], source: str
) -> None:
    """A transfer attack evaluated on a dataset is crafted on a model evaluated there."""
    for name in evaluated:
        source_model = shifts[name].source_model
        if source_model is not None and source_model not in names:
            raise InputError(
                f"shift {name!r} transfers an attack from model {source_model!r}, which is not evaluated on "
                f"dataset {dataset!r} (models {list(names)}); list the shifts evaluated on it with datasets.{dataset}.shifts",
                path=source,
                field=f"datasets.{dataset}.shifts",
            )


def _check_superclasses(dataset: str, dataset_cfg: Mapping[str, Any], classes: int | None, source: str) -> None:
    from classwise.superclasses import resolve_superclasses

    if classes is None:
        return
    for superclass, members in resolve_superclasses(dataset_cfg.get("superclasses")).items():
        beyond = [int(m) for m in members if int(m) >= classes]
        if beyond:
            raise InputError(
                f"superclass {superclass!r} names classes {beyond[:5]}, dataset {dataset!r} has {classes} (0..{classes - 1})",
                path=source,
                field=f"datasets.{dataset}.superclasses",
            )


def resolve_views(
    plan: Plan,
    config: Mapping[str, Any],
    user_config: Mapping[str, Any],
    *,
    shifts: Mapping[str, Any],
    source: str = "config",
) -> Plan:
    """Fill ``plan.view_shifts``. The original labels cover every untargeted shift of a dataset
    (targeted attacks feed the targeted-success analysis, not the metric tables); another view
    covers its ``shifts``, whose default ``[clean]`` becomes the original's shifts when clean is
    not evaluated on the dataset. A view labels the dataset's own samples, so it never covers a
    natural-shift set (samples of its own) or a class-subset shift (other label indices). A
    confident-learning view needs its reference model's clean probabilities on the dataset. A
    ReaL view (kind ``real``) needs the 1,000 ImageNet-1k classes; its ``file`` is read and
    checked here, before any job."""
    for dataset, dataset_cfg in config["datasets"].items():
        evaluated = plan.shifts.get(dataset) or list(dataset_cfg.get("shifts", list(shifts)))
        untargeted = [name for name in evaluated if "target" not in shifts[name].params]
        viewable = [name for name in untargeted if _labels_apply(shifts[name])]
        plan.view_shifts[(dataset, "original")] = untargeted
        for view, view_cfg in dataset_cfg.get("label_views", {}).items():
            where = f"datasets.{dataset}.label_views.{view}"
            if view_cfg["kind"] == "confident_learning":
                if "clean" not in evaluated:
                    raise InputError(
                        "confident learning reads the reference model's clean probabilities; evaluate the "
                        f"clean shift on dataset {dataset!r} (shifts.clean: true)",
                        path=source,
                        field=f"{where}.kind",
                    )
                if view_cfg["reference_model"] not in plan.models[dataset]:
                    raise InputError(
                        f"names model {view_cfg['reference_model']!r}, which is not evaluated on dataset "
                        f"{dataset!r}; expected one of {plan.models[dataset]}",
                        path=source,
                        field=f"{where}.reference_model",
                    )
                if (dataset, view_cfg["reference_model"], "clean") in plan.hard_predictions:
                    raise InputError(
                        f"names model {view_cfg['reference_model']!r}, whose clean outputs on dataset {dataset!r} are "
                        "hard predictions; confident learning needs its probabilities",
                        path=source,
                        field=f"{where}.reference_model",
                    )
            if view_cfg["kind"] == "real":
                _check_real_view(plan, dataset, view, view_cfg, where=where, source=source)
            covered = list(view_cfg["shifts"])
            user_set = "shifts" in user_config["datasets"][dataset].get("label_views", {}).get(view, {})
            unknown = [name for name in covered if name not in untargeted]
            if user_set and unknown:
                raise InputError(
                    f"names shift {unknown[0]!r}, expected some of {untargeted} (the untargeted shifts of dataset {dataset!r})",
                    path=source,
                    field=f"{where}.shifts",
                )
            elsewhere = [name for name in covered if name not in viewable]
            if user_set and elsewhere:
                raise InputError(
                    f"names shift {elsewhere[0]!r}, a published set with samples or classes of its own, which the view's "
                    f"labels of dataset {dataset!r} do not cover; expected some of {viewable}",
                    path=source,
                    field=f"{where}.shifts",
                )
            if not user_set and not set(covered) <= set(untargeted):
                covered = viewable
                plan.notes.append(
                    f"label view {view} of {dataset}: evaluated on {covered}, since its default shift "
                    "'clean' is not evaluated on the dataset"
                )
            plan.view_shifts[(dataset, view)] = covered
    return plan


#: What a view of several correct labels per image leaves out (docs/real-labels.md).
_LABEL_SETS_METRICS = label_sets_metric_names("worst_class")
LABEL_SET_SKIPS = (
    f"{', '.join(_LABEL_SETS_METRICS[:-1])} and {_LABEL_SETS_METRICS[-1]}, the decisiveness tables, the model "
    "comparison and the analyses (they need one true class per image)"
)


def _check_real_view(plan: Plan, dataset: str, view: str, view_cfg: Mapping[str, Any], *, where: str, source: str) -> None:
    """A ReaL view: the dataset scores the 1,000 ImageNet-1k classes, a local ``file`` is a valid
    real.json (read now, so that a bad file stops the run before any job), and a note says what
    the view leaves out."""
    from classwise.labels.real import REAL_CLASSES, read_real_json

    classes = plan.classes.get(dataset)
    if classes is not None and classes != REAL_CLASSES:
        raise InputError(
            f"ReaL labels index the {REAL_CLASSES} ImageNet-1k classes, but dataset {dataset!r} has {classes} "
            "(an ImageNet validation set needs label_space: imagenet1k)",
            path=source,
            field=f"{where}.kind",
        )
    if view_cfg.get("file"):
        read_real_json(view_cfg["file"])
    plan.label_set_views.add((dataset, view))
    plan.notes.append(
        f"label view {view} of {dataset} (ImageNet ReaL, several correct labels per image): {LABEL_SET_SKIPS} left out"
    )


def _labels_apply(spec: Any) -> bool:
    """Whether the dataset's own labels (a label view) apply to a shift: its samples are the
    dataset's (not a natural-shift set) in the full label space (not a class subset), labelled
    by the dataset (not by a labels file of the shift's own)."""
    return (
        bool(getattr(spec, "paired", True))
        and not bool(getattr(spec, "restricted", False))
        and getattr(spec, "labels_file", None) is None
    )


def resolve_analyses(
    plan: Plan,
    analyses: Mapping[str, Any],
    user_analyses: Mapping[str, Any],
    *,
    dataset_shifts: Mapping[str, Sequence[str]],
    source: str = "config",
) -> Plan:
    """Fill ``plan.analyses``: per dataset and analysis of :data:`ANALYSES`, the settings to run
    with, or None.

    ``analyses`` is the section with the schema's defaults filled in, ``user_analyses`` the
    section as the user wrote it (to tell a user's value from a default), ``dataset_shifts`` the
    shifts of each dataset's original labels.
    """
    for dataset, shifts in dataset_shifts.items():
        resolved: dict[str, dict[str, Any] | None] = {}
        for analysis in ANALYSES:
            section = analysis.name
            settings = dict(analyses[section])
            user = user_analyses.get(section) or {}
            if not settings["enabled"]:
                resolved[section] = None
                continue
            shift = settings[analysis.shift_key]
            if shift not in shifts:
                resolved[section] = None
                why = "is not evaluated on it" if analysis.shift_key in user else "(the default) is not evaluated on it"
                plan.notes.append(
                    f"{section.replace('_', ' ')} on {dataset}: skipped, the shift {shift!r} {why}; "
                    f"set analyses.{section}.{analysis.shift_key} to one of {list(shifts)}"
                )
                continue
            if analysis.reads_every_shift and len(shifts) < 2:
                resolved[section] = None
                plan.notes.append(f"{section.replace('_', ' ')} on {dataset}: skipped, {shift!r} is its only shift")
                continue
            adapt = ADAPTATIONS.get(section)
            resolved[section] = settings if adapt is None else adapt(plan, dataset, settings, user, source)
        for analysis in ANALYSES:  # the models each analysis runs for
            resolved[analysis.name] = _resolve_models(plan, analysis, resolved[analysis.name], dataset, list(shifts))
        plan.analyses[dataset] = resolved
    return plan


def resolve_analysis_views(plan: Plan, config: Mapping[str, Any], *, shifts: Mapping[str, Any]) -> Plan:
    """Fill ``plan.analysis_views``: the label views of ``analyses.label_views`` each analysis
    runs on, per dataset (after :func:`resolve_analyses`): those of the dataset that hold its
    shift and one true class per image; for an analysis that compares its shift with the
    others, those with another shift scoring every class (a class subset such as ImageNet-R's
    has other columns than the reference)."""
    for dataset, dataset_cfg in config["datasets"].items():
        views = views_of(dataset_cfg)
        for analysis in ANALYSES:
            settings = plan.analyses[dataset][analysis.name]
            if settings is None:
                continue
            shift = settings[analysis.shift_key]
            chosen = [
                view
                for view in config["analyses"]["label_views"]
                if view in views and shift in plan.view_shifts[(dataset, view)] and (dataset, view) not in plan.label_set_views
            ]
            if analysis.reads_every_shift:
                chosen = [view for view in chosen if len(compared_shifts(plan, dataset, view, shifts)) > 1]
            plan.analysis_views[(dataset, analysis.name)] = chosen
    return plan


def compared_shifts(plan: Plan, dataset: str, view: str, shifts: Mapping[str, Any]) -> list[str]:
    """The shifts of a view that an analysis reading every shift compares: those scoring every
    class (a class subset such as ImageNet-R's has other columns than the reference)."""
    return [s for s in plan.view_shifts[(dataset, view)] if not shifts[s].restricted]


def analysis_scopes(plan: Plan, *, simulation: bool) -> Iterator[Scope]:
    """Where each analysis writes its outputs, in plan order: per dataset, the image features of
    the analyses that need images, then each analysis over its views (each view, then its
    models); the simulation (which evaluates no model) last when it runs."""
    for dataset in plan.models:
        for analysis in ANALYSES:
            if analysis.needs_images and plan.analysis_views.get((dataset, analysis.name)):
                yield Scope({"dataset": dataset}, {analysis.name})
        for analysis in ANALYSES:
            for labels in plan.analysis_views.get((dataset, analysis.name), []):
                view = {"dataset": dataset, "labels": labels}
                yield Scope(view, {analysis.name})
                for model in plan.analysis_models.get((dataset, analysis.name), plan.models[dataset]):
                    yield Scope({**view, "model": model}, {analysis.name})
    if simulation:
        yield Scope({}, {"simulation"})


def _resolve_models(
    plan: Plan, analysis: Analysis, settings: dict[str, Any] | None, dataset: str, dataset_shifts: list[str]
) -> dict[str, Any] | None:
    """Record the models ``analysis`` runs for on ``dataset`` (unless it is skipped: None): those
    with scores on the shifts it reads (its shift, or every shift of the dataset), since all of
    them need scores; None with a note when none is left, or when it needs images and the
    dataset has none."""
    if settings is None:
        return None
    name = analysis.name.replace("_", " ")
    shifts = dataset_shifts if analysis.reads_every_shift else [settings[analysis.shift_key]]
    if analysis.needs_images and not plan.with_images.get(dataset, True):
        plan.notes.append(f"{name} on {dataset}: skipped, they split the samples by image features and it has no images")
        return None
    scored = plan.scored_models(dataset, shifts)
    left_out = [model for model in plan.models[dataset] if model not in scored]
    if not scored:
        plan.notes.append(f"{name} on {dataset}: skipped, its models have hard predictions only (no scores) on {shifts}")
        return None
    if left_out:
        plan.notes.append(f"{name} on {dataset}: run without {left_out}, which have hard predictions only on {shifts}")
    plan.analysis_models[(dataset, analysis.name)] = scored
    return settings


def _resolve_k1(
    plan: Plan, dataset: str, settings: dict[str, Any], user: Mapping[str, Any], source: str
) -> dict[str, Any] | None:
    """Extrapolation observes k1 of the C classes that hold images and extrapolates to k2
    (default C): every k1 in 2..k2-1, k2 <= C. A user's value that cannot apply is an error; the default k1 = 5
    shrinks to k2 - 1."""
    classes, notes = plan.classes_with_images.get(dataset, plan.classes[dataset]), plan.notes
    k2 = settings.get("k2")
    if k2 is not None and classes is not None and int(k2) > classes:
        raise InputError(
            f"expected k2 <= C, the {classes} classes of dataset {dataset!r} that hold images; got {k2}",
            path=source,
            field="analyses.extrapolation.k2",
        )
    limit = classes if k2 is None else int(k2)
    k1 = settings["k1"]
    values = [int(k1)] if isinstance(k1, int) else [int(k) for k in k1]
    if limit is None or max(values) < limit:
        return settings
    if "k1" in user:
        what = f"C, the {limit} classes of dataset {dataset!r} that hold images" if k2 is None else f"k2 = {limit}"
        raise InputError(f"expected 2 <= k1 < {what}; got {k1}", path=source, field="analyses.extrapolation.k1")
    if limit < 3:
        notes.append(f"extrapolation on {dataset}: skipped, it needs 3 or more classes (it has {limit})")
        return None
    below = f"below its {limit} classes" if k2 is None else f"below k2 = {limit}"
    notes.append(f"extrapolation on {dataset}: k1 = {limit - 1} instead of the default {k1}, {below}")
    return {**settings, "k1": limit - 1}


#: The defaults of an analysis that adapt to a dataset (or skip it there: None), with a note; a
#: user's value that cannot apply is an error: (plan, dataset, settings, the section as the user
#: wrote it, config source) -> settings.
ADAPTATIONS: Mapping[str, Callable[[Plan, str, dict[str, Any], Mapping[str, Any], str], dict[str, Any] | None]] = {
    "extrapolation": _resolve_k1,
}


def resolve_comparisons(plan: Plan, bootstrap: Mapping[str, Any]) -> Plan:
    """Fill ``plan.compared``: with the bootstrap on (``metrics.bootstrap.replicates`` > 0),
    every dataset that evaluates two models or more gets a model-comparison table per label
    view and shift; a dataset of one model, or the bootstrap off, gets a note instead."""
    if int(bootstrap["replicates"]) == 0:
        plan.notes.append("intervals, worst-class probabilities and model comparisons: off (metrics.bootstrap.replicates is 0)")
        return plan
    for dataset, models in plan.models.items():
        if len(models) >= 2:
            plan.compared.append(dataset)
        else:
            plan.notes.append(f"model comparison on {dataset}: skipped, it evaluates one model ({models[0]})")
    return plan


@dataclass(frozen=True)
class RobustnessRuns:
    """The robustness analyses of one dataset (workflow/rules/robustness.smk): the shifts of its
    original labels each reads and whether it runs. Those that compare with the clean images
    (transformation tests, robust fairness, the transfer matrix, targeted attacks) need clean."""

    #: The shifts whose outputs score every class (not a class subset such as ImageNet-R's): the
    #: class-wise robustness figures and tables and the view across shifts run when there is one.
    full_label_space: list[str]
    #: The untargeted attacks whose images attack a model (PGD, AutoAttack, transfer): a mean
    #: confusion figure each.
    attacked: list[str]
    #: The untargeted attacks of the model itself (PGD, AutoAttack): a robust-fairness table each.
    adversarial: list[str]
    #: The corruptions made on the fly: the corruption grid draws them.
    corruptions: list[str]
    #: What the transformation tests compare with clean, sample by sample: the corruptions made
    #: on the fly, published corrupted copies of the dataset (CIFAR-10-C, ImageNet-C) and paired
    #: shifts given by labels files.
    transformed: list[str]
    #: The corrupted copies the corruption errors average: the transformed shifts, but of those
    #: given by labels files only the ones with a severity.
    corrupted: list[str]
    #: The transformed shifts given by labels files of their own, which may hold a subset of the
    #: clean samples: the transformation tests compare them on the clean samples they hold.
    own_samples: list[str]
    #: Shift -> ``[family, severity]`` of each shift that is one severity of a corruption family
    #: (scoring every class): the severity curves.
    severity_steps: dict[str, list[Any]]
    #: (source model, target model, shift) of every transfer attack: the transfer matrix.
    transfers: list[tuple[str, str, str]]
    #: The targeted attacks (one shift per target class) and the models they run for (those of
    #: ``robustness.targeted_models`` evaluated on the dataset).
    targeted: list[str]
    targeted_models: list[str]
    has_clean: bool
    #: Label view -> the shifts its class-drop tests compare with clean, each class of each model
    #: (``robustness.class_drops``): the view's shifts but clean that score every class. A view
    #: is absent where the tests do not run (off, no clean, nothing else, label sets).
    class_drops: dict[str, list[str]] = field(default_factory=dict)

    @property
    def classwise(self) -> bool:
        return bool(self.full_label_space)

    @property
    def corruption_grid(self) -> bool:
        return bool(self.corruptions)

    @property
    def robust_fairness(self) -> list[str]:
        """The attacks with a robust-fairness table (none without clean)."""
        return self.adversarial if self.has_clean else []

    @property
    def transformation_tests(self) -> bool:
        return bool(self.transformed) and self.has_clean

    @property
    def transfer_matrix(self) -> bool:
        return bool(self.transfers) and self.has_clean

    @property
    def targeted_attacks(self) -> bool:
        return bool(self.targeted) and bool(self.targeted_models) and self.has_clean


def resolve_robustness(
    plan: Plan, robustness: Mapping[str, Any], *, shifts: Mapping[str, Any], models: Sequence[str], source: str = "config"
) -> dict[str, RobustnessRuns]:
    """Dataset -> its robustness analyses (:class:`RobustnessRuns`), from the shifts of its original
    labels (``plan.view_shifts``, filled by :func:`resolve_views`) and ``robustness``, the config's
    section; one note in ``plan.notes`` per analysis that cannot run, or leaves shifts out. A
    ``robustness.targeted_models`` entry that is no model of the config is an :class:`InputError`."""
    unknown = [model for model in robustness["targeted_models"] if model not in models]
    if unknown:
        raise InputError(
            f"names models {unknown}, expected some of {list(models)}", path=source, field="robustness.targeted_models"
        )
    drops = robustness.get("class_drops") or {}
    resolved = {}
    for dataset, evaluated in plan.models.items():
        original = plan.view_shifts[(dataset, "original")]
        runs = RobustnessRuns(
            full_label_space=[s for s in original if not shifts[s].restricted],
            attacked=[s for s in original if shifts[s].adversarial_images],
            adversarial=[s for s in original if shifts[s].adversarial],
            corruptions=[s for s in original if shifts[s].corrupted_on_the_fly],
            transformed=[s for s in original if shifts[s].transformed],
            corrupted=[s for s in original if shifts[s].corrupted],
            own_samples=[s for s in original if shifts[s].transformed and shifts[s].labels_file is not None],
            severity_steps={
                s: list(shifts[s].severity_step)
                for s in original
                if shifts[s].severity_step is not None and not shifts[s].restricted
            },
            transfers=[(shifts[s].source_model, model, s) for s in original if shifts[s].source_model for model in evaluated],
            targeted=[s for s in plan.shifts[dataset] if shifts[s].target is not None],
            targeted_models=[model for model in robustness["targeted_models"] if model in evaluated],
            has_clean="clean" in original,
            class_drops=_class_drop_views(plan, dataset, shifts, enabled=bool(drops.get("enabled", True))),
        )
        _robustness_notes(plan.notes, dataset, runs, restricted=[s for s in original if shifts[s].restricted])
        resolved[dataset] = runs
    if not drops.get("enabled", True):
        plan.notes.append("class-drop tests: off (robustness.class_drops.enabled is false)")
    return resolved


def _class_drop_views(plan: Plan, dataset: str, shifts: Mapping[str, Any], *, enabled: bool) -> dict[str, list[str]]:
    """Label view of ``dataset`` -> the shifts its class-drop tests compare with clean: the view's
    shifts but clean over the dataset's classes (a class-subset shift such as ImageNet-R has
    classes of its own, as the class-wise robustness step leaves it out). A view without such a
    shift has nothing to test; one without clean, or of several correct labels per image, gets a
    note in ``plan.notes``."""
    views: dict[str, list[str]] = {}
    if not enabled:
        return views
    for (name, view), covered in plan.view_shifts.items():
        if name != dataset:
            continue
        tested = [s for s in covered if s != "clean" and not shifts[s].restricted]
        if not tested:
            continue
        where = f"class-drop tests on {dataset} ({view} labels)"
        if "clean" not in covered:
            plan.notes.append(f"{where}: skipped, they compare each shift with clean, which is not evaluated on it")
        elif (dataset, view) in plan.label_set_views:
            plan.notes.append(f"{where}: skipped, they need one true class per image")
        else:
            views[view] = tested
    return views


def _robustness_notes(notes: list[str], dataset: str, runs: RobustnessRuns, *, restricted: Sequence[str]) -> None:
    """One line per robustness analysis of ``dataset`` that cannot run, or leaves shifts out."""
    without_clean = not runs.has_clean
    if restricted:
        notes.append(
            f"class-wise robustness and reference tests on {dataset}: leave out {list(restricted)}, whose "
            "logits score a class subset only (their own tables and figures are written)"
        )
    if runs.transformed and without_clean:
        notes.append(
            f"transformation tests on {dataset}: skipped, they compare each corruption "
            "with the clean shift, which is not evaluated on it"
        )
    if runs.adversarial and without_clean:
        notes.append(
            f"robust fairness on {dataset}: skipped, it compares each attack with the clean shift, which is not evaluated on it"
        )
    if runs.transfers and without_clean:
        notes.append(
            f"transfer matrix on {dataset}: skipped, it reads each target's clean accuracy "
            "on the attacked samples, and clean is not evaluated on it"
        )
    if runs.targeted and not runs.targeted_models:
        notes.append(f"targeted attacks on {dataset}: skipped, no model of robustness.targeted_models is evaluated on it")
    elif runs.targeted and without_clean:
        notes.append(
            f"targeted attacks on {dataset}: skipped, their success rates leave out the "
            "samples predicted as the target on clean images, and clean is not evaluated on it"
        )
