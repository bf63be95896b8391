"""What ``boardd serve`` starts only after its first answer (the lineage store, the hparams
preload): the signal that the first answer has been sent (bench/bench_tensorboard.py, start)."""

from __future__ import annotations

import threading

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from boardd.daemon.service import first_answer_sets
from tests.conftest import ThreadedServer


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
