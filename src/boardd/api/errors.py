"""The API's errors: one JSON envelope, ``{"error": {"code", "message"}}``, on every path."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from boardd.data.connections import damage_of
from boardd.data.errors import BadRequest, DataError, NotFound, TooLarge, Unavailable

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "too_large",
    414: "uri_too_long",
    431: "header_too_large",
    500: "internal",
    503: "unavailable",
}


class ApiError(Exception):
    """An error to answer with a status and a message that tells the client what to change."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or _CODES.get(status, "error")


def error_response(
    status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one error shape."""
    return JSONResponse(
        {"error": {"code": code or _CODES.get(status, "error"), "message": message}},
        status_code=status,
        headers=headers,
    )


def error_bytes(status: int, message: str, code: str | None = None) -> bytes:
    """The body of :func:`error_response`, for answers written below the app (the HTTP
    server's own: a request head too large or too slow, too many connections)."""
    body = {"error": {"code": code or _CODES.get(status, "error"), "message": message}}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def handle_api_error(request: Request, exc: Exception) -> Response:
    """Starlette exception handler for :class:`ApiError`."""
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.message, exc.code)


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 in the same envelope (a 405 keeps its Allow header)."""
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail), headers=exc.headers)


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    """A bug: never a traceback to the client, always the envelope. A damaged store is no
    bug: a 503 that says so (the daemon checks it and rebuilds it)."""
    damaged = damage_of(exc)
    if damaged is not None:
        return error_response(503, damaged.message)
    return error_response(500, "internal error; see the daemon's log")


#: The status of each kind of the data layer's errors (any other DataError is a 500).
_DATA_STATUS: dict[type[DataError], int] = {
    BadRequest: 400,
    NotFound: 404,
    TooLarge: 413,
    Unavailable: 503,
}


def status_of(exc: DataError) -> int:
    """The HTTP status of a data-layer error."""
    for cls in type(exc).__mro__:
        if cls in _DATA_STATUS:
            return _DATA_STATUS[cls]
    return 500


async def handle_data_error(request: Request, exc: Exception) -> Response:
    """Starlette exception handler for the data layer's :class:`DataError`."""
    assert isinstance(exc, DataError)
    return error_response(status_of(exc), exc.message)
