"""boardd's own dashboard at ``/``: the bundle that ``hatch_build.py`` builds from ``web/``
into :data:`boardd.dashboard.STATIC` (``index.html`` and ``assets/NAME-HASH.{js,css}``).

``/`` is ``index.html`` (``Cache-Control: no-cache``, ETag); ``/assets/NAME`` the files it
names, whose names carry their content's hash, so they are cached for a year as immutable.
Text is sent gzipped to clients that accept it (compressed once, kept). The files are read on
first request and kept (about 110 KB). Without a bundle (a checkout never installed), ``/`` is a
page saying how to build it. The token guard (:mod:`boardd.api.auth`) covers these routes like
every other: a browser that opened the login URL has the cookie.

``/`` carries the answers of the first requests the page's script makes (the run list, and the
scalars listing when the page opens on scalars): the app answers them itself, for this
request's client (the same routes, guard and cache), and they go into the page as a JSON data
block (``<script type="application/json" id="boardd-boot">``, keyed by URL), which the script
reads instead of asking (``web/src/api.ts``). With them in hand as its module runs, the page
lays its cards out and asks for the charts in view before its first frame, instead of after
two more tasks and a frame (the first paint comes sooner: bench/bench_dashboard.py). An
answer the app could not give (a 503 while the daemon starts) is named as a ``<link
rel="preload" as="fetch">`` instead, so the browser asks for it while it loads the script.
Only for the first experiment (no ``exp=``), whose URLs are known here exactly
(``initialRuns``, ``listScalars``). The block's ``data-stream-since`` is the stream cursor read
before the answers were made: the page's first stream starts from it (``since=``), so what is
committed between the answers and the stream's opening reaches the page.
"""

from __future__ import annotations

import asyncio
import html
import logging
import posixpath
import threading
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message

from boardd.api.app_state import state_of
from boardd.api.errors import ApiError
from boardd.api.replies import json_bytes
from boardd.api.stream import cursor_now
from boardd.api.tensorboard.webui import (
    COMPRESSIBLE,
    Asset,
    _accepts_gzip,
    _etags,
    media_type_of,
)
from boardd.cache import GZIP_MIN_BYTES, make_etag
from boardd.dashboard import STATIC

log = logging.getLogger(__name__)

#: Hashed assets: a year, never revalidated.
ASSET_CACHE_CONTROL = "public, max-age=31536000, immutable"
#: The page's Content-Security-Policy: its own script and styles, data from its own origin
#: (the data API and the stream), images from the blob route.
CSP = "; ".join(
    [
        "default-src 'self'",
        "img-src 'self' data: blob:",
        "style-src 'self' 'unsafe-inline'",
        "script-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "frame-ancestors 'self'",
    ]
)

