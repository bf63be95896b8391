"""boardd's own dashboard at ``/``: the bundle that ``hatch_build.py`` builds from ``web/``
into :data:`boardd.dashboard.STATIC` (``index.html`` and ``assets/NAME-HASH.{js,css}``).

``/`` is ``index.html`` (``Cache-Control: no-cache``, ETag); ``/assets/NAME`` the files it
names, whose names carry their content's hash, so they are cached for a year as immutable.
Text is sent gzipped to clients that accept it (compressed once, kept). The files are read on
first request and kept (about 110 KB). Without a bundle (a checkout never installed), ``/`` is a
page saying how to build it. The token guard (:mod:`boardd.api.auth`) covers these routes like
every other: a browser that opened the login URL has the cookie.

``/`` names, as ``<link rel="preload" as="fetch">``, the first requests the page's script makes
(the run list, and the scalars listing when the page opens on scalars), so the browser asks
for them while it loads the script: the script's own ``fetch()`` then takes those answers.
Only for the first experiment (no ``exp=``), whose URLs are known here exactly
(``web/src/api.ts``: ``initialRuns``, ``listScalars``).
"""

from __future__ import annotations

import html
import posixpath
import threading
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

from boardd.api.errors import ApiError
from boardd.api.tensorboard.webui import (
    COMPRESSIBLE,
    Asset,
    _accepts_gzip,
    _etags,
    media_type_of,
)
from boardd.cache import GZIP_MIN_BYTES, make_etag
from boardd.dashboard import STATIC

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
#: index.html's variants with preloads, by the view the page opens on.
_WITH_RUNS = "index.html?runs"
_WITH_SCALARS = "index.html?scalars"


def with_preloads(index: bytes, urls: list[str]) -> bytes:
    """``index`` with a ``<link rel="preload" as="fetch" crossorigin>`` per URL, first in its
    head (``crossorigin``: the credentials mode of the script's same-origin ``fetch()``)."""
    links = "".join(
        f'<link rel="preload" as="fetch" crossorigin href="{html.escape(u)}">\n' for u in urls
    )
    head = index.find(b"<link")
    at = head if head >= 0 else 0
    return index[:at] + links.encode("utf-8") + index[at:]


def index_variant(query: dict[str, str]) -> str:
    """Which index.html answers ``/`` with this query: with the preloads of the view it opens
    on (no ``view=`` or ``view=scalars``: the scalars listing too), or plain for another
    experiment than the first (``exp=``)."""
    if "exp" in query:
        return "index.html"
    return _WITH_SCALARS if query.get("view", "scalars") == "scalars" else _WITH_RUNS


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
        bodies[_WITH_RUNS] = with_preloads(bodies["index.html"], [RUNS_URL])
        bodies[_WITH_SCALARS] = with_preloads(bodies["index.html"], [RUNS_URL, SCALARS_LIST_URL])
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
        asset = (await files()).get(index_variant(dict(request.query_params)))
        if asset is None:
            return HTMLResponse(NOT_BUILT_PAGE, headers={"cache-control": "no-cache"})
        return _answer(
            request, asset, {"cache-control": "no-cache", "content-security-policy": CSP}
        )

    async def asset(request: Request) -> Response:
        name = posixpath.join("assets", request.path_params["name"])
        found = (await files()).get(name)
        if found is None:
            raise ApiError(404, f"no such file of the dashboard: {name}")
        return _answer(request, found, {"cache-control": ASSET_CACHE_CONTROL})

    get = ["GET", "HEAD"]
    return [Route("/", index, methods=get), Route("/assets/{name}", asset, methods=get)]
