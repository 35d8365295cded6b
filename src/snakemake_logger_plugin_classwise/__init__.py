"""``snakemake --logger classwise``: the console of ``make run`` (classwise.pipeline.console).

Snakemake finds logger plugins by this package name (``snakemake_logger_plugin_<name>``, a
top-level package on the path), not by an entry point; so the plugin is this one line, and
everything it does is in :mod:`classwise.pipeline.console`. Snakemake imports every such package
whenever it starts, with or without ``--logger``: the import stays cheap (about 25 ms) and needs
nothing Snakemake does not bring itself.
"""

from classwise.pipeline.console import Console as LogHandler

__all__ = ["LogHandler"]
