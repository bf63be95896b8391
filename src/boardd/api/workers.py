"""Answer builders in processes of their own: the large answers (many series at once) are read
from the store and encoded there, on another core, not under the interpreter lock that the
daemon's ingest, its event loop and every small answer share.

A worker opens the store read-only (WAL: readers never wait on the writer) and keeps its own
column cache; it returns the answer's bytes, or says why it could not (too large to hold, a
damaged store). What a worker cannot do is done in the daemon's process as before: a lost
worker, a pool not started yet, an error of any other kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import importlib
import logging
import signal
import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

log = logging.getLogger(__name__)

T = TypeVar("T")

#: prctl(2)'s option: a signal for this process when its parent dies.
_PR_SET_PDEATHSIG = 1
#: Workers stop after this long without an answer to build, and give their memory back; the
#: next large answer starts them again (built in the daemon's process while they start).
IDLE_SECONDS = 120.0


def _worker_started(preload: tuple[str, ...]) -> None:
    """In each worker, first: it ends with the daemon (even a daemon killed with SIGKILL), and
    a Ctrl-C on the daemon's terminal (sent to its whole process group) is the daemon's to
    handle, not a traceback from every worker. The modules that build answers are imported
    now, not by the first answer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    for name in preload:
        importlib.import_module(name)


def _ready() -> bool:
    return True


#: In a worker process: what it keeps between the answers it builds (its store providers).
#: The daemon's process never fills it.
_KEPT: dict[Hashable, Any] = {}


def worker_state(key: Hashable, make: Callable[[], T]) -> T:
    """In a worker process: the value kept under ``key``, made by ``make`` on first use (a
    worker lives until it is idle or lost, and its values go with it)."""
    found = _KEPT.get(key)
    if found is None:
        found = _KEPT[key] = make()
    return found


class AnswerWorkers:
    """A pool of ``processes`` answer builders, started on first use (in the background: until
    they are ready, :meth:`ready` is False and answers are built in the daemon's process)."""

    def __init__(
        self, processes: int, idle_seconds: float = IDLE_SECONDS, preload: tuple[str, ...] = ()
    ) -> None:
        self.processes = processes
        #: Modules each worker imports as it starts (what the answers it builds need).
        self.preload = preload
        self.idle_seconds = idle_seconds
        self._last_used = 0.0
        self._idle_check: asyncio.TimerHandle | None = None
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._warm: Future[bool] | None = None
        self._closed = False
        self._answers = 0
        self._lost_count = 0

    def ready(self) -> bool:
        """Whether the workers can take an answer now; starts them if they are not started."""
        if self.processes <= 0 or self._closed:
            return False
        with self._lock:
            if self._executor is None:
                # Imported here: a daemon's start (its first answer) does not wait for them.
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                # spawn: the daemon has threads (a fork would copy their locks mid-use).
                self._executor = ProcessPoolExecutor(
                    self.processes,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_started,
                    initargs=(self.preload,),
                )
                self._warm = self._executor.submit(_ready)
                log.debug("answers: starting %d worker process(es)", self.processes)
            warm = self._warm
        assert warm is not None
        if not warm.done():
            return False
        if warm.exception() is not None:
            self._lost(warm.exception(), self._executor)
            return False
        return True

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker; :class:`WorkerLost` if the pool broke meanwhile."""
        from concurrent.futures.process import BrokenProcessPool

        executor = self._executor
        if executor is None:
            raise WorkerLost("the answer workers are not started")
        loop = asyncio.get_running_loop()
        try:
            done = await loop.run_in_executor(executor, functools.partial(fn, *args))
        except BrokenProcessPool as exc:
            self._lost(exc, executor)
            raise WorkerLost(str(exc)) from exc
        self._answers += 1  # on the event loop's thread only
        self._last_used = loop.time()
        if self._idle_check is None:
            self._idle_check = loop.call_later(self.idle_seconds, self._retire_if_idle, loop)
        return done

    def _retire_if_idle(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the event loop: stops the workers if they built nothing for idle_seconds."""
        self._idle_check = None
        left = self._last_used + self.idle_seconds - loop.time()
        if left > 0:
            self._idle_check = loop.call_later(left, self._retire_if_idle, loop)
            return
        with self._lock:
            executor, self._executor, self._warm = self._executor, None, None
        if executor is not None:
            log.debug("answers: the workers were idle for %g s: stopping them", self.idle_seconds)
            executor.shutdown(wait=False)

    def status(self) -> dict[str, Any]:
        """For the health route: the processes, whether they take answers now, how many
        they built, how many were lost (and started again)."""
        warm = self._warm
        return {
            "processes": self.processes,
            "ready": warm is not None and warm.done() and warm.exception() is None,
            "answers": self._answers,
            "lost": self._lost_count,
        }

    def _lost(self, exc: BaseException | None, broken: ProcessPoolExecutor | None) -> None:
        """A worker of ``broken`` died (killed, out of memory): that pool is made again on next
        use (once, however many answers it was building)."""
        with self._lock:
            if broken is None or self._executor is not broken:
                return  # already made again, or stopped
            self._executor, self._warm = None, None
            self._lost_count += 1
        log.warning("answers: a worker process was lost (%s): starting another", exc)
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stops the workers; safe to call twice."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


class WorkerLost(Exception):
    """The workers could not build the answer; the daemon's process builds it."""
