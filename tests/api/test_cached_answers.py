"""TensorBoard's cached answers sent before routing (CachedAnswers): the same bytes as the
route's own answer, and only for what the route would answer from the cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.ingest import Ingestor
from boardd.store.session import WriteSession


class Counting:
    """The app's router, counting the HTTP requests that reach it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.http = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.http += 1
        await self.app(scope, receive, send)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Counting, Ingestor, Path]]:
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    with SummaryWriter(str(logdir / "run")) as w:
        for step in range(500):  # a JSON answer over the gzip threshold
            w.add_scalar("loss", step / 7, step)
    with WriteSession(db, logdir) as session:
        ingestor = Ingestor(session.writer, logdir)
        ingestor.run_pass()
        writer = session.writer
        app = create_app(
            [ExperimentSpec("exp", logdir, db)], generation={"exp": lambda: writer.generation}
        )
        router = Counting(app.router)
        app.router = router  # type: ignore[assignment]
        with TestClient(app) as client:
            yield client, router, ingestor, logdir


def _same(a: Any, b: Any) -> None:
    assert (a.status_code, a.headers.raw, a.content) == (b.status_code, b.headers.raw, b.content)


@pytest.mark.parametrize(
    "url",
    [
        "/data/plugin/scalars/scalars?run=run&tag=loss",
        "/tensorboard/data/plugin/scalars/scalars?run=run&tag=loss",
        "/experiment/exp/data/plugin/scalars/scalars?run=run&tag=loss",
        "/tensorboard/experiment/exp/data/runs",
        "/data/plugin/scalars/scalars?run=run&tag=loss&format=csv",
        "/data/plugin/scalars/tags",
    ],
)
def test_a_hit_is_the_routes_answer_byte_for_byte_without_routing(
    served: tuple[TestClient, Counting, Ingestor, Path], url: str
) -> None:
    client, router, _, _ = served
    for variant, headers in enumerate(
        ({"accept-encoding": "identity"}, {"accept-encoding": "gzip"})
    ):
        # Another spelling of the query is another entry: built by the route, then a hit.
        spelled = f"{url}{'&' if '?' in url else '?'}variant={variant}"
        routed = router.http
        built = client.get(spelled, headers=headers)
        assert built.status_code == 200
        assert router.http == routed + 1
        hit = client.get(spelled, headers=headers)
        assert router.http == routed + 1  # answered before routing
        _same(hit, built)
        not_modified = client.get(
            spelled, headers={**headers, "if-none-match": built.headers["etag"]}
        )
        assert not_modified.status_code == 304
        assert router.http == routed + 1
        assert not_modified.headers["etag"] == built.headers["etag"]
    if url.endswith("tag=loss"):  # 500 points: over the threshold, sent compressed
        assert hit.headers.get("content-encoding") == "gzip"
    if "csv" in url:
        assert hit.headers["content-type"] == "text/csv; charset=utf-8"


def test_the_route_answers_what_is_not_a_hit(
    served: tuple[TestClient, Counting, Ingestor, Path],
) -> None:
    client, router, ingestor, logdir = served
    url = "/data/plugin/scalars/scalars?run=run&tag=loss"
    first = client.get(url)
    routed = router.http
    # HEAD, an unknown experiment, a route that does not look in the cache: routed.
    assert client.head(url).status_code == 200
    assert (
        client.get("/experiment/nope/data/plugin/scalars/scalars?run=run&tag=loss").status_code
        == 404
    )
    assert client.get("/data/environment").status_code == 200
    assert router.http == routed + 3
    # A commit: the entry's version is no longer current, so the route builds the answer again.
    with SummaryWriter(str(logdir / "run"), filename_suffix=".more") as w:
        w.add_scalar("loss", 1.0, 500)
    ingestor.run_pass()
    fresh = client.get(url)
    assert router.http == routed + 4
    assert fresh.headers["etag"] != first.headers["etag"]
    assert [p[1] for p in fresh.json()][-1] == 500
