"""``source: predictions``: a model the pipeline does not run, given by files of its outputs, one
per evaluated shift (:mod:`classwise.predictions_io` reads the formats).

Config shape (one entry of ``models:``)::

    {source: predictions, files: {clean: net_clean.npz, gaussian_noise_s3: net_noise.csv}}
    {source: predictions, files: {mnist: {clean: mnist.npz}, cifar10: {clean: cifar.csv}}}
    {source: predictions, files: {clean: net.csv}, abstain: "?"}
    {source: predictions, files: "preds/{model}_{shift}.csv"}

The first form gives the files of every dataset the model is evaluated on (the same file for
each), the second one set per dataset. The last is a pattern, expanded over every shift the
model is evaluated on, of every dataset: ``{shift}`` (required) is the shift's name,
``{model}`` the model's name in the config, ``{dataset}`` the dataset's; it gives for each
(dataset, shift) the file a mapping would name, so a study of 4 observers x 8 conditions is one
line per observer, or one line in all with ``{model}`` (a YAML anchor shares the entry). Each
file is an ``.npz`` in the logits-file format (``logits``, ``probs`` or ``predictions``, with
``sample_ids``), a CSV ``sample_id,label,score_0,...``, a CSV of hard predictions
``sample_id,prediction`` (class indices or names; an empty cell, ``-1`` or the ``abstain``
token: the model abstained), timm ``inference.py``'s outputs (``.csv``, ``.json``,
``.parquet``) or an ``.npy`` of probabilities in the dataset's order
(:mod:`classwise.predictions_io` reads them all); paths are relative to the working directory.
The rule ``import_predictions`` (not ``infer``) matches a file to the dataset's samples by id
and writes it as the model's cached outputs, so every table, figure, label view and analysis
downstream reads it as it reads a model the pipeline ran, and a changed file reruns them.
Before any job: a key of ``files`` that names no shift of the config is an error, and so is a
dataset and shift the model is evaluated on without a file, a pattern's unknown placeholder,
and every file a pattern gives that does not exist (named at once, each with its shift); each file
is read for its header, so that hard predictions skip the metrics and analyses that need scores
(and say so) rather than fail, and is checked against the dataset as far as its header and ids
tell (:func:`classwise.predictions_io.check_outputs_file`: its score columns against the class
count, and its ids against the dataset's where those are known before any job).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from classwise.errors import InputError, field_path
from classwise.models.sources.base import Datasets
from classwise.models.spec import ModelSpec, check_keys

if TYPE_CHECKING:
    import numpy as np
    from torch import nn

    from classwise.data.downloads import NetworkOptions
    from classwise.models.data_config import DataConfig
    from classwise.models.fetch import FetchedFile


#: The placeholders of a ``files`` pattern; ``{shift}`` is required (one file per shift).
PATTERN_PLACEHOLDERS = ("model", "dataset", "shift")
_MAX_FILES_IN_MESSAGE = 10


def _nested(files: Mapping[str, Any] | str) -> bool:
    """Whether ``files`` is dataset -> shift -> file; its first value tells (the spec check
    refuses a mix), so a lookup costs the same at 200 shifts as at one."""
    return isinstance(files, Mapping) and isinstance(next(iter(files.values()), None), Mapping)


def _is_pattern(spec: ModelSpec) -> bool:
    return isinstance(spec.options["files"], str)


def outputs_file(spec: ModelSpec, dataset: str, shift: str, model: str) -> str | None:
    """The file of model ``model``'s outputs on ``(dataset, shift)`` (None: the entry gives none);
    a pattern gives one for every dataset and shift."""
    files = spec.options["files"]
    if isinstance(files, str):
        return files.format(model=model, dataset=dataset, shift=shift)
    if _nested(files):
        files = files.get(dataset) or {}
    value = files.get(shift)
    return None if value is None else str(value)


def _files_field(model: str, spec: ModelSpec, dataset: str, shift: str) -> str:
    """The config field of the model's file on ``(dataset, shift)`` (a pattern's: ``files`` itself)."""
    if _is_pattern(spec):
        return field_path("models", model, "files")
    return field_path("models", model, "files", *([dataset] if _nested(spec.options["files"]) else []), shift)


def _about_file(spec: ModelSpec, dataset: str, shift: str) -> str:
    """What a message about the file of ``(dataset, shift)`` adds when a pattern named it: the
    pattern and the shift it was expanded for (a mapping's field names the shift already)."""
    if not _is_pattern(spec):
        return ""
    return f" (the file the pattern {spec.options['files']!r} gives for shift {shift!r} of dataset {dataset!r})"


def _check_pattern(pattern: str, field: str, config_path: str | Path | None) -> None:
    """A pattern's placeholders are some of :data:`PATTERN_PLACEHOLDERS`, bare, ``{shift}``
    among them, and it names a file of a format :mod:`classwise.predictions_io` reads."""
    import string

    known = ", ".join(f"{{{name}}}" for name in PATTERN_PLACEHOLDERS)
    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:  # a lone brace
        raise InputError(
            f"expected a pattern whose placeholders are some of {known} ('{{{{' and '}}}}' for a brace), got {pattern!r}: {exc}",
            path=config_path,
            field=field,
        ) from None
    named = set()
    for _, name, format_spec, conversion in parts:
        if name is None:
            continue
        if name not in PATTERN_PLACEHOLDERS or format_spec or conversion:
            written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{format_spec}" if format_spec else "") + "}"
            raise InputError(f"unknown placeholder {written} in {pattern!r}; known: {known}", path=config_path, field=field)
        named.add(name)
    if "shift" not in named:
        raise InputError(
            f"expected a pattern that names {{shift}} (one file per shift; known placeholders: {known}), got {pattern!r}; "
            "for one file, write files: {clean: <file>}",
            path=config_path,
            field=field,
        )
    _check_file(pattern, field, config_path)


