"""No import cycles: a module never imports, directly or through others, one that imports it.

Every import counts, wherever it is written: at the top, inside a function (a lazy import),
under ``if TYPE_CHECKING:``. A cycle that only a lazy import keeps from failing at import time
still ties the modules together: neither can be read, tested or replaced without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "boardd"

#: Packages that must stay without any cycle.
ACYCLIC = ("boardd.metadata", "boardd.sqlite")

#: The cycles boardd still has elsewhere, to be taken apart: none may grow, and no other may
#: appear (a cycle found must lie within one of these). None is left.
KNOWN: tuple[frozenset[str], ...] = ()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of boardd that ``name`` (at ``path``) imports, anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # ``from package import module`` imports the module; ``from module import name``
            # the module that holds the name.
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            # ``import a.b.c`` names a.b.c; the nearest module of boardd that it names.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imported(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_the_cycle_finder_finds_lazy_and_type_checking_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_and_type_checking_count(tmp_path: Path) -> None:
    package = tmp_path / "boardd" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from boardd.pkg.two import X\n"
    )
    (package / "two.py").write_text("def f():\n    from . import one\n")
    modules = {"boardd.pkg": package / "__init__.py"}
    modules |= {f"boardd.pkg.{n}": package / f"{n}.py" for n in ("one", "two")}
    graph = {name: imported(name, path, modules) for name, path in modules.items()}
    assert graph["boardd.pkg.one"] == {"boardd.pkg.two"}
    assert graph["boardd.pkg.two"] == {"boardd.pkg.one"}
    assert cycles(graph) == [["boardd.pkg.one", "boardd.pkg.two"]]


@pytest.mark.parametrize("package", ACYCLIC)
def test_no_import_cycle(package: str) -> None:
    graph = import_graph()
    assert any(within(name, (package,)) for name in graph), package
    bad = [c for c in cycles(graph) if any(within(m, (package,)) for m in c)]
    assert not bad, bad


def test_no_new_cycle_anywhere_in_boardd() -> None:
    new = [c for c in cycles(import_graph()) if not any(set(c) <= known for known in KNOWN)]
    assert not new, new
