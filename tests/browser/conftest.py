"""Fixtures of the browser tests: Debian's chromium driven by Playwright (Playwright's own
browser download is not used), ``boardd serve`` as a real subprocess (the daemon tests'
``serve`` fixture), and the artifacts (screenshots) directory.

Without /usr/bin/chromium (or Playwright) these tests skip, with the reason; in CI (env ``CI``
set, as ``.ci/run`` sets it) they fail instead."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import pytest

# The daemon tests' fixtures and report hook (the daemons' logs on failure).
from tests.daemon.conftest import pytest_runtest_makereport, serve  # noqa: F401

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Response

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
#: How long the UI may take to show something (a loaded 2-core machine is slow to render).
UI_TIMEOUT_MS = 30_000

T = TypeVar("T")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skips the test, or fails it in CI (where the browser tests must run)."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: the browser tests must run here)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless chromium (Debian's), one per test module."""
    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} is missing: apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a test saves its screenshots: ``$BOARDD_TEST_ARTIFACTS/<test name>/`` if that
    variable is set, else the test's tmp_path."""
    root = os.environ.get("BOARDD_TEST_ARTIFACTS")
    if not root:
        return tmp_path
    folder = Path(root) / re.sub(r"[^\w.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Watched:
    """A page with what it reported: console errors, uncaught exceptions, responses."""

    page: Page
    artifacts: Path
    errors: list[str] = field(default_factory=list)
    responses: list[Response] = field(default_factory=list)

    def screenshot(self, name: str) -> Path:
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def until(self, found: Callable[[], T | None], timeout_ms: int = UI_TIMEOUT_MS) -> T:
        """What ``found()`` returns once it is not None, polled while the page runs (its
        events, such as ``responses``, are delivered during Playwright's waits)."""
        waited = 0
        while (value := found()) is None:
            if waited >= timeout_ms:
                pytest.fail(f"nothing found after {timeout_ms} ms", pytrace=True)
            self.page.wait_for_timeout(50)
            waited += 50
        return value

    def assert_no_errors(self) -> None:
        assert not self.errors, "the page reported errors:\n" + "\n".join(self.errors)


@pytest.fixture
def page(browser: Browser, artifacts: Path) -> Iterator[Watched]:
    """A fresh browser context and page; console errors and page errors are collected (and
    the page is screenshotted as ``last.png`` at the end, pass or fail)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(UI_TIMEOUT_MS)
    opened = context.new_page()
    watched = Watched(opened, artifacts)

    def on_console(message: object) -> None:
        from playwright.sync_api import ConsoleMessage

        assert isinstance(message, ConsoleMessage)
        if message.type == "error":
            where = message.location.get("url", "")
            watched.errors.append(f"console error: {message.text} ({where})")

    def on_response(response: Response) -> None:
        watched.responses.append(response)
        if response.status >= 400:
            watched.errors.append(
                f"HTTP {response.status}: {response.request.method} {response.url}"
            )

    opened.on("console", on_console)
    opened.on("pageerror", lambda exc: watched.errors.append(f"page error: {exc}"))
    opened.on("response", on_response)
    try:
        yield watched
    finally:
        try:
            watched.screenshot("last")
        finally:
            context.close()