def _check_file(value: Any, field: str, config_path: str | Path | None) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected the path of a file of the model's outputs, got {value!r}", path=config_path, field=field)
    from classwise.predictions_io import SUFFIXES

    if not value.lower().endswith(SUFFIXES):
        raise InputError(
            f"expected a .npz file (the logits-file format) or a .csv file, or timm's .json or .parquet, or an .npy; got "
            f"{value!r}",
            path=config_path,
            field=field,
        )


def _given_file(model: str, spec: ModelSpec, dataset: str, shift: str, config_path: str | Path | None) -> str:
    """The file of the model's outputs on ``(dataset, shift)``; :class:`InputError` where the entry gives none."""
    path = outputs_file(spec, dataset, shift, model)
    if path is None:
        raise InputError(
            f"no file of model {model!r}'s outputs on shift {shift!r} of dataset {dataset!r}; add one, or leave the "
            f"shift out of datasets.{dataset}.shifts (or the model out of datasets.{dataset}.models)",
            path=config_path,
            field=_files_field(model, spec, dataset, shift),
        )
    return path


def _check_pattern_files_exist(
    model: str, spec: ModelSpec, dataset: str, files: Mapping[str, str], config_path: str | Path | None
) -> None:
    """:class:`InputError` naming every one of ``files`` (shift -> the file the pattern gives on
    ``dataset``) that does not exist, with its shift (a typo in the pattern misses them all, and
    says so at once)."""
    missing = [(shift, path) for shift, path in files.items() if not Path(path).is_file()]
    if not missing:
        return
    listed = "; ".join(f"{path} (shift {shift!r})" for shift, path in missing[:_MAX_FILES_IN_MESSAGE])
    more = f"; and {len(missing) - _MAX_FILES_IN_MESSAGE} more" if len(missing) > _MAX_FILES_IN_MESSAGE else ""
    raise InputError(
        f"{len(missing)} of the {len(files)} files the pattern {spec.options['files']!r} gives on dataset {dataset!r} do not exist "
        f"(relative paths are relative to the working directory): {listed}{more}",
        path=config_path,
        field=field_path("models", model, "files"),
    )


