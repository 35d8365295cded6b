"""classwise: evaluate image classifiers on their worst classes.

The library is pure and typed: metrics are functions of cached (logits, labels)
arrays; the Snakemake workflow in ``workflow/`` only wires library calls together.
"""

from classwise.errors import InputError

__all__ = ["InputError", "__version__"]
__version__ = "0.1.0"
