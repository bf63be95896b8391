"""boardd uses only the public APIs of its third-party dependencies.

A private name (``pkg._x``, ``from pkg import _x``, ``obj._attr`` on something imported from a
package) may change in any release, patch releases included: pyproject.toml's version ranges
then promise more than they can hold, and only a fresh install finds out. Subclassing a
third-party class ties boardd to its internals as well (which methods call which, what state
they keep) unless the class is made to be subclassed: those extension points are allowed
below by name, each with the documentation that makes it one.

Third-party means neither boardd nor the standard library. The files protoc generates
(``*_pb2.py``) are skipped: they are protobuf's own code for protobuf's runtime, kept
compatible by protobuf within a major version (hence pyproject's ``protobuf<8``).
"""

from __future__ import annotations

import ast
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "boardd"

#: Third-party classes that src/ may subclass, as ``module.Name`` where the class is defined
#: or documented: only classes whose documentation invites subclassing.
ALLOWED_BASES = {
    # Lark's documented way to turn a parse tree into something else: "subclass Transformer
    # and define a method per rule" (lark's Transformers & Visitors reference).
    "lark.Transformer",
    "lark.visitors.Transformer",
    # Starlette's documented middleware base (Middleware docs: "BaseHTTPMiddleware ... subclass
    # it and override dispatch") and class-based endpoints (Endpoints docs).
    "starlette.middleware.base.BaseHTTPMiddleware",
    "starlette.endpoints.HTTPEndpoint",
    # watchdog's documented way to receive events (its quickstart: "subclass
    # FileSystemEventHandler and override the on_* methods"); its observers, emitters and
    # inotify classes are not made to be subclassed.
    "watchdog.events.FileSystemEventHandler",
}


@dataclass(frozen=True)
class Finding:
    """One use of a third-party name that the rules forbid."""

    path: Path
    line: int
    what: str
    #: The third-party name (for a subclass: its base class).
    name: str = ""

    @property
    def location(self) -> str:
        """path:line, the path from the repository's src/ on."""
        parts = self.path.parts
        start = max(
            i for i, part in enumerate(parts[:-1]) if (part, parts[i + 1]) == SRC.parts[-2:]
        )
        return f"{'/'.join(parts[start:])}:{self.line}"

    def __str__(self) -> str:
        return f"{self.location}: {self.what}"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_third_party(module: str) -> bool:
    top = module.partition(".")[0]
    return top != "boardd" and top not in sys.stdlib_module_names


