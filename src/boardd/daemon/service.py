"""``boardd serve``: the whole daemon in one process — ingest threads, watcher, HTTP server.

Life cycle: bind the port (so a port in use fails fast, before any store is touched), open the
stores (READY=1 once they are open and the port is bound), catch up and go live; SIGTERM or
SIGINT stops taking work, commits the current batch, releases the leases, checkpoints the WAL
and exits 0; SIGHUP rescans every logdir now. systemd's watchdog is fed from the ingest loops,
so a hung ingest is noticed.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from boardd.api import deferred
from boardd.api.app import create_app
from boardd.api.auth import LOGIN_PATH
from boardd.api.prefix import PathPrefix
from boardd.api.tensorboard import webui
from boardd.config import ServeSettings
from boardd.daemon.http_server import Server, server_config
from boardd.daemon.memory import tune_malloc
from boardd.daemon.notify import Notifier
from boardd.daemon.runner import ExperimentRunner
from boardd.daemon.runner_status import RunnerState, describe
from boardd.data.accel import NumpySwitch
from boardd.data.columns import ColumnCache
from boardd.data.sqlite_provider import SqliteProvider
from boardd.lineage import LineageService
from boardd.store.bus import ChangeHub
from boardd.store.location import state_directory

log = logging.getLogger(__name__)

#: What the first answer does not need (the lineage store's opening and first refreshes, the
#: hparams preload) starts once the HTTP server has sent its first complete answer, or this
#: long after it started serving if no request came first: on a small machine that work would
#: compete with the first answer for the interpreter (bench/bench_tensorboard.py's start).
WARM_UP_AFTER_SECONDS = 2.0


#: Runner states before an experiment's catch-up is done.
_NOT_CAUGHT_UP = frozenset({RunnerState.STARTING, RunnerState.REBUILDING, RunnerState.CATCHING_UP})


class PortInUseError(OSError):
    """The HTTP port is taken by another process."""


class Liveness:
    """Feeds systemd's watchdog only while every ingest loop keeps beating."""

    def __init__(self, notifier: Notifier, names: list[str]) -> None:
        self._notifier = notifier
        self._interval = notifier.watchdog_interval()
        self._beats = dict.fromkeys(names, time.monotonic())
        self._last_sent = 0.0
        self._lock = threading.Lock()

    @property
    def interval(self) -> float | None:
        """Seconds between WATCHDOG=1 pings (half of WatchdogSec), or None without a watchdog."""
        return self._interval

    def beat(self, name: str) -> None:
        """Called from an ingest loop each time it goes round."""
        if self._interval is None:
            return
        now = time.monotonic()
        with self._lock:
            self._beats[name] = now
            stale = min(self._beats.values()) < now - 2 * self._interval
            if stale or now - self._last_sent < self._interval / 2:
                return
            self._last_sent = now
        self._notifier.watchdog()


def bind_socket(host: str, port: int) -> socket.socket:
    """Binds the listening socket now, so a port in use is reported before anything else."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on accepted
    # sockets whose protocol says TCP; with it on, a stream message waits for the client's
    # delayed ACK of the previous one (up to 40 ms; bench/bench_stream.py).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUseError(exc.errno, f"port {port} on {host} is already in use") from exc
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_of(host: str, port: int) -> str:
    """The base URL a person opens for a server listening on ``host``:``port`` (a wildcard
    address is shown as this machine's name)."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def open_url(
    base: str, token: str | None, token_file: Path | None = None, *, terminal: bool = True
) -> str:
    """The URL to open in a browser: the UI, or with a token its login URL (which sets the
    login cookie and goes on to the UI; see :mod:`boardd.api.auth`). The token itself only
    for a terminal: a log (journald, a file) keeps it where others may read it, so there the
    URL names the file the token is in."""
    if token is None:
        return f"{base}/"
    if terminal:
        return f"{base}{LOGIN_PATH}?{urlencode({'token': token})}"
    where = f"the token in {token_file}" if token_file is not None else "the token"
    return f"{base}{LOGIN_PATH}?token=TOKEN with TOKEN {where}"


