"""Markdown → HTML safe to splice into the DOM, as TensorBoard renders text summaries and
descriptions: Python-Markdown with tables and fenced code, then bleach's allow-list cleaner
(disallowed tags are escaped, not dropped) with TensorBoard's tags and attributes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

#: The tags and attributes TensorBoard lets through (its plugin_util).
ALLOWED_TAGS = frozenset(
    {
        "ul", "ol", "li", "p", "pre", "code", "blockquote",
        "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br",
        "strong", "em", "a", "img", "table", "thead", "tbody", "td", "tr", "th",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "title", "alt"]}


class _Tools:
    """A Markdown converter and a cleaner (neither is thread-safe; both are costly to build)."""

    def __init__(self) -> None:
        # Imported on first use: they are slow to import, and start-up is a feature.
        import bleach.sanitizer
        import markdown

        self.markdown: Any = markdown.Markdown(
            extensions=["markdown.extensions.tables", "markdown.extensions.fenced_code"]
        )
        self.cleaner: Any = bleach.sanitizer.Cleaner(
            tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES
        )


_LOCAL = threading.local()


def _tools() -> _Tools:
    """This thread's tools, made on first use."""
    tools: _Tools | None = getattr(_LOCAL, "tools", None)
    if tools is None:
        tools = _LOCAL.tools = _Tools()
    return tools


def as_text(source: str | bytes) -> str:
    """Text of a string tensor's element: UTF-8 bytes decoded, a byte that is not UTF-8 shown
    as U+FFFD (TensorBoard's text route fails with a 500 for the whole tag instead)."""
    return source.decode("utf-8", "replace") if isinstance(source, bytes) else source


def markdown_to_safe_html(source: str | bytes) -> str:
    """One Markdown document as safe HTML ("" for an empty one, without loading the
    converter)."""
    if not source:
        return ""
    return markdowns_to_safe_html([source], lambda htmls: htmls[0])


def markdowns_to_safe_html(
    sources: Sequence[str | bytes], combine: Callable[[list[str]], str]
) -> str:
    """Several Markdown documents rendered, combined by ``combine``, then cleaned once. UTF-8
    bytes are decoded (:func:`as_text`) and their NUL bytes dropped, with a comment saying how
    many."""
    nuls = 0
    htmls = []
    tools = _tools()
    converter = tools.markdown
    for source in sources:
        if isinstance(source, bytes):
            decoded = as_text(source)
            source = decoded.replace("\x00", "")
            nuls += len(decoded) - len(source)
        htmls.append(converter.reset().convert(source))
    cleaned: str = tools.cleaner.clean(combine(htmls))
    if nuls:
        warning = (
            f"<!-- WARNING: discarded {nuls} null bytes in markdown string "
            "after UTF-8 decoding -->\n"
        )
        return warning + cleaned
    return cleaned


def safe_html(source: str | bytes) -> str:
    """HTML (bytes decoded by :func:`as_text`) cleaned as the rendered Markdown is, without
    rendering it (TensorBoard's text plugin with ``markdown=false``)."""
    cleaned: str = _tools().cleaner.clean(as_text(source))
    return cleaned
