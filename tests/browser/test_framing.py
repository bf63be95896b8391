"""Which pages may show boardd's UIs in a frame (``frame-ancestors``): a notebook on this
machine's loopback names can, a page elsewhere cannot, unless its origin is given. Chromium,
real HTTP (the embedding pages too: Chromium frames a loopback server only from a page that
came from one)."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Frame
from tensorboardX import SummaryWriter

from tests.browser.conftest import Watched
from tests.daemon.conftest import ServeFactory

#: What the frames show: boardd's dashboard and TensorBoard's UI.
FRAMED = ["/", "/tensorboard/"]


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    with SummaryWriter(str(root / "train")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    return root


@contextlib.contextmanager
def embedding_page(address: str) -> Iterator[int]:
    """An HTTP server on ``address`` whose every page frames the path given in its query
    (``/?http://...``) once per FRAMED path; yields its port."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            base = self.path.partition("?")[2]
            frames = "".join(
                f'<iframe src="{base}{p}" width="600" height="400"></iframe>' for p in FRAMED
            )
            body = f"<!doctype html><title>notebook</title>{frames}".encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def framed(page: Watched, page_url: str, base: str) -> list[Frame]:
    """The frames of ``page_url`` framing ``base``'s UIs, once loaded."""
    page.page.goto(f"{page_url}/?{base}")
    page.page.wait_for_load_state("load")
    frames = page.page.main_frame.child_frames
    assert len(frames) == len(FRAMED)
    return frames


def shown(page: Watched, frames: list[Frame], base: str) -> None:
    """Waits until the frames show ``base``'s UIs (a frame's URL is set once its document
    commits)."""
    wanted = [f"{base}{path}" for path in FRAMED]
    page.until(lambda: [f.url for f in frames] == wanted or None)
    for frame in frames:
        frame.wait_for_load_state("load")


def test_a_notebook_on_localhost_may_frame_the_uis(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    daemon = serve(logdir)
    base = f"http://127.0.0.1:{daemon.port}"
    with embedding_page("127.0.0.1") as port:
        for origin in [f"http://localhost:{port}", f"http://127.0.0.1:{port}"]:
            frames = framed(page, origin, base)
            shown(page, frames, base)
            for frame in frames:
                assert frame.evaluate("document.body.children.length") > 0, frame.url
        page.screenshot("notebook")
    # Nothing refused by a policy. (A page of another site, localhost's here, framing
    # TensorBoard's UI gets no localStorage in headless Chromium, and the UI logs that: the
    # browser's partitioning of third-party storage, not boardd's doing.)
    assert not [e for e in page.errors if "Content Security Policy" in e or "frame" in e], (
        page.errors
    )


def test_a_page_elsewhere_may_not_unless_given(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    # Another origin than the loopback names: an address of 127.0.0.0/8 other than 127.0.0.1
    # stands in for a site elsewhere (Chromium would not let a public one frame loopback).
    daemon = serve(logdir)
    base = f"http://127.0.0.1:{daemon.port}"
    with embedding_page("127.0.0.2") as port:
        elsewhere = f"http://127.0.0.2:{port}"
        frames = framed(page, elsewhere, base)

        # The refusals (the frames' error pages, the console's messages) may come after the
        # page's load.
        def refused() -> list[str] | None:
            refusals = [e for e in page.errors if "frame-ancestors" in e]
            urls = [frame.url for frame in frames]
            done = len(refusals) == len(FRAMED) and all(
                u.startswith("chrome-error://") for u in urls
            )
            return refusals if done else None

        refusals = page.until(refused)
        assert all(base in refusal for refusal in refusals), refusals
        page.errors.clear()

        allowed = serve(logdir, "--frame-ancestor", "http://127.0.0.2:*")
        base = f"http://127.0.0.1:{allowed.port}"
        shown(page, framed(page, elsewhere, base), base)
    assert not [e for e in page.errors if "Content Security Policy" in e], page.errors
