"""classwise: evaluate image classifiers on their worst classes.

The library is pure and typed: metrics are functions of cached (logits, labels)
arrays; the Snakemake workflow in ``workflow/`` only wires library calls together.

The front door::

    import classwise
    evaluation = classwise.evaluate(logits, labels)          # every metric of the catalogue
    evaluation.metrics["WCA"].value, evaluation.to_json()

and every metric function by name in :mod:`classwise.metrics`.
"""

from typing import Any

from classwise.errors import InputError

__all__ = [
    "AutoAttackSettings",
    "InputError",
    "PgdSettings",
    "__version__",
    "autoattack",
    "evaluate",
    "pgd_attack",
    "robust_fairness",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # the attacks need torch; importing them lazily keeps `import classwise` (and the metrics CLI) light.
    if name in ("pgd_attack", "autoattack"):
        from classwise._extras import import_module

        return getattr(import_module(f"classwise.shifts.{'pgd' if name == 'pgd_attack' else 'autoattack'}"), name)
    if name in ("PgdSettings", "AutoAttackSettings"):  # the attacks' records: torch-free
        import classwise.shifts.attack_settings

        return getattr(classwise.shifts.attack_settings, name)
    if name in ("robust_fairness", "evaluate"):  # numpy and scipy: imported on first use like the rest of the API
        import classwise.metrics

        return getattr(classwise.metrics, name)
    raise AttributeError(f"module 'classwise' has no attribute {name!r}")
