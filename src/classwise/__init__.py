"""classwise: evaluate image classifiers on their worst classes.

The library is pure and typed: metrics are functions of cached (logits, labels)
arrays; the Snakemake workflow in ``workflow/`` only wires library calls together.
"""

from typing import Any

from classwise.errors import InputError

__all__ = ["InputError", "__version__", "pgd_attack", "robust_fairness"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # pgd_attack needs torch; importing it lazily keeps `import classwise` (and the metrics CLI) light.
    if name == "pgd_attack":
        from classwise._extras import import_module

        return import_module("classwise.shifts.pgd").pgd_attack
    if name == "robust_fairness":  # numpy only, but imported on first use like the rest of the API
        from classwise.metrics import robust_fairness

        return robust_fairness
    raise AttributeError(f"module 'classwise' has no attribute {name!r}")
