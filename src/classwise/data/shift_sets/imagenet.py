"""ImageNet-C, ImageNet-V2, ImageNet-R, ImageNet-A, ImageNet-Sketch and any folder of ImageNet
classes as shifts of an ImageNet validation set (``source: imagenet_val``).

Official layouts (each class folder is matched to the base dataset's classes by its wnid; a
folder whose class is not in the base's label space is an error naming it):

* **ImageNet-C** (Hendrycks & Dietterich 2019; Zenodo record 2235448, a directory you provide):
  ``<root>/<corruption>/<severity>/<wnid>/ILSVRC2012_val_*.JPEG``, the 19 corruptions at
  severities 1-5. The files keep the validation images' names, so a sample's id is its clean
  image's, ``<wnid>/<file>`` (flip rates and label views apply).
* **ImageNet-V2** (Recht et al. 2019; Hugging Face ``vaishaal/ImageNetV2``, downloaded): three
  variants, ``imagenetv2-<variant>-format-val/<class index>/<hash>.jpeg`` with folders named by
  the ImageNet-1k class index ``0`` .. ``999``; ids ``imagenetv2-<variant>/<index>/<file>``.
* **ImageNet-R** and **ImageNet-A** (Hendrycks et al. 2021; people.eecs.berkeley.edu/~hendrycks,
  downloaded): ``imagenet-r/<wnid>/*.jpg`` (200 classes, 30,000 renditions) and
  ``imagenet-a/<wnid>/*.jpg`` (200 classes, 7,500 images); ids ``imagenet-r/<wnid>/<file>``.
  Their model outputs are restricted to the 200 classes (:mod:`classwise.class_subsets`).
* **ImageNet-Sketch** (Wang et al. 2019, a directory you provide): ``<root>/<wnid>/*.JPEG`` for
  the 1,000 classes (or ``<root>/sketch/<wnid>/``, as the archive unpacks); ids
  ``imagenet-sketch/<wnid>/<file>``.
* **imagenet_folder**: any ``<root>/<wnid>/<images>`` you provide, restricted to the classes it
  holds (a user class subset); ids ``<key>/<wnid>/<file>``.

Every family takes ``classes``: a list of wnids that restricts the set (and the model's outputs)
to those classes. sha256 digests: those TensorFlow Datasets publishes for the same URLs
(``imagenet_r``, ``imagenet_a`` and ``imagenet_v2`` checksums); the authors publish md5 only
(ImageNet-R ``a61312130a589d0ca1a8fca1f2bd3337``, ImageNet-A ``c3e55429088dc681f30d81f4726b6595``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from classwise.data.shift_sets.base import (
    COMMON_CORRUPTIONS,
    Archive,
    ShiftFamily,
    ShiftImages,
    choices,
    require_directory,
    severities,
)
from classwise.errors import InputError
from classwise.shifts.spec import ShiftSpec


def _folders(directory: Path) -> list[str]:
    return sorted(e.name for e in os.scandir(directory) if e.is_dir() and not e.name.startswith("."))


def _is_wnid(name: str) -> bool:
    return len(name) == 9 and name[0] == "n" and name[1:].isdigit()


class _ImagenetFamily(ShiftFamily):
    """Shared by the ImageNet families: the base must be an ImageNet validation set, class
    folders are matched to its wnids, ``classes`` restricts the set."""

    #: Prefix of the sample ids of a natural-shift set (paired sets keep the validation ids).
    id_prefix: str | None = None
    uses_class_ids = True

    def check_base(
        self, base_name: str, base: Mapping[str, Any], classes: int | None, shape: tuple[int, ...] | None, where: str
    ) -> None:
        if base.get("source") != "imagenet_val":
            raise InputError(
                f"{self.description} shares ImageNet's label space; put it under a dataset of source "
                f"imagenet_val, not {base.get('source')!r}",
                field=where,
            )

    def spec(self, key: str, name: str, entry: Mapping[str, Any], **params: Any) -> ShiftSpec:
        if entry.get("classes"):
            params["classes"] = list(entry["classes"])
        return super().spec(key, name, entry, **params)

    # -- folders -> labels

    def class_folders(
        self, directory: Path, params: Mapping[str, Any], class_ids: Sequence[str] | None, where: str
    ) -> dict[str, str]:
        """Folder name -> wnid for the folders to read (all, or those of ``classes``); every
        folder's class must be in the base's label space ``class_ids``."""
        folders = _folders(directory)
        wnids = {folder: self.wnid_of(folder, directory, where) for folder in folders}
        if class_ids is not None:
            known = set(class_ids)
            outside = [folder for folder, wnid in wnids.items() if wnid not in known]
            if outside:
                raise InputError(
                    f"class folders {outside[:10]} ({len(outside)} in all) are not classes of the base dataset "
                    f"(its {len(known)} classes, e.g. {sorted(known)[:3]})",
                    path=directory,
                    field=f"{where}.root",
                )
        if not wnids:
            raise InputError("holds no class folder", path=directory, field=f"{where}.root")
        wanted = params.get("classes")
        if wanted:
            missing = sorted(set(wanted) - set(wnids.values()))
            if missing:
                raise InputError(f"no folder for classes {missing[:10]}", path=directory, field=f"{where}.classes")
            wnids = {folder: wnid for folder, wnid in wnids.items() if wnid in set(wanted)}
        return wnids

    def wnid_of(self, folder: str, directory: Path, where: str) -> str:
        if not _is_wnid(folder):
            raise InputError(f"class folder {folder!r} is not a wnid (n########)", path=directory / folder, field=f"{where}.root")
        return folder

    def read(self, directory: Path, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        """The images below ``directory/<class folder>/`` with the base's labels and names."""
        from classwise.data.imagefolder import ImageFileDataset, folder_files, imagenet_class_names

        if class_ids is None:
            raise InputError("the base dataset's classes are unknown", field=where)
        wnids = self.class_folders(directory, params, class_ids, where)
        folders = list(wnids)
        files, positions = folder_files(directory, folders)
        index = {wnid: i for i, wnid in enumerate(class_ids)}
        folder_label = np.array([index[wnids[folder]] for folder in folders], dtype=np.int64)
        labels = folder_label[np.asarray(positions, dtype=np.int64)] if files else np.zeros(0, dtype=np.int64)
        ids = files if self.paired else [f"{self.id_prefix_of(params)}/{f}" for f in files]
        images = ImageFileDataset(
            root=directory,
            files=np.array(files, dtype=str),
            labels=labels,
            sample_ids=np.array(ids, dtype=str),
            class_names=imagenet_class_names(class_ids),
            class_ids=tuple(class_ids),
            on_bad_image=params.get("on_bad_image", "error"),
        )
        restricted = bool(params.get("restricted"))
        return ShiftImages(images, np.unique(folder_label) if restricted else None)

    def id_prefix_of(self, params: Mapping[str, Any]) -> str:
        return str(self.id_prefix)


