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


def test_answers_superseded_by_commits_are_replaced_not_kept(tmp_path: Path) -> None:
    """On live data every commit supersedes the cached answers: the cache holds one answer per
    distinct request (two with the fast alias), however many commits pass, and a request
    repeated between commits still hits."""
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    _write(logdir, range(10))
    requests = [
        "/api/v1/scalars?plugin=scalars&run=run&tag=loss",
        "/api/v1/scalars?plugin=scalars&run=run&tag=loss&format=columns",
        "/api/v1/scalars/list?plugin=scalars",
        "/api/v1/runs",
        "/data/plugin/scalars/scalars?run=run&tag=loss",
        "/data/plugin/scalars/tags",
    ]
    generations = 25
    with WriteSession(db, logdir) as session:
        ingestor = Ingestor(session.writer, logdir)
        ingestor.run_pass()
        writer = session.writer
        app = create_app(
            [ExperimentSpec("exp", logdir, db)], generation={"exp": lambda: writer.generation}
        )
        with TestClient(app) as client:
            etags: dict[str, str] = {}
            for i in range(generations):
                # A file per commit (closed: complete), as tensorboardX names them.
                with SummaryWriter(str(logdir / "run"), filename_suffix=f".{i}") as w:
                    w.add_scalar("loss", float(10 + i), 10 + i)
                before = writer.generation
                ingestor.run_pass()
                assert writer.generation > before
                for url in requests:
                    response = client.get(url)
                    assert response.status_code == 200, response.text
                    assert response.headers["etag"] != etags.get(url)  # new data, new validator
                    etags[url] = response.headers["etag"]
                    again = client.get(url, headers={"if-none-match": etags[url]})
                    assert again.status_code == 304
            cache = client.get("/api/v1/health").json()["cache"]
            # Each generic request is filed under its key and its fast alias: at most 2 each.
            assert cache["entries"] <= 2 * len(requests), cache
            assert cache["hits"] >= generations * len(requests), cache  # the 304s were hits
            last = client.get(requests[0]).json()["run"]["loss"]
            assert [p["step"] for p in last][-1] == 10 + generations - 1
            # A superseded validator is answered in full, never 304.
            old = client.get(requests[0], headers={"if-none-match": '"0"'})
            assert old.status_code == 200


def test_tensorboard_routes_answer_hits_before_parsing_and_keep_their_errors(
    tmp_path: Path,
) -> None:
    """TensorBoard's GET routes look in the cache before their handler runs: a hit is the
    handler's answer, a commit is never hidden, and what the handler refuses it still refuses
    with its own error (a missing parameter before an unknown experiment)."""
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
        with TestClient(app) as client:
            for prefix in ("", "/tensorboard", "/experiment/exp", "/tensorboard/experiment/exp"):
                url = f"{prefix}/data/plugin/scalars/scalars?run=run&tag=loss"
                first = client.get(url)
                assert [p[1] for p in first.json()] == list(range(10))
                hits = client.get("/api/v1/health").json()["cache"]["hits"]
                again = client.get(url)
                assert again.content == first.content
                assert again.headers["etag"] == first.headers["etag"]
                assert client.get("/api/v1/health").json()["cache"]["hits"] == hits + 1
                assert (
                    client.get(url, headers={"if-none-match": first.headers["etag"]}).status_code
                    == 304
                )
            missing = client.get("/experiment/nope/data/plugin/scalars/scalars?run=run")
            assert missing.status_code == 400 and "tag=" in missing.text
            unknown = client.get("/experiment/nope/data/plugin/scalars/scalars?run=run&tag=loss")
            assert unknown.status_code == 404 and "nope" in unknown.text
            no_tag = client.get("/data/plugin/scalars/scalars?run=run&tag=nothing")
            assert no_tag.status_code == 404
            assert client.get("/data/plugin/scalars/scalars?run=run&tag=nothing").status_code == 404

            _write(logdir, range(10, 12))
            ingestor.run_pass()
            fresh = client.get("/data/plugin/scalars/scalars?run=run&tag=loss")
            assert [p[1] for p in fresh.json()][-1] == 11