class Service:
    """Owns the runners, the HTTP server and the notifier for one ``boardd serve`` process."""

    def __init__(self, settings: ServeSettings, notifier: Notifier | None = None) -> None:
        # Before any thread of the daemon starts (see boardd.daemon.memory).
        tune_malloc()
        self.settings = settings
        self.notifier = notifier or Notifier()
        names = [e.name for e in settings.experiments]
        self.liveness = Liveness(self.notifier, names)
        # The commit bus: each runner claims its store on it while writing (the one definition
        # of "this process writes it"), and announces its commits; /api/v1/stream and the
        # cache's front key ask it.
        self.hub = ChangeHub()
        #: Set once the first answer has been sent (or WARM_UP_AFTER_SECONDS passed): the
        #: runners' hparams preloads wait for it.
        self.warm = threading.Event()
        self._answered = threading.Event()
        # The response cache's disk tier opens after the first answer too (api/app.py).
        self._disk_after = threading.Event()
        self._warm_up = threading.Thread(target=self._start_warm_up, name="boardd-warm-up")
        # numpy too (a large share of the start): the providers' scalar kernels run in pure
        # Python until the warm-up imports it (boardd.data.accel).
        self.numpy = NumpySwitch(deferred=True)
        # What the HTTP app reads each store through (it closes them when it stops); made here
        # so that each runner warms up its store's provider once caught up.
        self.column_cache = ColumnCache()
        self.providers = {
            spec.name: SqliteProvider(
                spec.db, self.column_cache, self.numpy, sampling=settings.sampling
            )
            for spec in settings.experiments
        }
        self.runners = [
            ExperimentRunner(
                spec,
                settings,
                beat=self.liveness.beat,
                beat_interval=self.liveness.interval,
                bus=self.hub,
                warm=self.warm,
                answered=self._answered,
                provider=self.providers[spec.name],
            )
            for spec in settings.experiments
        ]
        # The lineage store (ML Metadata): refreshed from the runners' commits on the bus.
        self.lineage = (
            LineageService(
                settings.lineage,
                settings.experiments,
                hub=self.hub,
                idle_seconds=settings.hparams_idle_seconds,
                busy=self._catching_up,
            )
            if settings.lineage is not None
            else None
        )
        self._server: Server | None = None
        self._stopping = threading.Event()

    def _catching_up(self, experiment: str) -> bool:
        """Whether an experiment's runner has not caught up yet (the lineage store waits for
        it rather than slow it down)."""
        for runner in self.runners:
            if runner.spec.name == experiment:
                return runner.state in _NOT_CAUGHT_UP
        return False

    def run(self, sock: socket.socket) -> bool:
        """Serves until SIGTERM/SIGINT; returns after a clean shutdown.

        Returns False if the HTTP server never started (its startup failed): the process must
        then exit non-zero so that systemd's Restart=on-failure applies.
        """
        app = create_app(
            self.settings.experiments,
            status={r.spec.name: _status_of(r) for r in self.runners},
            token=self.settings.token,
            hub=self.hub,
            disk_cache=state_directory() / "cache",
            generation={
                spec.name: functools.partial(self.hub.writer_generation, spec.name)
                for spec in self.settings.experiments
            },
            sampling=self.settings.sampling,
            hparams_idle_seconds=self.settings.hparams_idle_seconds,
            lineage=self.lineage,
            disk_after=self._disk_after,
            window_title=self.settings.window_title,
            hosts=self.settings.hosts,
            frame_ancestors=self.settings.frame_ancestors,
            answer_processes=self.settings.answer_processes,
            providers=self.providers,
            column_cache=self.column_cache,
        )
        served: ASGIApp = app
        if self.settings.path_prefix:
            # --path-prefix: everything under it (api/prefix.py).
            served = PathPrefix(app, self.settings.path_prefix, root_folders=webui.ROOT_FOLDERS)
        config = server_config(
            first_answer_sets(served, self._answered, self._disk_after), graceful=3.0
        )
        # Open /api/v1/stream responses never finish on their own: the hub's closing ends them
        # before the server waits for its requests, or it would wait its whole graceful time.
        # The server installs no signal handlers of its own: the service's are in place from
        # before the first runner starts until the stop is complete.
        self._server = Server(config, signals={}, before_shutdown=self.hub.close)
        with self._signals_handled():
            try:
                for runner in self.runners:
                    runner.start()
                for runner in self.runners:
                    runner.opened.wait()
                # The lineage store opens after the first answer (a lineage request opens it
                # at once).
                self._warm_up.start()
                self._write_port_file(sock)
                self.notifier.ready(self._status_line())
                status_thread = threading.Thread(
                    target=self._report_status, name="boardd-status", daemon=True
                )
                status_thread.start()
                if self._stopping.is_set():
                    return True  # stopped before serving: a clean stop all the same
                self._server.run([sock])
            finally:
                self.shutdown()
        if not self._server.started:
            log.error("the HTTP server failed to start; see the messages above")
            return False
        return True

    @contextlib.contextmanager
    def _signals_handled(self) -> Iterator[None]:
        """SIGTERM and SIGINT stop the service, SIGHUP rescans, while the block runs (in the
        main thread only, where Python runs signal handlers). Installed before the runners start
        and the port file says the daemon is ready, and kept until the stop is complete: a
        signal at any moment in between is a clean stop, never the default action (killed by
        SIGTERM) nor a KeyboardInterrupt's traceback."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handlers = {
            signal.SIGTERM: self.handle_stop,
            signal.SIGINT: self.handle_stop,
            signal.SIGHUP: self.handle_rescan,
        }
        previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _start_warm_up(self) -> None:
        """Starts what the first answer does not need, once it has been sent."""
        self._answered.wait(WARM_UP_AFTER_SECONDS)
        # `boardd serve` started with the cyclic collector off (boardd.cli.main): what the
        # start made stays (frozen: later collections skip it), and the collector runs again.
        if not gc.isenabled():
            gc.freeze()
            gc.enable()
        if self._stopping.is_set():
            return
        if self.lineage is not None:
            self.lineage.start()
        self.warm.set()
        # The routes' code that the first answer did not need (TensorBoard's other plugins,
        # the hparams and lineage API): imported now, not by a user's first click on a tab.
        try:
            self.numpy.load()  # for the scalar kernels (the first answers ran without it)
            import boardd.store.blocks  # noqa: F401  (the codec of scalar blocks, on numpy)

            deferred.load_all()
        except Exception:
            log.exception("importing the deferred routes' code failed (their requests will fail)")

    def handle_stop(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM/SIGINT: a second one while stopping forces the HTTP server down."""
        log.info("received %s: stopping", signal.Signals(signum).name)
        if self._server is not None:
            if self._server.should_exit:
                self._server.force_exit = True
            self._server.should_exit = True
        self._stopping.set()
        for runner in self.runners:
            runner.request_stop()  # the final commit happens in shutdown()

    def handle_rescan(self, signum: int, frame: FrameType | None) -> None:
        """SIGHUP: rescan every logdir now."""
        log.info("received SIGHUP: rescanning")
        for runner in self.runners:
            runner.rescan()

    def shutdown(self) -> None:
        """Stops the runners (final commit, lease release, checkpoint); idempotent."""
        self._stopping.set()
        self.notifier.stopping()
        self._answered.set()  # ends the warm-up's wait; it starts nothing once stopping
        self._disk_after.set()
        if self._warm_up.is_alive():
            self._warm_up.join()
        if self.lineage is not None:
            self.lineage.close()
        for runner in self.runners:
            runner.stop()
        self.warm.set()  # the preloads still waiting end (their runners are stopped)
        self.numpy.end_deferral()  # a service stopped before its warm-up imported numpy
        port_file = self.settings.port_file
        if port_file is not None:
            with contextlib.suppress(OSError):
                port_file.unlink()
        self.notifier.close()

    def _write_port_file(self, sock: socket.socket) -> None:
        port = sock.getsockname()[1]
        for spec in self.settings.experiments:
            log.info("%s: logdir %s, store %s", spec.name, spec.logdir, spec.db)
        base = url_of(self.settings.host, port) + self.settings.path_prefix
        ui = (
            f"TensorBoard's UI: {base}/tensorboard/"
            if webui.webfiles_path() is not None
            else 'pip install "boardd[tensorboard]" for TensorBoard\'s UI'
        )
        log.info(
            "listening on %s/: open %s (boardd's dashboard; %s; the data API: %s/api/v1/)",
            base,
            open_url(
                base,
                self.settings.token,
                self.settings.token_file,
                terminal=sys.stderr is not None and sys.stderr.isatty(),
            ),
            ui,
            base,
        )
        if self.settings.port_file is None:
            return
        target = self.settings.port_file
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(f"{port}\n")
        os.replace(tmp, target)

    def _status_line(self) -> str:
        return "; ".join(describe(r.status()) for r in self.runners)

    def _report_status(self) -> None:
        last = ""
        while not self._stopping.wait(1.0):
            line = self._status_line()
            if line != last:
                self.notifier.status(line)
                last = line


def first_answer_sets(app: ASGIApp, answered: threading.Event, *also: threading.Event) -> ASGIApp:
    """``app``, setting ``answered`` (and each of ``also``) as it hands the last part of an
    HTTP answer to the server (any status; a stream that never ends does not count)."""
    events = (answered, *also)

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        if answered.is_set() or scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            # Before the send: once the client has the answer, the signal is set.
            if message["type"] == "http.response.body" and not message.get("more_body"):
                for event in events:
                    event.set()
            await send(message)

        await app(scope, receive, sending)

    return watched


def _status_of(runner: ExperimentRunner) -> Any:
    def status() -> dict[str, Any]:
        return asdict(runner.status())

    return status
