"""``snakemake --logger classwise``: the console of ``make run`` (classwise.pipeline.console).

Snakemake finds logger plugins by this package name (``snakemake_logger_plugin_<name>``, a
top-level package on the path), not by an entry point; so the plugin is this one line, and
everything it does is in :mod:`classwise.pipeline.console`.
"""

from classwise.pipeline.console import Console as LogHandler

__all__ = ["LogHandler"]
