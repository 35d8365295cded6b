"""Read a workflow config file, naming the line of a YAML syntax error.

Snakemake reads ``--configfile`` itself, before the workflow runs, and reports a syntax error as
"Config file is not valid JSON or YAML" without a line; ``make run`` checks the file here first
(``python -m classwise.pipeline.config_file FILE``, or ``classwise check-config FILE``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from classwise.errors import InputError

#: The workflow's schema, where the package runs from a checkout of the repository.
REPO_SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The config as a mapping, a name written as digits as a string (as the workflow reads it,
    :func:`~classwise.pipeline.config_checks.names_as_strings`); an :class:`InputError` naming
    the file, the line and the column of a YAML syntax error, or saying what the top level should be."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot read the config file ({error.strerror})", path=path) from None
    try:
        config = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = " ".join(filter(None, [error.context, error.problem]))
        raise InputError(f"{where}not valid YAML ({problem}); indent with spaces, not tabs", path=path) from None
    if not isinstance(config, dict):
        raise InputError(f"expected a mapping of keys (datasets, models, shifts, ...), got {type(config).__name__}", path=path)
    from classwise.pipeline.config_checks import names_as_strings

    return names_as_strings(config, source=str(path))


def check_config_file(path: str | Path, schema: str | Path = REPO_SCHEMA) -> dict[str, Any]:
    """The YAML and the schema's checks (unknown keys, types, required keys), and the keys that
    the model sources and the shift kinds check themselves (the schema leaves those sets open);
    the cross checks that need the data or the model libraries run when the workflow builds its
    DAG (``snakemake -n``)."""
    from classwise.pipeline.config_checks import check_models, check_schema, configured_shifts

    config = load_config_file(path)
    if Path(schema).is_file():
        check_schema(config, schema, source=str(path))
    check_models(config, source=str(path), check_names=False)
    configured_shifts(config, source=str(path))
    return config


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 1:
        print("usage: python -m classwise.pipeline.config_file CONFIG.yaml", file=sys.stderr)
        return 2
    try:
        check_config_file(arguments[0])
    except InputError as error:
        print(f"classwise: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
