"""The writer-generation front cache: hits skip the store, a commit is never hidden."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.ingest import Ingestor, ingest_logdir
from boardd.store.session import WriteSession


def _write(logdir: Path, steps: range) -> None:
    with SummaryWriter(str(logdir / "run")) as w:
        for step in steps:
            w.add_scalar("loss", float(step), step)


def test_front_cache_follows_the_writers_generation(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    _write(logdir, range(10))
    with WriteSession(db, logdir) as session:
        ingestor = Ingestor(session.writer, logdir)
        ingestor.run_pass()
        writer = session.writer
        app = create_app(
            [ExperimentSpec("exp", logdir, db)], generation={"exp": lambda: writer.generation}
        )
        url = "/api/v1/scalars?plugin=scalars&run=run&tag=loss"
        with TestClient(app) as client:
            first = client.get(url)
            assert [p["step"] for p in first.json()["run"]["loss"]] == list(range(10))
            hits_before = client.get("/api/v1/health").json()["cache"]["hits"]
            second = client.get(url)
            assert second.content == first.content
            assert client.get("/api/v1/health").json()["cache"]["hits"] == hits_before + 1
            # Another spelling of the same request is a different fast key, same answer.
            assert client.get(url + "&run=run").json() == first.json()

            _write(logdir, range(10, 15))
            generation = writer.generation
            ingestor.run_pass()
            assert writer.generation > generation
            third = client.get(url)
            assert [p["step"] for p in third.json()["run"]["loss"]][-1] == 14
            assert third.headers["etag"] != first.headers["etag"]
            old = client.get(url, headers={"if-none-match": first.headers["etag"]})
            assert old.status_code == 200


def test_no_front_cache_without_a_writer_generation(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    _write(logdir, range(3))
    ingest_logdir(logdir, db)
    app = create_app([ExperimentSpec("exp", logdir, db)], generation={"exp": lambda: None})
    with TestClient(app) as client:
        url = "/api/v1/scalars?plugin=scalars&run=run&tag=loss"
        assert client.get(url).status_code == 200
        assert client.get(url).status_code == 200
        cache = client.get("/api/v1/health").json()["cache"]
        # Served from the per-series cache (one hit), not from a front key.
        assert cache["hits"] == 1
