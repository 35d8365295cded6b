"""A config's YAML syntax error names its line (Snakemake's own message does not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from classwise.errors import InputError
from classwise.pipeline.config_file import REPO_SCHEMA, check_config_file, main


def test_a_syntax_error_names_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text("datasets:\n  pets:\n    source: image_folder\n   root: data/pets\n")
    with pytest.raises(InputError, match=r"my.yaml: line 4, column 4: not valid YAML") as error:
        check_config_file(path)
    assert error.value.path == str(path)
    path.write_text("datasets:\n\tpets: {}\n")
    with pytest.raises(InputError, match=r"line 2, column 1: not valid YAML .*'\\t'"):
        check_config_file(path)


def test_the_schema_check_runs_too_and_the_demo_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert REPO_SCHEMA.is_file()
    path = tmp_path / "bad.yaml"
    path.write_text(
        "datasets: {d: {source: sklearn_digits}}\nmodels: {m: {source: train, architecture: mlp}}\nshifts: {}\ncolour: red\n"
    )
    assert main([str(path)]) == 2
    assert "field 'colour': unknown key 'colour'" in capsys.readouterr().err
    assert main([str(REPO_SCHEMA.parents[2] / "config" / "config.yaml")]) == 0
    path.write_text("- a list\n")
    assert main([str(path)]) == 2
    assert "expected a mapping of keys" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("shifts: {corruption: [fog]}", "shifts.corruption"),  # a kind's key, misspelt
        ("shifts: {shifts: {corruptions: [fog]}, pgd: []}", "shifts.shifts"),  # a section nested in itself
        ("shifts: {shifts: {corruptions: [fog]}}", "shifts.shifts"),
        ("shifts: {}\nmodels: {m: {source: timm, name: resnet18, weigths: x}}", "models.m.weigths"),  # a source's key
    ],
)
def test_the_keys_the_schema_leaves_to_kinds_and_sources_are_checked_too(tmp_path: Path, section: str, field: str) -> None:
    path = tmp_path / "my.yaml"
    models = "" if "models" in section else "models: {m: {source: train, architecture: mlp}}\n"
    path.write_text(f"datasets: {{d: {{source: sklearn_digits}}}}\n{models}{section}\n")
    with pytest.raises(InputError, match=rf"my.yaml: field '{field}': unknown key"):
        check_config_file(path)


def test_a_name_written_as_digits_is_read_as_its_string(tmp_path: Path) -> None:
    path = tmp_path / "my.yaml"
    path.write_text("datasets: {1: {source: sklearn_digits}}\nmodels: {2: {source: train, architecture: mlp}}\nshifts: {}\n")
    config = check_config_file(path)
    assert list(config["datasets"]) == ["1"] and list(config["models"]) == ["2"]
