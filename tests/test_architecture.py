"""The house's shape, checked on the import graph (docs/architecture.md): no import cycle in the
library, and model sources, dataset sources and shift kinds dispatched only by their registries.
The layers (bench > pipeline > steps, cli > library) are an import-linter contract in
pyproject.toml, run by make lint."""

from __future__ import annotations

import re

import grimp
import pytest
from paths import REPO

from classwise.shifts.kinds import KINDS


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_library() -> None:
    """Imports inside functions count; imports for type checking only do not."""
    graph = grimp.build_graph("classwise", exclude_type_checking_imports=True)
    edges = {m: {o for o in graph.find_modules_directly_imported_by(m) if o.startswith("classwise")} for m in graph.modules}
    assert _cycles(edges) == []


def test_no_source_dispatch_outside_the_registries() -> None:
    """A model's or a dataset's source is asked through its registry entry, never compared to a
    name elsewhere (docs/architecture.md: adding a source is one module and one registry line)."""
    registries = (REPO / "src/classwise/models/sources", REPO / "src/classwise/data/sources")
    dispatch = re.compile(r"""source["'\]]*\s*==""")
    found = []
    for path in [
        *sorted((REPO / "src").rglob("*.py")),
        *sorted((REPO / "workflow").rglob("*.smk")),
        *sorted((REPO / "scripts").glob("*.py")),
    ]:
        if any(registry in path.parents for registry in registries):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if dispatch.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


def test_the_dispatch_pattern_finds_a_source_branch() -> None:
    pattern = re.compile(r"""source["'\]]*\s*==""")
    assert pattern.search('if spec.source == "timm":')
    assert pattern.search('if entry["source"] == "checkpoint":')
    assert not pattern.search("source = MODEL_SOURCES[name]")


#: A branch on a shift's kind: ``kind == "pgd"`` (or ``!=``), ``kind in ("clean", "dataset")``,
#: ``kind in ADVERSARIAL_KINDS``, ``"transfer" == spec.kind``; every kind of the registry.
_KIND_NAMES = "|".join(KINDS)
KIND_DISPATCH = re.compile(
    rf"""kind["'\])]*\s*(==|!=)\s*["']({_KIND_NAMES})["']"""
    rf"""|kind["'\])]*\s*(not\s+)?in\s*[(\[{{]\s*(["'][\w-]+["']\s*,\s*)*["']({_KIND_NAMES})["']"""
    rf"""|kind["'\])]*\s*(not\s+)?in\s+(ADVERSARIAL_KINDS|SHIFT_KINDS\w*)\b"""
    rf"""|["']({_KIND_NAMES})["']\s*(==|!=)\s*[\w.\[\]"']*kind\b"""
)


def test_no_shift_kind_dispatch_outside_the_registry() -> None:
    """A shift is asked through its kind (classwise.shifts.kinds), never compared to a kind's
    name elsewhere (docs/architecture.md: adding a shift kind is one module and one registry line)."""
    registry = REPO / "src/classwise/shifts/kinds"
    found = []
    for path in [
        *sorted((REPO / "src").rglob("*.py")),
        *sorted((REPO / "workflow").rglob("*.smk")),
        REPO / "Snakefile",
        *sorted((REPO / "scripts").glob("*.py")),
    ]:
        if registry in path.parents:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if KIND_DISPATCH.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        'if spec.kind == "transfer":',
        "if shift.kind != 'dataset':",
        'if shift.kind in ("clean", "dataset"):',
        'if shifts[name].kind not in ["clean"]:',
        "return self.kind in ADVERSARIAL_KINDS and target is None",
        "if shifts[name].kind not in SHIFT_KINDS_WITHOUT_IMAGES:",
        'if entry["kind"] == "pgd":',
        'if "autoattack" == spec.kind:',
    ],
)
def test_the_kind_pattern_finds_a_shift_kind_branch(line: str) -> None:
    assert KIND_DISPATCH.search(line)


@pytest.mark.parametrize(
    "line",
    [
        'if view_cfg["kind"] == "real":',  # a label view's kind
        "if kind == PREDICTIONS:",  # a scores file's kind
        'if view_cfg.get("kind") == "confident_learning" and x == "dataset":',
        "if kind not in VIEW_KINDS:",
        'spec = ShiftSpec(name="clean", kind="clean", params={})',  # naming a kind is no branch
    ],
)
def test_the_kind_pattern_leaves_other_kinds_alone(line: str) -> None:
    assert not KIND_DISPATCH.search(line)


#: A step's parameters that name files (its inputs and outputs): the goal counts the others.
_FILE_PARAMETER = re.compile(r"(_path|_paths|_dir|_weights|^paths|^files|^outputs|^data_inputs|^runs)$")


def _settings_parameters(function) -> list[str]:  # type: ignore[no-untyped-def]
    import inspect

    return [name for name in inspect.signature(function).parameters if not _FILE_PARAMETER.search(name)]


def test_no_step_takes_more_than_six_parameters_besides_its_files() -> None:
    """A stage's settings reach its step as one object (classwise.settings.Settings), so a step
    stays at 6 parameters or fewer besides the files it reads and writes (issue 41's goal)."""
    import importlib
    import inspect
    import pkgutil

    import classwise.steps

    wide = {}
    for info in pkgutil.iter_modules(classwise.steps.__path__):
        module = importlib.import_module(f"classwise.steps.{info.name}")
        for name, function in vars(module).items():
            if inspect.isfunction(function) and function.__module__ == module.__name__ and not name.startswith("_"):
                if len(parameters := _settings_parameters(function)) > 6:
                    wide[f"{module.__name__}.{name}"] = parameters
    assert not wide, wide


def test_the_step_count_leaves_out_only_files() -> None:
    def step(*, logits_path, table_paths, group_dir, files, source_weights, label_view, settings, progress) -> None:  # type: ignore[no-untyped-def]
        """A step of two settings besides its five files."""

    assert _settings_parameters(step) == ["label_view", "settings", "progress"]
