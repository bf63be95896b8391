"""Progress of a catch-up: a line on a terminal, log lines otherwise, nothing when it is quick."""

from __future__ import annotations

import io
import logging
import os
import re
from pathlib import Path

import pytest

from boardd.ingest.progress import (
    CATCH_UP_REPORT_SECONDS,
    ProgressLine,
    ProgressLog,
    catch_up_reporter,
    report_interval,
)
from tests.daemon.conftest import ServeFactory, wait_until
from tests.store.conftest import LiveWriter, write_mixed

#: A progress log line: done / total MB, percent, rate, ETA.
LINE = re.compile(r"catching up: [\d.]+ / [\d.]+ MB {2}[\d.]+% {2}[\d.]+ MB/s {2}ETA [\d.]+ s")


class Clock:
    """A clock the test moves by hand (seconds, as :func:`time.monotonic` counts them)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_log_lines_every_interval_and_none_for_a_quick_job(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("test.progress")
    caplog.set_level(logging.INFO, logger="test.progress")
    clock = Clock()
    quick = ProgressLog(logger, "exp: catching up: ", 30.0, clock=clock)
    for done in range(0, 100, 10):
        quick(done * 2**20, 100 * 2**20)
        clock.now += 2.5  # 25 s in all: short of the interval
    assert caplog.messages == []
    report = ProgressLog(logger, "exp: catching up: ", 5.0, clock=clock)
    report(1 * 2**20, 100 * 2**20)
    clock.now += 4.5
    report(5 * 2**20, 100 * 2**20)
    assert caplog.messages == []
    clock.now += 0.5  # the interval, to the second
    report(10 * 2**20, 100 * 2**20)
    clock.now += 4.5
    report(11 * 2**20, 100 * 2**20)  # too soon after the last line
    assert len(caplog.messages) == 1
    assert LINE.search(caplog.messages[0]), caplog.messages
    assert caplog.messages[0].startswith(
        "exp: catching up: 10.5 / 104.9 MB  10.0%  2.1 MB/s  ETA 45.0 s"
    )
    clock.now += 0.5
    report(20 * 2**20, 100 * 2**20)  # an interval after the last line
    assert len(caplog.messages) == 2
    assert caplog.messages[1].startswith("exp: catching up: 21.0 / 104.9 MB  20.0%")


def test_terminal_gets_a_line_anything_else_the_log() -> None:
    logger = logging.getLogger("test.progress")
    assert isinstance(catch_up_reporter("exp", io.StringIO(), logger), ProgressLog)
    primary, secondary = os.openpty()
    try:
        with os.fdopen(secondary, "w", closefd=False) as tty:
            reporter = catch_up_reporter("exp", tty, logger)
            assert isinstance(reporter, ProgressLine)
    finally:
        os.close(primary)
        os.close(secondary)


def test_terminal_line_waits_for_its_delay_then_clears() -> None:
    out = io.StringIO()
    clock = Clock()
    line = ProgressLine(out, prefix="exp: catching up ", delay=5.0, clock=clock)
    line(1, 10)
    clock.now += 4.5
    line(2, 10)
    assert out.getvalue() == ""
    clock.now += 0.5  # the delay, to the second
    line(5 * 10**6, 10**7)
    assert (
        out.getvalue() == "\rexp: catching up      5.0 / 10.0 MB   50.0%     1.0 MB/s  ETA   5.0 s "
    )
    clock.now += 0.125
    line(6 * 10**6, 10**7)  # redrawn at most every 0.2 s
    assert out.getvalue().count("\r") == 1
    clock.now += 0.125
    line(7 * 10**6, 10**7)
    assert out.getvalue().count("\r") == 2
    line.clear()
    assert out.getvalue().endswith("\r\033[K")


def test_report_interval_knob(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOARDD_PROGRESS_SECONDS", raising=False)
    assert report_interval() == CATCH_UP_REPORT_SECONDS == 5.0
    monkeypatch.setenv("BOARDD_PROGRESS_SECONDS", "0.25")
    assert report_interval() == 0.25
    for bad in ("nonsense", "0", "-1"):
        monkeypatch.setenv("BOARDD_PROGRESS_SECONDS", bad)
        assert report_interval() == CATCH_UP_REPORT_SECONDS


def _progress_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if LINE.search(line)]


def test_serve_logs_catch_up_progress(serve: ServeFactory, big_logdir: Path) -> None:
    # The undocumented knob makes the interval small: the big logdir's catch-up (a second
    # or more) then logs several lines, each with bytes, rate and ETA.
    daemon = serve(big_logdir, env={"BOARDD_PROGRESS_SECONDS": "0.1"})
    daemon.wait_for_state("live", timeout=120)
    lines = _progress_lines(daemon.stderr())
    assert len(lines) >= 2, daemon.stderr()
    done = [float(re.search(r"up: ([\d.]+) /", line).group(1)) for line in lines]  # type: ignore[union-attr]
    assert done == sorted(done)
    # Logged during the catch-up, not after it.
    log = daemon.stderr()
    assert log.index(lines[-1]) < log.index("caught up in")


def test_serve_quick_catch_up_logs_no_progress(serve: ServeFactory, tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    writer = LiveWriter(logdir)
    write_mixed(writer, range(100))
    writer.close()
    daemon = serve(logdir)
    daemon.wait_for_state("live")
    wait_until(lambda: "caught up in" in daemon.stderr(), what="the catch-up's end")
    assert _progress_lines(daemon.stderr()) == []
