"""The package's imports flow one way (no cycle), and ``import presidio_delink`` stays light.

The import graph is read from the source with ``ast``: every ``import`` and ``from ...
import`` of ``presidio_delink.*``, absolute or relative, at module level or inside a
function.  Imports under ``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import pytest

import presidio_delink

PACKAGE = "presidio_delink"
ROOT = Path(presidio_delink.__file__).resolve().parent

KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()
"""Import cycles not fixed yet, each as the set of modules it runs through.  The test
fails on a cycle not listed here and on a listed one that is gone: this list only shrinks."""

HEAVY = (
    "numpy",
    "marisa_trie",
    "spacy",
    "torch",
    "presidio_analyzer",
    "presidio_anonymizer",
    "httpx",
    "presidio_delink.index",
    "presidio_delink.text",
    "presidio_delink.linkage",
    "presidio_delink.core",
    "presidio_delink.pipeline",
    "presidio_delink.presidio",
    "presidio_delink.llm",
)
"""What ``import presidio_delink`` must not import (the public names load on first use)."""

PUBLIC = {
    "NgramIndex": "presidio_delink.index.ngram_index",
    "Tokenizer": "presidio_delink.text",
    "Delinker": "presidio_delink.pipeline",
    "DelinkResult": "presidio_delink.results",
    "DelinkSettings": "presidio_delink.settings",
    "DelinkEngine": "presidio_delink.presidio.engine",
    "LinkageRiskRecognizer": "presidio_delink.presidio.recognizer",
    "make_rewriter": "presidio_delink.llm",
    "DelinkError": "presidio_delink.errors",
    "InputError": "presidio_delink.errors",
    "IndexFormatError": "presidio_delink.errors",
    "LLMError": "presidio_delink.errors",
    "LLMUnavailable": "presidio_delink.errors",
    "ConfigError": "presidio_delink.errors",
    "BuildError": "presidio_delink.errors",
    "ModelFormatError": "presidio_delink.errors",
}
"""Each public name and its home module."""


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _imported(tree: ast.AST, name: str, is_pkg: bool, modules: Iterable[str]) -> set[str]:
    """The package's modules a module imports, ``if TYPE_CHECKING:`` bodies left out.

    ``from pkg import sub`` imports the submodule ``pkg.sub`` (``pkg`` is initialised first,
    as for any submodule; like import linters, the graph leaves those implicit parent
    imports out); ``from mod import x`` imports ``mod``."""
    known = set(modules)
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            for a in node.names:
                sub = f"{mod}.{a.name}"
                found.add(sub if sub in known else mod)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = _modules()
    return {
        name: _imported(ast.parse(path.read_text(encoding="utf-8")), name, is_pkg, modules)
        for name, (path, is_pkg) in modules.items()
    }


def _strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's components of more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def _chain(graph: dict[str, set[str]], comp: frozenset[str]) -> str:
    """A shortest cycle through a component's first module, as ``a -> b -> ... -> a``."""
    start = min(comp)
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while (up := parent[path[-1]]) is not None:
                    path.append(up)
                return " -> ".join([*reversed(path), start])
            if w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError(f"not a cycle: {sorted(comp)}")


def test_the_graph_sees_every_kind_of_import() -> None:
    src = (
        "import presidio_delink.text\n"
        "from presidio_delink.index import format\n"
        "from . import FORMAT_VERSION\n"
        "from ..llm.base import Rewriter\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from presidio_delink.pipeline import Delinker\n"
        "def f():\n"
        "    from presidio_delink.views import VIEWS\n"
    )
    got = _imported(ast.parse(src), "presidio_delink.risk.lm", False, _modules())
    assert got == {
        "presidio_delink.text",
        "presidio_delink.index.format",
        "presidio_delink.risk",
        "presidio_delink.llm.base",
        "presidio_delink.views",
    }
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    comps = _strongly_connected(graph)
    assert comps == [frozenset("abc")]
    assert _chain(graph, comps[0]) == "a -> b -> c -> a"


def test_no_import_cycle() -> None:
    graph = import_graph()
    assert "presidio_delink.index.ngram_index" in graph["presidio_delink.index"]
    found = set(_strongly_connected(graph))
    new = [_chain(graph, c) for c in found - KNOWN_CYCLES]
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not new, "import cycles: " + "; ".join(sorted(new))
    assert not gone, f"no longer cycles, remove them from KNOWN_CYCLES: {gone}"


def test_nothing_inside_imports_the_public_face() -> None:
    # The public names of ``presidio_delink/__init__.py`` are for users: a module of the
    # package that took one from there would hide an upward import from the graph.
    offenders = [
        f"{name}: {alias.name}"
        for name, (path, _) in _modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == PACKAGE and not node.level
        for alias in node.names
        if alias.name in PUBLIC
    ]
    assert not offenders


def test_import_is_light() -> None:
    code = "import json, sys; import presidio_delink; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True, text=True,
        check=True, timeout=120,
    ).stdout
    loaded = set(json.loads(out))
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert not heavy, f"`import presidio_delink` imports {heavy}"


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_name_is_its_home_modules(name: str) -> None:
    assert name in presidio_delink.__all__
    assert name in dir(presidio_delink)
    home = importlib.import_module(PUBLIC[name])
    assert getattr(presidio_delink, name) is getattr(home, name)
    assert name in vars(presidio_delink)  # kept after the first access


def test_public_face_is_complete_and_says_what_is_missing() -> None:
    assert set(presidio_delink.__all__) == {*PUBLIC, "__version__"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        presidio_delink.__getattr__("nope")
    from presidio_delink import io  # a submodule is still found by `from ... import`

    assert io.__name__ == "presidio_delink.io"
