"""What ``boardd serve`` starts only after its first answer (a restart's catch-up, the lineage
store, the hparams preload, the disk cache: tests/test_cache.py): the signal that the first
answer has been sent, and the catch-up waiting for it (bench/bench_tensorboard.py, start)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from tensorboardX import SummaryWriter

from boardd.cli import main
from boardd.config import ExperimentSpec, ServeSettings
from boardd.daemon import runner as runner_module
from boardd.daemon.runner import ExperimentRunner
from boardd.daemon.service import Service, first_answer_sets
from boardd.store.connection import open_reader
from tests.conftest import ThreadedServer, ingest
from tests.daemon.conftest import wait_until


async def hello(request: Request) -> Response:
    return PlainTextResponse("hello")


def test_the_first_complete_answer_sets_the_signal() -> None:
    answered = threading.Event()
    app = first_answer_sets(Starlette(routes=[Route("/hello", hello)]), answered)
    server = ThreadedServer(app).start()
    try:
        # The lifespan (the server's start) is not an answer.
        assert not answered.is_set()
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/hello").text == "hello"
            assert answered.is_set()
            # Later answers pass through unchanged.
            assert client.get("/hello").text == "hello"
    finally:
        server.stop()


def test_an_error_answer_counts_too() -> None:
    answered = threading.Event()
    app = first_answer_sets(Starlette(routes=[Route("/hello", hello)]), answered)
    server = ThreadedServer(app).start()
    try:
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/nowhere").status_code == 404
        assert answered.is_set()
    finally:
        server.stop()


# -- a restart's catch-up starts after the first answer --------------------------------------------


class WatchedEvent(threading.Event):
    """An event that counts the waits on it: the runner polls the signal in short waits."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(timeout)


def _write(directory: Path, steps: range) -> None:
    # A file of its own (two writers within a second would otherwise share a name).
    writer = SummaryWriter(str(directory), flush_secs=1, filename_suffix=f".{steps.start}")
    for step in steps:
        writer.add_scalar("loss", float(step), step)
    writer.close()


def _steps(db: Path) -> list[int]:
    connection = open_reader(db)
    try:
        return [int(s) for (s,) in connection.execute("SELECT step FROM scalar_points ORDER BY 1")]
    finally:
        connection.close()


def test_a_restart_catches_up_once_the_first_answer_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fallback (no request at all) is out of reach here: only the signal starts it.
    monkeypatch.setattr(runner_module, "CATCH_UP_AFTER_SECONDS", 600.0)
    logdir, db = tmp_path / "logs", tmp_path / "s.sqlite"
    _write(logdir / "train", range(3))
    ingest(logdir, db)  # the store a restart finds
    _write(logdir / "train", range(3, 6))  # written while the daemon was down (a new file)
    spec = ExperimentSpec("default", logdir, db)  # as `ingest` named it
    answered = WatchedEvent()
    runner = ExperimentRunner(spec, ServeSettings(experiments=(spec,)), answered=answered)
    runner.start()
    try:
        assert runner.opened.wait(30)
        # Waiting, seen from inside: the runner's thread (the catch-up runs on it, after the
        # wait) has gone back to the signal every time one of its short waits (0.05 s at
        # most) ran out, 20 of them: twice the default fallback's, however slow the machine.
        # A runner that does not wait, or gives up sooner, catches up instead and is caught.
        wait_until(
            lambda: answered.waits >= 20 or runner.status().state == "live",
            what="the runner waiting for the first answer",
        )
        assert runner.status().state == "catching_up"
        assert _steps(db) == [0, 1, 2]  # the store is served as it was
        answered.set()
        wait_until(lambda: runner.status().state == "live", what="live")
        assert _steps(db) == list(range(6))
    finally:
        runner.stop()


def test_a_new_store_catches_up_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "CATCH_UP_AFTER_SECONDS", 600.0)
    logdir, db = tmp_path / "logs", tmp_path / "s.sqlite"
    _write(logdir / "train", range(4))
    spec = ExperimentSpec("new", logdir, db)
    runner = ExperimentRunner(spec, ServeSettings(experiments=(spec,)), answered=threading.Event())
    runner.start()
    try:
        # Nothing to answer from until it has caught up: it does not wait for an answer.
        wait_until(lambda: runner.status().state == "live", what="live")
        assert _steps(db) == list(range(4))
    finally:
        runner.stop()


# -- the cyclic collector is off during a start-up -------------------------------------------------


def test_the_warm_up_turns_the_collector_back_on(tmp_path: Path) -> None:
    # `boardd serve` (the console script) starts with gc disabled (boardd.cli.main); the
    # warm-up, once the first answer is sent, freezes what the start made and enables it.
    spec = ExperimentSpec("default", tmp_path / "logs", tmp_path / "s.sqlite")
    service = Service(ServeSettings(experiments=(spec,)))
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        service._answered.set()  # the first answer has been sent
        service._start_warm_up()
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen
        assert service.warm.is_set()
    finally:
        gc.enable()
        gc.unfreeze()


def test_only_the_serve_console_script_turns_the_collector_off() -> None:
    # In-process callers of main() (tests, embedders) keep their collector as it is.
    assert gc.isenabled()
    with pytest.raises(SystemExit):  # --help exits once printed
        main(["serve", "--help"])
    assert gc.isenabled()
