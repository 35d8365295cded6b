"""Optional dependencies: which extra installs which package, and the error that says so.

``pip install classwise`` installs the light core: the metrics library and the commands
``classwise metrics``, ``compare`` and ``extrapolate`` (numpy, scipy, pandas). The rest comes
in extras (``pyproject.toml``):

* ``models``: torch, torchvision, timm, albumentations, safetensors, tqdm, torchattacks -- running,
  training and attacking models (AutoAttack), the corruptions, the CleaneX extrapolation;
* ``pipeline``: Snakemake and its SLURM executor plugin, matplotlib, cleanlab, scikit-learn,
  pyyaml, jsonschema, pillow, pyarrow -- the workflow, its figures, label views and demo data,
  Parquet files of a model's outputs;
* ``torchmetrics``: torch and torchmetrics -- :mod:`classwise.torchmetrics`;
* ``all``: every extra.

A feature's entry point (a package's ``__init__``, its lazy attribute loader, a function that
imports an extra's package on first use) calls :func:`require` or :func:`import_module`
instead of letting a bare ``No module named 'torch'`` escape.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = ["EXTRA_OF_MODULE", "MissingExtraError", "import_module", "install_command", "require"]

#: Top-level import name -> the extra that installs it.
EXTRA_OF_MODULE: dict[str, str] = {
    "torch": "models",
    "torchvision": "models",
    "timm": "models",
    "albumentations": "models",
    "safetensors": "models",
    "tqdm": "models",
    "torchattacks": "models",
    "snakemake": "pipeline",
    "matplotlib": "pipeline",
    "cleanlab": "pipeline",
    "sklearn": "pipeline",
    "yaml": "pipeline",
    "jsonschema": "pipeline",
    "PIL": "pipeline",
    "torchmetrics": "torchmetrics",
    "pyarrow": "pipeline",
}


class MissingExtraError(ImportError):
    """A feature of an extra was used without the extra installed; the message says which."""


def install_command(extra: str) -> str:
    """The command that installs ``extra``, quoted for a shell."""
    return f'pip install "classwise[{extra}]"'


def _message(feature: str, missing: str, extra: str) -> str:
    return f"{feature} needs {missing}, which the {extra!r} extra installs: {install_command(extra)}"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a finder that refuses the module (as the light-core test's does)
        return False


def require(*modules: str, extra: str, feature: str) -> None:
    """Raise :class:`MissingExtraError` unless every top-level package in ``modules`` can be
    imported. Cheap: it looks for the packages without importing them."""
    missing = [module for module in modules if not _installed(module)]
    if missing:
        raise MissingExtraError(_message(feature, ", ".join(missing), extra), name=missing[0])


def import_module(name: str) -> ModuleType:
    """:func:`importlib.import_module`, except that a missing package of an extra (torch for
    ``classwise.models.training``, say) raises :class:`MissingExtraError` naming the extra."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        top = (error.name or "").partition(".")[0]
        if top not in EXTRA_OF_MODULE:
            raise
        raise MissingExtraError(_message(name, top, EXTRA_OF_MODULE[top]), name=top) from error
