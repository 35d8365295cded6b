"""Checks of the workflow config: a concise schema check, and what a JSON schema cannot express
(cross references, paths, model names).

Every check raises :class:`InputError` naming the config file (``source``), the field as a path
(:func:`~classwise.errors.field_path`: ``datasets.digits.on_bad_image``, ``shifts.pgd[0].eps``)
and what was expected, before any job runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError, field_path

if TYPE_CHECKING:
    from classwise.models.spec import ModelSpec
    from classwise.shifts.kinds import ShiftSpec

#: A JSON-schema bound -> how the message states it ("expected a value > 0, got 0").
_BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}


def names_as_strings(config: dict[str, Any], *, source: str = "config") -> dict[str, Any]:
    """``config`` with every integer key as its decimal string, in place (and returned). Every key
    of the config is a name (a dataset, a model, a shift set, a condition, a shift, a metric), and
    YAML reads ``1:`` as the integer 1, so that ``files: {1: a.csv}`` names condition ``'1'``. A
    key of another type (YAML's ``yes:`` is True, ``1.5:`` a float) is left to the checks that
    refuse it; an integer key beside the same name written as a string (``1`` and ``'1'``) is an
    :class:`InputError` naming ``source`` and the field, before any job."""

    def as_names(value: Any, where: tuple[str | int, ...]) -> Any:
        if isinstance(value, list):
            value[:] = [as_names(item, (*where, index)) for index, item in enumerate(value)]
        elif isinstance(value, dict):
            renamed: dict[Any, Any] = {}
            for key, item in value.items():
                name = str(key) if isinstance(key, int) and not isinstance(key, bool) else key
                if name in renamed:
                    raise InputError(
                        f"names {name!r} twice (once as the number {name}, once as a string); keep one",
                        path=source,
                        field=field_path(*where) or "(top level)",
                    )
                renamed[name] = as_names(item, (*where, name))
            value.clear()
            value.update(renamed)
        return value

    return as_names(config, ())


def check_schema(config: Mapping[str, Any], schema: str | Path | Mapping[str, Any], *, source: str = "config") -> None:
    """Raise :class:`InputError` for the first violation of ``schema`` (a YAML/JSON file or a
    mapping), in one line: an unknown key names itself and the keys allowed there; a wrong type,
    value or a missing key names the field and what was expected. Does not fill defaults (the
    workflow's ``snakemake.utils.validate`` does)."""
    import jsonschema
    import yaml

    schema_map = schema if isinstance(schema, Mapping) else yaml.safe_load(Path(schema).read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema_map)
    error = jsonschema.exceptions.best_match(validator_class(schema_map).iter_errors(config))
    if error is None:
        return
    where = list(error.absolute_path)  # keys (str) and list positions (int)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed)) if allowed else sorted(error.instance)
        key = unknown[0] if unknown else "?"
        expected = f"one of {allowed}" if allowed else "no other key here"
        raise InputError(f"unknown key {key!r}; expected {expected}", path=source, field=field_path(*where, key))
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        raise InputError("required key is missing", path=source, field=field_path(*where, missing))
    if error.validator == "type":
        message = f"expected {error.validator_value}, got {error.instance!r}"
    elif error.validator == "enum":
        message = f"expected one of {error.validator_value}, got {error.instance!r}"
    elif error.validator in _BOUNDS:
        message = f"expected a value {_BOUNDS[error.validator]} {error.validator_value}, got {error.instance!r}"
    else:
        message = error.message
    raise InputError(message, path=source, field=field_path(*where) or "(top level)")


def section_schema(section: str, schema_path: str | Path) -> dict[str, Any]:
    """The schema of one section of the config (``robustness``, validated against its own
    file) as a schema of the whole config, so that :func:`check_schema` names a field from the
    top (``robustness.class_drops.q``)."""
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    schema.pop("$schema", None)  # a draft named once, at the top
    return {"type": "object", "properties": {section: schema}}


def check_models(config: Mapping[str, Any], *, source: str = "config", check_names: bool = True) -> dict[str, ModelSpec]:
    """Each ``models:`` entry must parse, and a model fetched from a zoo or a file must name a
    model that timm / torchvision (/ RobustBench, when installed) know, offline, so a typo stops
    the run before any download or inference job (a ``finetune`` entry's architecture and weights
    too; a ``train`` entry's architecture is checked by its rule). Imports timm or torchvision only when the config
    uses them, and then once per library version (``check_names=False``: the entries' keys and
    values alone). Returns each model's :class:`ModelSpec` by name, which the workflow keeps and
    asks the sources with (``MODEL_SPECS``)."""
    from classwise.models.sources import parse_model_spec

    models = config.get("models") or {}
    if not isinstance(models, Mapping):
        raise InputError(f"expected a mapping of models, got {type(models).__name__}", path=source, field="models")
    return {
        name: parse_model_spec(entry, key=name, config_path=source, check_names=check_names) for name, entry in models.items()
    }


def check_references(
    config: dict[str, Any],
    *,
    source: str = "config",
    shifts: list[str] | None = None,
    specs: Mapping[str, ModelSpec] | None = None,
) -> None:
    """Raise :class:`InputError` when a key refers to something the config does not define (a
    dataset, a model, a shift, or a model name timm / torchvision do not know), or a directory the
    user must provide is missing (so the run stops before any job). ``specs``: the models'
    entries as :func:`check_models` parsed them (None: it runs here)."""
    from classwise.data.sources import check_dataset_paths
    from classwise.superclasses import resolve_superclasses

    datasets = config.get("datasets", {})
    if specs is None:
        specs = check_models(config, source=source)
    for name, spec in specs.items():
        train_on = spec.options.get("train_on")
        if train_on is not None and train_on not in datasets:
            raise InputError(
                f"names dataset '{train_on}', expected one of {sorted(datasets)}",
                path=source,
                field=f"models.{name}.train_on",
            )
    for name, dataset in datasets.items():
        try:
            check_dataset_paths(dataset, name)
            resolve_superclasses(dataset.get("superclasses"))
        except InputError as error:
            raise InputError(str(error), path=source) from None
        for shift in dataset.get("shifts", []):
            if shifts is not None and shift not in shifts:
                raise InputError(f"names shift {shift!r}, expected one of {shifts}", path=source, field=f"datasets.{name}.shifts")
        for view, view_cfg in dataset.get("label_views", {}).items():
            field = f"datasets.{name}.label_views.{view}"
            reference = view_cfg.get("reference_model")
            if view_cfg.get("kind") == "confident_learning" and reference not in specs:
                raise InputError(
                    f"names model {reference!r}, expected one of {sorted(specs)}", path=source, field=f"{field}.reference_model"
                )
            if view_cfg.get("kind") == "imagenet_cleaned" and "variant" not in view_cfg:
                raise InputError(
                    "is required for kind imagenet_cleaned (paper or aligned)", path=source, field=f"{field}.variant"
                )


def configured_shifts(config: Mapping[str, Any], *, source: str = "config") -> dict[str, ShiftSpec]:
    """The shifts of the config's ``shifts:`` section, by name, in their order
    (:func:`classwise.shifts.spec.expand_shifts`): each kind checks its own keys there (the
    schema leaves the set of keys to the kinds' registry), so an unknown key or a bad value raises
    :class:`InputError` naming ``source`` and the field, before any job."""
    from classwise.shifts.spec import expand_shifts

    try:  # wrapped, so that a `shifts` key inside the section is an unknown key there
        return expand_shifts({"shifts": config.get("shifts") or {}})
    except InputError as error:
        raise _in_file(error, source) from None


def shift_shards(config: Mapping[str, Any], shifts: list[str], *, source: str = "config") -> dict[str, int]:
    """Into how many jobs each of ``shifts`` (every shift of the run, by name) splits its
    inference (:func:`classwise.shifts.spec.shard_counts`: an entry's ``shards``, else
    ``inference.shards``, else 1); a bad count raises :class:`InputError` naming ``source`` and the
    field, before any job."""
    from classwise.shifts.spec import shard_counts

    default = (config.get("inference") or {}).get("shards", 1)
    try:
        return shard_counts({"shifts": config.get("shifts") or {}}, list(shifts), default=default)
    except InputError as error:
        raise _in_file(error, source) from None


def _in_file(error: InputError, source: str) -> InputError:
    """``error`` naming the config file ``source`` too (unchanged when it names a file already)."""
    return error if error.path is not None else InputError(error.message, path=source, field=error.field)
