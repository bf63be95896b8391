"""The layers stay apart, as ARCHITECTURE.md draws them: imports flow reader ← ingest → store ←
data ← api, and each layer keeps off what is not its business."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "boardd"

#: layer → module prefixes none of its files may import.
FORBIDDEN = {
    "reader": (
        "apsw",
        "asyncio",
        "threading",
        "multiprocessing",
        "subprocess",
        "pickle",
        "boardd.ingest",
        "boardd.store",
        "boardd.data",
        "boardd.api",
        "boardd.daemon",
        "boardd.cli",
    ),
    "store": ("boardd.ingest", "boardd.data", "boardd.api", "boardd.daemon", "boardd.cli"),
    "ingest": ("boardd.data", "boardd.api", "boardd.daemon", "boardd.cli"),
    # Generic: it knows no plugin (each plugin's logic is in boardd.plugins, over data/).
    "data": (
        "starlette",
        "uvicorn",
        "boardd.api",
        "boardd.plugins",
        "boardd.daemon",
        "boardd.cli",
        "boardd.ingest",
    ),
    # Each plugin: its logic over data/'s providers, its routes over api/'s helpers.
    "plugins": (
        "boardd.reader",
        "boardd.ingest",
        "boardd.daemon",
        "boardd.cli",
        "boardd.client",
        "boardd.lineage",
        "boardd.metadata",
    ),
    # The API reads stores only through their data providers (boardd.data.provider): neither
    # SQLite nor the store's own modules.
    "api": (
        "apsw",
        "sqlite3",
        "boardd.store",
        "boardd.reader",
        "boardd.ingest",
        "boardd.daemon",
        "boardd.cli",
    ),
    "systemd": ("boardd.cli", "boardd.daemon", "boardd.api"),
    # The lineage service: reads logdir stores through data/, writes through boardd.metadata.
    "lineage": (
        "starlette",
        "uvicorn",
        "boardd.api",
        "boardd.daemon",
        "boardd.cli",
        "boardd.ingest",
    ),
    "client": ("boardd.api", "boardd.store", "boardd.data", "boardd.daemon", "boardd.cli"),
    # The lineage store stands alone: ML Metadata's API over its own SQLite file.
    "metadata": (
        "boardd.store",
        "boardd.ingest",
        "boardd.data",
        "boardd.api",
        "boardd.daemon",
        "boardd.cli",
        "boardd.lineage",
    ),
    # SQLite's rules for both stores: under store and metadata, so it imports no other boardd.
    "sqlite": (
        "boardd.reader",
        "boardd.ingest",
        "boardd.store",
        "boardd.data",
        "boardd.api",
        "boardd.daemon",
        "boardd.cli",
        "boardd.systemd",
        "boardd.lineage",
        "boardd.client",
        "boardd.metadata",
        "boardd.proto",
        "boardd.config",
        "boardd.cache",
        "boardd.exitcodes",
        "boardd.dashboard",
    ),
}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_only_what_it_may(layer: str) -> None:
    bad = {
        f"{path.relative_to(SRC)}: {module}"
        for path in sorted((SRC / layer).rglob("*.py"))
        for module in imports(path)
        if any(module == bad or module.startswith(bad + ".") for bad in FORBIDDEN[layer])
    }
    assert not bad, sorted(bad)


def test_data_and_plugins_hold_no_sql() -> None:
    """Every SQL statement is the store's (store/queries.py and the store's modules): the
    readers above it call them, so that a second backend replaces one layer."""
    for layer in ("data", "plugins", "lineage"):
        for path in sorted((SRC / layer).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            assert "execute(" not in text, path.relative_to(SRC)


def test_api_holds_no_sql() -> None:
    paths = sorted((SRC / "api").rglob("*.py"))
    assert any(p.parent.name == "tensorboard" for p in paths)  # every level is read
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert "execute(" not in text, path.relative_to(SRC)
        assert "apsw" not in text, path.relative_to(SRC)
