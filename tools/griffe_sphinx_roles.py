"""A griffe extension for the API reference (mkdocs.yml): the docstrings' Sphinx roles as Markdown.

The library's docstrings name other objects the Sphinx way (``:func:`~classwise.metrics.stats.compute_stats```),
which mkdocstrings would print as it is. Each role becomes a cross-reference, ``[`compute_stats`][path]``,
when its target resolves to an object that docs/api.md renders (so `mkdocs build --strict` checks
that it resolves), and plain code otherwise (a private helper, a module the reference leaves out,
numpy's functions).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|obj|exc|const):`(~?)([^`<>]+?)`")
RENDERED = re.compile(r"^::: *([\w.]+)", re.M)


class SphinxRoles(griffe.Extension):
    def __init__(self, api_page: str = "docs/api.md") -> None:
        super().__init__()
        self.rendered_modules = set(RENDERED.findall(Path(api_page).read_text()))

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        # Once per package, after its whole tree is loaded, so that every target can be resolved.
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = ROLE.sub(partial(self._markdown, obj=obj, loader=loader), obj.docstring.value)

    def _markdown(self, role: re.Match[str], obj: griffe.Object, loader: griffe.GriffeLoader) -> str:
        short, target = role.group(1) == "~", role.group(2).strip()
        text = target.rsplit(".", 1)[-1] if short else target
        path = self._resolve(target, obj, loader)
        return f"[`{text}`][{path}]" if path else f"`{text}`"

    def _resolve(self, target: str, obj: griffe.Object, loader: griffe.GriffeLoader) -> str | None:
        """The path of the rendered object a role names, looked up as written, then from the
        docstring's class and module; None when it is not rendered."""
        scopes = [""] + [f"{scope.path}." for scope in (obj if obj.is_class else obj.parent, obj.module) if scope]
        for scope in scopes:
            try:
                found = loader.modules_collection.get_member(scope + target)
            except (KeyError, ValueError, AttributeError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            if found is None:
                continue
            try:
                final = found.final_target if found.is_alias else found
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                return None
            return final.path if self._is_rendered(final) else None
        return None

    def _is_rendered(self, obj: Any) -> bool:
        if any(part.startswith("_") for part in obj.path.split(".")[1:]):
            return False
        if obj.is_module:
            return obj.path in self.rendered_modules
        # mkdocstrings leaves out what has no docstring (show_if_no_docstring: false).
        return (
            obj.has_docstrings
            and obj.module.path in self.rendered_modules
            and (obj.parent.is_module or self._is_rendered(obj.parent))
        )


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    objects = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            objects.extend(_walk(member))
    return objects
