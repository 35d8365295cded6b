"""classwise: evaluate image classifiers on their worst classes.

The library is pure and typed: metrics are functions of cached (logits, labels)
arrays; the Snakemake workflow in ``workflow/`` only wires library calls together.
"""

from typing import Any

from classwise.errors import InputError

__all__ = ["InputError", "__version__", "autoattack", "pgd_attack", "robust_fairness"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # the attacks need torch; importing them lazily keeps `import classwise` (and the metrics CLI) light.
    if name in ("pgd_attack", "autoattack"):
        from classwise._extras import import_module

        return getattr(import_module(f"classwise.shifts.{'pgd' if name == 'pgd_attack' else 'autoattack'}"), name)
    if name == "robust_fairness":  # numpy only, but imported on first use like the rest of the API
        from classwise.metrics import robust_fairness

        return robust_fairness
    raise AttributeError(f"module 'classwise' has no attribute {name!r}")
