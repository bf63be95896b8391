"""Fixtures of the TensorBoard-route tests: a rich logdir, the real TensorBoard serving it (the
oracle: ``--load_fast=false``, a subprocess on a free port) and boardd serving the same logdir,
so that every route can be compared request by request."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.store.sampling import parse_samples_per_plugin
from tests.api.conftest import WALL, write_logdir
from tests.conftest import ThreadedServer, ingest

#: Large enough on both sides that nothing is dropped (TensorBoard takes whole numbers only;
#: its 0 would mean "keep all" in its reservoir but "return none" in its routes).
KEEP_ALL: dict[str, int | None] = {
    "scalars": 100_000,
    "histograms": 100_000,
    "images": 10_000,
    "audio": 10_000,
    "text": 10_000,
    "pr_curves": 10_000,
}
#: How long TensorBoard may take to start and load a logdir.
TB_START = 60.0
#: Runs of the rich logdir (the API tests' logdir plus the writers added here).
RICH_RUNS = {".", "eval", "nested/deep/run", "train", "curves", "typed"}


def write_rich_logdir(root: Path) -> Path:
    """The API tests' logdir (tensorboardX scalars with NaN/±Inf, histograms, images and
    several PNGs per step, audio, text; a root run and a nested one) plus PR curves, scalars
    written as float64 and int tensors by TensorBoard's writer, Markdown text with a table and
    HTML to sanitize, and a described tag."""
    logdir = write_logdir(root)
    rng = np.random.default_rng(7)
    with SummaryWriter(str(logdir / "curves")) as w:
        for step in range(0, 30, 3):
            labels = rng.integers(0, 2, 50)
            w.add_pr_curve("pr/a", labels, rng.random(50), step, walltime=WALL + step)
            w.add_pr_curve(
                "pr/b", labels, rng.random(50), step, num_thresholds=11, walltime=WALL + step
            )
            w.add_text(
                "md",
                "| a | b |\n|---|---|\n| 1 | *2* |\n\n<script>alert(1)</script> [x](javascript:y)",
                step,
                walltime=WALL + step,
            )
    typed = EventFileWriter(str(logdir / "typed"))
    for step in range(12):
        event = event_pb2.Event(wall_time=WALL + step, step=step)
        for tag, dtype, value in (
            ("f64", "float64", 1.0 / 3 + step),
            ("i32", "int32", step * 7),
            ("i64", "int64", 2**40 + step),
        ):
            metadata = summary_pb2.SummaryMetadata(
                display_name=f"{tag} shown",
                summary_description=f"**{tag}** as a *{dtype}* tensor",
            )
            metadata.plugin_data.plugin_name = "scalars"
            event.summary.value.add(
                tag=tag,
                tensor=tensor_util.make_tensor_proto(value, dtype=dtype),
                metadata=metadata,
            )
        typed.add_event(event)
    typed.close()
    return logdir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Oracle:
    """The real TensorBoard on a logdir."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.get(self.url + path, timeout=30, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return httpx.post(self.url + path, timeout=30, **kwargs)


def sampling_flag(sampling: Mapping[str, int | None]) -> str:
    return ",".join(f"{k}={v}" for k, v in sampling.items())


@contextlib.contextmanager
def tensorboard(
    logdir: Path | str,
    sampling: Mapping[str, int | None] | None,
    runs: set[str],
    log: Path,
    *,
    flag: str = "--logdir",
    load_fast: bool = False,
    extra: Sequence[str] = (),
) -> Iterator[Oracle]:
    """TensorBoard serving ``logdir`` (or a ``--logdir_spec``), once it lists ``runs`` and has
    read every file (it loads in the background: its answers settle after the first reload).
    Its Python loader (``--load_fast=false``) unless ``load_fast``: its Rust data server.
    ``extra``: more of its flags."""
    port = free_port()
    args = [
        sys.executable, "-m", "tensorboard.main", flag, str(logdir), "--port", str(port),
        "--host", "127.0.0.1", f"--load_fast={str(load_fast).lower()}", "--reload_interval", "1",
    ]  # fmt: skip
    if sampling:
        args.append(f"--samples_per_plugin={sampling_flag(sampling)}")
    args.extend(extra)
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    oracle = Oracle(proc, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + TB_START
        while True:
            assert proc.poll() is None, f"tensorboard exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"tensorboard did not load:\n{log.read_text()}"
            with contextlib.suppress(httpx.HTTPError):
                if set(oracle.get("/data/runs").json()) >= runs:
                    break
            time.sleep(0.2)
        # One more reload cycle: every file of every run read to its end.
        time.sleep(2.5)
        yield oracle
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Pair:
    """TensorBoard and boardd serving the same logdir."""

    tb: Oracle
    boardd: ThreadedServer
    logdir: Path

    def both(self, method: str, path: str, **kwargs: Any) -> tuple[httpx.Response, httpx.Response]:
        """The same request to each: (TensorBoard's answer, boardd's)."""
        a = httpx.request(method, self.tb.url + path, timeout=30, **kwargs)
        b = httpx.request(method, self.boardd.url + path, timeout=30, **kwargs)
        return a, b


@contextlib.contextmanager
def pair(
    root: Path,
    logdir: Path,
    sampling: Mapping[str, int | None] | None,
    runs: set[str],
    *,
    flag: str | None = None,
) -> Iterator[Pair]:
    """``flag``: a ``--samples_per_plugin`` value given to both as typed (boardd reads it as
    its command line does), instead of ``sampling``."""
    if flag is not None:
        sampling = parse_samples_per_plugin(flag)
    db = root / f"store-{'all' if sampling else 'default'}.sqlite"
    ingest(logdir, db, sampling, experiment="logs")
    spec = ExperimentSpec("logs", logdir, db)
    server = ThreadedServer(create_app([spec], sampling=sampling)).start()
    tb_sampling, extra = (None, [f"--samples_per_plugin={flag}"]) if flag else (sampling, [])
    try:
        with tensorboard(logdir, tb_sampling, runs, root / "tensorboard.log", extra=extra) as tb:
            yield Pair(tb, server, logdir)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def rich_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rich logdir (never modified by tests)."""
    return write_rich_logdir(tmp_path_factory.mktemp("rich"))


@pytest.fixture(scope="module")
def keep_all(rich_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """TensorBoard and boardd on the rich logdir, both keeping every point."""
    with pair(tmp_path_factory.mktemp("keep_all"), rich_logdir, KEEP_ALL, RICH_RUNS) as p:
        yield p


@pytest.fixture(scope="module")
def defaults(rich_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """TensorBoard and boardd on the rich logdir, both with their default sampling."""
    with pair(tmp_path_factory.mktemp("defaults"), rich_logdir, None, RICH_RUNS) as p:
        yield p
