"""The Lineage page (docs/lineage.md) stays true: its walkthrough (MLMD's guide with boardd's
imports) runs as written, and its table of the types boardd records is the one the code
registers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from boardd.lineage import vocabulary

PAGE = Path(__file__).resolve().parents[2] / "docs" / "lineage.md"


def block(marker: str) -> str:
    """The Python block right after ``<!-- marker -->``."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {re.escape(marker)} -->\n```python\n(.*?)```", text, re.S)
    assert found, f"docs/lineage.md has no python block after <!-- {marker} -->"
    return found.group(1)


def test_the_walkthrough_runs_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block("lineage-walkthrough"), "the walkthrough", "exec"), namespace)
    assert namespace["experiment_executions"][0].id == namespace["run_id"]
    namespace["store"].close()


def test_the_walkthrough_filters_run_as_written() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block("lineage-walkthrough"), "the walkthrough", "exec"), namespace)
    exec(compile(block("lineage-walkthrough-filters"), "the filters", "exec"), namespace)
    namespace["store"].close()


def test_the_types_table_is_what_boardd_registers() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## What boardd records by itself") :]
    section = section[: section.index("\n## ", 1)]
    for name, properties in vocabulary.PROPERTIES.items():
        [row] = [line for line in section.splitlines() if line.startswith(f"| `{name}` |")]
        kind = {"context": "ContextType", "execution": "ExecutionType", "artifact": "ArtifactType"}
        assert f"| {kind[vocabulary.KINDS[name]]} |" in row, row
        documented = set(re.findall(r"`([a-z_]+)`", row.split("|")[5]))
        assert set(properties) <= documented, (name, set(properties) - documented)
    for pattern in vocabulary.CHECKPOINT_PATTERNS:
        assert f"`{pattern}`" in section, pattern
