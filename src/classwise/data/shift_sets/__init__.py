"""Published distribution shifts as shifts of a base dataset (``datasets.<name>.shift_sets``).

One entry brings a whole family::

    datasets:
      cifar10:
        source: torchvision
        name: cifar10
        root: resources/data/torchvision
        shift_sets:
          cifar10c: {}                          # every corruption, severities 1-5, downloaded
          cifar10_1: {version: v6}

An entry is keyed by a name of the user's choice; its ``family`` (default: the key) is one of
:data:`SHIFT_FAMILIES`. It expands into shifts named ``<key>_<corruption>_s<severity>``
(corruption families), ``<key>_<variant>`` (ImageNet-V2) or ``<key>``, of kind ``"dataset"``
(:class:`~classwise.shifts.spec.ShiftSpec`), evaluated on the base dataset beside its on-the-fly
shifts: one inference job, one logits file and its own metric jobs each. A shift's ``params``
say what it is: ``family``, ``set`` (the key), ``root``, the family's own (``corruption``,
``severity``, ``variant``, ``version``, ``classes``), ``paired`` (the images are copies of the
base's test images with their sample ids) and ``restricted`` (the model's outputs are restricted
to the set's classes before the argmax, :mod:`classwise.class_subsets`). So a per-base-dataset
view lists a dataset's published shifts by ``family`` and ``set``.

Everything :func:`expand_shift_sets` does happens at DAG-build time, before any job: options,
base dataset, and the layout of every directory already on disk (a missing corruption folder, a
class folder outside the base's label space, an unknown wnid in ``classes``: an
:class:`~classwise.errors.InputError` naming the directory or the config field).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from classwise.data.shift_sets.base import COMMON_KEYS, ShiftFamily, ShiftImages
from classwise.data.shift_sets.cifar import CIFAR10_1, CIFAR10C, CIFAR100C
from classwise.data.shift_sets.imagenet import IMAGENET_A, IMAGENET_C, IMAGENET_FOLDER, IMAGENET_R, IMAGENET_SKETCH, IMAGENET_V2
from classwise.data.shift_sets.labels import LABELS
from classwise.errors import InputError
from classwise.shifts.spec import ShiftSpec

__all__ = [
    "SHIFT_FAMILIES",
    "ShiftFamily",
    "ShiftImages",
    "archive_record",
    "downloaded_files",
    "expand_shift_sets",
    "family_of",
    "merge_shifts",
    "open_shift",
    "prepare_shift_set",
    "shift_archives",
]

SHIFT_FAMILIES: dict[str, ShiftFamily] = {
    family.name: family
    for family in (
        CIFAR10C,
        CIFAR100C,
        CIFAR10_1,
        IMAGENET_C,
        IMAGENET_V2,
        IMAGENET_R,
        IMAGENET_A,
        IMAGENET_SKETCH,
        IMAGENET_FOLDER,
        LABELS,
    )
}


def family_of(key: str, entry: Mapping[str, Any], where: str) -> ShiftFamily:
    """The family of an entry (``family``, default its key), its keys checked."""
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping of options, got {entry!r}", field=where)
    name = entry.get("family", key)
    if name not in SHIFT_FAMILIES:
        field = f"{where}.family" if "family" in entry else where
        raise InputError(f"unknown shift family {name!r}; expected one of {list(SHIFT_FAMILIES)}", field=field)
    family = SHIFT_FAMILIES[name]
    allowed = (*(COMMON_KEYS if family.takes_root else ("family",)), *family.options)
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r} for family {name!r}; expected some of {sorted(allowed)}", field=f"{where}.{unknown[0]}"
        )
    if family.takes_root and not family.downloaded and "root" not in entry:
        raise InputError(
            f"is required: {family.description} is not downloaded, give the directory that holds it", field=f"{where}.root"
        )
    if not family.downloaded and "downloads" in entry:
        raise InputError(f"{family.description} is not downloaded; remove 'downloads'", field=f"{where}.downloads")
    return family


def downloaded_files(entry: Mapping[str, Any], key: str) -> list[str]:
    """The names of the files a local rule downloads for this entry (none for a directory the
    user provides)."""
    return [Path(archive.filename).name for archive in SHIFT_FAMILIES[entry.get("family", key)].archives(entry)]


def expand_shift_sets(datasets: Mapping[str, Mapping[str, Any]], *, source: str = "config") -> dict[str, dict[str, ShiftSpec]]:
    """Dataset -> its published shifts by name, in config order (entries, then corruptions, then
    severities), checked against the base dataset and the files on disk (see the module
    docstring). Errors about the config name ``source``; errors about files name the file."""
    from classwise.data.sources import dataset_class_ids, dataset_classes, dataset_image_shape

    expanded: dict[str, dict[str, ShiftSpec]] = {}
    for name, dataset in datasets.items():
        entries = dataset.get("shift_sets") or {}
        expanded[name] = {}
        if not entries:
            continue
        try:
            classes = dataset_classes(name, dataset)
            class_ids: tuple[str, ...] | None = None
            for key, entry in entries.items():
                where = f"datasets.{name}.shift_sets.{key}"
                family = family_of(key, entry, where)
                family.check_base(name, dataset, classes, dataset_image_shape(dataset), where)
                if family.uses_class_ids and class_ids is None:
                    class_ids = dataset_class_ids(dataset)
                _check_classes(entry, class_ids, where)
                for spec in family.check_samples(family.shifts(key, entry, where), name, dataset, where):
                    if spec.name in expanded[name]:
                        raise InputError(f"two shifts are both named {spec.name!r}; rename an entry", field=where)
                    family.check_layout(spec.params, class_ids, where)
                    expanded[name][spec.name] = spec
        except InputError as error:
            if error.path is not None:
                raise
            raise InputError(str(error), path=source) from None
    return expanded


def _check_classes(entry: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> None:
    """A user subset (``classes``) names distinct classes of the base dataset."""
    wanted = entry.get("classes")
    if wanted is None:
        return
    if not isinstance(wanted, (list, tuple)) or not wanted or not all(isinstance(w, str) for w in wanted):
        raise InputError(f"expected a non-empty list of wnids, got {wanted!r}", field=f"{where}.classes")
    if len(set(wanted)) != len(wanted):
        raise InputError(
            f"lists a class twice: {sorted(w for w in set(wanted) if wanted.count(w) > 1)}", field=f"{where}.classes"
        )
    if class_ids is not None:
        unknown = [w for w in wanted if w not in set(class_ids)]
        if unknown:
            raise InputError(
                f"unknown wnids {unknown[:10]}: not classes of the base dataset ({len(class_ids)} classes)",
                field=f"{where}.classes",
            )


def merge_shifts(
    on_the_fly: Mapping[str, ShiftSpec], shift_sets: Mapping[str, Mapping[str, ShiftSpec]], *, source: str = "config"
) -> dict[str, ShiftSpec]:
    """Every shift of the config by name: the on-the-fly ones, then each dataset's published
    ones. A name may be shared by datasets only for the same shift (the same files)."""
    merged = dict(on_the_fly)
    for dataset, specs in shift_sets.items():
        for name, spec in specs.items():
            where = f"datasets.{dataset}.shift_sets.{spec.params['set']}"
            if name in on_the_fly:
                raise InputError(
                    f"names shift {name!r}, which is already a shift of `shifts:`; rename the entry", path=source, field=where
                )
            if name in merged and merged[name] != spec:
                raise InputError(
                    f"shift {name!r} of another dataset reads other files; give this entry another key", path=source, field=where
                )
            merged[name] = spec
    return merged


def open_shift(shift: ShiftSpec | Mapping[str, Any], base: Mapping[str, Any], *, dataset: str = "dataset") -> ShiftImages:
    """The images of a ``kind="dataset"`` shift of the base dataset ``base`` (its config), with the
    base's labels and class names (never downloads)."""
    from classwise.data.sources import dataset_class_ids

    spec = shift if isinstance(shift, ShiftSpec) else ShiftSpec.from_json(shift)
    params = {**spec.params, "on_bad_image": base.get("on_bad_image", "error")}
    family = SHIFT_FAMILIES[params["family"]]
    where = f"datasets.{dataset}.shift_sets.{params['set']}"
    class_ids = dataset_class_ids(base) if family.uses_class_ids else None
    return family.open(params, class_ids, where)


