"""One function per workflow step; the Snakemake scripts only unpack their job and call these.

``models`` trains and runs inference, ``metrics`` computes metric families over cached logits,
``reports`` aggregates tables and figures, ``testsuites``, ``extrapolation`` and ``robustness``
run the papers' analyses. Scripts import the submodule they need, so a metric
job never pays for importing torch.

Every step reads its inputs, computes, and writes each output atomically, so an interrupted
job leaves nothing that Snakemake could mistake for a finished output.
"""
