"""Placeholder for MLMD's filter_query translation: helper QUERY's branch replaces this file.

``compile_filter(kind, query, alias)`` returns a boolean SQL expression over the node table's
alias with ``?`` parameters. Until QUERY's parser lands every filter is refused.
"""

from __future__ import annotations

from typing import Literal

from boardd.metadata.errors import InvalidArgumentError


def compile_filter(
    kind: Literal["artifact", "execution", "context"], query: str, alias: str
) -> tuple[str, list[object]]:
    """Refuses every filter (QUERY's implementation replaces this)."""
    raise InvalidArgumentError("filter_query not supported yet")
