"""TensorBoard's text plugin: ``tags`` (``{run: [tag, ...]}``) and ``text`` (each step's
strings as safe HTML: a single string rendered as Markdown, a vector or matrix of strings as
an HTML table of rendered cells, higher ranks as their first 2-D slice under a warning)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy.typing as npt
from starlette.requests import Request
from starlette.responses import Response

from boardd.api.tensorboard.answers import answer, tb_json
from boardd.api.tensorboard.core import sampling_hint
from boardd.api.tensorboard.markup import (
    as_text,
    markdown_to_safe_html,
    markdowns_to_safe_html,
    safe_html,
)
from boardd.api.tensorboard.params import param, run_and_tag
from boardd.api.tensorboard.scope import Reader
from boardd.data.kinds import TENSORS
from boardd.data.plugin_metadata import readable

PLUGIN = "text"
#: Steps per series the text route returns unless --samples-per-plugin says otherwise: what
#: `tensorboard --logdir` answers (its text route asks for 100, and its default loader, the
#: Rust data server, keeps 100 tensors per series). Its Python loader (--load_fast=false)
#: keeps 10 tensors of a plugin it has no size guidance for (text is one): docs/tensorboard.md.
DEFAULT_SAMPLES = 100
#: Shown above a table cut from a tensor of more than two dimensions (Markdown).
RANK_WARNING = (
    # Three spaces before "2d", as TensorBoard's message has them.
    "**Warning:** This text summary contained data of dimensionality {rank}, but only   2d "
    "tables are supported. Showing a 2d slice of the data instead."
)


async def tags(request: Request) -> Response:
    """``/data/plugin/text/tags``."""

    def build(reader: Reader) -> bytes:
        out: dict[str, list[str]] = {}
        for s in reader.series(TENSORS, PLUGIN):
            listed = out.setdefault(s.run, [])
            if readable(s.info.plugin_content):
                listed.append(s.info.tag)
        return tb_json(out)

    return await answer(request, build)


def _as_text(value: Any) -> str | bytes:
    """A string element: bytes as stored, anything else (a numeric text tensor) as str."""
    return value if isinstance(value, (bytes, str)) else str(value)


def _row(cells: Sequence[str]) -> str:
    return "<tr>\n" + "".join(f"<td>{c}</td>\n" for c in cells) + "</tr>\n"


def _table(cells: Sequence[str], shape: tuple[int, ...]) -> str:
    """An HTML table of 1-D (one cell per row) or 2-D cells, flattened in row-major order."""
    width = shape[1] if len(shape) == 2 else 1
    rows = [cells[i : i + width] for i in range(0, len(cells), width)] if width else []
    if len(shape) == 2 and width == 0:
        rows = [[] for _ in range(shape[0])]
    body = "".join(_row(r) for r in rows)
    return f"<table>\n<tbody>\n{body}</tbody>\n</table>"


def to_html(value: npt.NDArray[Any], markdown: bool) -> str:
    """One step's strings as safe HTML."""
    if value.ndim == 0:
        item = _as_text(value.item())
        return markdown_to_safe_html(item) if markdown else safe_html(item)
    warning = ""
    if value.ndim > 2:
        warning = markdown_to_safe_html(RANK_WARNING.format(rank=value.ndim))
        value = value[(0,) * (value.ndim - 2)]
    shape = value.shape
    flat = [_as_text(v) for v in value.reshape(-1).tolist()]
    if markdown:
        return warning + markdowns_to_safe_html(flat, lambda htmls: _table(htmls, shape))
    return warning + safe_html(_table([as_text(v) for v in flat], shape))


async def text(request: Request) -> Response:
    """``/data/plugin/text/text?run=&tag=[&markdown=false]``: ``[{wall_time, step, text}]``;
    an unknown run or tag is an empty list, as TensorBoard answers; a missing
    one is a 400 (TensorBoard fails with a 500)."""
    run, tag = run_and_tag(request)
    markdown = param(request, "markdown") != "false"
    samples = sampling_hint(request, PLUGIN, DEFAULT_SAMPLES)

    def build(reader: Reader) -> bytes:
        found = reader.one(TENSORS, PLUGIN, run, tag)
        if found is None:
            return b"[]"
        return tb_json(
            [
                {"wall_time": p.wall_time, "step": p.step, "text": to_html(p.value, markdown)}
                for p in found.handle.provider.read_arrays(found.info, samples)
            ]
        )

    return await answer(request, build)
