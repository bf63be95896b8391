"""TensorBoard's UI on ``boardd serve`` (from the installed tensorboard package's
webfiles.zip), the page shown without that package, and the login URL and cookie: real
subprocesses, real HTTP."""

from __future__ import annotations

import gzip
import importlib.util
import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import IO

import httpx
import pytest
from tensorboardX import SummaryWriter

from boardd.api.auth import cookie_value
from boardd.api.tensorboard.webui import gzip_from_zip
from tests.daemon.conftest import SRC, Daemon, ServeFactory, boardd_env

TOKEN = "webui-test-token-0123456789abcdef"

#: Content types of the zip's files, by extension.
EXPECTED_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
}

#: A sitecustomize that makes ``import tensorboard`` fail in the process, as it does where
#: the package is not installed (the import system's own ModuleNotFoundError).
BLOCK_TENSORBOARD = """
import importlib.abc
import sys


class _NoTensorBoard(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "tensorboard" or name.startswith("tensorboard."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoTensorBoard())
"""


def webfiles() -> zipfile.ZipFile:
    spec = importlib.util.find_spec("tensorboard")
    assert spec is not None and spec.submodule_search_locations
    return zipfile.ZipFile(Path(next(iter(spec.submodule_search_locations))) / "webfiles.zip")


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    with SummaryWriter(str(root / "train")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    return root


def _client(daemon: Daemon, **kwargs: object) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://127.0.0.1:{daemon.port}",
        timeout=30.0,
        trust_env=False,
        **kwargs,  # type: ignore[arg-type]
    )


def test_ui_from_the_installed_package(serve: ServeFactory, logdir: Path) -> None:
    daemon = serve(logdir)
    base = f"http://127.0.0.1:{daemon.port}"
    assert (
        f"listening on {base}/: open {base}/ (boardd's dashboard; TensorBoard's UI: "
        f"{base}/tensorboard/; " in daemon.stderr()
    )
    with _client(daemon) as client, webfiles() as zf:
        # / is boardd's own dashboard (tests/api/test_dashboard.py); TensorBoard's at /tensorboard/.
        home = client.get("/")
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert client.get("/tensorboard").headers["location"] == "/tensorboard/"

        # index.html: TensorBoard's, after TensorBoard's preamble (its data is relative to it).
        index = client.get("/tensorboard/", headers={"accept-encoding": "identity"})
        assert index.status_code == 200
        assert index.headers["content-type"].startswith("text/html")
        assert "content-encoding" not in index.headers
        assert index.content == (
            b'<!doctype html><meta name="tb-relative-root" content="./">' + zf.read("index.html")
        )
        assert "default-src 'self'" in index.headers["content-security-policy"]
        assert index.headers["x-content-type-options"] == "nosniff"
        assert client.get("/tensorboard/index.html").content == index.content

        # Validators and compression.
        etag = index.headers["etag"]
        again = client.get("/tensorboard/", headers={"if-none-match": etag})
        assert again.status_code == 304 and again.content == b""
        packed = client.get("/tensorboard/", headers={"accept-encoding": "gzip"})
        assert packed.headers["content-encoding"] == "gzip"
        assert packed.headers["etag"] == etag
        assert packed.content == index.content  # httpx decompressed it
        refused = client.get("/tensorboard/", headers={"accept-encoding": "gzip;q=0"})
        assert "content-encoding" not in refused.headers

        # Every file of the zip, byte for byte, with its content type.
        names = [i.filename for i in zf.infolist() if not i.is_dir()]
        assert len(names) > 50
        for name in names:
            r = client.get(f"/tensorboard/{name}")
            assert r.status_code == 200, name
            if name != "index.html":
                assert r.content == zf.read(name), name
            ext = Path(name).suffix
            if ext in EXPECTED_TYPES:
                assert r.headers["content-type"].startswith(EXPECTED_TYPES[ext]), name

        # JavaScript named by its hash is cached for a day; the rest is revalidated.
        hashed = client.get("/tensorboard/index.js", params={"_file_hash": "x"})
        assert hashed.headers["cache-control"] == "private, max-age=86400"
        assert client.get("/tensorboard/icon_bundle.svg").headers["cache-control"] == "no-cache"

        # What the page asks for: its script, and from its script the worker and the icons
        # (relative to the page), and fonts and the editor's files from the site's root.
        html = zf.read("index.html").decode()
        script = zf.read("index.js").decode()
        wanted = [f"/tensorboard/{src}" for src in re.findall(r'<script src="([^"]+)"', html)]
        wanted += [f"/tensorboard/{u}" for u in re.findall(r'"(chart_worker\.js[^"]*)"', script)]
        wanted += ["/tensorboard/icon_bundle.svg"] if '"./icon_bundle.svg"' in script else []
        wanted += sorted(set(re.findall(r"url\((/font-roboto/[^)]+)\)", html)))
        assert re.search(r'vs:"/tf-imports/vs"', script)
        wanted += ["/tf-imports/vs/editor/editor.main.js", "/tf-imports/vs/python/python.js"]
        assert len(wanted) > 10
        for url in wanted:
            assert client.get(url).status_code == 200, url
        assert client.get("/font-roboto/LICENSE").content == zf.read("font-roboto/LICENSE")

        # An unknown file is a 404 in boardd's error shape; the data routes stay data routes.
        missing = client.get("/tensorboard/no/such.js")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"
        assert client.get("/font-roboto/nope.woff2").status_code == 404
        runs = client.get("/tensorboard/data/runs")
        assert runs.status_code == 200 and runs.json() == ["train"]
        # TensorBoard's UI names its experiment "defaultExperimentId" when its URL names none.
        default = client.get("/tensorboard/experiment/defaultExperimentId/data/runs")
        assert default.status_code == 200 and default.json() == ["train"]
        assert client.get("/tensorboard/experiment/nope/data/runs").status_code == 404

        # Without a token there is nothing to log in to: /login goes on to the UI.
        login = client.get("/login", params={"token": "anything"})
        assert login.status_code == 303 and login.headers["location"] == "/"
        assert "set-cookie" not in login.headers