class PredictionsSource:
    name = "predictions"
    made_by: str | None = None
    plain_file = False
    user_files: tuple[str, ...] = ()
    cached_by = "import_predictions"

    def parse(self, given: Mapping[str, Any], where: str, config_path: str | Path | None) -> ModelSpec:
        check_keys(self.name, given, frozenset({"files"}), frozenset({"abstain"}), where, config_path)
        token = given.get("abstain")
        if token is not None and (not isinstance(token, (str, int)) or isinstance(token, bool) or not str(token).strip()):
            raise InputError(
                f"expected the prediction cell that means 'abstained' (a word or a number), got {token!r}",
                path=config_path,
                field=f"{where}.abstain",
            )
        files = given["files"]
        here = f"{where}.files"
        if isinstance(files, str):
            _check_pattern(files, here, config_path)
            return ModelSpec(source=self.name, options=dict(given), label=self.name, verbatim=True)
        if not isinstance(files, Mapping) or not files:
            raise InputError(
                f"expected a mapping shift -> file (or dataset -> shift -> file), or a pattern such as "
                f"'preds/{{model}}_{{shift}}.csv', got {files!r}",
                path=config_path,
                field=here,
            )
        nested = any(isinstance(value, Mapping) for value in files.values())
        for key, value in files.items():
            if nested != isinstance(value, Mapping):
                raise InputError(
                    "expected every value to be a file (shift -> file) or every value a mapping (dataset -> shift -> "
                    f"file), got {value!r}",
                    path=config_path,
                    field=f"{here}.{key}",
                )
            if nested:
                if not value:
                    raise InputError("expected a mapping shift -> file, got none", path=config_path, field=f"{here}.{key}")
                for shift, path in value.items():
                    _check_file(path, f"{here}.{key}.{shift}", config_path)
            else:
                _check_file(value, f"{here}.{key}", config_path)
        return ModelSpec(source=self.name, options=dict(given), label=self.name, verbatim=True)

    def name_check_libraries(self, spec: ModelSpec) -> tuple[str, ...] | None:
        return None

    def check_names(self, spec: ModelSpec) -> None:
        return None

    def weights_input(self, model: str, spec: ModelSpec, *, models_dir: str, resources: str) -> str | None:
        return None

    def classes_scored(self, spec: ModelSpec, datasets: Datasets, classes: Mapping[str, int | None]) -> int | None:
        return None  # the import job checks the file's columns against the dataset's classes

    def check_run(
        self,
        model: str,
        spec: ModelSpec,
        datasets: Datasets,
        config_path: str,
        *,
        shifts: Collection[str] | None = None,
    ) -> None:
        """Files given per dataset name datasets of the config, and every file is for one of
        ``shifts`` (the config's shifts, as the plan expands them), when given. (A pattern names
        no dataset and no shift: it is expanded over those the model is evaluated on.)"""
        files = spec.options.get("files") or {}
        if isinstance(files, str):
            return
        per_dataset = files if _nested(files) else {None: files}
        unknown = [name for name in per_dataset if name is not None and name not in datasets]
        if unknown:
            raise InputError(
                f"names dataset {unknown[0]!r}, expected one of {sorted(datasets)}",
                path=config_path,
                field=field_path("models", model, "files", unknown[0]),
            )
        known = None if shifts is None else set(shifts)
        for dataset, by_shift in per_dataset.items():
            stray = [key for key in by_shift if known is not None and key not in known]
            if stray:
                where = ["models", model, "files", *([] if dataset is None else [dataset]), stray[0]]
                raise InputError(
                    f"names shift {stray[0]!r}, which is no shift of the config; expected one of {list(shifts or [])}",
                    path=config_path,
                    field=field_path(*where),
                )

    def check_fit(self, model: str, spec: ModelSpec, dataset: str, datasets: Datasets, hint: str, config_path: str) -> None:
        return None

    def has_scores(self, model: str, spec: ModelSpec, dataset: str, shift: str, config_path: str) -> bool:
        """From the file's header (its array names, or its CSV columns); errors name the field."""
        from classwise.predictions_io import file_has_scores

        path = _given_file(model, spec, dataset, shift, config_path)
        field = _files_field(model, spec, dataset, shift)
        try:
            return file_has_scores(path)
        except InputError as exc:
            raise InputError(f"{exc}{_about_file(spec, dataset, shift)}", path=config_path, field=field) from None

    def check_outputs(
        self,
        model: str,
        spec: ModelSpec,
        dataset: str,
        datasets: Datasets,
        shifts: Mapping[str, np.ndarray | None],
        classes: int | None,
        config_path: str,
    ) -> None:
        """Each file of ``shifts`` on ``dataset`` against the shift's samples (``shifts``: shift ->
        its sample ids, None where unknown before any job), from its header and ids
        (:func:`~classwise.predictions_io.check_outputs_file`); errors name the config's field,
        the file and what in it does not match. The files a pattern gives that do not exist are
        named all at once, each with its shift."""
        import numpy as np

        from classwise.data.sources import dataset_class_names
        from classwise.predictions_io import check_outputs_file

        given = {shift: _given_file(model, spec, dataset, shift, config_path) for shift in shifts}
        if _is_pattern(spec):
            _check_pattern_files_exist(model, spec, dataset, given, config_path)
        names = dataset_class_names(dataset, datasets[dataset])
        class_names = None if names is None else np.asarray(names)
        for shift, sample_ids in shifts.items():
            path = given[shift]
            where = f"dataset {dataset!r}" if shift == "clean" else f"shift {shift!r} of dataset {dataset!r}"
            try:
                check_outputs_file(
                    path,
                    dataset=dataset,
                    n_classes=classes,
                    sample_ids=sample_ids,
                    where=where,
                    class_names=class_names,
                    abstain=spec.options.get("abstain"),
                )
            except InputError as exc:
                raise InputError(
                    f"{exc}{_about_file(spec, dataset, shift)}",
                    path=config_path,
                    field=_files_field(model, spec, dataset, shift),
                ) from None

    def needs_download(self, spec: ModelSpec) -> bool:
        return False

    def download(self, spec: ModelSpec, dest: Path, network: NetworkOptions) -> tuple[list[FetchedFile], str]:
        raise InputError(f"models with source {self.name!r} are files of outputs, nothing is downloaded", field="source")

    def owns_downloads(self, spec: ModelSpec) -> bool:
        return False

    def data_config(self, spec: ModelSpec) -> DataConfig:
        raise InputError(f"models with source {self.name!r} take no images, so they have no preprocessing", field="source")

    def local_weights(self, spec: ModelSpec) -> tuple[list[Path], Path] | None:
        return None

    def build(self, spec: ModelSpec, files: list[Path], base: Path) -> tuple[nn.Module, DataConfig]:
        raise InputError(f"models with source {self.name!r} are not run by the pipeline", field="source")

    def inference_model(
        self, model: str, spec: ModelSpec, weights: str | Path | None, device: str
    ) -> tuple[Any, dict[str, Any], Any]:
        raise InputError(
            f"model {model!r} (source {self.name}) is not run by the pipeline: rule import_predictions reads its outputs "
            "from its files",
            field=f"models.{model}.source",
        )


SOURCE = PredictionsSource()