def shift_archives(shift: ShiftSpec, entry: Mapping[str, Any]) -> list[str]:
    """The names of the downloaded files a shift reads (its entry ``entry``), one marker each in
    the workflow, so that adding a corruption or a variant reruns no other shift's inference."""
    family = SHIFT_FAMILIES[shift.params["family"]]
    return [Path(archive.filename).name for archive in family.archives_for(entry, shift.params)]


def archive_record(entry: Mapping[str, Any], key: str, name: str) -> dict[str, Any]:
    """What a download of file ``name`` of an entry is: file, url and sha256 (a ``downloads``
    override applied), the folder it unpacks to and the root it goes below."""
    from classwise.data.shift_sets.base import DEFAULT_DOWNLOAD_ROOT

    family = SHIFT_FAMILIES[entry.get("family", key)]
    for archive in family.archives(entry):
        if Path(archive.filename).name == name:
            chosen = {"url": archive.url, "sha256": archive.sha256, **dict((entry.get("downloads") or {}).get(name, {}))}
            return {
                "file": archive.filename,
                "url": chosen["url"],
                "sha256": chosen["sha256"],
                "unpacks_to": archive.unpacks_to,
                "root": str(entry.get("root", DEFAULT_DOWNLOAD_ROOT)),
            }
    raise InputError(f"family {family.name!r} downloads no file {name!r}", field="archive")


def prepare_shift_set(
    entry: Mapping[str, Any], *, dataset: str, key: str, files: list[str] | None = None, **options: Any
) -> list[dict[str, Any]]:
    """Download and unpack an entry's published files (those named in ``files``, default all)
    into its ``root`` (a local rule's job); one record per file (url, sha256, where it went).
    ``options`` go to :func:`~classwise.data.shift_sets.archives.fetch_archives` (``network``,
    ``keep_archives``)."""
    from classwise.data.shift_sets.archives import fetch_archives
    from classwise.data.shift_sets.base import DEFAULT_DOWNLOAD_ROOT

    where = f"datasets.{dataset}.shift_sets.{key}"
    family = family_of(key, entry, where)
    if not family.downloaded:
        raise InputError(
            f"{family.description} is not downloaded; give the directory that holds it as root", field=f"{where}.root"
        )
    root = Path(entry.get("root", DEFAULT_DOWNLOAD_ROOT))
    archives = [a for a in family.archives(entry) if files is None or Path(a.filename).name in files]
    unknown = sorted(set(files or ()) - {Path(a.filename).name for a in archives})
    if unknown:  # else the job would finish having prepared nothing it was asked for
        offered = [Path(a.filename).name for a in family.archives(entry)]
        raise InputError(f"family {family.name!r} downloads no file {unknown[0]!r}, only {offered}", field=f"{where}.archive")
    return fetch_archives(archives, root, overrides=entry.get("downloads"), where=where, **options)