class ImagenetC(_ImagenetFamily):
    """ImageNet-C from a directory you provide: one shift ``<key>_<corruption>_s<severity>``
    per corruption (``corruptions``: ``all``, the default, or a list) and severity (default 1-5)."""

    name = "imagenet_c"
    description = "ImageNet-C"
    options = ("corruptions", "severities", "classes")
    paired = True

    def shifts(self, key: str, entry: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        corruptions = choices(entry, "corruptions", COMMON_CORRUPTIONS, COMMON_CORRUPTIONS, where)
        levels = severities(entry, where)
        return [self.spec(key, f"{key}_{c}_s{s}", entry, corruption=c, severity=s) for c in corruptions for s in levels]

    def directory(self, params: Mapping[str, Any]) -> Path:
        return Path(params["root"]) / str(params["corruption"]) / str(params["severity"])

    def check_layout(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> None:
        root = Path(params["root"])
        require_directory(root, "<corruption>/<severity>/<wnid>/*.JPEG", f"{where}.root")
        directory = self.directory(params)
        if not directory.is_dir():
            raise InputError(
                f"missing {params['corruption']}/{params['severity']}/ (the layout: <corruption>/<severity>/<wnid>/*.JPEG); "
                "download it or leave the corruption or severity out",
                path=root,
                field=f"{where}.corruptions",
            )
        self.class_folders(directory, params, class_ids, where)

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        self.check_layout(params, class_ids, where)
        return self.read(self.directory(params), params, class_ids, where)

    def write_stand_in(self, entry: Mapping[str, Any], root: Path) -> None:
        from classwise.data.stand_ins import IMAGENET_WNIDS, imagenet_c_fixture

        corruptions = choices(entry, "corruptions", COMMON_CORRUPTIONS, COMMON_CORRUPTIONS, "")
        imagenet_c_fixture(root, corruptions, severities(entry, ""), wnids=entry.get("classes") or IMAGENET_WNIDS)


class ImagenetFolders(_ImagenetFamily):
    """One set of ``<wnid>/`` class folders: ImageNet-R, ImageNet-A (downloaded, restricted to their
    200 classes), ImageNet-Sketch and ``imagenet_folder`` (directories you provide)."""

    options = ("classes",)

    def __init__(
        self,
        name: str,
        description: str,
        *,
        folder: str | None,
        id_prefix: str | None,
        restricted: bool,
        archive: Archive | None = None,
    ):
        self.name, self.description, self.folder = name, description, folder
        self.id_prefix, self.restricted, self.archive = id_prefix, restricted, archive
        self.downloaded = archive is not None

    def directory(self, params: Mapping[str, Any]) -> Path:
        root = Path(params["root"])
        return root / self.folder if self.folder and (root / self.folder).is_dir() else root

    def id_prefix_of(self, params: Mapping[str, Any]) -> str:
        return str(self.id_prefix or params["set"])

    def check_layout(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> None:
        directory = self.directory(params)
        if self.downloaded and not directory.is_dir():
            return  # downloaded by prepare_shift_set
        require_directory(directory, "<wnid>/<images> class folders", f"{where}.root")
        if self.downloaded and directory == Path(params["root"]) and self.folder and not any(map(_is_wnid, _folders(directory))):
            return  # the download root, before the archive is unpacked into it
        self.class_folders(directory, params, class_ids, where)

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        directory = self.directory(params)
        require_directory(directory, "<wnid>/<images> class folders", f"{where}.root")
        return self.read(directory, params, class_ids, where)

    def archives(self, entry: Mapping[str, Any]) -> list[Archive]:
        return [] if self.archive is None else [self.archive]

    def write_stand_in(self, entry: Mapping[str, Any], root: Path) -> None:
        from classwise.data.stand_ins import IMAGENET_WNIDS, image_folder_fixture

        image_folder_fixture(root, entry.get("classes") or IMAGENET_WNIDS, per_class=1, size=(40, 52), suffix=".JPEG")


class ImagenetV2(_ImagenetFamily):
    """ImageNet-V2, downloaded: one shift ``<key>_<variant>`` per variant (``variants``: ``all``,
    the default, or a list of ``matched-frequency``, ``threshold0.7``, ``top-images``)."""

    name = "imagenet_v2"
    description = "ImageNet-V2"
    options = ("variants", "classes")
    downloaded = True
    variants = ("matched-frequency", "threshold0.7", "top-images")

    def shifts(self, key: str, entry: Mapping[str, Any], where: str) -> list[ShiftSpec]:
        chosen = choices(entry, "variants", self.variants, self.variants, where)
        return [self.spec(key, f"{key}_{v.replace('-', '_')}", entry, variant=v) for v in chosen]

    def directory(self, params: Mapping[str, Any]) -> Path:
        return Path(params["root"]) / f"imagenetv2-{params['variant']}-format-val"

    def id_prefix_of(self, params: Mapping[str, Any]) -> str:
        return f"imagenetv2-{params['variant']}"

    def wnid_of(self, folder: str, directory: Path, where: str) -> str:
        from classwise.data.imagefolder import imagenet1k_wnids

        reference = imagenet1k_wnids()
        if reference is None:
            raise InputError("ImageNet-V2's class-index folders need timm's bundled wnid list (pip install timm)", field=where)
        if not folder.isdigit() or not 0 <= int(folder) < len(reference):
            raise InputError(
                f"class folder {folder!r} is not an ImageNet-1k class index 0..999",
                path=directory / folder,
                field=f"{where}.root",
            )
        return reference[int(folder)]

    def check_layout(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> None:
        if self.directory(params).is_dir():
            self.class_folders(self.directory(params), params, class_ids, where)

    def open(self, params: Mapping[str, Any], class_ids: tuple[str, ...] | None, where: str) -> ShiftImages:
        require_directory(self.directory(params), "<class index>/<images> folders", f"{where}.root")
        return self.read(self.directory(params), params, class_ids, where)

    def archives_for(self, entry: Mapping[str, Any], params: Mapping[str, Any]) -> list[Archive]:
        return [a for a in self.archives(entry) if a.unpacks_to == self.directory(params).name]

    def archives(self, entry: Mapping[str, Any]) -> list[Archive]:
        chosen = choices(entry, "variants", self.variants, self.variants, "")
        return [
            Archive(f"{_V2_URL}/imagenetv2-{v}.tar.gz", _V2_SHA256[v], f"imagenetv2-{v}.tar.gz", f"imagenetv2-{v}-format-val")
            for v in chosen
        ]


_V2_URL = "https://huggingface.co/datasets/vaishaal/ImageNetV2/resolve/main"
_V2_SHA256 = {
    "matched-frequency": "f0c37fdf925916b19ea1323cd9a2208cdb6959ba2c32eef2a7fc393835c9ca7c",
    "threshold0.7": "32142bfe998f9cfa4141be691f6a80eeb1e27b24bd532a668eb08c26d98897a2",
    "top-images": "85e4ace30f3f0d660152062254b8759dda66267b27f7ec0fd8d5768f1073a04b",
}
_HENDRYCKS_URL = "https://people.eecs.berkeley.edu/~hendrycks"

IMAGENET_C = ImagenetC()
IMAGENET_V2 = ImagenetV2()
IMAGENET_R = ImagenetFolders(
    "imagenet_r",
    "ImageNet-R",
    folder="imagenet-r",
    id_prefix="imagenet-r",
    restricted=True,
    archive=Archive(
        f"{_HENDRYCKS_URL}/imagenet-r.tar",
        "18c6bf493b39a0d975d48e587437f562caab9c52ae6327dcfa9dd8eb54aa1b52",
        "imagenet-r.tar",
        "imagenet-r",
    ),
)
IMAGENET_A = ImagenetFolders(
    "imagenet_a",
    "ImageNet-A",
    folder="imagenet-a",
    id_prefix="imagenet-a",
    restricted=True,
    archive=Archive(
        f"{_HENDRYCKS_URL}/imagenet-a.tar",
        "3bb3632277e6ba6392ea64c02ddbf4dd2266c9caffd6bc09c9656d28f012589e",
        "imagenet-a.tar",
        "imagenet-a",
    ),
)
IMAGENET_SKETCH = ImagenetFolders(
    "imagenet_sketch", "ImageNet-Sketch", folder="sketch", id_prefix="imagenet-sketch", restricted=False
)
IMAGENET_FOLDER = ImagenetFolders("imagenet_folder", "a folder of ImageNet classes", folder=None, id_prefix=None, restricted=True)
