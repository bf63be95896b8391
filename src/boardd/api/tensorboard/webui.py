"""TensorBoard's web UI, served from the installed ``tensorboard`` package.

The UI is the ``webfiles.zip`` that ships inside the ``tensorboard`` package (the optional
extra ``boardd[tensorboard]``); it is read with :mod:`zipfile` while boardd runs, nothing of
it is copied into boardd. ``/tensorboard/`` is its ``index.html`` and ``/tensorboard/PATH``
every file of the zip; the page asks for its data relative to itself, under
``/tensorboard/data/`` (:mod:`boardd.api.tensorboard`). Its stylesheet and its code editor ask
for ``/font-roboto/...`` and ``/tf-imports/...`` from the root of the site, so those two
folders of the zip are served there too.

Without the ``tensorboard`` package, ``/tensorboard/`` is a short page saying how to get the
UI. ``/`` is boardd's own dashboard (:mod:`boardd.api.dashboard`).
"""

from __future__ import annotations

import gzip
import importlib.util
import logging
import mimetypes
import posixpath
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from boardd.api.errors import ApiError
from boardd.cache import GZIP_MIN_BYTES, make_etag

if TYPE_CHECKING:
    import zipfile  # loaded by the first request of the UI (off `boardd serve`'s start)

log = logging.getLogger(__name__)

#: Where the UI is served.
PREFIX = "/tensorboard"
#: Folders of the zip that the UI asks for from the site's root (absolute URLs in its code).
ROOT_FOLDERS = ("font-roboto", "tf-imports")
#: A request carrying this parameter names one version of the file (the UI's ``index.js``
#: and ``chart_worker.js``): cacheable for a day, as TensorBoard has it.
FILE_HASH_PARAM = "_file_hash"
HASHED_MAX_AGE = 86400

#: Media types of the zip's files (mimetypes' answers vary between Python versions).
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".ttf": "font/ttf",
    ".json": "application/json",
    ".png": "image/png",
}
#: Media types worth compressing (fonts in woff2 and images already are).
COMPRESSIBLE = ("text/", "image/svg+xml", "application/json", "font/ttf")

#: The Content-Security-Policy of the page: TensorBoard's own (its UI needs inline styles,
#: ``eval`` for one plugin, data: fonts and images, and frames from Perfetto).
CSP = "; ".join(
    [
        "default-src 'self'",
        "font-src 'self' data:",
        "frame-src 'self' https://ui.perfetto.dev",
        "img-src 'self' data: blob:",
        "object-src 'none'",
        "style-src 'self' https://www.gstatic.com data: 'unsafe-inline'",
        "connect-src 'self'",
        "script-src 'self' 'unsafe-eval'",
    ]
)

#: What TensorBoard writes before its index.html: the page's data is relative to the page.
INDEX_PREAMBLE = b'<!doctype html><meta name="tb-relative-root" content="./">'

