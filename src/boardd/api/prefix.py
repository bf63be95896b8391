"""``boardd serve --path-prefix /P``: every page and route under ``/P`` (as ``tensorboard
--path_prefix`` serves them), for a reverse proxy that forwards ``/P/...`` unchanged.

The app inside gets the prefix as ASGI's ``root_path``, the path whole (Starlette's
convention: its routing matches the path after ``root_path``, and what the app writes as an
absolute URL, a redirect, starts with ``root_path``). Both UIs ask for their data relative to
their page, so they work under any prefix. Outside the prefix everything is a 404, but for the
fonts and editor files that TensorBoard's UI asks for from the site's root whatever its prefix
(``/font-roboto/``, ``/tf-imports/``: served there, for when they reach boardd); ``/P`` itself
redirects to ``/P/``."""

from __future__ import annotations

from urllib.parse import quote

from starlette.types import ASGIApp, Receive, Scope, Send

from boardd.api.errors import error_bytes


def route_path(scope: Scope) -> str:
    """The path the routes match: the request's path after ``root_path`` (the prefix), as
    Starlette's routing takes it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :]
    return path


class PathPrefix:
    """ASGI middleware: serves ``app`` under ``prefix`` ("/a/b", no trailing "/")."""

    def __init__(self, app: ASGIApp, prefix: str, *, root_folders: tuple[str, ...] = ()) -> None:
        """``root_folders``: folders (``font-roboto``) also served from the root, unprefixed."""
        assert prefix.startswith("/") and not prefix.endswith("/"), prefix
        self.app = app
        self.prefix = prefix
        self._root = tuple(f"/{folder}/" for folder in root_folders)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # the lifespan
            return
        path: str = scope["path"]
        if path == self.prefix:
            query = scope.get("query_string", b"")
            location = quote(self.prefix) + "/" + ("?" + query.decode("latin-1") if query else "")
            await _send(send, 308, b"", [(b"location", location.encode("latin-1"))])
            return
        if path.startswith(self._root):
            await self.app(scope, receive, send)
            return
        if not path.startswith(self.prefix + "/"):
            body = error_bytes(
                404, f"nothing at {path}: this server answers under {self.prefix}/ only"
            )
            await _send(send, 404, body, [(b"content-type", b"application/json")])
            return
        await self.app({**scope, "root_path": self.prefix}, receive, send)


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
