"""``boardd serve --path-prefix``: every page and route under the prefix (a reverse proxy that
forwards /PREFIX/... unchanged), nothing outside it; a real server (boardd's) in a thread."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from boardd.api.app import create_app
from boardd.api.prefix import PathPrefix, route_path
from boardd.api.tensorboard import webui
from boardd.config import ExperimentSpec, SettingsError, parse_path_prefix
from tests.conftest import ThreadedServer

PREFIX = "/proxy/boardd"
TOKEN = "prefix-token-0123456789abcdef"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("", ""),
        ("/", ""),
        ("tb", "/tb"),
        ("/tb/", "/tb"),
        ("/proxy/boardd", "/proxy/boardd"),
        ("a.b/c_d~e-f", "/a.b/c_d~e-f"),
    ],
)
def test_prefixes_are_normalised(given: str, expected: str) -> None:
    assert parse_path_prefix(given) == expected


@pytest.mark.parametrize(
    "given", ["/a//b", "/a/../b", "/./a", "/a b", "/a?b", "/a#b", "/%2e", "/ä"]
)
def test_other_prefixes_are_refused(given: str) -> None:
    with pytest.raises(SettingsError, match="--path-prefix"):
        parse_path_prefix(given)


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        ("/tb/data/runs", "/tb", "/data/runs"),
        ("/tb", "/tb", ""),
        ("/tbx/data", "/tb", "/tbx/data"),
        ("/data/runs", "", "/data/runs"),
    ],
)
def test_route_path(path: str, root: str, expected: str) -> None:
    assert route_path({"path": path, "root_path": root}) == expected


@pytest.fixture(scope="module")
def servers(spec_all: ExperimentSpec) -> Iterator[tuple[str, str]]:
    """(the prefixed server's URL with its prefix, the same app's URL without one)."""
    app = create_app([spec_all], token=TOKEN)
    prefixed = ThreadedServer(PathPrefix(app, PREFIX, root_folders=webui.ROOT_FOLDERS)).start()
    plain = ThreadedServer(create_app([spec_all], token=TOKEN)).start()
    try:
        yield prefixed.url, plain.url
    finally:
        prefixed.stop()
        plain.stop()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs",
        "/api/v1/scalars?plugin=scalars&run=train",
        "/data/runs",
        "/data/plugin/scalars/tags",
        "/tensorboard/data/plugins_listing",
        "/experiment/exp/data/runs",
    ],
)
def test_routes_answer_under_the_prefix_as_without_it(servers: tuple[str, str], path: str) -> None:
    prefixed, plain = servers
    expected = httpx.get(plain + path, headers=AUTH)
    assert expected.status_code == 200, expected.text
    # Twice: the second is a cache hit, answered before routing (CachedAnswers) for /data.
    for _ in range(2):
        got = httpx.get(prefixed + PREFIX + path, headers=AUTH)
        assert got.status_code == 200, got.text
        assert got.content == expected.content


@pytest.mark.parametrize("path", ["/", "/api/v1/health", "/data/runs", "/proxy", "/proxy/boarddx/"])
def test_nothing_answers_outside_the_prefix(servers: tuple[str, str], path: str) -> None:
    got = httpx.get(servers[0] + path, headers=AUTH)
    assert got.status_code == 404
    assert got.json()["error"]["code"] == "not_found"
    assert f"{PREFIX}/" in got.json()["error"]["message"]


def test_the_prefix_alone_redirects_into_it(servers: tuple[str, str]) -> None:
    got = httpx.get(servers[0] + PREFIX + "?x=1", headers=AUTH)
    assert got.status_code == 308
    assert got.headers["location"] == PREFIX + "/?x=1"


def test_redirects_stay_under_the_prefix(servers: tuple[str, str]) -> None:
    got = httpx.get(servers[0] + PREFIX + "/tensorboard", headers=AUTH)
    assert got.status_code == 307
    assert got.headers["location"] == PREFIX + "/tensorboard/"


def test_the_login_url_under_the_prefix(servers: tuple[str, str]) -> None:
    """The login URL sets the cookie and goes on to the dashboard under the prefix; the cookie
    then opens every route there."""
    base = servers[0] + PREFIX
    assert httpx.get(base + "/api/v1/runs").status_code == 401
    login = httpx.get(base + "/login", params={"token": TOKEN})
    assert login.status_code == 303
    assert login.headers["location"] == PREFIX + "/"
    cookies = login.cookies
    assert len(cookies) == 1
    assert httpx.get(base + "/api/v1/runs", cookies=cookies).status_code == 200
    assert httpx.get(base + "/", cookies=cookies).status_code == 200


def test_the_uis_root_folders_are_served_from_the_root_too(servers: tuple[str, str]) -> None:
    """TensorBoard's UI asks for its fonts at /font-roboto/ whatever the prefix."""
    zip_path = webui.webfiles_path()
    assert zip_path is not None  # the test extra installs tensorboard
    import zipfile

    with zipfile.ZipFile(zip_path) as zf:
        font = next(n for n in zf.namelist() if n.startswith("font-roboto/") and n.endswith("2"))
    got = httpx.get(f"{servers[0]}/{font}", headers=AUTH)
    assert got.status_code == 200
    assert got.content == httpx.get(f"{servers[1]}/{font}", headers=AUTH).content
