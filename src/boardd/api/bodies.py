"""Request bodies read with a bound: raw bytes, and the forms TensorBoard's UI posts."""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.types import Message

from boardd.api.errors import ApiError

#: The bound of a request body (a JSON request message, a form) unless a route sets its own.
MAX_BODY_BYTES = 1 << 20


def _body_too_large(limit: int) -> ApiError:
    return ApiError(
        413, f"the request body is over the limit of {limit} bytes ({limit // 1024} KiB): send less"
    )


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, at most ``limit`` bytes; 413 saying the limit otherwise. A declared
    length over it is refused before any of the body is read, and a chunked body as soon as
    what has come passes it: a client cannot make the server hold more than ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            length = int(declared)
        except ValueError:
            raise ApiError(400, f"Content-Length: {declared!r} is not a number") from None
        if length > limit:
            raise _body_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _body_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_form(request: Request, limit: int = MAX_BODY_BYTES) -> FormData:
    """The request's form (urlencoded or multipart) from a body of at most ``limit`` bytes
    (:func:`read_body`); any uploaded file is closed, its fields stay."""
    body = await read_body(request, limit)

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    form = await Request(request.scope, replay).form()
    await form.close()
    return form
