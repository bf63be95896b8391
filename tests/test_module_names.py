"""Module names say what a module holds: none is named after a module of the standard library
(``types``, ``inspect``, ``http``: an import or a traceback then reads as the other), and
none is a ``common.py`` (a name that says only that several things share it)."""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "boardd"


def _modules() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.name != "__init__.py"]


def test_no_module_is_named_after_the_standard_librarys() -> None:
    clash = [str(p.relative_to(SRC)) for p in _modules() if p.stem in sys.stdlib_module_names]
    assert not clash, clash


def test_no_module_is_named_common() -> None:
    assert not [str(p.relative_to(SRC)) for p in _modules() if p.stem == "common"]