NOT_BUILT_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>boardd</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">
<h1>boardd</h1>
<p>boardd's dashboard is not built in this installation (its bundle,
<code>src/boardd/dashboard/static/</code>, is missing). Installing boardd builds it
(<code>pip install .</code> runs <code>npm ci</code> and the build; Node.js and npm are needed);
in a checkout, <code>npm --prefix web ci &amp;&amp; npm --prefix web run build</code> does it.</p>
<p>Meanwhile: <a href="tensorboard/">TensorBoard's UI</a> (when installed),
<a href="api/v1/health">api/v1/health</a> (the daemon's state).</p>
</body></html>
"""


#: The page's first requests (web/src/api.ts), relative to the page.
RUNS_URL = "api/v1/runs"
SCALARS_LIST_URL = "api/v1/scalars/list?plugin=scalars"
#: The id of index.html's data block of first answers (web/src/api.ts reads it).
BOOT_ID = "boardd-boot"
#: Request headers the app's own requests for the page's first answers do not take over (the
#: answers are embedded whole and plain).
_NOT_PASSED_ON = frozenset({b"accept-encoding", b"if-none-match", b"if-modified-since", b"range"})


def first_requests(query: dict[str, str]) -> list[str]:
    """The page's first requests for ``/`` with this query: the run list, and the scalars
    listing when it opens on scalars (no ``view=`` or ``view=scalars``); none for another
    experiment than the first (``exp=``)."""
    if "exp" in query:
        return []
    if query.get("view", "scalars") == "scalars":
        return [RUNS_URL, SCALARS_LIST_URL]
    return [RUNS_URL]


def with_first_answers(
    index: bytes, answers: dict[str, bytes], preloads: list[str], since: str | None = None
) -> bytes:
    """``index`` with, first in its head, the answers (URL → JSON) as one JSON data block and
    a ``<link rel="preload" as="fetch" crossorigin>`` per URL of ``preloads`` (``crossorigin``:
    the credentials mode of the script's same-origin ``fetch()``). ``since``: the stream
    cursor read before the answers were made, as the block's ``data-stream-since``."""
    parts = []
    if answers:
        entries = b",".join(json_bytes(url) + b":" + body for url, body in answers.items())
        # JSON never holds <, > or & outside its strings, and inside them \u escapes read the
        # same: the block cannot end early (</script>) nor open a comment (<!--).
        block = (b"{" + entries + b"}").replace(b"<", b"\\u003c").replace(b">", b"\\u003e")
        block = block.replace(b"&", b"\\u0026")
        since_attr = b"" if since is None else f' data-stream-since="{html.escape(since)}"'.encode()
        parts.append(
            b'<script type="application/json" id="' + BOOT_ID.encode() + b'"' + since_attr + b">"
        )
        parts.append(block + b"</script>\n")
    for url in preloads:
        parts.append(
            f'<link rel="preload" as="fetch" crossorigin href="{html.escape(url)}">\n'.encode()
        )
    head = index.find(b"<link")
    at = head if head >= 0 else 0
    return index[:at] + b"".join(parts) + index[at:]


async def own_answer(request: Request, url: str) -> bytes | None:
    """The app's own answer to ``url`` (relative to ``request``'s page) for ``request``'s
    client: the same route, token guard and cache as if the page had asked. Its body when it
    is a 200 of JSON, else None."""
    app = request.scope["app"]
    path, _, query = url.partition("?")
    base = request.scope["path"]
    full = (base if base.endswith("/") else base + "/") + path
    scope = {
        key: request.scope[key]
        for key in ("type", "asgi", "http_version", "scheme", "server", "client", "root_path")
        if key in request.scope
    }
    scope.update(
        method="GET",
        path=full,
        raw_path=full.encode("utf-8"),
        query_string=query.encode("latin-1"),
        headers=[(k, v) for k, v in request.scope["headers"] if k not in _NOT_PASSED_ON],
    )
    if "state" in request.scope:
        scope["state"] = request.scope["state"]
    status = 0
    media_type = b""
    body: list[bytes] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status, media_type
        if message["type"] == "http.response.start":
            status = message["status"]
            media_type = dict(message.get("headers", [])).get(b"content-type", b"")
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    try:
        await app(scope, receive, send)
    except Exception:  # the page is still served: the script asks for it itself
        log.warning(
            "the dashboard's first answer %s failed; the page asks for it", url, exc_info=True
        )
        return None
    if status != 200 or not media_type.startswith(b"application/json"):
        return None
    return b"".join(body)


async def stream_since(request: Request) -> str | None:
    """The cursor of the page's stream (over every experiment) as of now; None if it cannot be
    read (the page's stream then starts where it opens, as without first answers)."""
    try:
        return await cursor_now(state_of(request).experiments)
    except Exception:
        log.warning("the dashboard's stream cursor could not be read", exc_info=True)
        return None


class Bundle:
    """The built dashboard in ``folder``, read on first use and kept."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._files: dict[str, Asset] | None = None
        self._lock = threading.Lock()

    def files(self) -> dict[str, Asset]:
        """``index.html`` and ``assets/NAME`` → the file; empty without a bundle."""
        with self._lock:
            if self._files is None:
                self._files = self._read()
            return self._files

    def _read(self) -> dict[str, Asset]:
        index = self.folder / "index.html"
        if not index.is_file():
            return {}
        files: dict[str, Asset] = {}
        paths = [index, *sorted(p for p in (self.folder / "assets").glob("*") if p.is_file())]
        bodies = {p.relative_to(self.folder).as_posix(): p.read_bytes() for p in paths}
        for name, body in bodies.items():
            media_type = media_type_of(name.partition("?")[0])
            asset = Asset(
                body,
                media_type,
                make_etag(("dashboard", name, body)),
                media_type.startswith(COMPRESSIBLE),
            )
            if asset.compressible and len(body) >= GZIP_MIN_BYTES:
                asset.gzipped()  # once, now (off the event loop): the answers then only send
            files[name] = asset
        return files

    def cached(self) -> dict[str, Asset] | None:
        return self._files


def _answer(request: Request, asset: Asset, headers: dict[str, str]) -> Response:
    headers = {**headers, "etag": asset.etag, "x-content-type-options": "nosniff"}
    if asset.compressible:
        headers["vary"] = "accept-encoding"
    if asset.etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    body = asset.body
    if asset.gzip_ready and _accepts_gzip(request.headers.get("accept-encoding", "")):
        body = asset.gzipped()
        headers["content-encoding"] = "gzip"
    return Response(body, media_type=asset.media_type, headers=headers)


def routes(folder: Path = STATIC) -> list[BaseRoute]:
    """``/`` (the dashboard) and ``/assets/{name}`` (its files) from the bundle in ``folder``."""
    bundle = Bundle(folder)

    async def files() -> dict[str, Asset]:
        found = bundle.cached()
        return found if found is not None else await run_in_threadpool(bundle.files)

    async def index(request: Request) -> Response:
        plain = (await files()).get("index.html")
        if plain is None:
            return HTMLResponse(NOT_BUILT_PAGE, headers={"cache-control": "no-cache"})
        urls = first_requests(dict(request.query_params))
        page = plain
        if urls:
            # Read before the answers are made: the page's stream starts there (since=), so a
            # commit between the answers and the stream's opening is sent to it, not missed.
            since = await stream_since(request)
            found = await asyncio.gather(*(own_answer(request, url) for url in urls))
            answers = {u: b for u, b in zip(urls, found, strict=True) if b is not None}
            preloads = [u for u, b in zip(urls, found, strict=True) if b is None]
            body = with_first_answers(plain.body, answers, preloads, since)
            page = Asset(body, plain.media_type, make_etag(("dashboard", body)), True)
            if len(body) >= GZIP_MIN_BYTES and _accepts_gzip(
                request.headers.get("accept-encoding", "")
            ):
                await run_in_threadpool(page.gzipped)
        return _answer(request, page, {"cache-control": "no-cache", "content-security-policy": CSP})

    async def asset(request: Request) -> Response:
        name = posixpath.join("assets", request.path_params["name"])
        found = (await files()).get(name)
        if found is None:
            raise ApiError(404, f"no such file of the dashboard: {name}")
        return _answer(request, found, {"cache-control": ASSET_CACHE_CONTROL})

    get = ["GET", "HEAD"]
    return [Route("/", index, methods=get), Route("/assets/{name}", asset, methods=get)]
