"""A TensorBoard request's parameters as TensorBoard's routes read them, its XSRF header,
and their errors."""

from __future__ import annotations

from typing import overload

from starlette.requests import Request

from boardd.api.errors import ApiError


def require_xsrf(request: Request) -> None:
    """The guard on TensorBoard's POST routes: a POST that a page of another site could have
    made is refused (400). TensorBoard's UI marks its fetches with ``X-XSRF-Protected: 1``, a
    header no form can set; its older dashboards (the Scalars tab's ``scalars_multirun``) post
    a FormData without it, which the browser itself marks as coming from this server's own
    page (``Sec-Fetch-Site: same-origin``, else an ``Origin`` equal to this server's)."""
    if request.headers.get("x-xsrf-protected") == "1" or _same_origin(request):
        return
    raise ApiError(
        400,
        "POST requests to TensorBoard's routes must carry the header X-XSRF-Protected: 1 "
        "(or come from this server's own pages)",
    )


def _same_origin(request: Request) -> bool:
    """Whether the browser says the request comes from a page of this server's origin."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        # A browser that sends it says where the request comes from; another port of this
        # host is "same-site", not "same-origin".
        return site == "same-origin"
    origin = request.headers.get("origin")
    host = request.headers.get("host")
    if not origin or origin == "null" or not host:
        return False
    return origin == f"{request.url.scheme}://{host}"


def not_found(message: str) -> ApiError:
    """A 404 in boardd's error shape (TensorBoard answers such requests 404 too)."""
    return ApiError(404, message)


@overload
def param(request: Request, name: str) -> str | None: ...


@overload
def param(request: Request, name: str, default: str) -> str: ...


def param(request: Request, name: str, default: str | None = None) -> str | None:
    """A query parameter as TensorBoard reads it: the first of repeated ones (werkzeug's
    ``args.get``; Starlette's ``query_params.get`` gives the last)."""
    values = request.query_params.getlist(name)
    return values[0] if values else default


def required(request: Request, name: str) -> str:
    """A query parameter the route cannot do without (400 naming it when absent)."""
    value = param(request, name)
    if value is None:
        raise ApiError(400, f"{name}= is required")
    return value


def run_and_tag(request: Request) -> tuple[str, str]:
    """The ``run`` and ``tag`` parameters, each required (400 naming a missing one, where
    TensorBoard fails with a 500)."""
    return required(request, "run"), required(request, "tag")


def integer(request: Request, name: str, default: int) -> int:
    """A whole number from 0 (400 otherwise; TensorBoard fails with a 500)."""
    value = optional_integer(request, name)
    return default if value is None else value


def optional_integer(request: Request, name: str, *, minimum: int = 0) -> int | None:
    """A whole number from ``minimum``, None when absent (400 otherwise)."""
    text = param(request, name)
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, f"{name}={text!r}: give a whole number") from None
    if value < minimum:
        raise ApiError(400, f"{name}={value}: give a number from {minimum}")
    return value