def test_index_gzip_round_trip(serve: ServeFactory, logdir: Path) -> None:
    daemon = serve(logdir)
    with _client(daemon) as client:
        plain = client.get("/tensorboard/index.js", headers={"accept-encoding": "identity"})
        # httpx decodes gzip itself; read the raw bytes to see what was sent.
        with client.stream(
            "GET", "/tensorboard/index.js", headers={"accept-encoding": "gzip"}
        ) as packed:
            assert packed.headers["content-encoding"] == "gzip"
            raw = b"".join(packed.iter_raw())
        assert len(raw) < len(plain.content) / 2
        assert gzip.decompress(raw) == plain.content
        # woff2 is compressed already: sent as it is.
        with webfiles() as zf:
            woff = next(n for n in zf.namelist() if n.endswith(".woff2"))
        r = client.get(f"/{woff}", headers={"accept-encoding": "gzip"})
        assert "content-encoding" not in r.headers


def _deflate_stream(zf: zipfile.ZipFile, name: str) -> bytes:
    """The member's compressed bytes as the zip holds them (after its local header)."""
    info = zf.getinfo(name)
    assert zf.fp is not None
    zf.fp.seek(info.header_offset)
    header = zf.fp.read(30)
    skip = 30 + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little")
    zf.fp.seek(info.header_offset + skip)
    return zf.fp.read(info.compress_size)


def test_ui_code_is_sent_as_the_zip_compressed_it(serve: ServeFactory, logdir: Path) -> None:
    """index.js (6 MB) is sent gzipped without compressing it again: the gzip body carries the
    zip's own deflate stream, so even the first page load waits on no compression (it took
    most of a second on a loaded machine, before the page could start running its code)."""
    daemon = serve(logdir)
    with webfiles() as zf:
        stream = _deflate_stream(zf, "index.js")
        plain = zf.read("index.js")
    with (
        _client(daemon) as client,
        client.stream(
            "GET", "/tensorboard/index.js", headers={"accept-encoding": "gzip"}
        ) as packed,
    ):
        assert packed.status_code == 200
        assert packed.headers["content-encoding"] == "gzip"
        raw = b"".join(packed.iter_raw())
    assert raw[10:-8] == stream
    assert gzip.decompress(raw) == plain


class _Unseekable:
    """A file that only writes: zipfile then puts each member's sizes after its data."""

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    def write(self, data: bytes) -> int:
        return self._file.write(data)

    def flush(self) -> None:
        self._file.flush()


