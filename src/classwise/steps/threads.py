"""How many threads a step's torch work may use."""

from __future__ import annotations


def limit_threads(threads: int | None) -> None:
    """Give torch exactly the job's threads (``None``: leave it). Its default, every core,
    oversubscribes the machine when Snakemake runs jobs side by side (CleaneX, for one, then
    runs many times slower)."""
    if threads is not None:
        import torch

        torch.set_num_threads(max(1, int(threads)))
