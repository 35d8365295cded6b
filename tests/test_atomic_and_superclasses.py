"""Atomic writes leave nothing behind; superclass files are validated with clear messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from classwise.atomic import atomic_open, write_json
from classwise.errors import InputError
from classwise.superclasses import load_superclasses


def test_atomic_open_replaces_only_on_success(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as handle:
            handle.write("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with atomic_open(target) as handle:
        handle.write("new")
    assert target.read_text() == "new"


def test_write_json_refuses_nan(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        write_json(tmp_path / "x.json", {"v": float("nan")})
    assert list(tmp_path.iterdir()) == []


def test_superclasses_load_and_validate(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"dog": [0, 1], "cat": [2]}))
    assert load_superclasses(path, 3) == {"dog": [0, 1], "cat": [2]}
    with pytest.raises(InputError, match=r"s.json: field 'cat': class index 2 is out of range \[0, 2\)"):
        load_superclasses(path, 2)
    path.write_text(json.dumps({"dog": "0,1"}))
    with pytest.raises(InputError, match="field 'dog'"):
        load_superclasses(path, 3)
    path.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        load_superclasses(path, 3)
