"""boardd's dashboard at ``/`` (boardd.api.dashboard): the built bundle's index and assets,
their caching headers and gzip, the page without a bundle, and the token guard (header or
login cookie). The bundle is the one the install built (hatch_build.py); a test that needs a
particular one writes a small bundle of its own."""

from __future__ import annotations

import gzip
import html
import json
import re
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from tensorboardX import SummaryWriter

from boardd.api import dashboard
from boardd.api.app import create_app
from boardd.api.auth import Guard, cookie_name, cookie_value
from boardd.api.errors import ApiError, handle_api_error
from boardd.config import ExperimentSpec
from boardd.dashboard import STATIC
from tests.api.test_stream import Stream
from tests.conftest import ThreadedServer, ingest

TOKEN = "dashboard-token-0123456789"


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A bundle shaped as web/build.mjs writes one."""
    folder = tmp_path / "static"
    (folder / "assets").mkdir(parents=True)
    (folder / "index.html").write_text(
        '<!doctype html><link rel="stylesheet" href="assets/main-AAAA.css">'
        '<script type="module" src="assets/main-BBBB.js"></script>'
    )
    (folder / "assets" / "main-BBBB.js").write_text("console.log('x');\n" * 200)
    (folder / "assets" / "main-AAAA.css").write_text("body{margin:0}")
    return folder


def _app(folder: Path, token: str | None = None) -> Guard:
    app = Starlette(
        routes=dashboard.routes(folder), exception_handlers={ApiError: handle_api_error}
    )
    return Guard(app, token)


def test_the_installed_bundle_is_served_at_the_root(store: ExperimentSpec) -> None:
    """The bundle the install built: / names its assets, which are served."""
    assert (STATIC / "index.html").is_file(), "the install did not build the dashboard"
    with TestClient(create_app([store])) as client:
        index = client.get("/")
        assert index.status_code == 200
        assert index.headers["content-type"].startswith("text/html")
        assert index.headers["cache-control"] == "no-cache"
        assert "script-src 'self'" in index.headers["content-security-policy"]
        names = re.findall(r'(?:src|href)="(assets/[^"]+)"', index.text)
        assert {Path(n).suffix for n in names} == {".js", ".css"}
        for name in names:
            asset = client.get(f"/{name}")
            assert asset.status_code == 200, name
            assert asset.content == (STATIC / name).read_bytes()
            assert asset.headers["cache-control"] == dashboard.ASSET_CACHE_CONTROL
        # TensorBoard's UI stays at /tensorboard/ (installed by the test extra).
        assert client.get("/tensorboard/").status_code == 200


def test_index_and_assets_headers(bundle: Path) -> None:
    with TestClient(_app(bundle)) as client:
        index = client.get("/", headers={"accept-encoding": "identity"})
        assert index.status_code == 200
        # The bundle's page, with its first requests as preloads (see the test below).
        plain = (bundle / "index.html").read_text()
        assert client.get("/?exp=x", headers={"accept-encoding": "identity"}).text == plain
        assert index.text.endswith(plain.removeprefix("<!doctype html>"))
        assert index.headers["cache-control"] == "no-cache"
        assert index.headers["x-content-type-options"] == "nosniff"
        again = client.get("/", headers={"if-none-match": index.headers["etag"]})
        assert again.status_code == 304 and again.content == b""

        js = client.get("/assets/main-BBBB.js", headers={"accept-encoding": "identity"})
        assert js.status_code == 200
        assert js.headers["content-type"].startswith("text/javascript")
        assert js.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert "content-encoding" not in js.headers
        assert js.headers["vary"] == "accept-encoding"
        css = client.get("/assets/main-AAAA.css")
        assert css.headers["content-type"].startswith("text/css")
        assert css.text == "body{margin:0}"  # under 1 KiB: not compressed
        assert "content-encoding" not in css.headers

        missing = client.get("/assets/nope.js")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_gzip(bundle: Path) -> None:
    with TestClient(_app(bundle)) as client:
        packed = client.get("/assets/main-BBBB.js", headers={"accept-encoding": "gzip"})
        assert packed.headers["content-encoding"] == "gzip"
        assert packed.content == (bundle / "assets" / "main-BBBB.js").read_bytes()
        raw = client.stream("GET", "/assets/main-BBBB.js", headers={"accept-encoding": "gzip"})
        with raw as r:
            body = b"".join(r.iter_raw())
        assert gzip.decompress(body) == (bundle / "assets" / "main-BBBB.js").read_bytes()
        assert len(body) < 200
        refused = client.get("/assets/main-BBBB.js", headers={"accept-encoding": "gzip;q=0"})
        assert "content-encoding" not in refused.headers


def test_without_a_bundle_the_page_says_how_to_build_it(tmp_path: Path) -> None:
    with TestClient(_app(tmp_path / "missing")) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert "npm --prefix web ci" in page.text
        assert client.get("/assets/main.js").status_code == 404


def test_token_header_or_login_cookie(bundle: Path) -> None:
    with TestClient(_app(bundle, TOKEN), base_url="http://127.0.0.1:6007") as client:
        for path in ["/", "/assets/main-BBBB.js"]:
            assert client.get(path).status_code == 401, path
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert client.get("/", headers=bearer).status_code == 200
        # The login URL sets the cookie and opens the dashboard.
        login = client.get(f"/login?token={TOKEN}", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/"
        assert client.cookies.get(cookie_name({"server": ("127.0.0.1", 6007)})) == cookie_value(
            TOKEN
        )
        assert client.get("/").status_code == 200
        assert client.get("/assets/main-BBBB.js").status_code == 200


def _preloads(text: str) -> list[str]:
    return re.findall(r'<link rel="preload" as="fetch" crossorigin href="([^"]+)">', text)


def test_the_index_preloads_the_pages_first_requests(bundle: Path) -> None:
    """/ names the page's first requests (web/src/api.ts) as preloads: the run list, and the
    scalars listing when the page opens on scalars; none for another experiment (exp=)."""
    runs, scalars = dashboard.RUNS_URL, dashboard.SCALARS_LIST_URL
    with TestClient(_app(bundle)) as client:
        pages = {
            query: client.get(f"/{query}")
            for query in (
                "",
                "?view=scalars&smoothing=0",
                "?view=images",
                "?exp=b",
                "?exp=b&view=text",
            )
        }
        assert _preloads(pages[""].text) == [runs, scalars]
        assert _preloads(pages["?view=scalars&smoothing=0"].text) == [runs, scalars]
        assert _preloads(pages["?view=images"].text) == [runs]
        assert _preloads(pages["?exp=b"].text) == []
        assert _preloads(pages["?exp=b&view=text"].text) == []
        # The rest of the page is the bundle's, and each variant has its own validator.
        plain = (bundle / "index.html").read_text()
        assert pages["?exp=b"].text == plain
        assert re.sub(r"<link rel=\"preload\"[^>]*>\n", "", pages[""].text) == plain
        etags = {q: r.headers["etag"] for q, r in pages.items()}
        assert len({etags[""], etags["?view=images"], etags["?exp=b"]}) == 3
        again = client.get("/?view=images", headers={"if-none-match": etags["?view=images"]})
        assert again.status_code == 304


def _boot(text: str) -> dict[str, object] | None:
    found = re.search(r'<script type="application/json" id="boardd-boot"[^>]*>(.*?)</script>', text)
    return None if found is None else json.loads(found.group(1))


def test_the_index_carries_the_apps_own_first_answers(tmp_path: Path) -> None:
    """With the data API in the app, / carries the page's first answers (the app's own, equal
    to the API's) in a JSON data block instead of preloads; names that could close the block
    or open a comment are escaped, and the block reads back to the same answers."""
    logdir = tmp_path / "logs"
    odd = "</script><!--<b>&amp;"  # a run: the directories "<" and "script><!--<b>&amp;"
    for run in ("run", odd):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(3):
                w.add_scalar("loss", 1.0 / (step + 1), step)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="exp")
    runs, scalars = dashboard.RUNS_URL, dashboard.SCALARS_LIST_URL
    with TestClient(create_app([ExperimentSpec("exp", logdir, db)])) as client:
        page = client.get("/")
        assert page.status_code == 200
        block = page.text.split('id="boardd-boot"', 1)[1].split(">", 1)[1].split("</script>")[0]
        assert "<" not in block and ">" not in block and "&" not in block
        assert _boot(page.text) == {
            runs: client.get(runs).json(),
            scalars: client.get(scalars).json(),
        }
        assert odd in _boot(page.text)[scalars]  # type: ignore[operator]
        assert _preloads(page.text) == []
        assert _boot(client.get("/?view=images").text) == {runs: client.get(runs).json()}
        assert _boot(client.get("/?exp=exp").text) is None
        # A new commit changes the page (and its validator) with the answers it carries.
        etag = page.headers["etag"]
        assert client.get("/", headers={"if-none-match": etag}).status_code == 304
        with SummaryWriter(str(logdir / "later")) as w:
            w.add_scalar("loss", 0.5, 0)
        ingest(logdir, db, experiment="exp")
        later = client.get("/", headers={"if-none-match": etag})
        assert later.status_code == 200
        names = [r["name"] for r in _boot(later.text)[runs]]  # type: ignore[index]
        assert names == ["run", odd, "later"]


def test_the_first_answers_pass_the_token_guard_as_the_page_did(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_scalar("loss", 1.0, 0)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="exp")
    with TestClient(create_app([ExperimentSpec("exp", logdir, db)], token=TOKEN)) as client:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        page = client.get("/", headers=bearer)
        assert _boot(page.text) == {
            dashboard.RUNS_URL: client.get(dashboard.RUNS_URL, headers=bearer).json(),
            dashboard.SCALARS_LIST_URL: client.get(
                dashboard.SCALARS_LIST_URL, headers=bearer
            ).json(),
        }


def _since(text: str) -> str | None:
    found = re.search(r'id="boardd-boot" data-stream-since="([^"]*)"', text)
    return None if found is None else html.unescape(found.group(1))


@pytest.mark.parametrize("names", [("exp",), ("a", "b:c")])
def test_the_page_names_the_stream_cursor_its_first_answers_were_made_at(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    """The page's first stream starts from the cursor read before its first answers were made
    (web/src/api.ts): a commit between the answers and the stream's opening is sent to it.
    The cursor is the one a stream over every experiment opens at, in the stream's format."""
    specs = []
    for i, name in enumerate(names):
        logdir = tmp_path / f"logs{i}"
        with SummaryWriter(str(logdir / "run")) as w:
            for step in range(i + 2):
                w.add_scalar("loss", 1.0, step)
        db = tmp_path / f"store{i}.sqlite"
        ingest(logdir, db, experiment=name)
        specs.append(ExperimentSpec(name, logdir, db))
    server = ThreadedServer(create_app(specs, stream_heartbeat=0.2)).start()
    streams: list[Stream] = []
    try:
        page = httpx.get(server.url + "/")
        since = _since(page.text)
        assert since is not None and _boot(page.text) is not None
        opened = Stream(server.url)
        streams.append(opened)
        assert opened.opened() == since  # nothing committed since the page
        # A run made after the page's answers: the stream from the page's cursor sends it.
        with SummaryWriter(str(specs[0].logdir / "later")) as w:
            w.add_scalar("loss", 0.5, 0)
        ingest(specs[0].logdir, specs[0].db, experiment=names[0])
        resumed = Stream(server.url, params={"since": since})
        streams.append(resumed)
        assert resumed.opened() == since
        events = resumed.events(2)
        assert ("run", "later", "created") in {
            (e.event, e.data.get("run"), e.data.get("change")) for e in events
        }
        # No first answers (another experiment's page): no cursor either.
        assert _since(httpx.get(server.url + f"/?exp={names[0]}").text) is None
    finally:
        for stream in streams:
            stream.close()
        server.stop()
