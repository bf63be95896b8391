"""The check that every test gives back its threads and file descriptors (a pytest plugin,
loaded by tests/conftest.py; it imports nothing of boardd, so its own tests run it cheaply)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

#: How long a test's threads and descriptors may take to go after it ends (a thread told to
#: stop is joined by its owner, but an executor's idle worker may need a moment to notice).
LEAK_GRACE_SECONDS = 2.0


def _open_fds() -> dict[int, str]:
    """This process's open descriptors and what each points at."""
    out: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            out[fd] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # closed between the listing and the readlink (the listing's own fd)
    return out


def _leaks(
    threads_before: set[threading.Thread], fds_before: dict[int, str]
) -> tuple[list[threading.Thread], dict[int, str]]:
    threads = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    # SQLite keeps the descriptor of a closed connection open while another connection of
    # this process has the same file open (closing it would drop that one's POSIX locks):
    # a file that was already open before is not a new leak.
    targets_before = set(fds_before.values())
    fds = {
        fd: target
        for fd, target in _open_fds().items()
        if fds_before.get(fd) != target and target not in targets_before
    }
    return threads, fds


class _Baseline:
    """Threads and descriptors at one moment, to compare with later."""

    def __init__(self) -> None:
        self.threads = set(threading.enumerate())
        self.fds = _open_fds()

    def check(self, what: str) -> None:
        """Fails if threads or descriptors opened since are still there after a grace time."""
        deadline = time.monotonic() + LEAK_GRACE_SECONDS
        while True:
            threads, fds = _leaks(self.threads, self.fds)
            if (not threads and not fds) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        problems = []
        if threads:
            names = ", ".join(sorted(_describe(t) for t in threads))
            problems.append(f"threads still running: {names}")
        if fds:
            targets = ", ".join(f"{fd} -> {target}" for fd, target in sorted(fds.items()))
            problems.append(f"descriptors still open: {targets}")
        if problems:
            pytest.fail(f"{what} leaked: " + "; ".join(problems), pytrace=False)


def _describe(thread: threading.Thread) -> str:
    """A thread's name and what it runs (an unnamed thread says nothing by its name)."""
    target = getattr(thread, "_target", None)
    if target is None:
        kind = type(thread)
        return f"{thread.name} ({kind.__module__}.{kind.__qualname__})"
    return f"{thread.name} ({getattr(target, '__qualname__', target)!s})"


def _checked(node: pytest.Item | pytest.Collector) -> bool:
    return node.get_closest_marker("allow_leaks") is None and os.path.isdir("/proc/self/fd")


#: Fixtures of a wider scope whose resources (a served app's worker threads and read
#: connections) may be created lazily inside whichever test uses them first.
_SHARED_SCOPES = frozenset({"class", "module", "package"})


def _uses_shared_fixtures(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs[-1].scope in _SHARED_SCOPES
        for name, defs in info.name2fixturedefs.items()
        if defs and name != "no_leaks_per_module"
    )


@pytest.fixture(autouse=True, scope="module")
def no_leaks_per_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a module whose tests and fixtures leave a thread running or a descriptor open.

    Whatever owns a thread, a connection or a file handle has ``close()`` (ARCHITECTURE.md),
    and a daemon that runs for weeks cannot afford one lost per request. This fixture is set
    up before the module's other fixtures and torn down after them, so everything they held
    must be gone by then.
    """
    if not _checked(request.node):
        yield
        return
    baseline = _Baseline()
    yield
    baseline.check(f"module {request.node.name}")


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that leaves a thread running or a file descriptor open.

    A test that uses a fixture of a wider scope is judged with its module instead: what such
    a fixture creates on first use belongs to the fixture, not to the test. A test marked
    ``allow_leaks`` (with the reason) is not checked.
    """
    if not _checked(request.node) or _uses_shared_fixtures(request.node):
        yield
        return
    baseline = _Baseline()
    yield
    baseline.check(f"test {request.node.name}")