def _source_files(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*.py") if not p.name.endswith("_pb2.py"))


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    """The absolute module name of an import, relative ones resolved against ``module``."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))


def _third_party_bindings(
    tree: ast.AST, module: str, path: Path, exported: dict[str, dict[str, str]]
) -> dict[str, str]:
    """Each name a file binds to a third-party module or to a name imported from one, mapped to
    its dotted origin (``np`` → ``numpy``, ``Router`` → ``starlette.routing.Router``).

    Imports anywhere in the file count (boardd imports many modules lazily, inside functions),
    and so do names imported from another boardd module that imported them from a third-party
    one (``exported``: each boardd module's own such bindings), so that a re-export hides
    nothing.
    """
    bindings: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _is_third_party(alias.name):
                    continue
                if alias.asname:
                    bindings[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    bindings[top] = top
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, path)
            for alias in node.names:
                if alias.name == "*":
                    continue
                if _is_third_party(source):
                    bindings[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif alias.name in exported.get(source, {}):
                    bindings[alias.asname or alias.name] = exported[source][alias.name]
    return bindings


def _origin(node: ast.expr, bindings: dict[str, str]) -> str | None:
    """The dotted third-party origin of a name or attribute chain (``np.linalg.norm`` →
    ``numpy.linalg.norm``), or None when it does not start at a third-party binding."""
    if isinstance(node, ast.Name):
        return bindings.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _origin(node.value, bindings)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _private_uses(path: Path, tree: ast.AST, bindings: dict[str, str]) -> list[Finding]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_third_party(alias.name) and any(map(_is_private, alias.name.split("."))):
                    found.append(Finding(path, node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _is_third_party(node.module):
                continue
            if any(map(_is_private, node.module.split("."))):
                found.append(Finding(path, node.lineno, f"from {node.module} import ..."))
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(
                        Finding(path, node.lineno, f"from {node.module} import {alias.name}")
                    )
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            origin = _origin(node.value, bindings)
            if origin is not None:
                found.append(Finding(path, node.lineno, f"{origin}.{node.attr}"))
    return found


def _third_party_bases(
    path: Path, tree: ast.AST, bindings: dict[str, str], sites: dict[str, Finding] | None = None
) -> list[Finding]:
    """Each class subclassing a third-party one; ``sites``: where src/ imports each third-party
    name from its package, named in the finding when that is another file (a re-export)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            # Generic aliases (Transformer[Token, Node]) subclass their origin.
            origin = _origin(base.value if isinstance(base, ast.Subscript) else base, bindings)
            if origin is None:
                continue
            what = f"class {node.name}({origin})"
            site = (sites or {}).get(origin)
            if site is not None and site.path != path:
                what += f", imported at {site.location}"
            found.append(Finding(path, node.lineno, what, origin))
    return found


def _import_sites(path: Path, tree: ast.AST) -> dict[str, Finding]:
    """Where a file imports each name straight from a third-party package."""
    sites = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and _is_third_party(node.module or "")
        ):
            for alias in node.names:
                sites[f"{node.module}.{alias.name}"] = Finding(path, node.lineno, "")
    return sites


@functools.cache
def _scan(src: Path = SRC) -> tuple[list[Finding], list[Finding]]:
    """(private names used, third-party classes subclassed) in every source file under src."""
    trees = {
        path: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for path in _source_files(src)
    }
    # Re-exports through boardd modules, followed until nothing changes (a chain of them).
    exported: dict[str, dict[str, str]] = {}
    while True:
        before = exported
        exported = {
            _module_name(path, src): _third_party_bindings(
                tree, _module_name(path, src), path, before
            )
            for path, tree in trees.items()
        }
        if exported == before:
            break
    sites: dict[str, Finding] = {}
    for path, tree in trees.items():
        sites = _import_sites(path, tree) | sites
    private: list[Finding] = []
    bases: list[Finding] = []
    for path, tree in trees.items():
        bindings = exported[_module_name(path, src)]
        private += _private_uses(path, tree, bindings)
        bases += _third_party_bases(path, tree, bindings, sites)
    return private, bases


def test_no_private_names_of_third_party_packages() -> None:
    private, _ = _scan()
    assert private == [], "private names of third-party packages used in src/:\n" + "\n".join(
        map(str, private)
    )


def test_only_public_extension_points_are_subclassed() -> None:
    _, bases = _scan()
    unlisted = [f for f in bases if f.name not in ALLOWED_BASES]
    assert unlisted == [], (
        "third-party classes subclassed in src/ that are not documented extension points "
        "(tests/test_public_apis.py ALLOWED_BASES):\n" + "\n".join(map(str, unlisted))
    )


def test_the_scan_finds_each_kind_of_use(tmp_path: Path) -> None:
    """The rules themselves: each forbidden form is found, the allowed ones are not."""
    source = """
import numpy as np
import fsspec.core
import pkg._private
import os
from lark import Lark, _internal
from starlette._utils import get_route_path
from starlette.routing import Router
from boardd.store import _helpers

np._no_nep50_warning
np.__version__
fsspec.core._Cached
Router._memo
os._exit
_helpers._x

class A(Router): ...
class B(fsspec.core.OpenFile): ...
class C(Lark): ...
"""
    tree = ast.parse(source)
    path = SRC / "example.py"
    bindings = _third_party_bindings(tree, "boardd.example", path, {})
    private = sorted(str(f).partition(": ")[2] for f in _private_uses(path, tree, bindings))
    assert private == sorted(
        [
            "import pkg._private",
            "from lark import _internal",
            "from starlette._utils import ...",
            "numpy._no_nep50_warning",
            "fsspec.core._Cached",
            "starlette.routing.Router._memo",
        ]
    )
    bases = [str(f).partition(": ")[2] for f in _third_party_bases(path, tree, bindings)]
    assert bases == [
        "class A(starlette.routing.Router)",
        "class B(fsspec.core.OpenFile)",
        "class C(lark.Lark)",
    ]
