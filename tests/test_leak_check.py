"""The leak check (tests/leakcheck.py) fails tests that leave threads or descriptors behind."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The plugin as the conftest of a pytest run of its own, with a short grace time.
CONFTEST = (
    Path(__file__)
    .with_name("leakcheck.py")
    .read_text()
    .replace("LEAK_GRACE_SECONDS = 2.0", "LEAK_GRACE_SECONDS = 0.2")
)


def _run(pytester: pytest.Pytester, source: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_inner=source)
    return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")


def test_a_thread_left_running_fails_its_test(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
import threading

STOP = threading.Event()

def test_leaks():
    threading.Thread(target=STOP.wait, name="left-behind", daemon=True).start()

def test_after():
    STOP.set()
""",
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test test_leaks leaked: threads still running: left-behind*"])


def test_a_file_left_open_fails_its_test(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
KEEP = []

def test_leaks(tmp_path):
    KEEP.append(open(tmp_path / "f", "w"))
""",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*descriptors still open: * -> *f*"])


def test_what_a_module_fixture_holds_is_judged_with_the_module(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
import pytest

@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    files = []
    yield files
    for f in files:
        f.close()

def test_opens_lazily(shared, tmp_path):
    shared.append(open(tmp_path / "f", "w"))

def test_other(shared):
    pass
""",
    )
    result.assert_outcomes(passed=2)


def test_a_module_fixture_that_never_closes_fails_the_module(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
import pytest

@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return open(tmp_path_factory.mktemp("m") / "f", "w")

def test_uses(shared):
    pass
""",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*module test_inner.py leaked: descriptors still open*"])