NO_UI_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>boardd</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 2em auto">
<h1>boardd</h1>
<p>TensorBoard's web UI is not installed here: boardd serves it from the
<code>tensorboard</code> package. Install it with</p>
<pre>pip install "boardd[tensorboard]"</pre>
<p>and restart <code>boardd serve</code>; this page then opens TensorBoard.</p>
<p>boardd's own dashboard is at <a href="../">/</a>, and the data API is served:
<a href="../api/v1/health">api/v1/health</a> (the daemon's state),
<a href="../api/v1/openapi.json">api/v1/openapi.json</a> (every route).</p>
</body></html>
"""


def webfiles_path() -> Path | None:
    """The installed ``tensorboard`` package's ``webfiles.zip``, or None (no such package,
    or a package without its UI). The package is located, not imported (importing it is slow)."""
    try:
        spec = importlib.util.find_spec("tensorboard")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "webfiles.zip"
        if path.is_file():
            return path
    return None


@dataclass(slots=True)
class Asset:
    """One file of the zip, read: its body, media type, validator and gzip form (built from the
    zip's own deflate stream when it has one, else compressed on first use)."""

    body: bytes
    media_type: str
    etag: str
    compressible: bool
    _gzipped: bytes | None = None

    @property
    def gzip_ready(self) -> bool:
        """Whether :meth:`gzipped` answers at once (no compression to do)."""
        return self._gzipped is not None

    def gzipped(self) -> bytes:
        if self._gzipped is None:
            self._gzipped = gzip.compress(self.body, compresslevel=6, mtime=0)
        return self._gzipped


#: A zip's local file header: signature, versions, flags, method, time, date, crc, sizes, and
#: the lengths of the name and the extra field that follow it (APPNOTE.TXT 4.3.7).
_LOCAL_HEADER = struct.Struct("<4s5HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"
#: A gzip member's header (RFC 1952 2.3): magic, deflate, no flags, no mtime, no extra flags,
#: unknown OS; the deflate stream, its CRC-32 and its length mod 2**32 follow.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def gzip_from_zip(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | None:
    """The member ``info`` as a gzip file, made of the deflate stream the zip already holds (no
    compression at all: TensorBoard's ``index.js`` is several megabytes, slow to compress on a
    loaded machine). None if the member is not plainly deflated (stored, encrypted, another
    method) or its local header does not read as one.

    Neither :mod:`zipfile` nor :mod:`gzip` hands out or takes a raw deflate stream, hence these
    few lines: gzip's framing around the zip's bytes, with the zip's own CRC-32 and size."""
    import zipfile

    if info.compress_type != zipfile.ZIP_DEFLATED or info.flag_bits & 0x1:
        return None
    fp = zf.fp
    if fp is None:
        return None
    fp.seek(info.header_offset)
    header = fp.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack(header)
    if fields[0] != _LOCAL_SIGNATURE:
        return None
    name_length, extra_length = fields[-2], fields[-1]
    fp.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    stream = fp.read(info.compress_size)
    if len(stream) != info.compress_size:
        return None
    trailer = struct.pack("<2L", info.CRC, info.file_size & 0xFFFFFFFF)
    return _GZIP_HEADER + stream + trailer


class Webfiles:
    """The files of a ``webfiles.zip``, read on first request and kept (about 20 MB).

    Nothing is read before the first request of the UI: ``boardd serve``'s start does not pay
    for the zip, and a zip that cannot be read (a broken ``tensorboard`` install) takes down
    the UI's requests only, each answered 503 with the reason, never the daemon. A failed
    read is tried again by the next request (a reinstall while boardd runs is picked up)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: The zip's identity (another tensorboard version gives other validators) and its
        #: members' CRC-32 by name, once read.
        self._index: tuple[tuple[str, int, int], dict[str, int]] | None = None
        self._assets: dict[str, Asset] = {}
        self._lock = threading.Lock()
        self._warned: str | None = None

    @property
    def indexed(self) -> bool:
        """Whether the zip's member list has been read (:meth:`load` answers at once)."""
        return self._index is not None

    def load(self) -> tuple[tuple[str, int, int], dict[str, int]]:
        """The zip's identity and member list, read once; :class:`ApiError` 503 if the zip
        cannot be read."""
        index = self._index
        if index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._read_index()
                index = self._index
        return index

    def _read_index(self) -> tuple[tuple[str, int, int], dict[str, int]]:
        import zipfile

        try:
            stat = self.path.stat()
            with zipfile.ZipFile(self.path) as zf:
                members = {info.filename: info.CRC for info in zf.infolist() if not info.is_dir()}
        except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
            raise self._unreadable(exc) from exc
        return (str(self.path), stat.st_size, stat.st_mtime_ns), members

    def _unreadable(self, exc: BaseException) -> ApiError:
        """The 503 of a zip that cannot be read, logged once per reason."""
        reason = f"{type(exc).__name__}: {exc}"
        if reason != self._warned:
            self._warned = reason
            log.warning("TensorBoard's UI cannot be read from %s (%s)", self.path, reason)
        return ApiError(
            503,
            f"TensorBoard's UI cannot be read from {self.path} ({reason}); reinstall it "
            '(pip install --force-reinstall "boardd[tensorboard]") and reload this page',
            "ui_unavailable",
        )

    def __contains__(self, name: str) -> bool:
        return name in self.load()[1]

    def cached(self, name: str) -> Asset | None:
        """The file ``name`` if it has been read already (no lock, no I/O)."""
        return self._assets.get(name)

    def asset(self, name: str) -> Asset:
        """The file ``name`` of the zip (which holds it), read once."""
        import zipfile

        identity, members = self.load()
        with self._lock:
            found = self._assets.get(name)
            if found is not None:
                return found
            media_type = media_type_of(name)
            compressible = media_type.startswith(COMPRESSIBLE)
            packed: bytes | None = None
            try:
                with zipfile.ZipFile(self.path) as zf:
                    body = zf.read(name)  # checks the CRC-32 the gzip form below carries
                    if name == "index.html":
                        body = INDEX_PREAMBLE + body
                    elif compressible:
                        packed = gzip_from_zip(zf, zf.getinfo(name))
            except (OSError, zipfile.BadZipFile, KeyError, ValueError, EOFError, zlib.error) as exc:
                # The zip changed under us (a reinstall) or is damaged: its list is read again
                # by the next request.
                self._index = None
                raise self._unreadable(exc) from exc
            asset = Asset(
                body,
                media_type,
                make_etag(("webfiles", identity, name, members[name])),
                compressible,
                packed,
            )
            self._assets[name] = asset
            return asset


def media_type_of(name: str) -> str:
    """The Content-Type of a file of the zip."""
    ext = posixpath.splitext(name)[1].lower()
    known = MEDIA_TYPES.get(ext) or mimetypes.guess_type(name)[0]
    return known or "application/octet-stream"


async def _serve(request: Request, files: Webfiles, name: str) -> Response:
    if not files.indexed:
        await run_in_threadpool(files.load)
    if name not in files:
        raise ApiError(404, f"no such file of TensorBoard's UI: {name}")
    # Once read, a file is answered on the event loop: no hop to a worker thread.
    asset = files.cached(name)
    if asset is None:
        asset = await run_in_threadpool(files.asset, name)
    headers = {"etag": asset.etag, "x-content-type-options": "nosniff"}
    if FILE_HASH_PARAM in request.query_params and asset.media_type.startswith("text/javascript"):
        headers["cache-control"] = f"private, max-age={HASHED_MAX_AGE}"
    else:
        headers["cache-control"] = "no-cache"
    if name == "index.html":
        headers["content-security-policy"] = CSP
    if asset.compressible:
        headers["vary"] = "accept-encoding"
    if asset.etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    body = asset.body
    if (
        asset.compressible
        and len(body) >= GZIP_MIN_BYTES
        and _accepts_gzip(request.headers.get("accept-encoding", ""))
    ):
        body = asset.gzipped() if asset.gzip_ready else await run_in_threadpool(asset.gzipped)
        headers["content-encoding"] = "gzip"
    return Response(body, media_type=asset.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    return {part.strip().removeprefix("W/") for part in header.split(",") if part.strip()}


def _accepts_gzip(header: str) -> bool:
    """Whether Accept-Encoding allows gzip (not ``gzip;q=0``)."""
    for part in header.split(","):
        coding, *params = (p.strip().lower() for p in part.split(";"))
        if coding in ("gzip", "x-gzip", "*"):
            for param in params:
                name, _, value = param.partition("=")
                if name.strip() == "q":
                    try:
                        return float(value) > 0
                    except ValueError:
                        return False
            return True
    return False


def routes(zip_path: Path | None) -> list[BaseRoute]:
    """The UI's routes: ``/tensorboard/...`` from ``zip_path`` (a ``webfiles.zip``, see
    :func:`webfiles_path`); without one, ``/tensorboard/`` is a page saying how to install it.
    ``/`` is boardd's own dashboard (:mod:`boardd.api.dashboard`)."""
    if zip_path is None:

        async def no_ui(request: Request) -> Response:
            return HTMLResponse(NO_UI_PAGE, headers={"cache-control": "no-cache"})

        async def to_page(request: Request) -> Response:
            return RedirectResponse(f"{request.scope.get('root_path', '')}{PREFIX}/", 307)

        get = ["GET", "HEAD"]
        return [Route(PREFIX, to_page, methods=get), Route(f"{PREFIX}/", no_ui, methods=get)]

    files = Webfiles(zip_path)

    async def home(request: Request) -> Response:
        return RedirectResponse(f"{request.scope.get('root_path', '')}{PREFIX}/", 307)

    async def index(request: Request) -> Response:
        return await _serve(request, files, "index.html")

    async def in_prefix(request: Request) -> Response:
        return await _serve(request, files, request.path_params["path"])

    def at_root(folder: str) -> Route:
        async def endpoint(request: Request) -> Response:
            return await _serve(request, files, f"{folder}/{request.path_params['path']}")

        return Route(f"/{folder}/{{path:path}}", endpoint, methods=["GET", "HEAD"])

    get = ["GET", "HEAD"]
    return [
        Route(PREFIX, home, methods=get),
        Route(f"{PREFIX}/", index, methods=get),
        Route(f"{PREFIX}/{{path:path}}", in_prefix, methods=get),
        *(at_root(folder) for folder in ROOT_FOLDERS),
    ]
