"""The layers stay apart: data/ knows no HTTP, and api/ reaches the store only through data/."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "boardd"


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_data_knows_no_http() -> None:
    for path in sorted((SRC / "data").glob("*.py")):
        bad = {m for m in imports(path) if m.split(".")[0] in ("starlette", "uvicorn")}
        bad |= {m for m in imports(path) if m.startswith("boardd.api")}
        assert not bad, (path.name, bad)


def test_api_reaches_the_store_through_data() -> None:
    for path in sorted((SRC / "api").glob("*.py")):
        bad = {m for m in imports(path) if m.startswith(("boardd.store", "boardd.reader"))}
        assert not bad, (path.name, bad)
        assert "execute(" not in path.read_text(encoding="utf-8"), path.name
