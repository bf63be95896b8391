"""What the routes of the plugins' series share (histograms, distributions, images, audio,
text, PR curves): their tag listings, blob streaming, numbers as JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from boardd.api.tensorboard.markup import markdown_to_safe_html
from boardd.api.tensorboard.scope import Reader, Series, scope_of
from boardd.data.blobs import parse_blob_key, unknown_key
from boardd.data.kinds import Kind
from boardd.data.plugin_metadata import readable
from boardd.data.values import finite_or_text

if TYPE_CHECKING:
    import numpy.typing as npt


def tag_index(
    reader: Reader,
    kind: Kind,
    plugin: str,
    extra: Callable[[Series], dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{run: {tag: {displayName, description, ...extra}}}`` over the plugin's series, as
    TensorBoard lists them: every run with a series of the plugin, a tag only if its format
    version is one TensorBoard reads."""
    out: dict[str, dict[str, Any]] = {}
    for s in reader.series(kind, plugin):
        by_tag = out.setdefault(s.run, {})
        if not readable(s.info.plugin_content):
            continue
        by_tag[s.info.tag] = {
            "displayName": s.info.display_name,
            "description": markdown_to_safe_html(s.info.description),
            **(extra(s) if extra else {}),
        }
    return out


def json_array(values: npt.NDArray[Any]) -> Any:
    """A float array as nested lists, non-finite values spelled as TensorBoard spells them."""
    import numpy as np  # the values are a numpy array: loaded

    if values.dtype.kind == "f" and not np.isfinite(values).all():
        return np.vectorize(finite_or_text, otypes=[object])(values).tolist()
    return values.tolist()


async def stream_blob(
    request: Request, key: str, media_type: Callable[[bytes], str] | str
) -> Response:
    """The bytes of the blob ``key`` names, streamed chunk by chunk (never cached whole), as
    ``media_type`` (or the type it gives for the blob's first bytes). 404 for a key that is
    not of an experiment this request addresses or names no blob."""
    parsed = parse_blob_key(key)
    handles = {h.spec.name: h for h in scope_of(request).handles}
    handle = handles.get(parsed.experiment) if parsed else None
    if handle is None:
        raise unknown_key(key)
    blob = await run_in_threadpool(handle.provider.open_blob, key)
    chunks = blob.chunks()
    try:
        first = await run_in_threadpool(next, chunks, b"")
    except BaseException:
        blob.close()
        raise

    def body() -> Iterator[bytes]:
        if first:
            yield first
        yield from chunks

    kind = media_type if isinstance(media_type, str) else media_type(first[:16])
    return StreamingResponse(
        body(),
        media_type=kind,
        headers={"content-length": str(blob.size), "cache-control": "private, max-age=31536000"},
    )