def test_gzip_from_zip_frames_deflated_members_only(tmp_path: Path) -> None:
    """Deflated members (also ones written with a data descriptor, by a streaming writer)
    become gzip files that decompress to the member; stored members give None."""
    text = b"TensorBoard's UI, " * 5000
    seekable = tmp_path / "seekable.zip"
    with zipfile.ZipFile(seekable, "w") as zf:
        zf.writestr("a.js", text, compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
        zf.writestr("stored.js", text, compress_type=zipfile.ZIP_STORED)
        zf.writestr(zipfile.ZipInfo("empty.css"), b"", compress_type=zipfile.ZIP_DEFLATED)
    streamed = tmp_path / "streamed.zip"
    with (
        streamed.open("wb") as raw_file,
        zipfile.ZipFile(_Unseekable(raw_file), "w", zipfile.ZIP_DEFLATED) as zf,  # type: ignore[arg-type]
    ):
        zf.writestr("a.js", text)
    with zipfile.ZipFile(streamed) as zf:
        assert zf.getinfo("a.js").flag_bits & 0x8  # the sizes follow the data
        packed = gzip_from_zip(zf, zf.getinfo("a.js"))
        assert packed is not None and gzip.decompress(packed) == text
    with zipfile.ZipFile(seekable) as zf:
        packed = gzip_from_zip(zf, zf.getinfo("a.js"))
        assert packed is not None and gzip.decompress(packed) == text
        empty = gzip_from_zip(zf, zf.getinfo("empty.css"))
        assert empty is not None and gzip.decompress(empty) == b""
        assert gzip_from_zip(zf, zf.getinfo("stored.js")) is None


def test_without_tensorboard_home_says_how_to_get_the_ui(
    serve: ServeFactory, logdir: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK_TENSORBOARD)
    env = {"PYTHONPATH": f"{site}:{SRC}"}
    # The blocker works: tensorboard cannot be imported in such a process.
    probe = subprocess.run(
        [sys.executable, "-c", "import tensorboard"],
        env=boardd_env(**env),
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 1 and "No module named 'tensorboard'" in probe.stderr

    daemon = serve(logdir, env=env)
    base = f"http://127.0.0.1:{daemon.port}"
    assert (
        f"open {base}/ (boardd's dashboard; "
        f'pip install "boardd[tensorboard]" for TensorBoard' in daemon.stderr()
    )
    with _client(daemon) as client:
        # / is boardd's own dashboard; /tensorboard/ says how to install TensorBoard's UI.
        assert client.get("/").status_code == 200
        assert client.get("/tensorboard").headers["location"] == "/tensorboard/"
        home = client.get("/tensorboard/")
        assert home.status_code == 200
        assert home.headers["content-type"].startswith("text/html")
        assert 'pip install "boardd[tensorboard]"' in home.text
        assert 'href="../api/v1/health"' in home.text
        assert client.get("/api/v1/health").status_code == 200
        # TensorBoard's data routes need no tensorboard package.
        assert client.get("/tensorboard/data/runs").json() == ["train"]


def test_login_url_and_cookie(serve: ServeFactory, logdir: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    daemon = serve(logdir, "--token-file", token_file)
    base = f"http://127.0.0.1:{daemon.port}"
    # Not a terminal: the log names the token's file, not the token (test_web_boundary.py).
    assert re.search(
        rf"open {re.escape(base)}/login\?token=TOKEN with TOKEN the token in "
        rf"{re.escape(str(token_file))} \(boardd's dashboard",
        daemon.stderr(),
    ), daemon.stderr()
    login_url = f"{base}/login?token={TOKEN}"

    # Nothing without credentials.
    with _client(daemon) as anonymous:
        for path in ["/", "/tensorboard/", "/tensorboard/data/runs", "/api/v1/health"]:
            r = anonymous.get(path)
            assert r.status_code == 401, path
            assert r.json()["error"]["code"] == "unauthorized"
            assert "/login?token=" in r.json()["error"]["message"]

    # The header, as before.
    with _client(daemon, headers={"authorization": f"Bearer {TOKEN}"}) as bearer:
        assert bearer.get("/api/v1/health").status_code == 200
        assert bearer.get("/tensorboard/").status_code == 200
        assert bearer.get("/").status_code == 200  # boardd's dashboard

    # A wrong or missing token at /login: 401 in boardd's shape, and no cookie.
    with _client(daemon) as client:
        for query in ["?token=wrong", "", f"?token={TOKEN}x", f"?token={TOKEN[:-1]}"]:
            r = client.get(f"/login{query}")
            assert r.status_code == 401, query
            assert set(r.json()["error"]) == {"code", "message"}
            assert "set-cookie" not in r.headers
        assert client.post(f"/login?token={TOKEN}").status_code == 405
        assert not client.cookies

    # The login URL: an HttpOnly, SameSite=Strict cookie (an HMAC, not the token), then /.
    with _client(daemon) as browser:
        r = browser.get(login_url)
        assert r.status_code == 303
        assert r.headers["location"] == "/"
        cookie = r.headers["set-cookie"]
        name, _, rest = cookie.partition("=")
        value = rest.split(";")[0]
        attributes = {a.strip().split("=")[0].lower() for a in rest.split(";")[1:]}
        assert name == f"boardd-auth-{daemon.port}"
        assert value == cookie_value(TOKEN) and TOKEN not in cookie
        assert {"httponly", "path", "max-age", "samesite"} <= attributes
        assert "samesite=strict" in cookie.lower().replace(" ", "")
        assert browser.get("/api/v1/health").status_code == 200
        page = browser.get("/", follow_redirects=True)
        assert page.status_code == 200 and str(page.url) == f"{base}/"  # boardd's dashboard
        assert browser.get("/tensorboard/").status_code == 200
        assert browser.get("/tensorboard/data/runs").json() == ["train"]

    # A cookie of another value (or the raw token as cookie) is refused.
    for forged in [cookie_value(TOKEN + "x"), TOKEN, cookie_value(TOKEN)[:-1]]:
        with _client(daemon, cookies={f"boardd-auth-{daemon.port}": forged}) as client:
            assert client.get("/api/v1/health").status_code == 401, forged


def _fake_tensorboard(root: Path, webfiles_zip: bytes) -> Path:
    """A ``tensorboard`` package whose only content is this ``webfiles.zip``: first on the
    path, it is the package boardd finds (a broken install of TensorBoard)."""
    package = root / "tensorboard"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "webfiles.zip").write_bytes(webfiles_zip)
    return root


def test_a_webfiles_zip_that_cannot_be_read_takes_down_the_ui_only(
    serve: ServeFactory, logdir: Path, tmp_path: Path
) -> None:
    # Not a zip at all (a truncated download, a damaged disk): the daemon starts and serves
    # its data; each request of the UI is a 503 that says what to do; one warning is logged.
    site = _fake_tensorboard(tmp_path / "site", b"this is not a zip file\n")
    zip_path = site / "tensorboard" / "webfiles.zip"
    daemon = serve(logdir, env={"PYTHONPATH": f"{site}:{SRC}"})
    # A new store: its data is in once the catch-up has committed it (the port comes first).
    daemon.wait_for_steps("train", "loss", [0, 1, 2], timeout=30)
    with _client(daemon) as client:
        for path in ("/tensorboard/", "/tensorboard/index.js", "/font-roboto/x.woff2") * 3:
            answer = client.get(path)
            assert answer.status_code == 503, path
            error = answer.json()["error"]
            assert error["code"] == "ui_unavailable"
            assert str(zip_path) in error["message"] and "BadZipFile" in error["message"]
            assert "pip install --force-reinstall" in error["message"]
        assert client.get("/tensorboard/data/runs").json() == ["train"]
        assert client.get("/data/plugin/scalars/tags").json()["train"]["loss"]
        assert client.get("/api/v1/health").status_code == 200
        assert daemon.stderr().count("TensorBoard's UI cannot be read from") == 1

        # A reinstall while boardd runs: the next request reads the new zip.
        with webfiles() as real:
            zip_path.write_bytes(Path(str(real.filename)).read_bytes())
            index = client.get("/tensorboard/", headers={"accept-encoding": "identity"})
            assert index.status_code == 200
            assert index.content.endswith(real.read("index.html"))


def test_a_damaged_member_of_the_zip_is_a_503_of_its_own(
    serve: ServeFactory, logdir: Path, tmp_path: Path
) -> None:
    # A zip whose list is sound but one member's deflate stream is damaged: that file is a 503,
    # the others are served.
    index_html = b"<!doctype html><title>t</title>" + b"<p>row</p>" * 2000
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("index.html", b"<!doctype html><p>home</p>")
        zf.writestr("index.js", index_html)
    data = bytearray(buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("index.js")
    # The member's data starts after its 30-byte local header, its name and its extra field.
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for k in range(start + 4, start + info.compress_size - 4):
        data[k] ^= 0x5A
    site = _fake_tensorboard(tmp_path / "site", bytes(data))
    daemon = serve(logdir, env={"PYTHONPATH": f"{site}:{SRC}"})
    with _client(daemon) as client:
        home = client.get("/tensorboard/")
        assert home.status_code == 200 and home.content.endswith(b"<p>home</p>")
        broken = client.get("/tensorboard/index.js")
        assert broken.status_code == 503
        assert broken.json()["error"]["code"] == "ui_unavailable"
        assert client.get("/tensorboard/nope.js").status_code == 404
        assert client.get("/tensorboard/").status_code == 200
